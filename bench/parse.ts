/**
 * Parse benchmark: messages per second on one core for Mail.parse (in-thread, the work a
 * pool worker does per message) beside bare mailparser `simpleParser` on the same bytes in
 * the same run, plus the worker pool with one message in flight (adds the thread hop).
 *
 *   node --import tsx bench/parse.ts            prints a markdown table
 *   node --import tsx bench/parse.ts --write    also replaces "## Parse" in BENCHMARKS.md
 *
 * `benchParse()` is exported for bench/run.ts.
 */
import { Layer, ManagedRuntime } from "effect"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { MailParser, parse } from "../packages/core/src/mail/parse.ts"
import { defaultLimits, parseRaw } from "../packages/core/src/mail/parse-core.ts"
import { machine, writeSection } from "./report.ts"

// bare mailparser, default options, exactly as a caller without our module would use it
const { simpleParser } = createRequire(import.meta.url)("mailparser") as { simpleParser: (raw: Buffer) => Promise<unknown> }

const SECONDS = Number(process.env["BENCH_PARSE_SECONDS"] ?? "3")
const CRLF = "\r\n"
const words = "the quarterly figures look fine but the invoice for march is still open please check ".split(" ")
const prose = (bytes: number) => {
  let s = ""
  for (let i = 0; s.length < bytes; i++) s += words[i % words.length] + (i % 14 === 13 ? `.${CRLF}` : " ")
  return s.slice(0, bytes)
}
const headers = (subject: string, contentType: string) =>
  [
    "From: Ann Lee <ann@example.org>", "To: Bob Stone <bob@example.com>, carol@example.net", `Subject: ${subject}`,
    "Date: Fri, 04 Jul 2025 08:30:00 +0000", "Message-ID: <bench-1@example.org>", "In-Reply-To: <bench-0@example.org>",
    "References: <bench-0@example.org>", "MIME-Version: 1.0", `Content-Type: ${contentType}`
  ].join(CRLF) + CRLF + CRLF

export const benchMessages: ReadonlyArray<readonly [string, Buffer]> = [
  ["5 KB text", Buffer.from(headers("Text", "text/plain; charset=utf-8") + prose(5 * 1024 - 400) + CRLF)],
  ["32 KB HTML", (() => {
    const html = `<html><body>${Array.from({ length: 200 }, (_, i) => `<p style="margin:0 0 8px">${prose(90)} <a href="https://example.com/${i}">link</a></p>`).join("\n")}</body></html>`
    return Buffer.from(
      headers("HTML", 'multipart/alternative; boundary="alt"') +
        `--alt${CRLF}Content-Type: text/plain; charset=utf-8${CRLF}${CRLF}${prose(4000)}${CRLF}` +
        `--alt${CRLF}Content-Type: text/html; charset=utf-8${CRLF}${CRLF}${html.slice(0, 32 * 1024 - 5000)}${CRLF}--alt--${CRLF}`
    )
  })()],
  ["280 KB with attachment", (() => {
    const pdf = Buffer.alloc(200 * 1024, 0x5a).toString("base64").replace(/.{76}/g, `$&${CRLF}`)
    return Buffer.from(
      headers("Report", 'multipart/mixed; boundary="mix"') +
        `--mix${CRLF}Content-Type: text/plain; charset=utf-8${CRLF}${CRLF}${prose(2000)}${CRLF}` +
        `--mix${CRLF}Content-Type: application/pdf; name="report.pdf"${CRLF}Content-Disposition: attachment; filename="report.pdf"${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}${pdf}${CRLF}--mix--${CRLF}`
    )
  })()]
]

/** Sequential calls for SECONDS after a short warm-up; messages per second. */
const rate = async (run: () => Promise<unknown>): Promise<number> => {
  const warmUntil = performance.now() + 300
  while (performance.now() < warmUntil) await run()
  let n = 0
  const start = performance.now()
  const end = start + SECONDS * 1000
  while (performance.now() < end) {
    await run()
    n++
  }
  return n / ((performance.now() - start) / 1000)
}

export interface ParseFigure {
  readonly message: string
  readonly bytes: number
  readonly bare: number
  readonly ours: number
  readonly pooled: number
}

export const benchParse = async (): Promise<ReadonlyArray<ParseFigure>> => {
  const pool = ManagedRuntime.make(Layer.fresh(MailParser.layerWith({ workers: 1 })))
  const figures: Array<ParseFigure> = []
  for (const [message, raw] of benchMessages) {
    const check = await parseRaw(raw, defaultLimits)
    if (!check.ok) throw new Error(`${message} did not parse: ${check.message}`)
    const bare = await rate(() => simpleParser(raw))
    const ours = await rate(() => parseRaw(raw, defaultLimits))
    const pooled = await rate(() => pool.runPromise(parse(raw)))
    figures.push({ message, bytes: raw.byteLength, bare, ours, pooled })
  }
  await pool.dispose()
  return figures
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")


export const parseSection = (figures: ReadonlyArray<ParseFigure>) =>
  [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}.`,
    `One message at a time for ${SECONDS} s each after a warm-up. "Mail.parse" is the in-thread work (mailparser with our options, model, html-to-text when needed, reply extraction, preview); "pool" adds the hop to a worker thread and back (one worker, one message in flight). Ratio = Mail.parse / bare simpleParser (bare simpleParser also builds textAsHtml, which we skip).`,
    "",
    "| message | bytes | bare simpleParser msg/s | Mail.parse msg/s | ratio | pool msg/s |",
    "|---|---:|---:|---:|---:|---:|",
    ...figures.map((f) => `| ${f.message} | ${fmt(f.bytes)} | ${fmt(f.bare)} | ${fmt(f.ours)} | ${(f.ours / f.bare).toFixed(2)} | ${fmt(f.pooled)} |`)
  ].join("\n")

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const body = parseSection(await benchParse())
  console.log(body)
  if (process.argv.includes("--write")) writeSection("Parse", body)
}
