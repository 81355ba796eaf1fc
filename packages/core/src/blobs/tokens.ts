/**
 * Server-signed download tokens: the last path segment of `/downloads/<token>`, which lets
 * anyone holding the URL fetch one blob, as one media type and file name, until it expires.
 *
 * The token is the capability, so it is small, exact and unforgeable:
 * - bytes (version 1): `1`, the sha256 (32 bytes), the expiry (unsigned 32-bit seconds
 *   since the epoch), the media type's length (1 byte), the media type, the file name
 *   (UTF-8, the rest), then a 16-byte HMAC-SHA256 tag over all of it, keyed by the
 *   server's download secret; base64url without padding;
 * - a path parameter holds at most 512 characters (shared/fields.ts `Id`), so a token is at
 *   most 384 bytes: the media type is cleaned first (download.ts) and a file name too long
 *   for what is left is shortened, keeping its extension (it only names the saved file);
 * - opening refuses anything that is not exactly such a token, forged or truncated alike,
 *   with no reason given: the route answers every refusal the same way.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { cleanFilename, safeContentType } from "./download.ts"

export interface DownloadTarget {
  readonly sha256: string
  readonly contentType: string
  readonly filename?: string
}

const VERSION = 1
const TAG_BYTES = 16
const HEADER_BYTES = 1 + 32 + 4 + 1
/** 512 base64url characters. */
export const TOKEN_MAX_BYTES = 384
const BASE64URL = /^[A-Za-z0-9_-]+$/

const tag = (key: string, bytes: Uint8Array) => createHmac("sha256", key).update(bytes).digest().subarray(0, TAG_BYTES)

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

export const signToken = (key: string, target: DownloadTarget, expiresAtSeconds: number): string => {
  const contentType = Buffer.from(safeContentType(target.contentType), "latin1")
  const room = TOKEN_MAX_BYTES - HEADER_BYTES - TAG_BYTES - contentType.length
  const filename = Buffer.from(fitFilename(cleanFilename(target.filename) ?? "", room) ?? "", "utf8")
  const header = Buffer.alloc(HEADER_BYTES)
  header.writeUInt8(VERSION, 0)
  header.write(target.sha256, 1, 32, "hex")
  header.writeUInt32BE(expiresAtSeconds, 33)
  header.writeUInt8(contentType.length, 37)
  const body = Buffer.concat([header, contentType, filename])
  return Buffer.concat([body, tag(key, body)]).toString("base64url")
}

/** The target and expiry of a well-formed token signed with `key`, or undefined. Expiry is the caller's check. */
export const openToken = (key: string, token: string): { readonly target: DownloadTarget; readonly expiresAtSeconds: number } | undefined => {
  if (token.length > 512 || !BASE64URL.test(token)) return undefined
  const bytes = Buffer.from(token, "base64url")
  // Only the canonical spelling: no second string opens the same token.
  if (bytes.length < HEADER_BYTES + TAG_BYTES || bytes.toString("base64url") !== token) return undefined
  const body = bytes.subarray(0, bytes.length - TAG_BYTES)
  if (!timingSafeEqual(bytes.subarray(bytes.length - TAG_BYTES), tag(key, body))) return undefined
  if (body.readUInt8(0) !== VERSION) return undefined
  const typeLength = body.readUInt8(37)
  if (HEADER_BYTES + typeLength > body.length) return undefined
  const filename = body.subarray(HEADER_BYTES + typeLength).toString("utf8")
  return {
    target: {
      sha256: body.subarray(1, 33).toString("hex"),
      contentType: body.subarray(HEADER_BYTES, HEADER_BYTES + typeLength).toString("latin1"),
      ...(filename === "" ? {} : { filename })
    },
    expiresAtSeconds: body.readUInt32BE(33)
  }
}
