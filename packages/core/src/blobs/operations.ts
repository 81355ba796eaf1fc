/**
 * `GET /downloads/:token?content_type=...&filename=...`: the bytes behind a download URL
 * the server signed (Blobs.ts `downloadUrl`, tokens.ts; a presigning store's URLs go to
 * the store instead). No API key: the signed URL is the credential, so it can be handed to
 * a browser, a mail client or a model's tool.
 *
 * A forged, malformed or expired URL (a changed media type or file name too), and one whose
 * bytes are gone (swept after the last message referencing them was deleted), are all 404
 * `not_found` with one message: the answer says nothing about which, nor whether the blob
 * ever existed (or, for an attachment kept inside its raw message, whether the part is
 * there). Not 401: no credential the caller could add would make the same URL work.
 *
 * Headers (download.ts): the media type and file name the token names, Content-Length,
 * `Content-Disposition: attachment`, `X-Content-Type-Options: nosniff`,
 * `Content-Security-Policy: sandbox`, and `Cache-Control: private, max-age=N` where N is
 * what is left of the URL's lifetime: the bytes behind a hash never change, and no cached
 * copy outlives the URL.
 */
import { Effect, Schema, Stream } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { NotFound } from "../errors/errors.ts"
import { now } from "../shared/time.ts"
import { Blobs } from "./Blobs.ts"
import { downloadOf } from "./download.ts"
import { partBytes } from "./parts.ts"

const gone = new NotFound({ message: "This download link is invalid or has expired.", fix: "Ask the API for a fresh download_url." })

// Bounds only: the values are checked against the signature, then cleaned again for the headers.
const DownloadQuery = Schema.Struct({
  content_type: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(255))),
  filename: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024)))
})

export const download = operation({
  name: "downloads.get",
  summary: "The bytes behind a signed download URL, without an API key, until the URL expires.",
  routes: [route.get("/downloads/:token")],
  access: { kind: "public" },
  query: DownloadQuery,
  output: Output.download,
  mutates: false,
  mcp: { exclude: "a download streams bytes to whoever holds the URL; MCP tools answer JSON and get the download_url itself" },
  cli: { exclude: "the URL needs no key: fetch it with curl or a browser" },
  run: ({ params, input }) =>
    Effect.gen(function*() {
      const blobs = yield* Blobs
      const target = yield* blobs.verifyDownload({ token: params.token, contentType: input.content_type, filename: input.filename })
      if (target === undefined) return yield* gone
      const maxAge = Math.max(0, Math.floor((target.expiresAt.getTime() - (yield* now).getTime()) / 1000))
      const { part, ...source } = target
      if (part !== undefined) {
        const bytes = yield* partBytes(target.sha256, part)
        if (bytes === undefined) return yield* gone
        return downloadOf({ read: () => Stream.make(bytes) }, { ...source, size: bytes.byteLength }, { cacheControl: `private, max-age=${maxAge}` })
      }
      const size = yield* blobs.size(target.sha256)
      if (size === undefined) return yield* gone
      return downloadOf(blobs, { ...source, size }, { cacheControl: `private, max-age=${maxAge}` })
    })
})

export const blobOperations = [download]
