/**
 * The MIME structure IMAP shows of a stored message: its parts found by their boundaries in
 * the raw bytes (which the engine keeps exactly as they arrived, so BODY[] is byte-identical
 * to the API's raw message), the ENVELOPE and BODYSTRUCTURE of RFC 9051 section 7.5.2, and
 * the bytes of a section (`BODY[1.2]`, `BODY[HEADER.FIELDS (...)]`, `BODY[TEXT]`, ...).
 * Only encoding for the wire: what a message means is the engine's.
 */

export interface ContentType {
  readonly type: string
  readonly subtype: string
  readonly params: ReadonlyArray<readonly [string, string]>
}

export interface Part {
  /** The header block, with the blank line that ends it. */
  readonly header: Buffer
  readonly body: Buffer
  readonly fields: ReadonlyArray<readonly [string, string]>
  readonly contentType: ContentType
  readonly children: ReadonlyArray<Part>
  /** The message inside a message/rfc822 part. */
  readonly message?: Part
}

const splitHeader = (raw: Buffer): { header: Buffer; body: Buffer } => {
  if (raw.length >= 2 && raw[0] === 13 && raw[1] === 10) return { header: raw.subarray(0, 2), body: raw.subarray(2) }
  if (raw.length >= 1 && raw[0] === 10) return { header: raw.subarray(0, 1), body: raw.subarray(1) }
  const crlf = raw.indexOf("\r\n\r\n")
  const lf = raw.indexOf("\n\n")
  if (crlf < 0 && lf < 0) return { header: raw, body: Buffer.alloc(0) }
  const end = crlf >= 0 && (lf < 0 || crlf + 2 <= lf + 1) ? crlf + 4 : lf + 2
  return { header: raw.subarray(0, end), body: raw.subarray(end) }
}

/** Header fields unfolded, names lower case, in order. */
export const fieldsOf = (header: Buffer): ReadonlyArray<readonly [string, string]> => {
  const out: Array<[string, string]> = []
  for (const line of header.toString("latin1").split(/\r?\n/)) {
    if ((line.startsWith(" ") || line.startsWith("\t")) && out.length > 0) out[out.length - 1]![1] += " " + line.trim()
    else {
      const colon = line.indexOf(":")
      if (colon > 0) out.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()])
    }
  }
  return out
}

const field = (fields: ReadonlyArray<readonly [string, string]>, name: string) => fields.find(([n]) => n === name)?.[1]

/** `type/subtype; a=b; c="d"` (parameters lower-cased by name, values unquoted). */
const parseParams = (value: string): { head: string; params: Array<[string, string]> } => {
  const parts: Array<string> = []
  let current = ""
  let quoted = false
  for (const c of value) {
    if (c === "\"") quoted = !quoted
    if (c === ";" && !quoted) {
      parts.push(current)
      current = ""
    } else current += c
  }
  parts.push(current)
  const params: Array<[string, string]> = []
  for (const p of parts.slice(1)) {
    const eq = p.indexOf("=")
    if (eq <= 0) continue
    const name = p.slice(0, eq).trim().toLowerCase()
    let v = p.slice(eq + 1).trim()
    if (v.startsWith("\"") && v.endsWith("\"") && v.length >= 2) v = v.slice(1, -1).replace(/\\(.)/g, "$1")
    params.push([name, v])
  }
  return { head: (parts[0] ?? "").trim(), params }
}

const contentTypeOf = (fields: ReadonlyArray<readonly [string, string]>, parentDigest: boolean): ContentType => {
  const value = field(fields, "content-type")
  if (value === undefined) return parentDigest ? { type: "message", subtype: "rfc822", params: [] } : { type: "text", subtype: "plain", params: [["charset", "us-ascii"]] }
  const { head, params } = parseParams(value)
  const [type = "text", subtype = "plain"] = head.toLowerCase().split("/").map((s) => s.trim())
  return { type: type || "text", subtype: subtype || "plain", params }
}

/** The parts between the boundary lines of a multipart body. */
const splitMultipart = (body: Buffer, boundary: string): Array<Buffer> => {
  const delimiter = `--${boundary}`
  const parts: Array<Buffer> = []
  let start = -1
  let at = 0
  while (at <= body.length) {
    const lineEnd = body.indexOf("\n", at)
    const end = lineEnd < 0 ? body.length : lineEnd + 1
    const line = body.subarray(at, end).toString("latin1").replace(/\r?\n$/, "")
    if (line.startsWith(delimiter)) {
      const rest = line.slice(delimiter.length)
      if (rest.trim() === "" || rest.startsWith("--")) {
        if (start >= 0) {
          // The line break before a delimiter belongs to the delimiter.
          let stop = at
          if (stop > start && body[stop - 1] === 10) stop--
          if (stop > start && body[stop - 1] === 13) stop--
          parts.push(body.subarray(start, stop))
        }
        if (rest.startsWith("--")) return parts
        start = end
      }
    }
    if (lineEnd < 0) break
    at = end
  }
  if (start >= 0 && start < body.length) parts.push(body.subarray(start))
  return parts
}

const MAX_DEPTH = 32

export const parsePart = (raw: Buffer, parentDigest = false, depth = 0): Part => {
  const { header, body } = splitHeader(raw)
  const fields = fieldsOf(header)
  const contentType = contentTypeOf(fields, parentDigest)
  if (depth < MAX_DEPTH && contentType.type === "multipart") {
    const boundary = contentType.params.find(([n]) => n === "boundary")?.[1]
    if (boundary !== undefined && boundary !== "") {
      const digest = contentType.subtype === "digest"
      return { header, body, fields, contentType, children: splitMultipart(body, boundary).map((p) => parsePart(p, digest, depth + 1)) }
    }
  }
  if (depth < MAX_DEPTH && contentType.type === "message" && contentType.subtype === "rfc822") {
    return { header, body, fields, contentType, children: [], message: parsePart(body, false, depth + 1) }
  }
  return { header, body, fields, contentType, children: [] }
}

// ---- wire encoding -------------------------------------------------------------------

/** An IMAP string: quoted when it can be, else a literal. */
export const str = (value: string | undefined | null): string => {
  if (value === undefined || value === null) return "NIL"
  if (/[\r\n\0]/.test(value) || value.length > 1000 || /[^\x20-\x7e]/.test(value)) {
    const bytes = Buffer.byteLength(value, "utf8")
    return `{${bytes}}\r\n${value}`
  }
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`
}

interface Address {
  readonly name?: string
  readonly mailbox: string
  readonly host: string
}

/** An address list header as IMAP addresses; groups are flattened. */
export const addressesOf = (value: string | undefined): ReadonlyArray<Address> => {
  if (value === undefined || value.trim() === "") return []
  const out: Array<Address> = []
  let current = ""
  let quoted = false
  let angle = 0
  const flush = () => {
    const part = current.trim().replace(/^[^<>"@]*:\s*/, "").replace(/;\s*$/, "")
    current = ""
    if (part === "") return
    const angled = /^(.*)<([^<>]*)>\s*$/.exec(part)
    const address = (angled?.[2] ?? part.replace(/\([^)]*\)/g, "")).trim()
    const at = address.lastIndexOf("@")
    if (at <= 0) return
    const rawName = angled?.[1]?.trim().replace(/^"(.*)"$/, "$1").replace(/\\(.)/g, "$1")
    out.push({ ...(rawName === undefined || rawName === "" ? {} : { name: rawName }), mailbox: address.slice(0, at), host: address.slice(at + 1) })
  }
  for (const c of value) {
    if (c === "\"") quoted = !quoted
    else if (!quoted && c === "<") angle++
    else if (!quoted && c === ">" && angle > 0) angle--
    if ((c === "," || c === ";") && !quoted && angle === 0) {
      if (c === ";") current += c
      flush()
      continue
    }
    current += c
  }
  flush()
  return out
}

const addressList = (value: string | undefined): string => {
  const list = addressesOf(value)
  return list.length === 0 ? "NIL" : `(${list.map((a) => `(${str(a.name)} NIL ${str(a.mailbox)} ${str(a.host)})`).join("")})`
}

/** ENVELOPE (RFC 9051 section 7.5.2). */
export const envelopeOf = (part: Part): string => {
  const f = (name: string) => field(part.fields, name)
  const from = f("from")
  return `(${[
    str(f("date")),
    str(f("subject")),
    addressList(from),
    addressList(f("sender") ?? from),
    addressList(f("reply-to") ?? from),
    addressList(f("to")),
    addressList(f("cc")),
    addressList(f("bcc")),
    str(f("in-reply-to")),
    str(f("message-id"))
  ].join(" ")})`
}

const paramList = (params: ReadonlyArray<readonly [string, string]>) =>
  params.length === 0 ? "NIL" : `(${params.map(([n, v]) => `${str(n.toUpperCase())} ${str(v)}`).join(" ")})`

const lines = (body: Buffer) => {
  let n = 0
  for (const b of body) if (b === 10) n++
  return body.length > 0 && body[body.length - 1] !== 10 ? n + 1 : n
}

/** BODYSTRUCTURE (`extended`) or BODY. */
export const bodyStructureOf = (part: Part, extended: boolean): string => {
  const ct = part.contentType
  const disposition = () => {
    const value = field(part.fields, "content-disposition")
    if (value === undefined) return "NIL"
    const { head, params } = parseParams(value)
    return `(${str(head.toLowerCase())} ${paramList(params)})`
  }
  if (ct.type === "multipart" && part.children.length > 0) {
    const children = part.children.map((c) => bodyStructureOf(c, extended)).join("")
    return extended
      ? `(${children} ${str(ct.subtype.toUpperCase())} ${paramList(ct.params)} ${disposition()} ${str(field(part.fields, "content-language"))} ${str(field(part.fields, "content-location"))})`
      : `(${children} ${str(ct.subtype.toUpperCase())})`
  }
  const encoding = (field(part.fields, "content-transfer-encoding") ?? "7bit").toUpperCase()
  const fields = [
    str(ct.type.toUpperCase()),
    str(ct.subtype.toUpperCase()),
    paramList(ct.params.length === 0 && ct.type === "text" ? [["charset", "us-ascii"]] : ct.params),
    str(field(part.fields, "content-id")),
    str(field(part.fields, "content-description")),
    str(encoding),
    String(part.body.length)
  ]
  if (ct.type === "message" && ct.subtype === "rfc822" && part.message !== undefined) {
    fields.push(envelopeOf(part.message), bodyStructureOf(part.message, extended), String(lines(part.body)))
  } else if (ct.type === "text") {
    fields.push(String(lines(part.body)))
  }
  if (extended) fields.push(str(field(part.fields, "content-md5")), disposition(), str(field(part.fields, "content-language")), str(field(part.fields, "content-location")))
  return `(${fields.join(" ")})`
}

// ---- sections ------------------------------------------------------------------------

/** The part a section path (`1.2`) names; a non-multipart message is its own part 1. */
const partAt = (root: Part, path: ReadonlyArray<number>): Part | undefined => {
  let part: Part | undefined = root
  for (const n of path) {
    if (part === undefined) return undefined
    const container: Part = part.message !== undefined && part !== root ? part.message : part
    if (container.children.length > 0) part = container.children[n - 1]
    else part = n === 1 ? container : undefined
  }
  return part
}

const headerFields = (header: Buffer, names: ReadonlyArray<string>, not: boolean): Buffer => {
  const wanted = new Set(names.map((n) => n.toLowerCase()))
  const kept: Array<string> = []
  let keep = false
  for (const line of header.toString("latin1").split(/(?<=\n)/)) {
    if (line === "\r\n" || line === "\n") break
    if (line.startsWith(" ") || line.startsWith("\t")) {
      if (keep) kept.push(line)
      continue
    }
    const colon = line.indexOf(":")
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : ""
    keep = wanted.has(name) !== not
    if (keep) kept.push(line)
  }
  return Buffer.from(kept.join("") + "\r\n", "latin1")
}

/**
 * The bytes of a section: `` (the whole message), `HEADER`, `TEXT`, `HEADER.FIELDS (..)`,
 * `HEADER.FIELDS.NOT (..)`, `1.2`, `1.2.MIME`, `1.2.HEADER` ... ; undefined when there is no such part.
 */
export const sectionOf = (raw: Buffer, root: Part, section: string, fieldNames: ReadonlyArray<string>): Buffer | undefined => {
  const upper = section.toUpperCase()
  const match = /^((?:\d+\.)*\d+)?(?:\.?(HEADER\.FIELDS\.NOT|HEADER\.FIELDS|HEADER|TEXT|MIME))?$/.exec(upper)
  if (match === null) return undefined
  const path = match[1] === undefined ? [] : match[1].split(".").map(Number)
  const what = match[2]
  if (path.length === 0) {
    if (what === undefined) return raw
    if (what === "HEADER") return root.header
    if (what === "TEXT") return root.body
    if (what === "HEADER.FIELDS" || what === "HEADER.FIELDS.NOT") return headerFields(root.header, fieldNames, what === "HEADER.FIELDS.NOT")
    return undefined
  }
  const part = partAt(root, path)
  if (part === undefined) return undefined
  if (what === undefined) return part === root ? root.body : part.body
  if (what === "MIME") return part === root ? root.header : part.header
  const message = part.message
  if (message === undefined) return undefined
  if (what === "HEADER") return message.header
  if (what === "TEXT") return message.body
  return headerFields(message.header, fieldNames, what === "HEADER.FIELDS.NOT")
}
