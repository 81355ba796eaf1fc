/**
 * The parsing work itself: raw RFC 822 bytes to the spec's message model, plain promises and
 * pure functions with no Effect, so the same code runs in the parsing worker
 * (parse-worker.ts) and in-thread (parse.ts `layerInline`).
 *
 * mailparser does the MIME work; this module decides what the model says: addresses in
 * display-name-and-address form, header map with encoded words decoded, text derived from
 * HTML when no text part exists, the reply extraction and preview, and every size bound
 * (`ParseLimits`) that keeps one hostile message from costing more than a few hundred ms of
 * CPU or a few times its size in memory. The figures behind the bounds are in parse.ts.
 *
 * Runs under Node's own type stripping in the worker: erasable TypeScript only (no enums,
 * no parameter properties) and type-only imports marked `import type`.
 */
import { compile as compileHtmlToText } from "html-to-text"
import libmime from "libmime"
import { type AddressObject, type Attachment, type EmailAddress, MailParser, type ParsedMail, type SimpleParserOptions } from "mailparser"
import { isAscii } from "node:buffer"
import { Transform } from "node:stream"
import { extractReply } from "./extract.ts"
import { decodeFlowed } from "./flowed.ts"
import type { MailParseFailure } from "./errors.ts"
import type { AttachmentMeta, ParsedAttachment, ParsedMessage, ParseResult } from "./model.ts"
import { storable, storableText } from "./storable.ts"

export interface ParseLimits {
  /** raw bytes accepted at all; checked before parsing */
  readonly maxRawBytes: number
  /** MIME nodes in the tree (mailsplit `maxChildNodes`); bounds depth too */
  readonly maxParts: number
  /** header bytes of one MIME node (mailsplit `maxHeadSize`) */
  readonly maxHeaderBytes: number
  /** characters kept of `text` and of `html`; the rest is cut */
  readonly maxBodyChars: number
  /** characters of HTML converted when text must be derived from HTML */
  readonly maxHtmlToTextChars: number
  /** characters of text and of HTML handed to reply extraction */
  readonly maxExtractChars: number
  /** header lines kept in the `headers` map; later lines are dropped */
  readonly maxHeaderLines: number
}

export const defaultLimits: ParseLimits = {
  maxRawBytes: 50 * 1024 * 1024,
  maxParts: 1000,
  maxHeaderBytes: 512 * 1024,
  maxBodyChars: 4 * 1024 * 1024,
  maxHtmlToTextChars: 1024 * 1024,
  maxExtractChars: 512 * 1024,
  maxHeaderLines: 2000
}

export const PREVIEW_CHARS = 200

export type ParseOutcome =
  | { readonly ok: true; readonly result: ParseResult }
  | { readonly ok: false; readonly reason: MailParseFailure; readonly message: string }

/** Parses `raw`; never rejects: every failure is a `{ ok: false }` outcome. */
export const parseRaw = (raw: Uint8Array, limits: ParseLimits = defaultLimits): Promise<ParseOutcome> => {
  if (raw.byteLength > limits.maxRawBytes) {
    return Promise.resolve(failure("too_large", `Message of ${raw.byteLength} bytes is over the ${limits.maxRawBytes} byte limit`))
  }
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const scan = scanMultipart(bytes)
  const input = repairBoundaries(bytes, scan.at, limits.maxHeaderBytes)
  // a repair rewrites Content-Type headers: ask the bytes that are parsed
  const alternative = input === bytes ? scan.alternative : scanMultipart(input).alternative
  return Promise.resolve()
    .then(() => parseMime(input, parseOptions(limits)))
    .then((mail): ParseOutcome => ({ ok: true, result: toResult(mail, raw.byteLength, limits, alternative) }), (error: unknown) => classify(error))
    .then(undefined, (error: unknown) => failure("malformed", `Could not build the message model: ${describe(error)}`))
}

/** mailparser's options: the work we do not need skipped, the size bounds set.
 * mailsplit reads the two size options from the same object; @types/mailparser omits them. */
export const parseOptions = (limits: ParseLimits): SimpleParserOptions & { readonly maxChildNodes: number; readonly maxHeadSize: number } => ({
  // the engine serves attachments itself: keep cid: links, skip data: inlining
  keepCidLinks: true,
  skipImageLinks: true,
  // textAsHtml and html-to-text are unbounded sync work inside mailparser (seconds on a
  // 2 MB table); text is derived from HTML below, with limits
  skipTextToHtml: true,
  skipTextLinks: true,
  skipHtmlToText: true,
  // mailparser hashes every attachment's bytes (md5 by default): with SHA-256 its checksum
  // is the digest the attachment is stored under (ParsedAttachment.sha256), so the bytes are
  // not hashed a second time on the main thread (SHA-256 costs what sha1 did here, and md5
  // 2.2 times that, on CPUs with SHA instructions)
  checksumAlgo: "sha256",
  maxChildNodes: limits.maxParts,
  maxHeadSize: limits.maxHeaderBytes
})

/** What the model is built from: the parts of mailparser's `ParsedMail` that `toResult` reads. */
export type MimeParts = Pick<ParsedMail, "headerLines" | "text" | "html" | "attachments" | "subject" | "from" | "to" | "cc">

/** The header keys mailparser reads back from a node's decoded headers that reach the
 * model: the top node's subject and addresses (we read the rest of the top header from
 * `headerLines`) and an attachment's Content-ID; and, of the body of a message/rfc822
 * part, the header it writes into the text and HTML. */
const READ_HEADERS = new Set(["subject", "from", "to", "cc", "content-id"])
const META_HEADERS = new Set(["from", "subject", "date", "to", "cc", "bcc", "content-id"])

type HeaderLine = { readonly key: string; readonly line: string }
type MailParserInternals = {
  processHeaders(lines: ReadonlyArray<HeaderLine>): unknown
  createNode(node: { readonly parentNode?: { readonly contentType?: string } }): unknown
  getAddressesHTML(value: unknown): string
  getAddressesText(value: unknown): string
  getTextContent(): unknown
}
const base = MailParser.prototype as unknown as MailParserInternals

/** mailparser's MailParser minus wasted steps:
 * - it decodes every header line of every MIME node (libmime, addresses parsed, DKIM
 *   signatures parsed as structured values, ...) into maps of which it reads a few keys;
 *   the model's header map decodes the top node's lines itself. Only READ_HEADERS lines
 *   (META_HEADERS) are decoded here, each as mailparser decodes it;
 * - it renders every address header as HTML and as text, which only the header of an
 *   attached message's body shows: other nodes' addresses get empty renderings;
 * - at the end of the input it ends the last part's decoder, which its flush has already
 *   ended, and Node builds (then drops) an ERR_STREAM_ALREADY_FINISHED error with its stack
 *   trace for it, a few per cent of a whole parse in a CPU profile.
 * And it decodes format=flowed parts with libmime's decodeFlowed, which runs a soft-broken
 * quote into the reply under it: a flowed part is taken from it when its node is created and
 * its text decoded by flowed.ts once every part has ended, before the text is put together.
 * Each override is mailparser 3.9.31's method with the unread work skipped. */
class Mime extends MailParser {
  /** the node being created is the body of a message/rfc822 part (mailparser's showMeta) */
  private meta = false
  /** the parts whose text is format=flowed, with their DelSp */
  private readonly flowed: Array<{ readonly part: { textContent?: string }; readonly delSp: boolean }> = []
  processHeaders(lines: ReadonlyArray<HeaderLine> | undefined): unknown {
    const read = this.meta ? META_HEADERS : READ_HEADERS
    return base.processHeaders.call(this, (lines ?? []).filter((line) => read.has(line.key)))
  }
  createNode(node: { readonly parentNode?: { readonly contentType?: string }; readonly encoding?: unknown; flowed: boolean; readonly delSp: boolean }): unknown {
    this.meta = node.parentNode?.contentType === "message/rfc822"
    const created = base.createNode.call(this, node) as { decoder?: NodeJS.ReadWriteStream; textContent?: string }
    // mailsplit's node always has the property: clearing it keeps the node's hidden class
    if (node.flowed) {
      this.flowed.push({ part: created, delSp: node.delSp })
      node.flowed = false
    }
    // libqp's or libbase64's decoder, which mailsplit's node gave, swapped for ours before
    // any byte is written to it, with the one listener mailparser put on it. Swapped here
    // rather than by giving each node a getDecoder of its own: a property added to
    // mailsplit's nodes gave them a second hidden class and made its code slower on every
    // message (more instructions outside the collector and compilers, under callgrind)
    if ((node.encoding === "quoted-printable" || node.encoding === "base64") && created.decoder !== undefined) {
      const decoder = node.encoding === "base64" ? new WholeDecoder(decodeBase64, false) : new WholeDecoder(decodeQuotedPrintable, true)
      decoder.on("end", () => void ((this as unknown as { decoderEnded: boolean }).decoderEnded = true))
      created.decoder = decoder
    }
    return created
  }
  getAddressesHTML(value: unknown): string {
    return this.meta ? base.getAddressesHTML.call(this, value) : ""
  }
  getAddressesText(value: unknown): string {
    return this.meta ? base.getAddressesText.call(this, value) : ""
  }
  getTextContent(): unknown {
    for (const { part, delSp } of this.flowed) {
      if (part.textContent !== undefined) part.textContent = decodeFlowed(part.textContent, delSp)
    }
    return base.getTextContent.call(this)
  }
  endStream(this: Mime & { finished: boolean; curnode?: { decoder?: NodeJS.WritableStream & { writableEnded?: boolean } }; waitingEnd?: unknown }) {
    this.finished = true
    const decoder = this.curnode?.decoder
    if (decoder !== undefined && decoder.writableEnded !== true) decoder.end()
    if (typeof this.waitingEnd === "function") this.waitingEnd()
  }
}

/**
 * A part's body gathered, then decoded once at its end by `decode`, where mailsplit's
 * decoders (libqp 2.1.2's and libbase64 1.3.1's `Decoder`) decode it piece by piece:
 * - quoted-printable: libqp reads the bytes as a latin1 string, runs two regex replaces and
 *   a regex count over it, then loops over it a character at a time (a regex test and a
 *   parseInt per escape): a large share of `parseMime` on the reply corpus in a CPU
 *   profile, most of its text parts being quoted-printable. The same three steps on the
 *   bytes, in place, write no string at all (`decodeQuotedPrintable`).
 * - base64: libbase64 turns each piece into a string, strips its line breaks with a regex
 *   replace and decodes it, one stream turn (a setImmediate) a piece: a large attachment's
 *   body was most of the parsing worker's time after mailsplit's own line scan
 *   (bench/PROFILE.md). Node's decoder skips line breaks itself (`decodeBase64`).
 * The gathered pieces are views of the message's bytes, so gathering copies nothing, and a
 * body that came in one piece (nearly every body: mailsplit hands over the lines between
 * two boundaries as one view when the message is written whole) is not copied to decode
 * it unless the decoding writes over it.
 */
class WholeDecoder extends Transform {
  private readonly chunks: Array<Buffer> = []
  private length = 0
  private readonly decode: (bytes: Buffer) => Buffer
  private readonly overwrites: boolean
  /** `overwrites`: `decode` writes over the bytes it is given */
  constructor(decode: (bytes: Buffer) => Buffer, overwrites: boolean) {
    super()
    this.decode = decode
    this.overwrites = overwrites
  }
  override _transform(chunk: Buffer | string, encoding: BufferEncoding, done: () => void): void {
    if (chunk.length === 0) return done()
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk
    this.chunks.push(bytes)
    this.length += bytes.length
    done()
  }
  override _flush(done: () => void): void {
    if (this.length > 0) {
      // a body mailsplit hands over in one piece is decoded where it lies, unless the
      // decoding writes over its input (the message's own bytes)
      const first = this.chunks[0]!
      this.push(this.decode(this.chunks.length === 1 && !this.overwrites ? first : Buffer.concat(this.chunks, this.length)))
    }
    done()
  }
}

const BASE64_ALPHABET = /[A-Za-z0-9+/]/

/**
 * libbase64's decode of a whole body (its Decoder's, but for where that splits a body into
 * pieces: only a body with padding inside it can tell the two apart). libbase64 reads the
 * bytes as an "ascii" string (Node clears each byte's high bit), strips every character
 * outside the alphabet and "=", and decodes with Node, a segment at a time when padding
 * stands inside. Node's own decoder skips what is not in the alphabet too, except that it
 * reads "-" and "_" as the URL-safe alphabet's and stops at the first "="; so a body of
 * ASCII without "-" or "_" whose "=" are all at its end (nearly every body: one search of
 * each byte, in native code) is decoded by Node from its bytes as they are, line breaks
 * and all. Exported for the test against libbase64.
 */
export const decodeBase64 = (bytes: Buffer): Buffer => {
  const pad = bytes.indexOf(0x3d)
  if (isAscii(bytes) && bytes.indexOf(0x2d) < 0 && bytes.indexOf(0x5f) < 0 && (pad < 0 || !BASE64_ALPHABET.test(bytes.toString("latin1", pad)))) {
    return Buffer.from(bytes.toString("latin1"), "base64")
  }
  const text = bytes.toString("ascii").replace(/[^a-zA-Z0-9+/=]/g, "")
  const inside = text.indexOf("=")
  if (inside < 0 || !BASE64_ALPHABET.test(text.slice(inside))) return Buffer.from(text, "base64")
  return Buffer.concat(text.split(/=+/).filter((segment) => segment !== "").map((segment) => Buffer.from(segment, "base64")))
}

const SPACE = 0x20
const TAB = 0x09
const CR = 0x0d
const LF = 0x0a
const EQUALS = 0x3d

const hexValue = (c: number | undefined): number =>
  c === undefined ? -1 : c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1

/**
 * libqp's `decode` of `bytes` (which it overwrites), step for step: (1) spaces and tabs
 * before a CR, an LF or the end go (its `/[\t ]+$/gm`: in a latin1 string no other line
 * terminator can occur); (2) "=" before CRLF, LF or the end goes (a soft line break); (3)
 * "=" and two hex digits become that byte, anything else is copied. Each step only drops
 * bytes, so each writes over what it has read. Exported for the test against libqp.
 */
export const decodeQuotedPrintable = (bytes: Buffer): Buffer => {
  let n = 0
  for (let r = 0; r < bytes.length;) {
    const c = bytes[r]!
    if (c !== SPACE && c !== TAB) {
      bytes[n++] = c
      r++
      continue
    }
    let end = r
    while (end < bytes.length && (bytes[end] === SPACE || bytes[end] === TAB)) end++
    const next = bytes[end]
    if (next === undefined || next === CR || next === LF) {
      r = end
      continue
    }
    while (r < end) bytes[n++] = bytes[r++]!
  }
  let m = 0
  for (let r = 0; r < n;) {
    const c = bytes[r]!
    if (c === EQUALS) {
      if (r + 1 === n) break
      if (bytes[r + 1] === LF) {
        r += 2
        continue
      }
      if (bytes[r + 1] === CR && r + 2 < n && bytes[r + 2] === LF) {
        r += 3
        continue
      }
    }
    bytes[m++] = c
    r++
  }
  let out = 0
  for (let r = 0; r < m;) {
    const c = bytes[r]!
    if (c === EQUALS && r + 2 < m) {
      const high = hexValue(bytes[r + 1])
      const low = hexValue(bytes[r + 2])
      if (high >= 0 && low >= 0) {
        bytes[out++] = high * 16 + low
        r += 3
        continue
      }
    }
    bytes[out++] = c
    r++
  }
  return bytes.subarray(0, out)
}

/**
 * mailparser's `simpleParser`, driving the parser above: the same reading of its output
 * (text and HTML events, attachments read whole, the top headers), without the headers map
 * copies we do not read. Settles once: mailparser may report an error and still end.
 */
export const parseMime = (input: Buffer, options: ReturnType<typeof parseOptions>): Promise<MimeParts> =>
  new Promise((resolve, reject) => {
    const parser = new Mime(options)
    const mail: { -readonly [K in keyof MimeParts]: MimeParts[K] } = { headerLines: [], text: undefined, html: false, attachments: [], subject: undefined }
    let settled = false
    const fail = (error: unknown) => {
      if (!settled) reject(error)
      settled = true
    }
    let reading = false
    const read = (): void => {
      reading = true
      const data = parser.read() as null | { type: "text"; text?: string; html?: string } | (Attachment & { type: "attachment"; content: NodeJS.ReadableStream; release: () => void })
      if (data === null) {
        reading = false
        return
      }
      if (data.type === "text") {
        if ("text" in data) mail.text = data.text
        if ("html" in data) mail.html = data.html ?? false
        return read()
      }
      const chunks: Array<Buffer> = []
      const stream = data.content as NodeJS.ReadableStream
      stream.on("readable", () => {
        for (let chunk = stream.read(); chunk !== null; chunk = stream.read()) chunks.push(chunk as Buffer)
      })
      stream.on("end", () => {
        // one chunk (a body decoded whole, WholeDecoder) is the attachment's own bytes already
        mail.attachments.push(Object.assign(data, { content: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }))
        data.release()
        read()
      })
    }
    parser.on("error", fail)
    parser.on("headers", () => void (mail.headerLines = (parser as unknown as { headerLines: ParsedMail["headerLines"] }).headerLines))
    parser.on("readable", () => void (reading || read()))
    parser.on("end", () => {
      const top = parser as unknown as Pick<ParsedMail, "subject" | "from" | "to" | "cc">
      if (!settled) resolve({ ...mail, subject: top.subject, from: top.from, to: top.to, cc: top.cc })
      settled = true
    })
    parser.end(input)
  })

/**
 * Where "multipart/", "Multipart/" or "MULTIPART/" stands in the bytes (ascending), and
 * whether the message has a multipart/alternative ("multipart/alternative" or
 * "Multipart/Alternative" anywhere: its text and HTML then carry the same words; a miss
 * only costs the shortcut in extractReply, never a wrong result). A message is mostly
 * body, and each search reads all of it: one search per case of "tipart/", the spelling
 * decided by the three bytes before each hit. Node searches a needle of 7 bytes or fewer
 * by its first byte with memchr and a longer one with Boyer-Moore-Horspool, which on
 * base64 is several times slower: these two searches cost less than two of "ultipart/",
 * and far less than the five spellings searched before.
 */
const scanMultipart = (raw: Buffer): { readonly at: ReadonlyArray<number>; readonly alternative: boolean } => {
  const at: Array<number> = []
  let alternative = false
  for (const needle of ["tipart/", "TIPART/"]) {
    const lower = needle === "tipart/"
    for (let i = raw.indexOf(needle, 3); i >= 0; i = raw.indexOf(needle, i + needle.length)) {
      const lead = raw.toString("latin1", i - 3, i)
      if (lower ? lead !== "mul" && lead !== "Mul" : lead !== "MUL") continue
      at.push(i - 3)
      if (lower && !alternative) {
        alternative = raw.toString("latin1", i + needle.length, i + needle.length + 11) === (lead === "mul" ? "alternative" : "Alternative")
      }
    }
  }
  return { at: at.sort((x, y) => x - y), alternative }
}

/**
 * A multipart without a boundary parameter would lose its whole body; senders that forget
 * the parameter still write delimiter lines, so the first delimiter line under its header
 * that is no other part's boundary becomes its boundary, or, when there is none, the part
 * is read as plain text. Repaired at every level of nesting. Linear: a message whose
 * multipart headers all name a boundary (nearly all) costs one search per "multipart/".
 */
const MAX_REPAIRS = 50

/** `multipart` is where scanMultipart found "multipart/" in `raw`. */
const repairBoundaries = (raw: Buffer, multipart: ReadonlyArray<number>, maxHeaderBytes: number): Buffer => {
  const broken: Array<{ readonly start: number; readonly end: number; readonly value: string }> = []
  for (const at of multipart) {
    const header = headerAround(raw, at, maxHeaderBytes)
    if (header !== undefined && !/boundary\s*=/i.test(header.value)) broken.push(header)
  }
  if (broken.length === 0) return raw
  broken.sort((x, y) => x.start - y.start)
  // each repair reads up to 64 KB ahead: a hostile message of many broken headers gets
  // its first MAX_REPAIRS repaired and no more
  broken.length = Math.min(broken.length, MAX_REPAIRS)
  const known = new Set<string>()
  for (const m of raw.toString("latin1").matchAll(/boundary\s*=\s*"?([^";\r\n]+)"?/gi)) if (m[1] !== undefined) known.add(m[1].trim())
  const pieces: Array<Buffer> = []
  let from = 0
  for (const header of broken) {
    if (header.start < from) continue
    const sample = raw.toString("latin1", header.end, Math.min(raw.byteLength, header.end + 64 * 1024))
    let delimiter: string | undefined
    for (const m of sample.matchAll(/^--([^\s]{1,70})[ \t]*\r?$/gm)) {
      const candidate = (m[1] ?? "").replace(/--$/, "")
      if (candidate !== "" && !known.has(candidate) && !candidate.includes('"')) {
        delimiter = candidate
        break
      }
    }
    const replacement = delimiter === undefined ? "Content-Type: text/plain" : `Content-Type: ${header.value.trim()}; boundary="${delimiter}"`
    if (delimiter !== undefined) known.add(delimiter)
    pieces.push(raw.subarray(from, header.start), Buffer.from(replacement, "latin1"))
    from = header.end
  }
  pieces.push(raw.subarray(from))
  return Buffer.concat(pieces)
}

/** The Content-Type header line (with its folded continuation lines) holding `at`, as
 * [start, end) offsets and its value; undefined when `at` is not in such a header. */
const headerAround = (raw: Buffer, at: number, maxHeaderBytes: number) => {
  const lineStart = raw.lastIndexOf(0x0a, at) + 1
  if (at - lineStart > 200) return undefined
  const head = raw.toString("latin1", lineStart, at)
  if (!/^content-type:[ \t]*$/i.test(head)) return undefined
  let end = at
  const limit = Math.min(raw.byteLength, at + maxHeaderBytes)
  while (end < limit) {
    const nl = raw.indexOf(0x0a, end)
    if (nl < 0 || nl >= limit) {
      end = limit
      break
    }
    const next = raw[nl + 1]
    end = nl
    if (next !== 0x20 && next !== 0x09) break
    end = nl + 1
  }
  if (end > lineStart && raw[end - 1] === 0x0d) end--
  return { start: lineStart, end, value: raw.toString("latin1", lineStart, end).replace(/^content-type:[ \t]*/i, "") }
}

const failure = (reason: MailParseFailure, message: string): ParseOutcome => ({ ok: false, reason, message })

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const classify = (error: unknown): ParseOutcome => {
  const message = describe(error)
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined
  if (code === "EMAXLEN") {
    return /child nodes/i.test(message)
      ? failure("too_many_parts", `Message has more than the allowed MIME parts: ${message}`)
      : failure("header_too_large", `A MIME header block is over the size limit: ${message}`)
  }
  return failure("malformed", `Unreadable message: ${message}`)
}

/**
 * Builds the model from mailparser's output. Pure apart from reading `mail`. Every string of
 * the model (headers map keys included) is storable (storable.ts): made so here, in one pass
 * over the finished model, rather than by each field's writer downstream.
 */
export const toResult = (mail: MimeParts, size: number, limits: ParseLimits = defaultLimits, alternative = false): ParseResult => {
  const headers = headerMap(mail.headerLines, limits.maxHeaderLines)
  const html = typeof mail.html === "string" ? nonEmpty(cut(trimJoins(mail.html), limits.maxBodyChars)) : undefined
  const partText = typeof mail.text === "string" && mail.text.length > 0 ? cut(mail.text, limits.maxBodyChars) : undefined
  const text = partText ?? (html === undefined ? undefined : textFromHtml(html, limits.maxHtmlToTextChars))
  const extracted = extractReply({
    ...(text === undefined ? {} : { text: cut(text, limits.maxExtractChars) }),
    ...(html === undefined ? {} : { html: cut(html, limits.maxExtractChars) }),
    sameWords: partText === undefined || alternative,
    reply: headers["in-reply-to"] !== undefined || headers["references"] !== undefined,
    ...senderName(mail.from)
  })
  const attachments = mail.attachments.map(toAttachment)
  const from = addresses(mail.from)[0] ?? ""
  const to = addresses(mail.to)
  const cc = addresses(mail.cc)
  const rfcMessageId = messageIds(headers["message-id"])[0]
  const inReplyTo = messageIds(headers["in-reply-to"])[0]
  const references = messageIds(headers["references"])
  const date = isoDate(headers["date"])
  const message: ParsedMessage = {
    from,
    to,
    ...(cc.length > 0 ? { cc } : {}),
    subject: mail.subject ?? "",
    ...(text === undefined ? {} : { text }),
    ...(html === undefined ? {} : { html }),
    ...(extracted.text === undefined ? {} : { extracted_text: extracted.text }),
    ...(extracted.html === undefined ? {} : { extracted_html: extracted.html }),
    headers,
    attachments: attachments.map((a) => a.meta),
    // a forward without a note has no new content: preview the forwarded text instead
    preview: preview(extracted.text !== undefined && extracted.text.trim() !== "" ? extracted.text : text ?? ""),
    size,
    ...(rfcMessageId === undefined ? {} : { rfc_message_id: rfcMessageId }),
    ...(inReplyTo === undefined ? {} : { in_reply_to: inReplyTo }),
    ...(references.length > 0 ? { references } : {}),
    ...(date === undefined ? {} : { date })
  }
  const clean = storable(message)
  if (clean === message) return { message, attachments }
  // the attachments' metadata travels twice, in the model and beside each attachment's bytes
  return { message: clean, attachments: attachments.map((a, i) => ({ ...a, meta: clean.attachments[i] ?? a.meta })) }
}

const nonEmpty = (s: string): string | undefined => (s.length > 0 ? s : undefined)

/** The first From display name, which reply extraction compares with a signature's lines. */
const senderName = (from: MimeParts["from"]): { sender?: string } => {
  const name = (Array.isArray(from) ? from[0] : from)?.value[0]?.name
  return name === undefined || name === "" ? {} : { sender: name }
}

// mailparser joins the HTML of a mixed message's parts with "<br/>\n" and, as textAsHtml is
// skipped, contributes "" for each plain part: drop the joins those empty pieces leave.
// Compared in place: an end-anchored regex would scan the whole body for where to start.
const JOIN = "<br/>\n"
const trimJoins = (html: string): string => {
  let start = 0
  let end = html.length
  while (html.startsWith(JOIN, start)) start += JOIN.length
  while (end - JOIN.length >= start && html.endsWith(JOIN, end)) end -= JOIN.length
  return start === 0 && end === html.length ? html : html.slice(start, end)
}

const cut = (s: string, max: number): string => (s.length > max ? s.slice(0, max) : s)

/** Whitespace collapsed, cut at a word boundary near PREVIEW_CHARS. */
export const preview = (text: string): string => {
  // only runs other than a lone space are replaced: same result, without rebuilding the
  // string at every space between words
  const flat = text.slice(0, PREVIEW_CHARS * 8).replace(/\s{2,}|[^\S ]/g, " ").trim()
  if (flat.length <= PREVIEW_CHARS) return flat
  const head = flat.slice(0, PREVIEW_CHARS)
  const space = head.lastIndexOf(" ")
  return (space > PREVIEW_CHARS * 0.6 ? head.slice(0, space) : head).trimEnd()
}

/** html-to-text with our options, compiled once: `convert` compiles its options (selectors
 * into a decision tree) on every call, which cost more than converting a small message. */
const htmlToText = compileHtmlToText({
  wordwrap: false,
  // depth and breadth bounds stop the recursive walker from overflowing the stack on
  // thousands of unclosed tags; such content is hostile anyway
  limits: { maxDepth: 64, maxChildNodes: 20_000 },
  selectors: [
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
    { selector: "table", options: { uppercaseHeaderCells: false } },
    { selector: "img", format: "skip" },
    { selector: "a", options: { ignoreHref: true } }
  ]
})

export const textFromHtml = (html: string, max: number): string => {
  const input = cut(html, max)
  const converted = attempt(() => htmlToText(input))
  // html-to-text gives a block holding only <br> (how Gmail, Apple Mail and Yahoo type an
  // empty line) a line of its own besides the block breaks around it; a reader sees one
  // blank line, so runs of blank lines become one
  return converted === undefined ? stripTags(input) : converted.replace(/\n{3,}/g, "\n\n")
}

const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " " }

// last resort when html-to-text throws: tags out, the common entities decoded
const stripTags = (html: string): string =>
  html.replace(/<(script|style)[^>]*>[^<]*<\/\1>/gi, " ").replace(/<[^>]*>/g, " ")
    .replace(/&(amp|lt|gt|quot|apos|nbsp);/g, (_, name: string) => entities[name] ?? "")
    .replace(/[ \t]+/g, " ").trim()

const attempt = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

// --- headers ---------------------------------------------------------------------------------

// Repeats of these are one list; anything else repeated (Received, ...) keeps one value per line.
const listHeaders = new Set(["to", "cc", "bcc", "reply-to", "from", "sender", "references", "in-reply-to", "resent-to", "resent-cc"])

const headerMap = (lines: ParsedMail["headerLines"], maxLines: number): Record<string, string> => {
  const values = new Map<string, Array<string>>()
  for (const line of lines.slice(0, maxLines)) {
    const { key, value } = splitHeader(line.line)
    if (key === "" || key === "__proto__") continue
    const decoded = key === "content-type" ? structured(value) : decodeWords(utf8(value))
    const list = values.get(key)
    if (list === undefined) values.set(key, [decoded])
    else list.push(decoded)
  }
  const out: Record<string, string> = {}
  for (const [key, list] of values) {
    // Content-Type: the last one is what mailparser used for the body, so report that one
    out[key] = key === "content-type" ? list[list.length - 1] ?? "" : list.join(listHeaders.has(key) ? (key === "references" || key === "in-reply-to" ? " " : ", ") : "\n")
  }
  return out
}

const FOLD = /(?:\r?\n|\r)[ \t]*/g
const HEADER = /^\s*([^:]+):(.*)$/

/** libmime's `decodeHeader` (name lower-cased, folds unfolded, both sides trimmed; an
 * empty name when the line has none) with its two regexes run only where they can change
 * the answer: most lines are unfolded, and once trimmed the line starts with its name. */
const splitHeader = (raw: string): { readonly key: string; readonly value: string } => {
  const line = (raw.includes("\n") || raw.includes("\r") ? raw.replace(FOLD, " ") : raw).trim()
  const colon = line.indexOf(":")
  // `.` stops at U+2028/9, so libmime's regex then does not match: let it decide
  if (line.includes("\u2028") || line.includes("\u2029")) {
    const match = HEADER.exec(line)
    return { key: (match?.[1] ?? "").trim().toLowerCase(), value: (match?.[2] ?? "").trim() }
  }
  return colon <= 0 ? { key: "", value: "" } : { key: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() }
}

// mailsplit hands header bytes over as latin1; raw 8-bit headers are almost always UTF-8.
// Bytes that are not UTF-8 (a U+FFFD the decoding made) read as latin1; a U+FFFD the bytes
// hold themselves (EF BF BD, as our SMTP receiver writes a lone surrogate of the envelope
// into Authentication-Results) is UTF-8 like the rest.
const utf8 = (binary: string): string => {
  if (!/[^\x00-\x7f]/.test(binary)) return binary // ASCII reads the same either way
  const bytes = Buffer.from(binary, "latin1")
  const text = bytes.toString("utf8")
  return text.includes("\uFFFD") && !bytes.equals(Buffer.from(text, "utf8")) ? binary : text
}

// without "=?" (an encoded word) or NUL (libmime's join marker) libmime changes nothing
const decodeWords = (value: string): string =>
  value.includes("=?") || value.includes("\x00") ? attempt(() => libmime.decodeWords(value)) ?? value : value

const structured = (value: string): string => {
  const parsed = attempt(() => libmime.parseHeaderValue(utf8(value)))
  const params: Record<string, string> = {}
  for (const [k, v] of Object.entries(parsed?.params ?? {})) if (k !== "__proto__") params[k] = decodeWords(v)
  return JSON.stringify({ value: (parsed?.value ?? value).toLowerCase(), params })
}

/**
 * The longest Message-ID and address the model keeps, in UTF-8 bytes once storable: RFC
 * 5322's line and RFC 5321's path limits. Both are keys of PostgreSQL indexes (a B-tree
 * entry holds at most 2,704 bytes), so a longer one made the message impossible to store.
 */
export const MAX_ID_BYTES = 998
export const MAX_ADDRESS_BYTES = 254

/** Whether `s` is at most `max` UTF-8 bytes once storable (a NUL becomes 3 bytes); counts only when it could be over. */
const fits = (s: string, max: number): boolean => s.length <= max && (s.length * 3 <= max || Buffer.byteLength(storableText(s)) <= max)

/** Every `<id>` in a Message-ID, In-Reply-To or References value, a bare id bracketed; an id over MAX_ID_BYTES is left out. */
export const messageIds = (value: string | undefined): Array<string> => {
  if (value === undefined) return []
  const bracketed = value.match(/<[^<>\s]+>/g)
  if (bracketed !== null) return bracketed.filter((id) => fits(id, MAX_ID_BYTES))
  const bare = value.trim()
  return bare.length > 0 && fits(`<${bare}>`, MAX_ID_BYTES) && !/\s/.test(bare) && bare.includes("@") ? [`<${bare}>`] : []
}

const isoDate = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const date = new Date(value.replace(/\s*\([^)]*\)\s*$/, ""))
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString()
}

// --- addresses -------------------------------------------------------------------------------

const flatten = (list: ReadonlyArray<EmailAddress>): Array<EmailAddress> =>
  list.flatMap((a) => (a.group !== undefined ? flatten(a.group) : [a]))

const addresses = (value: AddressObject | ReadonlyArray<AddressObject> | undefined): Array<string> => {
  if (value === undefined) return []
  const objects = new Array<AddressObject>().concat(value)
  return flatten(objects.flatMap((o) => o.value)).flatMap((a) => {
    const address = (a.address ?? "").trim()
    // an address over MAX_ADDRESS_BYTES is no address any server takes; the header keeps it
    return address.length > 0 && fits(address, MAX_ADDRESS_BYTES) ? [formatAddress(a.name, address)] : []
  })
}

/** `Name <addr>`, quoting the name when it holds RFC 5322 specials so it parses back. */
export const formatAddress = (name: string | undefined, address: string): string => {
  const display = (name ?? "").replace(/[\r\n]+/g, " ").trim()
  if (display.length === 0 || display === address) return address
  return /[()<>[\]:;@\\,."]/.test(display) ? `"${display.replace(/(["\\])/g, "\\$1")}" <${address}>` : `${display} <${address}>`
}

// --- attachments -----------------------------------------------------------------------------

/** The bytes in an ArrayBuffer of their own, which the worker can transfer: the decoder's
 * buffer is used as it is when it starts its ArrayBuffer and is too large to be a slice of
 * Node's shared pool (a large attachment; nothing else holds it once the model is built;
 * Node's base64 decoding sizes the ArrayBuffer by the encoded length, a few per cent over),
 * copied when it is a small one, a slice of the message's own bytes (a body that needed no
 * decoding) or empty (an empty buffer might be a shared constant). */
const ownBytes = (buffer: Buffer): Uint8Array =>
  buffer.byteLength >= Buffer.poolSize >>> 1 && buffer.byteOffset === 0 && buffer.buffer instanceof ArrayBuffer
    ? new Uint8Array(buffer.buffer, 0, buffer.byteLength)
    : new Uint8Array(buffer)

const toAttachment = (a: Attachment): ParsedAttachment => {
  const disposition = a.contentDisposition === "inline" || (a.contentDisposition === undefined && a.related === true) ? "inline" : "attachment"
  const content = ownBytes(a.content)
  const meta: AttachmentMeta = {
    ...(a.filename === undefined || a.filename === "" ? {} : { filename: a.filename }),
    content_type: (a.contentType || "application/octet-stream").toLowerCase(),
    content_disposition: disposition,
    size: content.byteLength,
    ...(a.cid === undefined || a.cid === "" ? {} : { content_id: a.cid })
  }
  // mailparser's checksum is SHA-256 of these bytes (parseOptions)
  return { meta, content, ...(typeof a.checksum === "string" && a.checksum.length === 64 ? { sha256: a.checksum } : {}) }
}
