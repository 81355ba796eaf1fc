/**
 * A message a client wrote itself (SMTP submission, IMAP APPEND, the raw send route), read
 * and touched at the byte level only: its header block split off, an address header read,
 * the Bcc header removed, and the Message-ID and Date a submission server adds when the
 * client left them out (RFC 6409 section 8). Everything else stays as the client wrote it,
 * so what is stored, signed and relayed is the client's own MIME.
 */

const CRLF_CRLF = Buffer.from("\r\n\r\n")
const LF_LF = Buffer.from("\n\n")

/** Where the header block ends: the index of the blank line's first byte, or the length. */
const headerEnd = (raw: Uint8Array): number => {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const crlf = bytes.indexOf(CRLF_CRLF)
  const lf = bytes.indexOf(LF_LF)
  if (crlf < 0 && lf < 0) return bytes.length
  if (crlf < 0) return lf + 1
  if (lf < 0) return crlf + 2
  return Math.min(crlf + 2, lf + 1)
}

/** The header fields in order, each with its raw text (continuation lines included) and its byte range. */
export const headerFields = (raw: Uint8Array): ReadonlyArray<{ readonly name: string; readonly value: string; readonly start: number; readonly end: number }> => {
  const end = headerEnd(raw)
  const text = Buffer.from(raw.buffer, raw.byteOffset, end).toString("latin1")
  const fields: Array<{ name: string; value: string; start: number; end: number }> = []
  const lines = text.split(/(?<=\n)/)
  let offset = 0
  for (const line of lines) {
    const folded = line.startsWith(" ") || line.startsWith("\t")
    const last = fields[fields.length - 1]
    if (folded && last !== undefined) {
      last.value += line.replace(/\r?\n$/, "")
      last.end = offset + line.length
    } else {
      const colon = line.indexOf(":")
      if (colon > 0) fields.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).replace(/\r?\n$/, ""), start: offset, end: offset + line.length })
    }
    offset += line.length
  }
  return fields
}

/** The addresses of an address-list header (To, Cc, Bcc), lower-cased, without display names or groups. */
export const headerAddresses = (raw: Uint8Array, name: string): ReadonlyArray<string> =>
  headerFields(raw).filter((f) => f.name === name).flatMap((f) => addressList(f.value))

/** Splits an address list on commas outside quotes, comments and angle brackets. */
export const addressList = (value: string): ReadonlyArray<string> => {
  const parts: Array<string> = []
  let current = ""
  let quoted = false
  let angle = 0
  let comment = 0
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!
    if (c === "\\" && quoted) {
      current += c + (value[i + 1] ?? "")
      i++
      continue
    }
    if (c === "\"" && comment === 0) quoted = !quoted
    else if (!quoted && c === "(") comment++
    else if (!quoted && c === ")" && comment > 0) comment--
    else if (!quoted && comment === 0 && c === "<") angle++
    else if (!quoted && comment === 0 && c === ">" && angle > 0) angle--
    if ((c === "," || c === ";") && !quoted && angle === 0 && comment === 0) {
      parts.push(current)
      current = ""
      continue
    }
    current += c
  }
  parts.push(current)
  return parts.flatMap((part) => {
    // A group's name ends at its colon: `undisclosed-recipients:` holds no address.
    const bare = part.replace(/\([^)]*\)/g, "").trim().replace(/^[^<>"]*:\s*/, "")
    const angled = /<([^<>]*)>/.exec(bare)
    const address = (angled?.[1] ?? bare).trim().toLowerCase()
    return address.includes("@") ? [address] : []
  })
}

/** The raw message without every field named `name` (lower case). */
export const withoutHeader = (raw: Uint8Array, name: string): Uint8Array => {
  const drop = headerFields(raw).filter((f) => f.name === name)
  if (drop.length === 0) return raw
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const kept: Array<Buffer> = []
  let at = 0
  for (const f of drop) {
    kept.push(bytes.subarray(at, f.start))
    at = f.end
  }
  kept.push(bytes.subarray(at))
  return Buffer.concat(kept)
}

/** The line ending the message's header uses, so added fields match it. */
const eolOf = (raw: Uint8Array) => headerEnd(raw) > 0 && Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).indexOf("\r\n") >= 0 ? "\r\n" : "\n"

/** The raw message with `fields` put first (`Name: value`), in the message's own line ending. */
export const withHeadersFirst = (raw: Uint8Array, fields: ReadonlyArray<readonly [string, string]>): Uint8Array => {
  if (fields.length === 0) return raw
  const eol = eolOf(raw)
  return Buffer.concat([Buffer.from(fields.map(([n, v]) => `${n}: ${v}${eol}`).join(""), "utf8"), Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)])
}

/** RFC 5322 date-time, in UTC. */
export const rfc5322Date = (at: Date): string => {
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${days[at.getUTCDay()]}, ${at.getUTCDate()} ${months[at.getUTCMonth()]} ${at.getUTCFullYear()} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} +0000`
}
