/**
 * Attachments kept inside their raw message. A message that arrives (SMTP, `/inbound/raw`)
 * holds its attachments already, encoded in the raw bytes we store anyway, so
 * they are not stored a second time as blobs of their own: the message row keeps each
 * attachment's metadata, the SHA-256 and size of its decoded bytes (computed by the parse
 * at arrival) and its `part`, its place among the parse's attachments. A download parses
 * the raw message again and answers that attachment's decoded bytes, the same bytes the
 * parse hashed at arrival (checked against the stored digest).
 *
 * Why: a blob of its own wrote every attachment's bytes a second time beside the raw
 * message, for bytes that are downloaded far less often than they arrive (what it saves is
 * in bench/PROFILE.md). A download pays the parse instead.
 *
 * Attachments stored before this, those of composed mail and those of IMAP APPEND are blobs of their own
 * (no `part`); the reference-counting trigger skips attachments that have a `part`
 * (migration 0048): the raw message's own reference keeps their bytes.
 */
import { Effect, Stream } from "effect"
import { MailParser } from "../mail/parse.ts"
import { Blobs } from "./Blobs.ts"
import type { BlobReader } from "./download.ts"

/** Where an attachment's bytes are: a blob of its own, or a part of the raw message. */
export interface AttachmentPlace {
  readonly sha256: string
  readonly part?: number
}

/**
 * The decoded bytes of attachment `part` of the raw message `rawSha256`, or undefined when
 * the raw bytes are gone, no longer parse, or hold no such attachment. With `sha256`, only
 * bytes with that digest (the part is looked up by digest if the index moved, should the
 * parse ever order parts differently).
 */
export const partBytes = (rawSha256: string, part: number, sha256?: string) =>
  Effect.gen(function*() {
    const blobs = yield* Blobs
    if ((yield* blobs.size(rawSha256)) === undefined) return undefined
    const parsed = yield* (yield* MailParser).parse(yield* blobs.readAll(rawSha256)).pipe(
      Effect.catchTag("MailParseError", () => Effect.succeed(undefined))
    )
    if (parsed === undefined) return undefined
    const at = parsed.attachments[part]
    if (at !== undefined && (sha256 === undefined || at.sha256 === sha256)) return at.content
    return sha256 === undefined ? undefined : parsed.attachments.find((a) => a.sha256 === sha256)?.content
  })

/** The bytes of an attachment of the message whose raw bytes are `rawSha256`, wherever they are kept; a defect when they are missing. */
export const attachmentBytes = (rawSha256: string, a: AttachmentPlace) =>
  Effect.gen(function*() {
    if (a.part === undefined) return yield* (yield* Blobs).readAll(a.sha256)
    const bytes = yield* partBytes(rawSha256, a.part, a.sha256)
    if (bytes === undefined) return yield* Effect.die(new Error(`attachment ${a.part} of raw ${rawSha256} is missing`))
    return bytes
  })

/** A reader for `downloadOf` that answers the attachment's bytes, from its blob or its raw message. */
export const attachmentReader = (rawSha256: string, a: AttachmentPlace) =>
  Effect.gen(function*() {
    const blobs = yield* Blobs
    if (a.part === undefined) return blobs as BlobReader
    const bytes = yield* attachmentBytes(rawSha256, a)
    return { read: () => Stream.make(bytes) } satisfies BlobReader
  })
