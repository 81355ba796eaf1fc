/**
 * BlobStore: where the bytes of raw messages and attachments live, content-addressed by
 * their sha256 (lower-case hex), so one message delivered to five inboxes is stored once.
 *
 * Contract (every implementation; the contract suite in the testkit,
 * `contracts/blob-store.ts`, runs against each):
 * - `put(sha256, bytes)` stores the bytes under their hash. It is idempotent: a second put
 *   of the same hash succeeds and keeps one copy, and concurrent puts of one hash are safe
 *   (each sees the whole bytes or none, never a torn copy). When it returns, the bytes are
 *   durable (they survive a crash of this process and, for files, of the machine). The
 *   caller guarantees the hash is the bytes'.
 * - `putMany(blobs)` stores each as `put` does (a hash listed twice is stored once); when
 *   it returns, all are durable. The PostgreSQL store writes them in one statement, in hash
 *   order (two batches sharing hashes wait for each other in one order, never in a circle).
 * - `get(sha256)` streams the bytes in chunks (at most a few MiB each), never holding a
 *   whole large blob in memory; a hash that is not stored is a defect (reference counting
 *   makes that a bug), raised when the stream is run.
 * - `has(sha256)` says whether the bytes are stored; `size(sha256)` gives their length, or
 *   undefined when they are not stored.
 * - `remove(sha256)` deletes the bytes; removing what is not there succeeds.
 * - `presign(sha256, ...)`: a store that can hand out its own short-lived URL (S3) gives
 *   one, which answers the bytes with the given Content-Type and an attachment
 *   Content-Disposition; the others give `undefined` and the server signs a URL of its own.
 * A failure of the storage itself (a disk error, S3 unreachable) is a defect: no caller can
 * act on it. Nothing here is atomic with the database, except in the PostgreSQL store,
 * whose writes join the caller's transaction. Reference counting, and therefore when bytes
 * may be removed, is the Blobs service's business (Blobs.ts), not the store's.
 *
 * Layers (stores.ts): `layerFiles(dir)`, `layerPostgres`, `layerS3(url)`, `layerMemory`,
 * and `layerConfig`, which picks one from the settings.
 */
import { Context, Effect, type Stream } from "effect"

export interface PresignOptions {
  readonly expiresInSeconds: number
  readonly contentType: string
  readonly filename?: string
}

export interface Blob {
  readonly sha256: string
  readonly bytes: Uint8Array
}

/** `putMany` for a store without a cheaper way: each blob put in turn. */
export const putEach = (put: (sha256: string, bytes: Uint8Array) => Effect.Effect<void>) => (blobs: ReadonlyArray<Blob>) =>
  Effect.forEach(blobs, (blob) => put(blob.sha256, blob.bytes), { discard: true })

export type BlobStoreName = "files" | "postgres" | "s3" | "memory"

export class BlobStore extends Context.Service<BlobStore, {
  readonly name: BlobStoreName
  put(sha256: string, bytes: Uint8Array): Effect.Effect<void>
  putMany(blobs: ReadonlyArray<Blob>): Effect.Effect<void>
  get(sha256: string): Stream.Stream<Uint8Array>
  has(sha256: string): Effect.Effect<boolean>
  size(sha256: string): Effect.Effect<number | undefined>
  remove(sha256: string): Effect.Effect<void>
  presign(sha256: string, options: PresignOptions): Effect.Effect<string | undefined>
}>()("inbox/BlobStore") {}

const SHA256 = /^[0-9a-f]{64}$/

/**
 * A store names files and keys after the hash: anything but 64 lower-case hex digits is a
 * bug of the caller (and, in a file name, a path traversal), so it is refused as a defect.
 */
export const checkSha256 = (sha256: string): Effect.Effect<string> =>
  SHA256.test(sha256) ? Effect.succeed(sha256) : Effect.die(new Error(`not a sha256: ${JSON.stringify(sha256.slice(0, 80))}`))

export const notStored = (sha256: string) => new Error(`blob ${sha256} is not stored`)
