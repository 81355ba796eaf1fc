/**
 * BlobStore: where the bytes of raw messages and attachments live, content-addressed by
 * their sha256 (lower-case hex), so one message delivered to five inboxes is stored once.
 *
 * Contract (every implementation; the contract suite in the testkit runs against each):
 * - `put(sha256, bytes)` stores the bytes under their hash. It is idempotent: a second put
 *   of the same hash succeeds and keeps one copy. When it returns, the bytes are durable
 *   (they survive a crash of this process). The caller guarantees the hash is the bytes'.
 * - `get(sha256)` streams the bytes in chunks, never holding a whole large blob in memory;
 *   a hash that is not stored is a defect (reference counting makes that a bug).
 * - `has(sha256)` says whether the bytes are stored.
 * - `remove(sha256)` deletes the bytes; removing what is not there succeeds.
 * - `presign(sha256, ...)`: a store that can hand out its own short-lived URL (S3) gives
 *   one; the others give `undefined` and the server signs a URL of its own.
 * Nothing here is atomic with the database, except in the PostgreSQL store, whose writes
 * join the caller's transaction. Reference counting, and therefore when bytes may be
 * removed, is the Blobs service's business (Blobs.ts), not the store's.
 */
import { Context, type Effect, type Stream } from "effect"

export interface PresignOptions {
  readonly expiresInSeconds: number
  readonly contentType: string
  readonly filename?: string
}

export class BlobStore extends Context.Service<BlobStore, {
  readonly name: "files" | "postgres" | "s3" | "memory"
  put(sha256: string, bytes: Uint8Array): Effect.Effect<void>
  get(sha256: string): Stream.Stream<Uint8Array>
  has(sha256: string): Effect.Effect<boolean>
  remove(sha256: string): Effect.Effect<void>
  presign(sha256: string, options: PresignOptions): Effect.Effect<string | undefined>
}>()("inbox/BlobStore") {}
