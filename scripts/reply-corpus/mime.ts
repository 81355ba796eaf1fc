/**
 * The MIME writing of the reply corpus, done the way the clients do it: quoted-printable
 * with soft breaks at 76 columns, base64 in 76-column lines, RFC 2047 encoded words for
 * non-ASCII headers, CRLF line ends. Deliberately independent of the engine and of
 * nodemailer, so that a fixture shows client output rather than our own composer's.
 */
import { Buffer } from "node:buffer"

export const CRLF = "\r\n"

/** Quoted-printable of `text` in `charset` (utf-8 unless said), lines in CRLF. */
export const qp = (text: string, charset: BufferEncoding | "latin1" = "utf8"): string => {
  const out: Array<string> = []
  for (const line of text.split(/\r?\n/)) {
    const bytes = Buffer.from(line, charset)
    let encoded = ""
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i] ?? 0
      const last = i === bytes.length - 1
      const plain = (b >= 33 && b <= 126 && b !== 61) || ((b === 32 || b === 9) && !last)
      encoded += plain ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, "0")}`
    }
    // soft breaks: at most 75 characters and "=", never inside an escape
    while (encoded.length > 76) {
      let cut = 75
      if (encoded[cut - 1] === "=") cut -= 1
      else if (encoded[cut - 2] === "=") cut -= 2
      out.push(`${encoded.slice(0, cut)}=`)
      encoded = encoded.slice(cut)
    }
    out.push(encoded)
  }
  return out.join(CRLF)
}

export const base64 = (text: string | Buffer): string =>
  (typeof text === "string" ? Buffer.from(text, "utf8") : text).toString("base64").replace(/.{76}/g, `$&${CRLF}`)

/** An RFC 2047 word when the value is not ASCII. */
export const word = (value: string, mode: "B" | "Q" = "B"): string => {
  if (/^[\x20-\x7e]*$/.test(value)) return value
  if (mode === "B") return `=?UTF-8?B?${Buffer.from(value, "utf8").toString("base64")}?=`
  const q = [...Buffer.from(value, "utf8")]
    .map((b) => (b === 32 ? "_" : (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("")
  return `=?UTF-8?Q?${q}?=`
}

export const mailbox = (p: { readonly name: string; readonly address: string }): string =>
  /^[\x20-\x7e]*$/.test(p.name) ? `${/[(),.:;<>@[\]"]/.test(p.name) ? `"${p.name}"` : p.name} <${p.address}>` : `${word(p.name)} <${p.address}>`

export const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

export interface Part {
  readonly headers: ReadonlyArray<string>
  readonly body: string
}

export const textPart = (text: string, options: { charset?: string; encoding?: "quoted-printable" | "base64" | "8bit" | "7bit"; flowed?: boolean; delsp?: boolean; subtype?: "plain" | "html" } = {}): Part => {
  const charset = options.charset ?? "UTF-8"
  const encoding = options.encoding ?? "quoted-printable"
  const subtype = options.subtype ?? "plain"
  const params = `${options.flowed === true ? `; format=flowed${options.delsp === true ? "; delsp=yes" : ""}` : ""}`
  const body = encoding === "quoted-printable"
    ? qp(text, /^(iso-8859-1|windows-1252)$/i.test(charset) ? "latin1" : "utf8")
    : encoding === "base64"
    ? base64(text)
    : text.replace(/\r?\n/g, CRLF)
  return {
    headers: [`Content-Type: text/${subtype}; charset="${charset}"${params}`, `Content-Transfer-Encoding: ${encoding}`],
    body
  }
}

export const multipart = (subtype: string, boundary: string, parts: ReadonlyArray<Part>): Part => ({
  headers: [`Content-Type: multipart/${subtype};${CRLF}\tboundary="${boundary}"`],
  body: parts.map((p) => `--${boundary}${CRLF}${p.headers.join(CRLF)}${CRLF}${CRLF}${p.body}${CRLF}`).join("") + `--${boundary}--${CRLF}`
})

/** The whole message: top headers, then the root part's headers, then its body. */
export const message = (headers: ReadonlyArray<string>, root: Part, mimeVersion = "MIME-Version: 1.0"): string =>
  [...headers, mimeVersion, ...root.headers].join(CRLF) + CRLF + CRLF + root.body
