import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { MailParser, parse } from "../../src/mail/parse.ts"
import { fixture } from "./fixtures.ts"

const read = (name: string) => parse(fixture(name))

for (
  const [name, parserLayer] of [
    ["worker pool", MailParser.layerWith({ inlineSmall: false })],
    ["in-thread", MailParser.layerInline],
    ["default: small plain messages in-thread, the rest in the pool", MailParser.layer]
  ] as const
) {
  layer(parserLayer)(`Mail.parse (${name})`, (it) => {
    it.effect("decodes RFC 2047 encoded words in from, to, cc, subject and attachment names", () =>
      Effect.gen(function*() {
        const { message, attachments } = yield* read("encoded-words.eml")
        assert.strictEqual(message.from, "José Martínez <jose@example.es>")
        assert.deepStrictEqual(message.to, ["Renée <renee@example.fr>", "\"Lee, Ann\" <ann@example.org>"])
        assert.deepStrictEqual(message.cc, ["山田太郎 <taro@example.jp>"])
        assert.strictEqual(message.subject, "Ménage à trois et café")
        assert.strictEqual(message.headers["subject"], "Ménage à trois et café")
        assert.strictEqual(message.headers["x-raw-utf8"], "naïve façade")
        assert.strictEqual(message.text?.trim(), "Bonjour, le ménage est prévu demain.")
        assert.strictEqual(message.date, "2025-07-02T07:15:00.000Z")
        assert.deepStrictEqual(message.attachments, [{ filename: "résumé.pdf", content_type: "application/pdf", content_disposition: "attachment", size: 19 }])
        assert.strictEqual(Buffer.from(attachments[0]?.content ?? []).subarray(0, 5).toString(), "%PDF-")
      }))

    it.effect("gives the content-type header as JSON of value and params", () =>
      Effect.gen(function*() {
        const { message } = yield* read("encoded-words.eml")
        assert.deepStrictEqual(JSON.parse(message.headers["content-type"] ?? ""), { value: "multipart/mixed", params: { boundary: "sep" } })
      }))

    it.effect("decodes a declared latin-1 body and headers", () =>
      Effect.gen(function*() {
        const { message } = yield* read("latin1.eml")
        assert.strictEqual(message.from, "François <f@example.fr>")
        assert.strictEqual(message.subject, "Déjà vu")
        assert.strictEqual(message.text?.trim(), "Chère collègue, voilà le café.")
      }))

    it.effect("reads bodies with an unknown or missing charset as UTF-8", () =>
      Effect.gen(function*() {
        const { message } = yield* read("wrong-charset.eml")
        assert.strictEqual(message.text?.trim(), "Price: 5 €, naïve")
        assert.strictEqual(message.html, "<p>No charset: été</p>")
      }))

    it.effect("walks nested multiparts: alternative bodies, related inline image with content_id, attachment", () =>
      Effect.gen(function*() {
        const { message, attachments } = yield* read("nested.eml")
        assert.strictEqual(message.text, "Plain version of the report.")
        assert.include(message.html ?? "", "cid:logo@example.org")
        assert.deepStrictEqual(message.attachments, [
          { filename: "logo.png", content_type: "image/png", content_disposition: "inline", size: 70, content_id: "logo@example.org" },
          { filename: "data.csv", content_type: "text/csv", content_disposition: "attachment", size: 7 }
        ])
        assert.strictEqual(attachments.length, 2)
        assert.strictEqual(Buffer.from(attachments[1]?.content ?? []).toString(), "a,b\n1,2")
        // the digest each attachment is stored under comes with it, so its bytes are hashed once
        for (const a of attachments) assert.strictEqual(a.sha256, createHash("sha256").update(a.content).digest("hex"))
      }))

    it.effect("keeps winmail.dat (TNEF) as an attachment", () =>
      Effect.gen(function*() {
        const { message, attachments } = yield* read("tnef.eml")
        assert.deepStrictEqual(message.attachments.map((a) => [a.filename, a.content_type, a.content_disposition]), [["winmail.dat", "application/ms-tnef", "attachment"]])
        assert.strictEqual(attachments[0]?.content[0], 0x78) // TNEF signature 0x223e9f78, little-endian
        assert.strictEqual(message.text?.trim(), "See the notes attached.")
      }))

    it.effect("derives text from HTML when the message has no text part", () =>
      Effect.gen(function*() {
        const root = (yield* read("html-only.eml")).message
        assert.strictEqual(root.text, "Weekly news\n\nFirst item & second item.\n\nRead more.")
        assert.include(root.html ?? "", "<h1>Weekly news</h1>")
        assert.strictEqual(root.preview, "Weekly news First item & second item. Read more.")
        const nested = (yield* read("html-only-multipart.eml")).message
        assert.strictEqual(nested.text, "Hello Ann,\nyour order shipped.")
      }))

    it.effect("reads a multipart whose boundary parameter is missing", () =>
      Effect.gen(function*() {
        const { message } = yield* read("missing-boundary.eml")
        assert.strictEqual(message.text?.trim(), "Body that should still be readable.")
      }))

    it.effect("gives threading headers, the new content without quoted history, and a preview of it", () =>
      Effect.gen(function*() {
        const { message } = yield* read("reply.eml")
        assert.strictEqual(message.rfc_message_id, "<reply-2@example.com>")
        assert.strictEqual(message.in_reply_to, "<orig-1@example.org>")
        assert.deepStrictEqual(message.references, ["<root-0@example.org>", "<orig-1@example.org>"])
        assert.include(message.text ?? "", "> Lunch tomorrow?")
        assert.strictEqual(message.extracted_text, "Yes, noon works.")
        assert.strictEqual(message.preview, "Yes, noon works.")
        assert.strictEqual(message.size, fixture("reply.eml").byteLength)
      }))

    it.effect("puts U+FFFD where PostgreSQL cannot hold a code point (NUL, lone surrogate) in every field, keeping attachment bytes as they came", () =>
      Effect.gen(function*() {
        const { message, attachments } = yield* read("unstorable.eml")
        assert.strictEqual(message.from, "\uFFFDA <ann@example.org>")
        assert.strictEqual(message.subject, "\uFFFDA report")
        assert.strictEqual(message.headers["to"], "\"Bob\uFFFDLee\" <bob@example.org>")
        assert.strictEqual(message.headers["x-odd\uFFFDname"], "odd\uFFFDvalue")
        assert.strictEqual(message.text, "Quoted\uFFFDprintable, and a raw \uFFFD byte.")
        assert.strictEqual(message.html, "<p>HTML with a raw \uFFFD byte.</p>")
        assert.strictEqual(message.preview, "Quoted\uFFFDprintable, and a raw \uFFFD byte.")
        assert.deepStrictEqual(message.attachments.map((a) => [a.filename, a.content_id]), [["\uFFFDA", "part\uFFFDone@example.org"], ["nul\uFFFDname.txt", undefined]])
        // the metadata beside the bytes is the model's
        assert.deepStrictEqual(attachments.map((a) => a.meta), message.attachments)
        assert.strictEqual(Buffer.from(attachments[1]?.content ?? []).toString("latin1"), "bytes\0kept")
        assert.notMatch(JSON.stringify(message), /\\u0000|\\ud[89a-f]/i, "nothing in the model PostgreSQL's jsonb refuses")
      }))

    it.effect("reads a raw 8-bit header as UTF-8 even when it holds U+FFFD itself, and as latin-1 when it is not UTF-8", () =>
      Effect.gen(function*() {
        const raw = Buffer.concat([
          Buffer.from("From: a@x.org\r\nTo: b@y.org\r\nX-Utf8: caf"),
          Buffer.from([0xc3, 0xa9, 0x20, 0xef, 0xbf, 0xbd]),
          Buffer.from("\r\nX-Latin: caf"),
          Buffer.from([0xe9]),
          Buffer.from("\r\n\r\nbody\r\n")
        ])
        const { message } = yield* parse(raw)
        assert.strictEqual(message.headers["x-utf8"], "café \uFFFD")
        assert.strictEqual(message.headers["x-latin"], "café")
      }))

    it.effect("leaves optional fields absent rather than undefined", () =>
      Effect.gen(function*() {
        const { message } = yield* read("latin1.eml")
        for (const key of ["cc", "html", "in_reply_to", "references", "date", "extracted_html"]) assert.isFalse(key in message, key)
      }))

    it.effect("keeps a large base64 attachment's bytes, its size and the digest it is stored under", () =>
      Effect.gen(function*() {
        // large enough to be sent back from the worker in its own ArrayBuffer (parse-core.ts, ownBytes)
        const bytes = Buffer.from(Array.from({ length: 150_000 }, (_, i) => (i * 7919) % 251))
        const raw = Buffer.from(
          `From: a@x.org\r\nTo: b@y.org\r\nSubject: big\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n` +
            `--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--b\r\nContent-Type: application/octet-stream; name="big.bin"\r\n` +
            `Content-Transfer-Encoding: base64\r\n\r\n${bytes.toString("base64").replace(/.{76}/g, "$&\r\n")}\r\n--b--\r\n`
        )
        const { attachments, message } = yield* parse(raw)
        assert.deepStrictEqual(message.attachments, [{ filename: "big.bin", content_type: "application/octet-stream", content_disposition: "attachment", size: bytes.byteLength }])
        assert.strictEqual(attachments[0]?.content.byteLength, bytes.byteLength)
        assert.isTrue(Buffer.from(attachments[0]?.content ?? []).equals(bytes))
        assert.strictEqual(attachments[0]?.sha256, createHash("sha256").update(bytes).digest("hex"))
      }))

    it.effect("leaves the message's own bytes as they were (quoted-printable and base64 bodies are decoded elsewhere)", () =>
      Effect.gen(function*() {
        const raw = Buffer.from(
          `From: a@x.org\r\nTo: b@y.org\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n` +
            `--b\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ncaf=C3=A9 soft=\r\nbreak  \r\n` +
            `--b\r\nContent-Type: text/csv; name="a.csv"\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from("a,b\n1,2\n").toString("base64")}\r\n` +
            `--b\r\nContent-Type: application/octet-stream; name="q.bin"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=00=01=02x\r\n--b--\r\n`
        )
        // the quoted-printable decoder writes over the bytes it decodes (parse-core.ts,
        // WholeDecoder): over a copy, which mailparser makes of its input today and the
        // decoder makes itself when a body comes in one piece
        const before = Buffer.from(raw)
        const { message, attachments } = yield* parse(raw)
        assert.strictEqual(message.text, "café softbreak")
        assert.deepStrictEqual(attachments.map((a) => Buffer.from(a.content).toString("latin1")), ["a,b\n1,2\n", "\x00\x01\x02x"])
        assert.isTrue(raw.equals(before))
      }))

    it.effect("collapses whitespace in the preview and cuts it near 200 characters", () =>
      Effect.gen(function*() {
        const body = Array.from({ length: 120 }, (_, i) => `word${i}`).join("  \n\t ")
        const raw = Buffer.from(`From: a@x.org\r\nTo: b@y.org\r\nSubject: long\r\n\r\n${body}\r\n`)
        const { message } = yield* parse(raw)
        assert.isAtMost(message.preview.length, 200)
        assert.isAbove(message.preview.length, 150)
        assert.notMatch(message.preview, /\s{2}|\n/)
      }))
  })
}

const flowed = (body: string, params = "") =>
  Buffer.from(
    `From: a@x.org\r\nTo: b@y.org\r\nSubject: f\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8; format=flowed${params}\r\n` +
      `Content-Transfer-Encoding: 8bit\r\n\r\n${body.replace(/\n/g, "\r\n")}`
  )

// RFC 3676, decoded by mail/flowed.ts (parse-core.ts takes flowed parts from mailparser)
describe("Mail.parse format=flowed", () => {
  const textOf = (raw: Buffer) => parse(raw).pipe(Effect.map(({ message }) => message.text), Effect.provide(MailParser.layerInline))

  it.effect("never joins lines of different quote depth", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* textOf(flowed("> the question ends soft \nthe answer\n")), "> the question ends soft \nthe answer")
      assert.strictEqual(yield* textOf(flowed(">> deeper soft \n> shallower\n")), ">> deeper soft \n> shallower")
    }))

  it.effect("joins soft-broken lines of one quote depth without repeating the quote marks", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* textOf(flowed("> a soft \n> continued\n>\n> next\n")), "> a soft continued\n>\n> next")
    }))

  it.effect("undoes space-stuffing", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* textOf(flowed(" From the start\n >not a quote\n")), "From the start\n>not a quote")
    }))

  it.effect("honours DelSp=yes, and keeps the space without it", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* textOf(flowed("問題ござ \nいません。\n", "; DelSp=Yes")), "問題ございません。")
      assert.strictEqual(yield* textOf(flowed("two \nwords\n")), "two words")
    }))

  it.effect("keeps the signature separator a hard break", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* textOf(flowed("reply\n-- \nJane\n")), "reply\n-- \nJane")
    }))
})

describe("Mail.parse edge cases", () => {
  it.effect("reads a nested multipart whose boundary parameter is missing", () =>
    Effect.gen(function*() {
      const raw = Buffer.from([
        "From: a@x.org", "To: b@y.org", "Subject: nested", "MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="outer"', "",
        "--outer", "Content-Type: multipart/alternative", "", "--inner", "Content-Type: text/plain", "", "plain words",
        "--inner", "Content-Type: text/html", "", "<p>html words</p>", "--inner--", "",
        "--outer", "Content-Type: multipart/related", "", "--rel", "Content-Type: text/plain", "", "second part", "--rel--", "--outer--", ""
      ].join("\r\n"))
      const { message } = yield* parse(raw).pipe(Effect.provide(MailParser.layerInline))
      assert.include(message.text ?? "", "plain words")
      assert.include(message.text ?? "", "second part")
      assert.include(message.html ?? "", "<p>html words</p>")
      assert.deepStrictEqual(message.attachments, [])
    }))

  it.effect("reads a multipart whose boundary parameter is missing however its type is capitalised", () =>
    Effect.gen(function*() {
      for (const type of ["multipart/mixed", "Multipart/Mixed", "MULTIPART/MIXED"]) {
        const raw = Buffer.from([
          "From: a@x.org", "Subject: caps", `Content-Type: ${type}`, "", "--sep", "Content-Type: text/plain", "", "first part",
          "--sep", "Content-Type: text/plain", "", "second part", "--sep--", ""
        ].join("\r\n"))
        const { message } = yield* parse(raw).pipe(Effect.provide(MailParser.layerInline))
        assert.strictEqual(message.text, "first part\nsecond part", type)
      }
    }))

  it.effect("fails with a typed MailParseError for a message over the size limit", () =>
    Effect.gen(function*() {
      const error = yield* parse(new Uint8Array(2048)).pipe(
        Effect.provide(MailParser.layerInlineWith({ limits: { maxRawBytes: 1024 } })),
        Effect.flip
      )
      assert.strictEqual(error._tag, "MailParseError")
      assert.strictEqual(error.reason, "too_large")
    }))

  it.effect("joins repeated headers: one line per Received, comma-separated addresses", () =>
    Effect.gen(function*() {
      const raw = Buffer.from("Received: from a\r\nReceived: from b\r\nTo: x@y.org\r\nTo: z@y.org\r\nFrom: q@y.org\r\nSubject: s\r\n\r\nhi\r\n")
      const { message } = yield* parse(raw).pipe(Effect.provide(MailParser.layerInline))
      assert.strictEqual(message.headers["received"], "from a\nfrom b")
      assert.strictEqual(message.headers["to"], "x@y.org, z@y.org")
      assert.deepStrictEqual(message.to, ["x@y.org", "z@y.org"])
    }))

  it.effect("shows an inline attached message's sender, subject, date and recipients above its body, in text and HTML", () =>
    Effect.gen(function*() {
      const raw = Buffer.from([
        "From: x@example.org", "Subject: fwd", 'Content-Type: multipart/mixed; boundary="b1"', "", "--b1",
        "Content-Type: text/plain", "", "See below.", "--b1", "Content-Type: message/rfc822", "Content-Disposition: inline", "",
        "From: =?utf-8?q?J=C3=B6rg?= <jorg@example.de>", "To: Ann <ann@example.org>", "Cc: Team: a@x.org, b@x.org;",
        "Subject: =?utf-8?b?SGFsbG8gV8O2cmxk?=", "Date: Mon, 04 Mar 2024 12:00:02 +0000", "Content-Type: text/html", "",
        "<p>Inner</p>", "--b1--", ""
      ].join("\r\n"))
      const { message } = yield* parse(raw).pipe(Effect.provide(MailParser.layerInline))
      assert.strictEqual(
        message.text,
        'See below.\n\nFrom: "Jörg" <jorg@example.de>\nSubject: Hallo Wörld\nDate: Mon, 04 Mar 2024 12:00:02 GMT\nTo: "Ann" <ann@example.org>\nCc: "Team": a@x.org, b@x.org;\n\n'
      )
      assert.include(message.html ?? "", '<span class="mp_address_name">J&#xF6;rg</span> &lt;<a href="mailto:jorg@example.de" class="mp_address_email">jorg@example.de</a>&gt;')
      assert.include(message.html ?? "", "<strong>Hallo W&#xF6;rld</strong>")
      assert.include(message.html ?? "", '<span class="mp_address_name">Team: </span><span class="mp_address_group">')
      assert.include(message.html ?? "", "<p>Inner</p>")
    }))

  it.effect("parses an empty message into a model with empty fields", () =>
    Effect.gen(function*() {
      const { message } = yield* parse(new Uint8Array(0)).pipe(Effect.provide(MailParser.layerInline))
      assert.strictEqual(message.from, "")
      assert.deepStrictEqual(message.to, [])
      assert.strictEqual(message.subject, "")
      assert.strictEqual(message.size, 0)
    }))
})
