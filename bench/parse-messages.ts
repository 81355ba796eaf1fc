/**
 * The messages of the parse benchmark (bench/parse.ts, bench/parse-loop.ts): three
 * synthetic sizes and the reply corpus. Erasable TypeScript only, so the profiling loop
 * runs under Node's own type stripping without a loader in the profile.
 */
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

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

const corpusDir = fileURLToPath(new URL("../packages/testkit/fixtures/mail/replies/", import.meta.url))
/** The reply corpus: real-client shapes, most of them replies with quoted history. */
export const corpus: ReadonlyArray<Buffer> = readdirSync(corpusDir).filter((f) => f.endsWith(".eml")).sort()
  .map((f) => readFileSync(`${corpusDir}${f}`))
