/**
 * Mail that PostgreSQL cannot hold as it is (docs/receiving.md): a NUL in a body (raw,
 * or `=00` in quoted-printable), an encoded word that decodes to a lone UTF-16 surrogate, or
 * either in a display name, a header or an attachment's filename. Each is stored, through
 * `/inbound/raw` and through a real SMTP conversation with the built-in receiver (nodemailer
 * on loopback): the raw download is the bytes that came, and the parsed fields hold U+FFFD
 * where the bad code point was. And one such message delivered at once with good ones (a
 * group-commit batch) costs them nothing: all are stored, no batch is split.
 */
import { assert, layer } from "@effect/vitest"
import { OperatorMetrics } from "@inbox/core/internal"
import { SmtpReceiver } from "@inbox/mailserver"
import { engineWithDns, newOrganization, storages, TEST_HOST, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer, Metric } from "effect"
import { randomBytes } from "node:crypto"
import nodemailer from "nodemailer"

const CRLF = "\r\n"
/** `=?utf-16be?B?2AAAQQ==?=`: the bytes D8 00 00 41, a high surrogate with no low one, then "A". */
const LONE_SURROGATE_WORD = "=?utf-16be?B?2AAAQQ==?="
/** 8,000 characters that do not compress (an index entry is compressed before its size is checked). */
const LONG = randomBytes(4_000).toString("hex")
/** `n` distinct words of 12 characters, joined by `by`. */
const words = (n: number, by = " ") => Array.from({ length: n }, () => randomBytes(6).toString("hex")).join(by)

/** What a stored message shows (GET message), as much as a shape's check reads. */
interface Shown {
  readonly subject: string
  readonly from: string
  readonly cc?: ReadonlyArray<string>
  readonly rfc_message_id?: string
  readonly references?: ReadonlyArray<string>
  readonly text?: string
  readonly headers: Record<string, string>
  readonly attachments: ReadonlyArray<{ readonly attachment_id: string; readonly filename?: string }>
}

interface Shape {
  readonly name: string
  /** header lines after From, To and Message-ID, then the blank line and the body */
  readonly rest: string
  readonly from?: string
  /** the Message-ID for the test's id; `<id@example.org>` unless given */
  readonly id?: (id: string) => string
  readonly check: (message: Shown) => void
}

const attachmentPart = (disposition: string, content: string) =>
  `MIME-Version: 1.0${CRLF}Content-Type: multipart/mixed; boundary="sep"${CRLF}Subject: attached${CRLF}${CRLF}` +
  `--sep${CRLF}Content-Type: text/plain${CRLF}${CRLF}See the file.${CRLF}` +
  `--sep${CRLF}Content-Type: application/octet-stream${CRLF}Content-Disposition: ${disposition}${CRLF}${CRLF}${content}${CRLF}--sep--${CRLF}`

const shapes: ReadonlyArray<Shape> = [
  {
    name: "a raw NUL in a body",
    rest: `Subject: raw nul${CRLF}Content-Type: text/plain; charset=utf-8${CRLF}${CRLF}before\0after${CRLF}`,
    check: (m) => assert.strictEqual(m.text?.trim(), "before\uFFFDafter")
  },
  {
    name: "=00 in a quoted-printable body",
    rest: `Subject: qp nul${CRLF}Content-Type: text/plain; charset=utf-8${CRLF}Content-Transfer-Encoding: quoted-printable${CRLF}${CRLF}before=00after${CRLF}`,
    check: (m) => assert.strictEqual(m.text?.trim(), "before\uFFFDafter")
  },
  {
    name: "the utf-16be encoded word of a lone surrogate in Subject",
    rest: `Subject: ${LONE_SURROGATE_WORD}${CRLF}${CRLF}body${CRLF}`,
    check: (m) => {
      assert.strictEqual(m.subject, "\uFFFDA")
      assert.strictEqual(m.headers["subject"], "\uFFFDA")
    }
  },
  {
    name: "the utf-16be encoded word of a lone surrogate in a display name",
    from: `${LONE_SURROGATE_WORD} <ann@example.org>`,
    rest: `Subject: display name${CRLF}${CRLF}body${CRLF}`,
    check: (m) => assert.strictEqual(m.from, "\uFFFDA <ann@example.org>")
  },
  {
    name: "the utf-16be encoded word of a lone surrogate in an attachment filename",
    rest: attachmentPart(`attachment; filename="${LONE_SURROGATE_WORD}"`, "x"),
    check: (m) => assert.strictEqual(m.attachments[0]?.filename, "\uFFFDA")
  },
  {
    name: "a NUL in an attachment filename",
    rest: attachmentPart(`attachment; filename="a\0b.bin"`, "bytes\0kept"),
    check: (m) => assert.strictEqual(m.attachments[0]?.filename, "a\uFFFDb.bin")
  },
  {
    name: "a NUL and a lone surrogate's encoded word in an attachment's content type",
    rest: attachmentPart(`attachment; filename="f.bin"`, "x").replace("Content-Type: application/octet-stream", `Content-Type: application/x\0y; name="${LONE_SURROGATE_WORD}"`),
    check: (m) => assert.strictEqual(m.attachments[0]?.filename, "f.bin")
  },
  {
    name: "an 8,000-character Message-ID (past a B-tree entry's 2,704 bytes)",
    rest: `Subject: long id${CRLF}References: <${LONG}@example.org> <parent@example.org>${CRLF}${CRLF}body${CRLF}`,
    id: (id) => `<${LONG}-${id}@example.org>`,
    check: (m) => {
      assert.match(m.rfc_message_id ?? "", /^<[0-9a-f]{64}@message-id\.invalid>$/, "the id derived from the bytes")
      assert.deepStrictEqual(m.references, ["<parent@example.org>"])
    }
  },
  {
    name: "8,000-character From and Cc addresses",
    from: `Ann <${LONG}@example.org>`,
    rest: `Subject: long addresses${CRLF}Cc: <${LONG}@example.net>, bob@example.net${CRLF}${CRLF}body${CRLF}`,
    check: (m) => {
      assert.strictEqual(m.from, "")
      assert.deepStrictEqual(m.cc, ["bob@example.net"])
      assert.include(m.headers["from"], LONG, "the header keeps what came")
    }
  },
  {
    name: "a subject, recipients and attachment names of more distinct words than a search vector holds (1 MB)",
    rest: `Subject: ${words(30_000)}${CRLF}Cc: ${words(2_000, "@example.net, ")}@example.net${CRLF}MIME-Version: 1.0${CRLF}Content-Type: multipart/mixed; boundary="sep"${CRLF}${CRLF}` +
      `--sep${CRLF}Content-Type: text/plain${CRLF}${CRLF}${words(14_000)}${CRLF}` +
      Array.from({ length: 40 }, () => `--sep${CRLF}Content-Type: application/octet-stream${CRLF}Content-Disposition: attachment; filename="${words(3_000)}"${CRLF}${CRLF}x${CRLF}`).join("") +
      `--sep--${CRLF}`,
    check: (m) => assert.lengthOf(m.attachments, 40)
  },
  {
    name: "a NUL in a header's name and value",
    rest: `Subject: header nul${CRLF}X-Odd\0Name: odd\0value${CRLF}${CRLF}body${CRLF}`,
    check: (m) => assert.strictEqual(m.headers["x-odd\uFFFDname"], "odd\uFFFDvalue")
  }
]

/** The shape's raw bytes, to `to`, with its own Message-ID (latin1: every char one byte). */
const rawOf = (shape: Shape, to: string, id: string): Buffer =>
  Buffer.from(`From: ${shape.from ?? "Ann <ann@example.org>"}${CRLF}To: ${to}${CRLF}Message-ID: ${shape.id?.(id) ?? `<${id}@example.org>`}${CRLF}${shape.rest}`, "latin1")

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
  const get = (path: string) => app.request("GET", `/v0/inboxes/${inbox.inbox_id}${path}`, { key: org.key })
  /** The bytes of a download, as they came (TestApp's `text` would decode them). */
  const bytes = (path: string) =>
    Effect.promise(async () => {
      const response = await app.fetch(new Request(`http://${TEST_HOST}/v0/inboxes/${inbox.inbox_id}${path}`, { headers: { authorization: `Bearer ${org.key}` } }))
      return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) }
    })
  const inboundRaw = (raw: Buffer) =>
    app.request("POST", `/inbound/raw?to=${encodeURIComponent(inbox.email)}`, {
      body: new Uint8Array(raw),
      headers: { "x-inbound-secret": TEST_INBOUND_SECRET, "content-type": "message/rfc822" }
    })
  /** Every message of the inbox by Message-ID, with its id. */
  const stored = Effect.map(get("/messages?limit=100"), (r) => new Map((r.body.messages as Array<{ message_id: string; rfc_message_id?: string }>).map((m) => [m.rfc_message_id, m.message_id])))
  /** The id of the one message stored since `before` (a `stored` map). */
  const newest = (before: ReadonlyMap<string | undefined, string>) =>
    Effect.map(stored, (now) => {
      const added = [...now.values()].filter((id) => ![...before.values()].includes(id))
      assert.lengthOf(added, 1)
      return added[0]!
    })
  return { app, org, inbox, get, bytes, inboundRaw, stored, newest }
})

/** The stored message checks out: the shape's fields, an event with it, and its raw download ends with (or is) `raw`. */
const verify = (w: Effect.Success<typeof setUp>, shape: Shape, messageId: string, raw: Buffer, exact: boolean) =>
  Effect.gen(function*() {
    const message = yield* w.get(`/messages/${messageId}`)
    assert.strictEqual(message.status, 200, message.text)
    shape.check(message.body as Shown)
    const download = yield* w.bytes(`/messages/${messageId}/raw/download`)
    assert.strictEqual(download.status, 200)
    if (exact) assert.isTrue(download.bytes.equals(raw), `${shape.name}: the raw download is the bytes sent`)
    else assert.isTrue(download.bytes.subarray(download.bytes.length - raw.length).equals(raw), `${shape.name}: the raw download ends with the bytes sent`)
    const attachment = (message.body as Shown).attachments[0]
    if (attachment !== undefined) {
      const file = yield* w.bytes(`/messages/${messageId}/attachments/${attachment.attachment_id}/raw`)
      assert.strictEqual(file.status, 200)
    }
    const events = yield* w.app.request("GET", "/v0/events", { key: w.org.key })
    assert.isTrue(
      (events.body.events as Array<{ event_type: string; message?: { message_id: string } }>).some((e) => e.event_type === "message.received" && e.message?.message_id === messageId),
      `${shape.name}: message.received was recorded`
    )
  })

for (const storage of storages()) {
  const engine = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storage.layer, { inboundSecret: TEST_INBOUND_SECRET })))
  const receiver = SmtpReceiver.layer({ host: "127.0.0.1", port: 0 })
  layer(receiver.pipe(Layer.provideMerge(engine)), { timeout: "120 seconds" })(`mail PostgreSQL cannot hold as it is (${storage.name})`, (it) => {
    it.effect("/inbound/raw stores each shape with 200: the raw download is byte-identical, the parsed fields hold U+FFFD", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        for (const [i, shape] of shapes.entries()) {
          const raw = rawOf(shape, w.inbox.email, `http-${i}`)
          const res = yield* w.inboundRaw(raw)
          assert.strictEqual(res.status, 200, `${shape.name}: ${res.text}`)
          yield* verify(w, shape, res.body.delivered[0].message_id, raw, true)
        }
      }))

    it.effect("the SMTP receiver answers each shape 250 and stores it: the raw download is the receiver's Received-SPF and Authentication-Results headers, then the bytes sent", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: (yield* SmtpReceiver).port, secure: false, ignoreTLS: true })
        for (const [i, shape] of shapes.entries()) {
          const raw = rawOf(shape, w.inbox.email, `smtp-${i}`)
          const before = yield* w.stored
          const sent = yield* Effect.promise(() =>
            smtp.sendMail({ envelope: { from: "ann@example.org", to: [w.inbox.email] }, raw }).then(
              (info) => info.response,
              (error: { response?: string }) => `refused: ${error.response}`
            )
          )
          assert.match(sent, /^250 /, shape.name)
          const id = yield* w.newest(before)
          yield* verify(w, shape, id, raw, false)
          const download = yield* w.bytes(`/messages/${id}/raw/download`)
          assert.match(download.bytes.subarray(0, download.bytes.length - raw.length).toString("latin1"), /^Authentication-Results: /m)
        }
      }))

    it.effect("a NUL or a lone surrogate in the SMTP envelope's MAIL FROM is answered 250 and stored; the receiver's headers name it with U+FFFD", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const port = (yield* SmtpReceiver).port
        const shape: Shape = { name: "envelope", rest: `Subject: envelope${CRLF}${CRLF}body${CRLF}`, check: () => {} }
        for (const [i, from] of ["a\0b@example.org", "a\ud800b@example.org"].entries()) {
          const raw = rawOf(shape, w.inbox.email, `envelope-${i}`)
          const sent = yield* Effect.promise(() =>
            nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true }).sendMail({ envelope: { from, to: [w.inbox.email] }, raw }).then(
              (info) => info.response,
              (error: { response?: string }) => `refused: ${error.response}`
            )
          )
          assert.match(sent, /^250 /, from)
          const id = (yield* w.stored).get(`<envelope-${i}@example.org>`)
          const message = (yield* w.get(`/messages/${id}`)).body as Shown
          // the NUL is gone by the time the headers name the sender; a lone surrogate went on the wire as U+FFFD in UTF-8
          assert.include(message.headers["authentication-results"], i === 0 ? "smtp.mailfrom=ab@example.org" : "smtp.mailfrom=\"a\uFFFDb@example.org\"")
        }
      }))

    it.effect("such a message delivered at once with good ones is stored with them all in a shared batch: none fails, no batch is split", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const split = yield* Metric.value(OperatorMetrics.inboundBatchesSplit)
        const good: Shape = { name: "good", rest: `Subject: good${CRLF}${CRLF}nothing odd${CRLF}`, check: () => {} }
        // every shape among good messages, all in flight at once: the writers take them in batches
        const all = Array.from({ length: 4 * shapes.length }, (_, i) => (i % 4 === 1 ? shapes[i >> 2]! : good))
        const answers = yield* Effect.forEach(all, (shape, i) => w.inboundRaw(rawOf(shape, w.inbox.email, `batch-${i}`)), { concurrency: "unbounded" })
        assert.deepStrictEqual(answers.map((a) => a.status), all.map(() => 200), answers.map((a) => a.text).join("\n"))
        const stored = new Set((yield* w.stored).values())
        for (const [i, answer] of answers.entries()) assert.isTrue(stored.has(answer.body.delivered[0].message_id), `message ${i} is stored`)
        assert.strictEqual((yield* Metric.value(OperatorMetrics.inboundBatchesSplit)).count, split.count, "no batch failed and was written again one delivery at a time")
      }))
  })
}
