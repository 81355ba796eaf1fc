import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { INLINE_PARSE, MailParser, parse, parsesInline } from "../../src/mail/parse.ts"
import { fixture, hostile } from "./fixtures.ts"

// Liveness, not throughput: a timer that should fire every 10 ms keeps firing while the
// pool chews on hostile messages. The bound (1 s) is ~30x what we measure, so a slow CI
// machine does not make it flaky, yet a parse on the main thread (3 s for the unclosed
// HTML alone) would break it.
describe("Mail.parse bounded cost", () => {
  it.live("keeps the event loop responsive while hostile messages parse", () =>
    Effect.gen(function*() {
      let ticks = 0
      let maxGap = 0
      let last = performance.now()
      const timer = setInterval(() => {
        const now = performance.now()
        maxGap = Math.max(maxGap, now - last)
        last = now
        ticks++
      }, 10)
      const outcomes: Record<string, string> = {}
      for (const [name, make] of Object.entries(hostile)) {
        const before = ticks
        const result = yield* parse(make()).pipe(Effect.result)
        outcomes[name] = result._tag === "Success" ? "ok" : result.failure.reason
        // the worker answers in well under a second; ticks must have kept coming meanwhile
        assert.isAtLeast(ticks, before, name)
      }
      yield* Effect.sleep("30 millis") // let a stall at the very end show up as a gap
      clearInterval(timer)
      assert.isBelow(maxGap, 1000, `longest gap between 10 ms ticks: ${maxGap.toFixed(0)} ms`)
      assert.isAbove(ticks, 5)
      assert.deepStrictEqual(outcomes, {
        "2 MB single-line text part": "ok",
        "2 MB HTML-only, unclosed tags": "ok",
        "2 MB HTML table": "ok",
        "25 MB of attachments": "ok",
        "10,000 MIME parts": "too_many_parts",
        "500 nested multiparts": "ok",
        // both header blocks are over 512 KB: refused by the header limit
        "20,000 To addresses": "header_too_large",
        "50,000 header lines": "header_too_large"
      })
    }).pipe(Effect.provide(MailParser.layer)), { timeout: 60_000 })

  it.live("stops a parse over its time limit with reason timeout, and the next parse still works", () =>
    Effect.gen(function*() {
      const error = yield* parse(hostile["2 MB HTML-only, unclosed tags"]!()).pipe(Effect.flip)
      assert.strictEqual(error.reason, "timeout")
      const { message } = yield* parse(fixture("reply.eml"))
      assert.strictEqual(message.extracted_text, "Yes, noon works.")
    }).pipe(Effect.provide(MailParser.layerWith({ workers: 1, timeout: "100 millis" }))), { timeout: 60_000 })

  it("parses a small plain message on the calling thread, and one over any bound of INLINE_PARSE in the pool", () => {
    const CRLF = "\r\n"
    const plain = (body: string, headers = "") =>
      Buffer.from(`From: Ann <ann@x.org>${CRLF}To: Bob <bob@y.org>${CRLF}Subject: Hi${CRLF}Message-ID: <1@x.org>${CRLF}${headers}${CRLF}${body}${CRLF}`)
    assert.isTrue(parsesInline(plain("Hello, see you at noon.")))
    assert.isTrue(parsesInline(fixture("reply.eml")))
    const bounds: Record<string, Buffer> = {
      bytes: plain("a".repeat(INLINE_PARSE.bytes)),
      "angle brackets (tags, addresses)": plain("<b>x</b>".repeat(INLINE_PARSE.angles)),
      "angle brackets in the header (addresses)": plain("x", `References: ${"<r@x.org> ".repeat(INLINE_PARSE.headerAngles)}${CRLF}`),
      "header lines": plain("x", `X-H: v${CRLF}`.repeat(INLINE_PARSE.headerLines)),
      lines: plain(`line${CRLF}`.repeat(INLINE_PARSE.lines)),
      "boundary lines (parts, nesting)": plain(`--b${CRLF}x${CRLF}`.repeat(INLINE_PARSE.boundaries + 1)),
      "encoded words": plain("", `X-Words: ${"=?utf-8?Q?a?= ".repeat(INLINE_PARSE.encodedWords + 1)}${CRLF}`)
    }
    for (const [bound, raw] of Object.entries(bounds)) assert.isFalse(parsesInline(raw), bound)
    // Each hostile message is costly through a shape the bounds count.
    for (const [name, make] of Object.entries(hostile)) assert.isFalse(parsesInline(make()), name)
    // Just within every bound: on the calling thread.
    const within = plain(`${"<i>".repeat(INLINE_PARSE.angles - 8)}${`--b${CRLF}`.repeat(INLINE_PARSE.boundaries)}`, `X-Words: ${"=?utf-8?Q?a?= ".repeat(INLINE_PARSE.encodedWords)}${CRLF}`)
    assert.isTrue(parsesInline(within))
    // The header's own bound counts the header only: the same brackets in the body are tags.
    assert.isTrue(parsesInline(plain("<r@x.org> ".repeat(INLINE_PARSE.headerAngles))))
    assert.isTrue(parsesInline(plain(`X-H: v${CRLF}`.repeat(INLINE_PARSE.headerLines))))
  })

  it.live("keeps every attachment byte of a 25 MB message", () =>
    Effect.gen(function*() {
      const { message, attachments } = yield* parse(hostile["25 MB of attachments"]!())
      assert.deepStrictEqual(message.attachments.map((a) => a.size), Array(5).fill(5 * 1024 * 1024))
      assert.isTrue(attachments.every((a) => a.content.byteLength === 5 * 1024 * 1024 && a.content[12345] === 7))
    }).pipe(Effect.provide(MailParser.layer)), { timeout: 60_000 })
})
