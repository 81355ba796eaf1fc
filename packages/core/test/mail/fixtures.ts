/**
 * Helpers shared by the mail tests and benchmarks: reading the parse fixtures, and the
 * hostile messages that the bounded-cost rules are measured and tested against.
 */
import { readFileSync } from "node:fs"

const dir = new URL("../../../testkit/fixtures/mail/parse/", import.meta.url)

export const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(name, dir)))

export const fixtureNames = ["encoded-words.eml", "html-only-multipart.eml", "html-only.eml", "latin1.eml", "missing-boundary.eml", "nested.eml", "reply.eml", "tnef.eml", "unstorable.eml", "wrong-charset.eml"] as const

const CRLF = "\r\n"
const head = (contentType: string) =>
  `From: a@x.org${CRLF}To: b@y.org${CRLF}Subject: hostile${CRLF}Message-ID: <h@x.org>${CRLF}MIME-Version: 1.0${CRLF}Content-Type: ${contentType}${CRLF}${CRLF}`

/** Messages built to be expensive; each is a few hundred KB to 35 MB. */
export const hostile: Record<string, () => Uint8Array> = {
  "2 MB single-line text part": () => Buffer.from(head("text/plain; charset=utf-8") + "a".repeat(2 * 1024 * 1024) + CRLF),
  "2 MB HTML-only, unclosed tags": () => Buffer.from(head("text/html; charset=utf-8") + "<div><p>hello <b>world</b></p>".repeat(70_000) + CRLF),
  "2 MB HTML table": () => Buffer.from(head("text/html") + "<table>" + "<tr><td>a</td><td>b</td></tr>".repeat(70_000) + "</table>" + CRLF),
  "25 MB of attachments": () => {
    const b64 = Buffer.alloc(5 * 1024 * 1024, 7).toString("base64").replace(/.{76}/g, `$&${CRLF}`)
    let s = head('multipart/mixed; boundary="b"') + `--b${CRLF}Content-Type: text/plain${CRLF}${CRLF}hi${CRLF}`
    for (let i = 0; i < 5; i++) {
      s += `--b${CRLF}Content-Type: application/octet-stream${CRLF}Content-Disposition: attachment; filename="f${i}.bin"${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}${b64}${CRLF}`
    }
    return Buffer.from(s + `--b--${CRLF}`)
  },
  "10,000 MIME parts": () => {
    let s = head('multipart/mixed; boundary="b"')
    for (let i = 0; i < 10_000; i++) s += `--b${CRLF}Content-Type: text/plain${CRLF}${CRLF}part ${i}${CRLF}`
    return Buffer.from(s + `--b--${CRLF}`)
  },
  "500 nested multiparts": () => {
    let s = head('multipart/mixed; boundary="b0"')
    for (let i = 1; i < 500; i++) s += `--b${i - 1}${CRLF}Content-Type: multipart/mixed; boundary="b${i}"${CRLF}${CRLF}`
    s += `--b499${CRLF}Content-Type: text/plain${CRLF}${CRLF}deep${CRLF}`
    for (let i = 499; i >= 0; i--) s += `--b${i}--${CRLF}`
    return Buffer.from(s)
  },
  "20,000 To addresses": () =>
    Buffer.from(`To: ${Array.from({ length: 20_000 }, (_, i) => `"N ${i}" <u${i}@x.org>`).join(`,${CRLF} `)}${CRLF}` + head("text/plain") + "x" + CRLF),
  "50,000 header lines": () => Buffer.from(Array.from({ length: 50_000 }, (_, i) => `X-H${i}: v${CRLF}`).join("") + head("text/plain") + "x" + CRLF)
}
