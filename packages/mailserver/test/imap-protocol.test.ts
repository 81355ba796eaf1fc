/**
 * The IMAP protocol layer on its own (imap/parser.ts, imap/mime.ts): framing commands with
 * synchronising and non-synchronising literals, reading atoms, strings, literals and lists,
 * sequence sets; the sections, ENVELOPE and BODYSTRUCTURE of a nested message. And a fuzz
 * run: generated and mutated commands either parse or fail with a SyntaxError, never
 * another error. The conversations with real clients are packages/http/test/imap*.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { addressesOf, bodyStructureOf, envelopeOf, parsePart, sectionOf } from "../src/imap/mime.ts"
import { compactSet, decodeMailboxName, encodeMailboxName, frame, parseSet, SyntaxError, textOf, tokenize } from "../src/imap/parser.ts"

const b = (s: string) => Buffer.from(s, "latin1")

describe("IMAP command syntax", () => {
  it("a command is framed with its literals; a synchronising literal asks for a continuation, LITERAL+ does not", () => {
    const whole = frame(b("a1 LOGIN {5}\r\nalice {3}\r\nkey\r\nrest"))
    assert.strictEqual(whole.kind, "command")
    assert.strictEqual(whole.kind === "command" && whole.consumed, "a1 LOGIN {5}\r\nalice {3}\r\nkey\r\n".length)
    const waiting = frame(b("a2 APPEND INBOX {10}\r\nabc"))
    assert.isTrue(waiting.kind === "incomplete" && waiting.literal?.size === 10)
    const plus = frame(b("a3 APPEND INBOX {10+}\r\nabc"))
    assert.isTrue(plus.kind === "incomplete" && plus.literal === undefined)
    assert.strictEqual(frame(b("a4 NOOP")).kind, "incomplete")
    assert.strictEqual(frame(b(`a5 ${"x".repeat(70_000)}`)).kind, "too-long")
  })

  it("atoms keep their brackets whole, strings unescape, literals are bytes, lists nest", () => {
    const tokens = tokenize(b(`a FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (FROM TO)]<0.100> "q\\"x" {3}\r\nA\r\n)`))
    assert.deepStrictEqual(tokens.slice(0, 3).map(textOf), ["a", "FETCH", "1:*"])
    const list = tokens[3]
    assert.isTrue(list?.kind === "list")
    const items = list?.kind === "list" ? list.items : []
    assert.deepStrictEqual(items.map(textOf), ["UID", "BODY.PEEK[HEADER.FIELDS (FROM TO)]<0.100>", "q\"x", "A\r\n"])
    assert.throws(() => tokenize(b("a (unclosed")), SyntaxError)
    assert.throws(() => tokenize(b("a \"unclosed")), SyntaxError)
  })

  it("sequence sets read * as the highest number, and come back compact", () => {
    assert.deepStrictEqual(parseSet("1:3,7,9:*", 12), [[1, 3], [7, 7], [9, 12]])
    assert.deepStrictEqual(parseSet("*:5", 3), [[3, 5]])
    assert.throws(() => parseSet("1:x", 3), SyntaxError)
    assert.strictEqual(compactSet([5, 1, 2, 3, 9]), "1:3,5,9")
  })

  it("mailbox names in modified UTF-7: RFC 3501's examples, & as &-, and every name back as it was", () => {
    assert.strictEqual(encodeMailboxName("~peter/mail/台北/日本語"), "~peter/mail/&U,BTFw-/&ZeVnLIqe-")
    assert.strictEqual(decodeMailboxName("~peter/mail/&U,BTFw-/&ZeVnLIqe-"), "~peter/mail/台北/日本語")
    assert.strictEqual(encodeMailboxName("reçus & factures"), "re&AOc-us &- factures")
    assert.strictEqual(decodeMailboxName("re&AOc-us &- factures"), "reçus & factures")
    for (const name of ["inbox", "café", "😀 emoji", "a&b", "ünïcödé/ñ", "日本"]) assert.strictEqual(decodeMailboxName(encodeMailboxName(name)), name)
  })

  it("fuzz: 3,000 generated and mutated commands parse or fail with a SyntaxError, nothing else", () => {
    const seeds = [
      "a1 LOGIN \"user@x\" {4+}\r\npass",
      "a2 UID FETCH 1:* (FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)]<0.10>)",
      "a3 SEARCH OR (FROM \"a\" SUBJECT b) NOT SEEN SINCE 1-Feb-2024",
      "a4 APPEND Drafts (\\Seen) \"01-Jan-2024 00:00:00 +0000\" {5}\r\nhello",
      "a5 STORE 1:3 +FLAGS.SILENT (\\Deleted \\Flagged)"
    ]
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    const alphabet = " ()[]{}<>\"\\*:,.+~\r\n0123456789aZ%\x00\xff"
    for (let i = 0; i < 3000; i++) {
      const base = seeds[i % seeds.length]!.split("")
      for (let k = 0; k < 1 + Math.floor(random() * 6); k++) {
        const at = Math.floor(random() * (base.length + 1))
        const c = alphabet[Math.floor(random() * alphabet.length)]!
        if (random() < 0.5) base.splice(at, 1, c)
        else base.splice(at, 0, c)
      }
      const bytes = b(base.join(""))
      const framed = frame(Buffer.concat([bytes, b("\r\n")]))
      if (framed.kind !== "command") continue
      try {
        tokenize(framed.bytes)
      } catch (e) {
        assert.instanceOf(e, SyntaxError, `${JSON.stringify(base.join(""))}: ${String(e)}`)
      }
    }
  })
})

const NESTED = [
  "From: \"Ann, Lee\" <ann@example.org>",
  "To: bob@example.net, Carol <carol@example.com>",
  "Subject: Nested",
  "Message-ID: <n1@example.org>",
  "Content-Type: multipart/mixed; boundary=\"outer\"",
  "",
  "preamble",
  "--outer",
  "Content-Type: text/plain; charset=utf-8",
  "",
  "Hello body",
  "--outer",
  "Content-Type: message/rfc822",
  "",
  "From: inner@example.org",
  "Subject: Inner",
  "Content-Type: multipart/alternative; boundary=inner",
  "",
  "--inner",
  "Content-Type: text/plain",
  "",
  "inner text",
  "--inner",
  "Content-Type: text/html",
  "",
  "<p>inner</p>",
  "--inner--",
  "--outer--",
  ""
].join("\r\n")

describe("IMAP message structure", () => {
  const raw = Buffer.from(NESTED)
  const root = parsePart(raw)

  it("sections name parts by number, into an attached message too; HEADER.FIELDS picks fields", () => {
    assert.strictEqual(sectionOf(raw, root, "", [])!.toString(), NESTED)
    assert.strictEqual(sectionOf(raw, root, "1", [])!.toString(), "Hello body")
    assert.strictEqual(sectionOf(raw, root, "2.HEADER", [])!.toString(), "From: inner@example.org\r\nSubject: Inner\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n")
    assert.strictEqual(sectionOf(raw, root, "2.1", [])!.toString(), "inner text")
    assert.strictEqual(sectionOf(raw, root, "2.2", [])!.toString(), "<p>inner</p>")
    assert.strictEqual(sectionOf(raw, root, "1.MIME", [])!.toString(), "Content-Type: text/plain; charset=utf-8\r\n\r\n")
    assert.strictEqual(sectionOf(raw, root, "HEADER.FIELDS", ["subject", "message-id"])!.toString(), "Subject: Nested\r\nMessage-ID: <n1@example.org>\r\n\r\n")
    assert.isUndefined(sectionOf(raw, root, "9", []))
  })

  it("ENVELOPE quotes display names with commas and lists every address; BODYSTRUCTURE nests the attached message", () => {
    assert.deepStrictEqual(addressesOf("\"Ann, Lee\" <ann@example.org>, bob@example.net"), [
      { name: "Ann, Lee", mailbox: "ann", host: "example.org" },
      { mailbox: "bob", host: "example.net" }
    ])
    const envelope = envelopeOf(root)
    assert.include(envelope, "((\"Ann, Lee\" NIL \"ann\" \"example.org\"))")
    assert.include(envelope, "((NIL NIL \"bob\" \"example.net\")(\"Carol\" NIL \"carol\" \"example.com\"))")
    const structure = bodyStructureOf(root, true)
    assert.match(structure, /^\(\("TEXT" "PLAIN" \("CHARSET" "utf-8"\)/)
    assert.include(structure, "\"MESSAGE\" \"RFC822\"")
    assert.include(structure, "\"ALTERNATIVE\"")
    assert.include(structure, "\"MIXED\" (\"BOUNDARY\" \"outer\")")
  })
})
