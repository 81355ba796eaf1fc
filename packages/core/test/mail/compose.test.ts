import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Egress } from "../../src/egress/Egress.ts"
import { Ids } from "../../src/platform/Ids.ts"
import { compose, type ComposeContext, forwardSubject, type ParentMessage, replySubject, type SendInput } from "../../src/mail/compose.ts"

const MB = 1024 * 1024
const big = (n: number) => new Uint8Array(n)

const TestIds = Layer.succeed(Ids, Ids.of({
  make: (prefix) => Effect.succeed(`${prefix}_0001`),
  secret: (bytes) => Effect.succeed("ab".repeat(bytes)),
  digits: (n) => Effect.succeed("1".repeat(n)),
  fraction: Effect.succeed(0.5)
}))

const egress = Egress.layerTest({
  "https://files.example.com/report.pdf": { body: "%PDF-1.4 test", content_type: "application/pdf; charset=binary" },
  "https://files.example.com/nine.bin": { body: big(9 * MB) },
  "https://files.example.com/eleven.bin": { body: big(11 * MB) },
  "https://files.example.com/slow.bin": { body: "late", delay: "60 seconds" },
  "https://files.example.com/missing": { body: "", status: 404 }
})

const deps = Layer.mergeAll(TestIds, egress)
const context: ComposeContext = { inbox: { email: "agent@inbox.example.com", display_name: "Support Agent" }, tracking: { public_url: "https://mail.example.com/", open_token: "tok123" } }
const send = (input: SendInput) => compose("send", input, context).pipe(Effect.provide(deps))
const rawText = (raw: Uint8Array) => Buffer.from(raw).toString("latin1")
const headerBlock = (raw: Uint8Array) => rawText(raw).split(/\r\n\r\n/)[0] ?? ""

const parent: ParentMessage = {
  from: "Ann Lee <ann@example.org>",
  to: ["agent@inbox.example.com", "Bob <BOB@example.com>"],
  cc: ["carol@example.net", "Agent@Inbox.Example.com", "bob@example.com"],
  subject: "Re: RE: Quarterly numbers",
  text: "Here are the numbers.",
  html: "<html><body><p>Here are the <b>numbers</b>.</p></body></html>",
  rfc_message_id: "<parent@example.org>",
  references: ["<root@example.org>"],
  date: "2025-07-01T10:00:00.000Z",
  headers: {},
  attachment_contents: [{ meta: { filename: "q3.csv", content_type: "text/csv", content_disposition: "attachment", size: 3 }, content: new Uint8Array([49, 44, 50]) }]
}

describe("Mail.compose send rules", () => {
  it.effect("refuses a send with no recipient with 400 validation_error naming to", () =>
    Effect.gen(function*() {
      const e = yield* send({ subject: "x", text: "y" }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "ValidationError")
      if (e._tag === "ValidationError") {
        assert.strictEqual(e.code, "validation_error")
        assert.deepStrictEqual(e.errors.map((i) => i.path), [["to"]])
      }
    }))

  it.effect("refuses an invalid address with validation_error whose path names the field and index", () =>
    Effect.gen(function*() {
      const e = yield* send({ to: ["ok@example.com", "not an address"], cc: "also@bad", text: "y" }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "ValidationError")
      if (e._tag === "ValidationError") assert.deepStrictEqual(e.errors.map((i) => i.path), [["to", "1"], ["cc"]])
    }))

  it.effect("accepts to, cc and bcc as a single string or a list", () =>
    Effect.gen(function*() {
      const c = yield* send({ to: "Ann <ann@example.org>", cc: ["b@example.org"], bcc: "c@example.org", text: "hi" })
      assert.deepStrictEqual(c.envelope.to, ["ann@example.org", "b@example.org", "c@example.org"])
    }))

  it.effect("refuses more than 50 unique recipients with too_many_recipients", () =>
    Effect.gen(function*() {
      const to = Array.from({ length: 30 }, (_, i) => `u${i}@example.com`)
      const cc = Array.from({ length: 21 }, (_, i) => `c${i}@example.com`)
      const e = yield* send({ to, cc, text: "x" }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "TooManyRecipients")
      if (e._tag === "TooManyRecipients") assert.strictEqual(e.code, "too_many_recipients")
    }))

  it.effect("counts recipients case-insensitively, so 50 unique addresses written twice are accepted", () =>
    Effect.gen(function*() {
      const to = Array.from({ length: 50 }, (_, i) => `u${i}@example.com`)
      const c = yield* send({ to, bcc: to.map((a) => a.toUpperCase()), text: "x" })
      assert.strictEqual(c.envelope.to.length, 50)
    }))

  it.effect("refuses track_opens without html with 422 html_required", () =>
    Effect.gen(function*() {
      const e = yield* send({ to: "a@example.org", text: "x", track_opens: true }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "HtmlRequired")
      if (e._tag === "HtmlRequired") assert.strictEqual(e.code, "html_required")
    }))

  it.effect("adds a 1x1 open pixel under the public URL when track_opens has html", () =>
    Effect.gen(function*() {
      const c = yield* send({ to: "a@example.org", html: "<html><body><p>Hi</p></body></html>", track_opens: true })
      assert.include(c.html ?? "", `<img src="https://mail.example.com/t/o/tok123.gif" width="1" height="1"`)
      assert.match(c.html ?? "", /tok123\.gif"[^>]*><\/body>/)
    }))

  it.effect("never writes Bcc into the message, but delivers to it through the envelope", () =>
    Effect.gen(function*() {
      const c = yield* send({ to: "a@example.org", bcc: ["Secret <hidden@example.org>"], subject: "s", text: "x" })
      assert.notMatch(rawText(c.raw), /bcc|hidden@example\.org/i)
      assert.deepStrictEqual(c.envelope, { from: "agent@inbox.example.com", to: ["a@example.org", "hidden@example.org"] })
      assert.deepStrictEqual(c.bcc, ["Secret <hidden@example.org>"])
    }))

  it.effect("writes From with the inbox display name, Date from the Clock, Message-ID on the inbox domain", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2025, 6, 4, 8, 30))
      const c = yield* send({ to: "a@example.org", subject: "s", text: "x" })
      const head = headerBlock(c.raw)
      assert.match(head, /^From: Support Agent <agent@inbox\.example\.com>$/m)
      assert.match(head, /^Date: Fri, 04 Jul 2025 08:30:00 \+0000$/m)
      assert.strictEqual(c.rfc_message_id, `<${"ab".repeat(16)}@inbox.example.com>`)
      assert.match(head, new RegExp(`^Message-ID: ${c.rfc_message_id}$`, "m"))
      assert.strictEqual(c.starts_thread, true)
    }))

  it.effect("refuses structural or multi-line custom headers with validation_error", () =>
    Effect.gen(function*() {
      const e = yield* send({ to: "a@example.org", text: "x", headers: { "Message-ID": "<forged@x>", "X-Ok": "fine", "X-Bad": "a\r\nBcc: victim@x" } }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "ValidationError")
      if (e._tag === "ValidationError") assert.deepStrictEqual(e.errors.map((i) => i.path), [["headers", "Message-ID"], ["headers", "X-Bad"]])
    }))
})

describe("Mail.compose attachments", () => {
  it.effect("needs exactly one of content and url", () =>
    Effect.gen(function*() {
      const e = yield* send({ to: "a@example.org", text: "x", attachments: [{ filename: "a.txt" }, { content: "aGk=", url: "https://files.example.com/report.pdf" }] }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "ValidationError")
      if (e._tag === "ValidationError") assert.deepStrictEqual(e.errors.map((i) => i.path), [["attachments", "0", "content"], ["attachments", "1", "url"]])
    }))

  it.effect("refuses inline content over 6 MB combined with 413 payload_too_large", () =>
    Effect.gen(function*() {
      const chunk = Buffer.from(big(3.5 * MB)).toString("base64")
      const e = yield* send({ to: "a@example.org", text: "x", attachments: [{ filename: "a", content: chunk }, { filename: "b", content: chunk }] }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "PayloadTooLarge")
      if (e._tag === "PayloadTooLarge") assert.strictEqual(e.code, "payload_too_large")
    }))

  it.effect("fetches a url attachment through Egress, naming and typing it from the answer", () =>
    Effect.gen(function*() {
      const c = yield* send({ to: "a@example.org", text: "x", attachments: [{ url: "https://files.example.com/report.pdf" }] })
      assert.deepStrictEqual(c.attachments.map((a) => a.meta), [{ filename: "report.pdf", content_type: "application/pdf", content_disposition: "attachment", size: 13 }])
    }))

  it.effect("refuses a url attachment over 10 MB with payload_too_large", () =>
    Effect.gen(function*() {
      const e = yield* send({ to: "a@example.org", text: "x", attachments: [{ url: "https://files.example.com/eleven.bin" }] }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "PayloadTooLarge")
      assert.include(e.message, "10 MB")
    }))

  it.effect("refuses url attachments over 25 MB together with payload_too_large", () =>
    Effect.gen(function*() {
      const nine = { url: "https://files.example.com/nine.bin" }
      const ok = yield* send({ to: "a@example.org", text: "x", attachments: [nine, nine] })
      assert.strictEqual(ok.attachments.length, 2)
      const e = yield* send({ to: "a@example.org", text: "x", attachments: [nine, nine, nine] }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "PayloadTooLarge")
      assert.include(e.message, "25 MB")
    }))

  it.effect("gives up on a url attachment after the timeout with validation_error on its url", () =>
    Effect.gen(function*() {
      const fiber = yield* send({ to: "a@example.org", text: "x", attachments: [{ url: "https://files.example.com/slow.bin" }] }).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("16 seconds")
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(e._tag, "ValidationError")
      if (e._tag === "ValidationError") {
        assert.deepStrictEqual(e.errors[0]?.path, ["attachments", "0", "url"])
        assert.include(e.errors[0]?.message ?? "", "timeout")
      }
    }))

  it.effect("refuses a url that answers 404 or is not http(s)", () =>
    Effect.gen(function*() {
      const missing = yield* send({ to: "a@example.org", text: "x", attachments: [{ url: "https://files.example.com/missing" }] }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "ValidationError")
      const file = yield* send({ to: "a@example.org", text: "x", attachments: [{ url: "file:///etc/passwd" }] }).pipe(Effect.flip)
      assert.strictEqual(file._tag, "ValidationError")
    }))
})

describe("Mail.compose replies and forwards", () => {
  const reply = (kind: "reply" | "reply_all" | "forward", input: SendInput, p: ParentMessage = parent) =>
    compose(kind, input, context, p).pipe(Effect.provide(deps))

  it("prefixes Re: once and Fwd: once", () => {
    assert.strictEqual(replySubject("Re: RE: Aw: hello"), "Re: hello")
    assert.strictEqual(replySubject("hello"), "Re: hello")
    assert.strictEqual(forwardSubject("Fwd: hello"), "Fwd: hello")
    assert.strictEqual(forwardSubject("hello"), "Fwd: hello")
  })

  it.effect("reply goes to the sender, in the same thread, with In-Reply-To and References", () =>
    Effect.gen(function*() {
      const c = yield* reply("reply", { text: "Thanks" })
      assert.deepStrictEqual(c.to, ["Ann Lee <ann@example.org>"])
      assert.strictEqual(c.cc, undefined)
      assert.strictEqual(c.subject, "Re: Quarterly numbers")
      assert.strictEqual(c.in_reply_to, "<parent@example.org>")
      assert.deepStrictEqual(c.references, ["<root@example.org>", "<parent@example.org>"])
      assert.strictEqual(c.starts_thread, false)
      const head = headerBlock(c.raw)
      assert.match(head, /^In-Reply-To: <parent@example\.org>$/m)
      assert.match(head, /^References: <root@example\.org> <parent@example\.org>$/m)
    }))

  it.effect("a reply's to replaces the default recipient (the sender); its cc and bcc are added", () =>
    Effect.gen(function*() {
      const c = yield* reply("reply", { text: "Passing this on", to: ["Dee <dee@example.com>"], cc: "eve@example.com" })
      assert.deepStrictEqual(c.to, ["Dee <dee@example.com>"])
      assert.deepStrictEqual(c.cc, ["eve@example.com"])
      assert.deepStrictEqual(c.envelope.to, ["dee@example.com", "eve@example.com"])
      assert.strictEqual(c.in_reply_to, "<parent@example.org>")
      const onlyCc = yield* reply("reply", { text: "cc only", cc: "eve@example.com" })
      assert.deepStrictEqual(onlyCc.to, ["Ann Lee <ann@example.org>"])
    }))

  it.effect("reply goes to Reply-To when the parent has one", () =>
    Effect.gen(function*() {
      const c = yield* reply("reply", { text: "ok" }, { ...parent, headers: { "reply-to": "Help Desk <help@example.org>" } })
      assert.deepStrictEqual(c.to, ["Help Desk <help@example.org>"])
    }))

  it.effect("reply-all goes to the sender and every To and Cc except the replying inbox, without duplicates", () =>
    Effect.gen(function*() {
      const c = yield* reply("reply_all", { text: "All: thanks" })
      assert.deepStrictEqual(c.to, ["Ann Lee <ann@example.org>", "Bob <BOB@example.com>"])
      assert.deepStrictEqual(c.cc, ["carol@example.net"])
      assert.deepStrictEqual(c.envelope.to, ["ann@example.org", "BOB@example.com", "carol@example.net"])
    }))

  it.effect("forward starts a new thread, says Fwd:, quotes the original in text and HTML and carries its attachments", () =>
    Effect.gen(function*() {
      const c = yield* reply("forward", { to: "dave@example.com", text: "FYI" })
      assert.strictEqual(c.subject, "Fwd: Re: RE: Quarterly numbers")
      assert.strictEqual(c.starts_thread, true)
      assert.strictEqual(c.in_reply_to, undefined)
      assert.match(c.text ?? "", /^FYI\n\n---------- Forwarded message ---------\nFrom: Ann Lee <ann@example\.org>\n/)
      assert.include(c.text ?? "", "Here are the numbers.")
      assert.include(c.html ?? "", "Here are the <b>numbers</b>.")
      assert.include(c.html ?? "", "From: Ann Lee &lt;ann@example.org&gt;")
      assert.deepStrictEqual(c.attachments.map((a) => a.meta.filename), ["q3.csv"])
      assert.notMatch(headerBlock(c.raw), /In-Reply-To/)
    }))

  it.effect("forward needs a recipient", () =>
    Effect.gen(function*() {
      const e = yield* reply("forward", { text: "FYI" }).pipe(Effect.flip)
      assert.strictEqual(e._tag, "ValidationError")
    }))
})
