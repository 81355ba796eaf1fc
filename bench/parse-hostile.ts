/**
 * The measurements behind Mail.parse's bounded-cost mechanism (see the opening comment of
 * packages/core/src/mail/parse.ts): for each hostile message, wall time, the longest stall
 * of the main event loop and the RSS growth, parsed in-thread and through the worker pool.
 *   node --import tsx bench/parse-hostile.ts
 */
import { Layer, ManagedRuntime } from "effect"
import { INLINE_PARSE, MailParser, parse, parsesInline } from "../packages/core/src/mail/parse.ts"
import { hostile } from "../packages/core/test/mail/fixtures.ts"

const measure = async (run: () => Promise<string>) => {
  let maxGap = 0
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
  }, 5)
  const rss0 = process.memoryUsage().rss
  let peak = rss0
  const mem = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
  const t0 = performance.now()
  const outcome = await run()
  const ms = performance.now() - t0
  await new Promise((r) => setTimeout(r, 30)) // a stall right at the end shows as a gap too
  clearInterval(timer)
  clearInterval(mem)
  return { outcome, ms, maxGap, rss: (Math.max(peak, process.memoryUsage().rss) - rss0) / 2 ** 20 }
}

const inline = ManagedRuntime.make(MailParser.layerInline)
const pool = ManagedRuntime.make(Layer.fresh(MailParser.layerWith({ workers: 1 })))
await pool.runPromise(parse(Buffer.from("Subject: warm-up\r\n\r\nx"))) // start the worker first
const outcomeOf = (rt: typeof inline, raw: Uint8Array) =>
  rt.runPromise(parse(raw)).then(() => "ok", (e: { reason?: string }) => e.reason ?? "error")

console.log("| message | bytes | mode | outcome | ms | longest main-loop stall ms | RSS growth MB |")
console.log("|---|---:|---|---|---:|---:|---:|")
for (const [name, make] of Object.entries(hostile)) {
  const raw = make()
  for (const [mode, rt] of [["in-thread", inline], ["pool", pool]] as const) {
    const m = await measure(() => outcomeOf(rt, raw))
    console.log(`| ${name} | ${raw.byteLength.toLocaleString("en-US")} | ${mode} | ${m.outcome} | ${m.ms.toFixed(0)} | ${m.maxGap.toFixed(0)} | ${m.rss.toFixed(0)} |`)
  }
}
// Messages at the bounds of the calling thread's share (INLINE_PARSE): each is built to be
// as costly as a message `parsesInline` lets through can be, in one of the ways that make
// parsing costly, and is parsed on the calling thread as the pool would: the stall is the
// whole parse. Warmed up first; the worst of 20.
const CRLF = "\r\n"
const top = (contentType: string, extra = "") =>
  `From: a@x.org${CRLF}To: b@y.org${CRLF}Subject: bounds${CRLF}Message-ID: <b@x.org>${CRLF}${extra}MIME-Version: 1.0${CRLF}Content-Type: ${contentType}${CRLF}${CRLF}`
/** Filler lines of 120 characters up to about INLINE_PARSE.bytes, within its line budget. */
const fill = (text: string, lines = 60) => {
  const room = Math.max(0, INLINE_PARSE.bytes - 200 - Buffer.byteLength(text))
  const line = "lorem ipsum dolor sit amet ".repeat(5).slice(0, 118) + CRLF
  return text + line.repeat(Math.min(lines, Math.floor(room / line.length)))
}
const n = (limit: number) => limit - 8
const atBounds: Record<string, () => Uint8Array> = {
  "HTML, nested unclosed tags": () => Buffer.from(fill(top("text/html; charset=utf-8") + "<div><p>hello ".repeat(n(INLINE_PARSE.angles) / 2))),
  "HTML table": () => Buffer.from(fill(top("text/html") + "<table>" + "<tr><td>a</td><td>b</td></tr>".repeat(n(INLINE_PARSE.angles) / 6))),
  "nested multiparts": () => {
    const depth = Math.floor(n(INLINE_PARSE.boundaries) / 2)
    let body = top('multipart/mixed; boundary="b0"')
    for (let i = 1; i < depth; i++) body += `--b${i - 1}${CRLF}Content-Type: multipart/mixed; boundary="b${i}"${CRLF}${CRLF}`
    body += fill(`--b${depth - 1}${CRLF}Content-Type: text/plain${CRLF}${CRLF}deep${CRLF}`)
    for (let i = depth - 1; i >= 0; i--) body += `--b${i}--${CRLF}`
    return Buffer.from(body)
  },
  "header lines": () => Buffer.from(Array.from({ length: n(INLINE_PARSE.headerLines) - 10 }, (_, i) => `X-H${i}: v${CRLF}`).join("") + top("text/plain") + "x" + CRLF),
  "quoted-printable soft breaks": () =>
    Buffer.from(top("text/plain", `Content-Transfer-Encoding: quoted-printable${CRLF}`) + `${"=3D".repeat(8)}=${CRLF}`.repeat(n(INLINE_PARSE.lines) - 10)),
  "addresses": () => Buffer.from(`To: ${Array.from({ length: n(INLINE_PARSE.headerAngles) }, (_, i) => `"N ${i}" <u${i}@x.org>`).join(`,${CRLF} `)}${CRLF}` + top("text/plain") + "x" + CRLF),
  "encoded words": () => Buffer.from(fill(top("text/plain", `X-Words: ${"=?utf-8?Q?=C3=A9t=C3=A9?= ".repeat(n(INLINE_PARSE.encodedWords))}${CRLF}`) + "x" + CRLF)),
  "one long line": () => Buffer.from(top("text/plain; charset=utf-8") + "a".repeat(INLINE_PARSE.bytes - 300) + CRLF),
  "reply with deep quotes": () =>
    Buffer.from(top("text/plain") + "Thanks!" + CRLF + CRLF + "On Mon, Ann wrote:" + CRLF +
      Array.from({ length: n(INLINE_PARSE.lines) - 20 }, (_, i) => `${"> ".repeat(i % 8)}line ${i} quoted`).join(CRLF) + CRLF)
}
console.log("")
console.log(`Messages at the calling thread's bounds (INLINE_PARSE: ${INLINE_PARSE.bytes} bytes, ${INLINE_PARSE.headerAngles} '<' and ${INLINE_PARSE.headerLines} lines in the header, ${INLINE_PARSE.angles} '<' and ${INLINE_PARSE.lines} lines in all, ${INLINE_PARSE.boundaries} boundary lines, ${INLINE_PARSE.encodedWords} encoded words), parsed on the calling thread; worst of 20 after a warm-up:`)
console.log("")
console.log("| message | bytes | parsed on the calling thread | outcome | median ms | worst ms (the stall) |")
console.log("|---|---:|---|---|---:|---:|")
for (const [name, make] of Object.entries(atBounds)) {
  const raw = make()
  await outcomeOf(inline, raw)
  const times: Array<number> = []
  let outcome = ""
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now()
    outcome = await outcomeOf(inline, raw)
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  console.log(`| ${name} | ${raw.byteLength.toLocaleString("en-US")} | ${parsesInline(raw) ? "yes" : "no (pool)"} | ${outcome} | ${times[10]!.toFixed(1)} | ${times[19]!.toFixed(1)} |`)
}
await pool.dispose()
await inline.dispose()
