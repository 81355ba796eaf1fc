/**
 * How stored bytes are answered as a download, by every route that serves them (the signed
 * `/downloads/:token`, and a message's `raw/download` and attachment `download`): one
 * helper, `downloadOf`, so they all send the same protective headers.
 *
 * Mail is written by strangers. A browser must never render it on our origin, so every
 * download is `Content-Disposition: attachment` (saved, not shown), `X-Content-Type-Options:
 * nosniff` (no guessing a type we did not say) and `Content-Security-Policy: sandbox` (were
 * it rendered anyway, no script, no same-origin access). The media type and file name come
 * from the message, so both are cleaned before they reach a header.
 */
import type { Stream } from "effect"
import type { Download } from "../shared/download.ts"

export interface DownloadSource {
  readonly sha256: string
  readonly contentType: string
  readonly filename?: string
  /** Bytes, for Content-Length. */
  readonly size: number
}

/** Whatever streams a blob: the Blobs service (or the BlobStore). */
export interface BlobReader {
  read(sha256: string): Stream.Stream<Uint8Array>
}

const TOKEN = "[a-z0-9!#$&^_.+-]+"
const ESSENCE = new RegExp(`^${TOKEN}/${TOKEN}$`)
const CHARSET = new RegExp(`(?:^|;)\\s*charset\\s*=\\s*"?(${TOKEN})"?\\s*(?:;|$)`)

/**
 * The media type to announce: `type/subtype` (and a charset, when one is given) if the value
 * is a well-formed media type, else `application/octet-stream`. Other parameters are
 * dropped: they carry nothing a download needs, and a header is no place for a stranger's
 * text.
 */
export const safeContentType = (value: string): string => {
  const lower = value.toLowerCase()
  const essence = lower.split(";")[0]?.trim() ?? ""
  if (essence.length > 100 || !ESSENCE.test(essence)) return "application/octet-stream"
  const at = lower.indexOf(";")
  const charset = at === -1 ? undefined : CHARSET.exec(lower.slice(at))?.[1]
  return charset === undefined || charset.length > 40 ? essence : `${essence}; charset=${charset}`
}

/** The longest file name a download is saved under (most file systems' limit), in UTF-8 bytes. */
export const MAX_FILENAME_BYTES = 255

/** Shortens a name to at most `maxBytes` of UTF-8, whole characters only, keeping a short extension. */
export const fitFilename = (name: string, maxBytes: number): string | undefined => {
  if (Buffer.byteLength(name) <= maxBytes) return name
  const dot = name.lastIndexOf(".")
  const extension = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : ""
  const room = maxBytes - Buffer.byteLength(extension)
  let base = ""
  for (const ch of name.slice(0, name.length - extension.length)) {
    if (Buffer.byteLength(base + ch) > room) break
    base += ch
  }
  return base === "" ? undefined : base + extension
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * A file name fit for a header: no control characters or path separators, no lone
 * surrogates (which cannot be encoded), trimmed, at most MAX_FILENAME_BYTES; undefined
 * when nothing is left.
 */
export const cleanFilename = (filename: string | undefined): string | undefined => {
  if (filename === undefined) return undefined
  const clean = filename
    .replace(LONE_SURROGATE, "\uFFFD")
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, "")
    .replace(/[/\\]/g, "_")
    .trim()
  return clean === "" || clean === "." || clean === ".." ? undefined : fitFilename(clean, MAX_FILENAME_BYTES)
}

// RFC 8187 attr-char is narrower than what encodeURIComponent leaves alone.
const encodeExtValue = (s: string) =>
  encodeURIComponent(s).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/**
 * `attachment`, with the file name twice (RFC 6266): `filename="..."`, an ASCII stand-in
 * for old clients (anything else, quotes, backslashes and percent signs become `_`), and
 * `filename*=UTF-8''...`, the exact name percent-encoded, which current browsers prefer.
 */
export const contentDisposition = (filename: string | undefined): string => {
  const clean = cleanFilename(filename)
  if (clean === undefined) return "attachment"
  const ascii = clean.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeExtValue(clean)}`
}

/** Cache-Control of downloads that need an API key: never kept by any cache. */
export const NO_STORE = "private, no-store"

/** The protective headers of every download (besides Content-Type and Content-Length). */
export const downloadHeaders = (filename: string | undefined, cacheControl: string = NO_STORE): Record<string, string> => ({
  "content-disposition": contentDisposition(filename),
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox",
  "cache-control": cacheControl
})

/**
 * The answer of a download route: the bytes streamed from the store (never read whole),
 * with Content-Type, Content-Length and the protective headers. The caller has checked
 * access and knows the size (a message's metadata holds it; the signed route asks the
 * store). `cacheControl` defaults to `private, no-store`.
 */
export const downloadOf = (blobs: BlobReader, source: DownloadSource, options: { readonly cacheControl?: string } = {}): Download => ({
  contentType: safeContentType(source.contentType),
  size: source.size,
  headers: downloadHeaders(source.filename, options.cacheControl),
  body: blobs.read(source.sha256)
})
