/**
 * Incoming Authentication-Results headers that claim to be ours. A reader trusts an
 * Authentication-Results header by its authserv-id (RFC 8601): ours says what our SMTP
 * receiver checked. One that arrives with the message and carries our authserv-id was
 * written by someone else (a sender forging `dkim=pass` in our name), so before ours is
 * added it is renamed `X-Original-Authentication-Results` (RFC 8601 section 5 allows removal
 * or renaming; renaming keeps the stored message a faithful record of what came). Headers
 * of other authserv-ids are kept as they are, and nothing below the header block is read.
 *
 * Pure, on bytes: the raw message in, the same buffer back when there is nothing to rename.
 */

const RENAMED = Buffer.from("X-Original-")
const FIELD = /(^|\n)(authentication-results[ \t]*:)/gi

/** Where the header block ends: at its first empty line, or the end of the message. */
const headerEnd = (raw: Buffer): number => {
  for (let i = raw.indexOf(0x0a); i >= 0; i = raw.indexOf(0x0a, i + 1)) {
    const next = raw[i + 1]
    if (next === 0x0a || (next === 0x0d && raw[i + 2] === 0x0a)) return i + 1
  }
  return raw.length
}

/** The field's value from `from` up to its end, folded lines joined. */
const fieldValue = (head: string, from: number): string => {
  let end = from
  for (;;) {
    const nl = head.indexOf("\n", end)
    if (nl < 0) return head.slice(from)
    end = nl + 1
    const next = head[end]
    if (next !== " " && next !== "\t") return head.slice(from, nl)
  }
}

/**
 * The authserv-id an Authentication-Results value starts with: comments (nested ones too)
 * and folding skipped, a quoted-string unquoted, lower-cased (it is a domain name in
 * practice); undefined when there is none.
 */
export const authservId = (value: string): string | undefined => {
  let i = 0
  for (;;) {
    while (i < value.length && /\s/.test(value[i]!)) i++
    if (value[i] !== "(") break
    let depth = 0
    for (; i < value.length; i++) {
      const c = value[i]
      if (c === "\\") i++
      else if (c === "(") depth++
      else if (c === ")" && --depth === 0) {
        i++
        break
      }
    }
  }
  if (value[i] === "\"") {
    const close = value.indexOf("\"", i + 1)
    return close < 0 ? undefined : value.slice(i + 1, close).toLowerCase()
  }
  const token = /^[^\s;()"]+/.exec(value.slice(i))?.[0]
  return token === undefined ? undefined : token.toLowerCase()
}

/**
 * `raw` with each top-level Authentication-Results header whose authserv-id is `ours`
 * (case-insensitive) renamed X-Original-Authentication-Results; `raw` itself when none is.
 */
export const renameOurAuthenticationResults = (raw: Uint8Array, ours: string): Uint8Array => {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const end = headerEnd(bytes)
  const head = bytes.toString("latin1", 0, end)
  const id = ours.toLowerCase()
  const at: Array<number> = []
  for (const match of head.matchAll(FIELD)) {
    const name = match.index + match[1]!.length
    if (authservId(fieldValue(head, name + match[2]!.length)) === id) at.push(name)
  }
  if (at.length === 0) return raw
  const pieces: Array<Buffer> = []
  let from = 0
  for (const name of at) {
    pieces.push(bytes.subarray(from, name), RENAMED)
    from = name
  }
  pieces.push(bytes.subarray(from))
  return Buffer.concat(pieces)
}
