import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Egress } from "../../src/egress/Egress.ts"
import { compose, type ComposeContext, type ComposeKind, type SendInput } from "../../src/mail/compose.ts"
import { MailParser, parse } from "../../src/mail/parse.ts"
import { decideThread, lookupFrom } from "../../src/mail/thread.ts"
import { Ids } from "../../src/platform/Ids.ts"

const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64")
const deps = Layer.mergeAll(Ids.layer, MailParser.layerInline, Egress.layerTest({ "https://files.example.com/notes.txt": { body: "remote notes", content_type: "text/plain" } }))
const context: ComposeContext = { inbox: { email: "agent@inbox.example.com", display_name: "Agent Smith" } }

// What the parent looks like once received and parsed, as the storage layer would keep it.
const received = Effect.gen(function*() {
  const sent = yield* compose("send", {
    to: ["agent@inbox.example.com", "Bob Stone <bob@example.com>"],
    cc: "carol@example.net",
    subject: "Quarterly numbers",
    text: "Numbers attached.",
    html: "<p>Numbers <b>attached</b>.</p>",
    attachments: [{ filename: "q3.csv", content_type: "text/csv", content: Buffer.from("a,b\n1,2").toString("base64") }]
  }, { inbox: { email: "ann@example.org", display_name: "Ann Lee" } })
  return yield* parse(sent.raw)
})

const cases: ReadonlyArray<[string, ComposeKind, SendInput]> = [
  ["send", "send", { to: "Dave <dave@example.com>", cc: ["erin@example.com"], bcc: "hidden@example.com", subject: "Hello", text: "Plain body", html: "<p>HTML body</p>" }],
  ["send with attachments (inline content and url)", "send", {
    to: "dave@example.com",
    subject: "Files",
    text: "See files",
    attachments: [
      { filename: "hello.txt", content_type: "text/plain", content: Buffer.from("hello file").toString("base64") },
      { url: "https://files.example.com/notes.txt" }
    ]
  }],
  ["send with an inline content-id image", "send", {
    to: "dave@example.com",
    subject: "Logo",
    html: `<p>Our logo: <img src="cid:logo@inbox"></p>`,
    attachments: [{ filename: "logo.png", content_type: "image/png", content_disposition: "inline", content_id: "logo@inbox", content: png.toString("base64") }]
  }],
  ["reply", "reply", { text: "Thanks, Ann." }],
  ["reply-all", "reply_all", { text: "Thanks, all.", html: "<p>Thanks, all.</p>" }],
  ["forward", "forward", { to: "frank@example.com", text: "FYI" }]
]

describe("compose then parse round trip", () => {
  for (const [name, kind, input] of cases) {
    it.effect(`${name}: parse reads back the recipients, subject, bodies, attachments and threading headers`, () =>
      Effect.gen(function*() {
        const parent = yield* received
        const c = yield* compose(kind, input, context, kind === "send" ? undefined : { ...parent.message, attachment_contents: parent.attachments })
        const back = yield* parse(c.raw)
        const m = back.message

        assert.strictEqual(m.from, "Agent Smith <agent@inbox.example.com>")
        assert.deepStrictEqual(m.to, c.to)
        assert.deepStrictEqual(m.cc, c.cc)
        assert.notProperty(m.headers, "bcc")
        assert.strictEqual(m.subject, c.subject)
        assert.strictEqual(m.rfc_message_id, c.rfc_message_id)
        assert.strictEqual(m.in_reply_to, c.in_reply_to)
        assert.deepStrictEqual(m.references, c.references)
        if (c.text !== undefined) assert.strictEqual(m.text?.trim(), c.text.trim())
        if (c.html !== undefined) assert.strictEqual(m.html?.trim(), c.html.trim())
        assert.deepStrictEqual(m.attachments, c.attachments.map((a) => a.meta))
        assert.deepStrictEqual(back.attachments.map((a) => Buffer.from(a.content).toString("hex")), c.attachments.map((a) => Buffer.from(a.content).toString("hex")))

        // and threading puts it where compose said it belongs
        const decision = decideThread(m, lookupFrom([{ thread_id: "thr_parent", rfc_message_id: parent.message.rfc_message_id ?? "" }]))
        assert.strictEqual(decision._tag === "Join" ? decision.thread_id : "new", c.starts_thread ? "new" : "thr_parent")
      }).pipe(Effect.provide(deps)))
  }

  it.effect("reply and reply-all address the right people after a real parse", () =>
    Effect.gen(function*() {
      const parent = yield* received
      const r = yield* compose("reply", { text: "x" }, context, parent.message)
      assert.deepStrictEqual(r.envelope.to, ["ann@example.org"])
      const all = yield* compose("reply_all", { text: "x" }, context, parent.message)
      assert.deepStrictEqual(all.envelope.to, ["ann@example.org", "bob@example.com", "carol@example.net"])
      assert.strictEqual(all.subject, "Re: Quarterly numbers")
    }).pipe(Effect.provide(deps)))
})
