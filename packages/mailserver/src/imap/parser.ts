/**
 * IMAP command syntax (RFC 9051 section 9, RFC 7888 LITERAL+): framing a command out of the
 * bytes a client sent (lines, and literals `{n}` / `{n+}` whose bytes follow their line), and
 * reading its arguments as atoms, strings and parenthesised lists. Written for this server;
 * limits keep a hostile client from making it hold much: a command line, a literal and the
 * nesting of lists are bounded.
 */

export type Token =
  | { readonly kind: "atom"; readonly value: string }
  | { readonly kind: "string"; readonly value: Buffer }
  | { readonly kind: "list"; readonly items: ReadonlyArray<Token> }

export const MAX_LINE = 64 * 1024
export const MAX_LITERAL = 50 * 1024 * 1024
const MAX_NESTING = 16

export class SyntaxError extends Error {}

export type Framed =
  | { readonly kind: "command"; readonly bytes: Buffer; readonly consumed: number }
  /** Waiting for more bytes; `literal` is the size of a synchronising literal the client waits to be told to send. */
  | { readonly kind: "incomplete"; readonly literal?: { readonly at: number; readonly size: number } }
  | { readonly kind: "too-long"; readonly consumed: number }

/** One whole command at the start of `buffer`, with its literals, or what is still missing. */
export const frame = (buffer: Buffer): Framed => {
  let at = 0
  for (;;) {
    const lf = buffer.indexOf(10, at)
    if (lf < 0) return buffer.length - at > MAX_LINE ? { kind: "too-long", consumed: buffer.length } : { kind: "incomplete" }
    if (lf - at > MAX_LINE) return { kind: "too-long", consumed: lf + 1 }
    const lineEnd = lf > at && buffer[lf - 1] === 13 ? lf - 1 : lf
    const line = buffer.subarray(at, lineEnd).toString("latin1")
    const literal = /\{(\d{1,10})(\+)?\}$/.exec(line)
    if (literal === null) return { kind: "command", bytes: buffer.subarray(0, lineEnd), consumed: lf + 1 }
    const size = Number(literal[1])
    if (size > MAX_LITERAL) return { kind: "too-long", consumed: lf + 1 }
    if (buffer.length < lf + 1 + size) {
      return literal[2] === "+" ? { kind: "incomplete" } : { kind: "incomplete", literal: { at: lf, size } }
    }
    at = lf + 1 + size
  }
}

const ATOM_END = new Set([" ", "(", ")", "\r", "\n", "{", "\""])

/** Reads the arguments of a framed command: `tag`, then tokens. */
export const tokenize = (bytes: Buffer): ReadonlyArray<Token> => {
  let i = 0
  const text = bytes.toString("latin1")
  const readList = (depth: number, closer: string | undefined): Array<Token> => {
    if (depth > MAX_NESTING) throw new SyntaxError("lists nested too deep")
    const items: Array<Token> = []
    for (;;) {
      while (text[i] === " ") i++
      if (i >= text.length) {
        if (closer !== undefined) throw new SyntaxError("unclosed list")
        return items
      }
      const c = text[i]!
      if (c === ")") {
        if (closer !== ")") throw new SyntaxError("unexpected )")
        i++
        return items
      }
      if (c === "(") {
        i++
        items.push({ kind: "list", items: readList(depth + 1, ")") })
        continue
      }
      if (c === "\"") {
        i++
        let value = ""
        for (;;) {
          if (i >= text.length) throw new SyntaxError("unclosed string")
          const d = text[i]!
          if (d === "\\") {
            value += text[i + 1] ?? ""
            i += 2
            continue
          }
          if (d === "\"") {
            i++
            break
          }
          value += d
          i++
        }
        items.push({ kind: "string", value: Buffer.from(value, "latin1") })
        continue
      }
      if (c === "{" || (c === "~" && text[i + 1] === "{")) {
        const m = /^~?\{(\d+)\+?\}\r?\n/.exec(text.slice(i, i + 16))
        if (m === null) throw new SyntaxError("bad literal")
        i += m[0].length
        const size = Number(m[1])
        items.push({ kind: "string", value: bytes.subarray(i, i + size) })
        i += size
        continue
      }
      // An atom; brackets may hold spaces and parentheses (BODY[HEADER.FIELDS (FROM)]<0.10>).
      let value = ""
      let bracket = 0
      while (i < text.length) {
        const d = text[i]!
        if (d === "[") bracket++
        else if (d === "]") bracket--
        else if (bracket === 0 && ATOM_END.has(d)) break
        value += d
        i++
      }
      if (value === "") throw new SyntaxError(`unexpected ${c}`)
      items.push({ kind: "atom", value })
    }
  }
  return readList(0, undefined)
}

/** A token as text (an atom's name, a string's UTF-8). */
export const textOf = (token: Token | undefined): string | undefined =>
  token === undefined ? undefined : token.kind === "atom" ? token.value : token.kind === "string" ? token.value.toString("utf8") : undefined

/** A sequence set (`1:3,7,9:*`) against the highest number in use. */
export const parseSet = (value: string, max: number): ReadonlyArray<readonly [number, number]> => {
  if (!/^(\d+|\*)(:(\d+|\*))?(,(\d+|\*)(:(\d+|\*))?)*$/.test(value)) throw new SyntaxError(`bad sequence set ${value}`)
  return value.split(",").map((range) => {
    const [a = "", b] = range.split(":")
    const n = (s: string) => s === "*" ? max : Number(s)
    const lo = n(a)
    const hi = b === undefined ? lo : n(b)
    return [Math.min(lo, hi), Math.max(lo, hi)] as const
  })
}

export const inSet = (set: ReadonlyArray<readonly [number, number]>, n: number) => set.some(([lo, hi]) => n >= lo && n <= hi)

/** A compact set of numbers for responses (`1:3,7`). */
export const compactSet = (numbers: ReadonlyArray<number>): string => {
  const sorted = [...numbers].sort((a, b) => a - b)
  const out: Array<string> = []
  let i = 0
  while (i < sorted.length) {
    let j = i
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}:${sorted[j]}`)
    i = j + 1
  }
  return out.join(",")
}

/**
 * Mailbox names in modified UTF-7 (RFC 3501 5.1.3), as clients that have not enabled
 * UTF8=ACCEPT send and expect them: printable ASCII stands for itself (`&` as `&-`), any
 * other run is `&`, its UTF-16BE in base64 with `,` for `/` and no padding, then `-`.
 */
export const encodeMailboxName = (name: string): string => {
  let out = ""
  let run: Array<number> = []
  const flush = () => {
    if (run.length === 0) return
    const bytes = Buffer.alloc(run.length * 2)
    run.forEach((unit, i) => bytes.writeUInt16BE(unit, i * 2))
    out += `&${bytes.toString("base64").replace(/=+$/, "").replace(/\//g, ",")}-`
    run = []
  }
  for (let i = 0; i < name.length; i++) {
    const unit = name.charCodeAt(i)
    if (unit >= 0x20 && unit <= 0x7e) {
      flush()
      out += unit === 0x26 ? "&-" : name[i]
    } else run.push(unit)
  }
  flush()
  return out
}

/** A modified UTF-7 mailbox name as text; a malformed `&...-` run is left as it is. */
export const decodeMailboxName = (name: string): string =>
  name.replace(/&([A-Za-z0-9+,]*)-/g, (whole, encoded: string) => {
    if (encoded === "") return "&"
    const bytes = Buffer.from(encoded.replace(/,/g, "/"), "base64")
    if (bytes.length % 2 !== 0) return whole
    let text = ""
    for (let i = 0; i < bytes.length; i += 2) text += String.fromCharCode(bytes.readUInt16BE(i))
    return text
  })
