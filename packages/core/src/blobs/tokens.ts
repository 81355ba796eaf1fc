/**
 * Server-signed download URLs: `/downloads/<token>?content_type=...&filename=...`, which
 * let anyone holding the URL fetch one blob, as one media type and file name, until it
 * expires.
 *
 * The URL is the capability, so it is small, exact and unforgeable:
 * - the token (base64url, 71 characters: the router caps a path parameter at 100) holds a
 *   version byte, the sha256 (32 bytes), the expiry (unsigned 32-bit seconds since the
 *   epoch) and a 16-byte HMAC-SHA256 tag keyed by the server's download secret; version 2
 *   (74 characters) adds the index of an attachment kept inside the raw message the sha256
 *   names (an unsigned 16-bit part number, blobs/parts.ts), version 1 names a blob itself;
 * - the tag covers the token's bytes, the media type and the file name (length-prefixed,
 *   so no two different triples sign alike), which travel in the query: changing either
 *   breaks the tag;
 * - the media type and the file name are cleaned before signing (download.ts), so what is
 *   signed is exactly what is served;
 * - opening refuses anything that is not exactly such a URL, forged or truncated alike,
 *   with no reason given: the route answers every refusal the same way.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { cleanFilename, safeContentType } from "./download.ts"

export interface DownloadTarget {
  readonly sha256: string
  /** The attachment `part` of the raw message `sha256` (blobs/parts.ts); absent: the blob itself. */
  readonly part?: number
  readonly contentType: string
  readonly filename?: string
}

/** The parts of a signed download URL: the path's token and the query's values. */
export interface SignedDownloadParts {
  readonly token: string
  readonly contentType: string
  readonly filename?: string
}

const VERSION = 1
const PART_VERSION = 2
const HEADER_BYTES = 1 + 32 + 4
const PART_HEADER_BYTES = HEADER_BYTES + 2
const TAG_BYTES = 16
const BASE64URL = /^[A-Za-z0-9_-]+$/

const tag = (key: string, header: Uint8Array, contentType: string, filename: string) => {
  const type = Buffer.from(contentType, "utf8")
  const length = Buffer.alloc(2)
  length.writeUInt16BE(type.length)
  return createHmac("sha256", key).update(header).update(length).update(type).update(filename, "utf8").digest().subarray(0, TAG_BYTES)
}

export const signDownload = (key: string, target: DownloadTarget, expiresAtSeconds: number): SignedDownloadParts => {
  const contentType = safeContentType(target.contentType)
  const filename = cleanFilename(target.filename)
  const header = Buffer.alloc(target.part === undefined ? HEADER_BYTES : PART_HEADER_BYTES)
  header.writeUInt8(target.part === undefined ? VERSION : PART_VERSION, 0)
  header.write(target.sha256, 1, 32, "hex")
  header.writeUInt32BE(expiresAtSeconds, 33)
  if (target.part !== undefined) header.writeUInt16BE(target.part, HEADER_BYTES)
  const token = Buffer.concat([header, tag(key, header, contentType, filename ?? "")]).toString("base64url")
  return { token, contentType, ...(filename === undefined ? {} : { filename }) }
}

/** The target and expiry of a URL signed with `key`, or undefined. Expiry is the caller's check. */
export const openDownload = (
  key: string,
  parts: { readonly token: string; readonly contentType?: string | undefined; readonly filename?: string | undefined }
): { readonly target: DownloadTarget; readonly expiresAtSeconds: number } | undefined => {
  const { token } = parts
  if (token.length > 100 || !BASE64URL.test(token)) return undefined
  const bytes = Buffer.from(token, "base64url")
  // Only the canonical spelling: no second string opens the same token.
  if (bytes.toString("base64url") !== token || bytes.length < HEADER_BYTES + TAG_BYTES) return undefined
  const version = bytes.readUInt8(0)
  const headerBytes = version === VERSION ? HEADER_BYTES : version === PART_VERSION ? PART_HEADER_BYTES : 0
  if (headerBytes === 0 || bytes.length !== headerBytes + TAG_BYTES || parts.contentType === undefined) return undefined
  const header = bytes.subarray(0, headerBytes)
  const filename = parts.filename ?? ""
  if (!timingSafeEqual(bytes.subarray(headerBytes), tag(key, header, parts.contentType, filename))) return undefined
  return {
    target: {
      sha256: header.subarray(1, 33).toString("hex"),
      ...(version === PART_VERSION ? { part: header.readUInt16BE(HEADER_BYTES) } : {}),
      contentType: parts.contentType,
      ...(filename === "" ? {} : { filename })
    },
    expiresAtSeconds: header.readUInt32BE(33)
  }
}
