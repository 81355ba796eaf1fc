/**
 * A stored blob answered as a download: streamed from the BlobStore, with the headers the
 * spec asks of attachment downloads (`Content-Disposition: attachment`,
 * `X-Content-Type-Options: nosniff`, `Content-Security-Policy: sandbox`) so a browser never
 * renders mail content as a page of ours.
 */
import type { Blobs } from "../blobs/Blobs.ts"
import type { Download } from "../catalogue/Operation.ts"

/** `attachment; filename="..."; filename*=UTF-8''...`, safe for any name. */
export const contentDisposition = (filename: string | undefined): string => {
  if (filename === undefined || filename === "") return "attachment"
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

export const DOWNLOAD_HEADERS = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox",
  "cache-control": "private, no-store"
} as const

export const downloadOf = (
  blobs: Blobs["Service"],
  target: { readonly sha256: string; readonly contentType: string; readonly filename?: string; readonly size: number }
): Download => ({
  contentType: target.contentType,
  size: target.size,
  headers: { ...DOWNLOAD_HEADERS, "content-disposition": contentDisposition(target.filename) },
  body: blobs.read(target.sha256)
})
