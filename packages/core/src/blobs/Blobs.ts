/**
 * Blobs: content-addressed bytes with reference counting, over the BlobStore port.
 *
 * References are counted by the database (triggers on `messages`, migration 0002): a
 * message row's insert takes a reference to its raw bytes and to each attachment's, its
 * delete (however it happens: alone, with a thread, an inbox or an organization) gives them
 * back. The order that keeps bytes safe from the sweeper:
 * 1. the caller inserts the message rows (the trigger bumps `blobs.refs`, locking the row);
 * 2. in the same transaction it calls `store`, which writes the bytes (idempotently);
 * 3. it commits.
 * The sweeper deletes bytes only for rows with `refs = 0`, under a row lock, and deletes the
 * row in the same transaction; so a store that committed has a row with refs >= 1 that no
 * sweep can touch, and its bytes were written after any sweep of that hash finished (the
 * caller's step 1 waited for the sweep's lock, or the sweep skipped the row the caller had
 * locked). A transaction that rolls back after step 2, or a crash between 2 and 3, leaves
 * bytes without a row in the files and S3 stores (the PostgreSQL store's write rolls back
 * with it): harmless, reused if the same bytes come again; they are not reclaimed yet.
 *
 * Download URLs: a store that presigns (S3) answers with its own URL; otherwise the server
 * signs `/downloads/<token>?content_type=...&filename=...` (tokens.ts): the token carries
 * the hash and the expiry, and an HMAC over them, the media type and the file name, keyed
 * by a secret kept in `server_secrets` (made once, shared by every process on the
 * database). Either URL works without an API key for DOWNLOAD_URL_SECONDS; the bytes are
 * served by `downloads.get` (operations.ts). An attachment kept inside its raw message
 * (parts.ts) always gets the server's URL, which names the raw message and the part.
 *
 * `layerSweeper` runs `sweep` every SWEEP_INTERVAL in a background fiber (the server's
 * layer); several processes may sweep at once (SKIP LOCKED shares the rows out).
 */
import { Context, Effect, Layer, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { logBackgroundFailure } from "../db/Availability.ts"
import type { ParsedAttachment } from "../mail/model.ts"
import { Ids } from "../platform/Ids.ts"
import { Settings } from "../settings/Settings.ts"
import { iso, now } from "../shared/time.ts"
import { BlobStore } from "./BlobStore.ts"
import { type DownloadTarget, openDownload, signDownload } from "./tokens.ts"

export type { DownloadTarget } from "./tokens.ts"

/**
 * Lifetime of a download URL: long enough to start a large download on a slow link (the
 * URL is checked when the download starts, not while it runs), short enough that a leaked
 * URL soon stops working.
 */
export const DOWNLOAD_URL_SECONDS = 15 * 60

/** How often the server sweeps unreferenced bytes. */
export const SWEEP_INTERVAL = "1 minute"

/** Rows one sweep transaction takes; the sweeper repeats until a sweep takes fewer. */
const SWEEP_BATCH = 100

export const sha256Of = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/** An attachment as a message stores it: its bytes under their digest, the parser's when it computed one. */
export const attachmentBlob = (a: ParsedAttachment) => ({ meta: a.meta, sha256: a.sha256 ?? sha256Of(a.content), bytes: a.content })

/** An attachment of a raw message that is stored: kept inside it as part `part` (parts.ts), under the digest of its decoded bytes. */
export const attachmentInRaw = (a: ParsedAttachment, part: number) => ({ meta: a.meta, sha256: a.sha256 ?? sha256Of(a.content), part })

export interface SignedDownload {
  readonly download_url: string
  readonly expires_at: string
}

export class Blobs extends Context.Service<Blobs, {
  /** Step 2 of the module comment: inside the transaction that inserted the referencing rows. */
  store(blobs: ReadonlyArray<{ readonly sha256: string; readonly bytes: Uint8Array }>): Effect.Effect<void>
  /** Streams stored bytes in chunks; a hash that is not stored is a defect. */
  read(sha256: string): Stream.Stream<Uint8Array>
  /** Whole bytes in memory: only for what is bounded and needed whole (a message to parse or forward). */
  readAll(sha256: string): Effect.Effect<Uint8Array>
  /** Length of stored bytes, or undefined when they are not stored. */
  size(sha256: string): Effect.Effect<number | undefined>
  /** A URL that fetches the bytes without an API key until `expires_at`. */
  downloadUrl(target: DownloadTarget): Effect.Effect<SignedDownload>
  /** The target of a server-signed download URL's parts, or undefined when they are forged, malformed or expired. */
  verifyDownload(parts: {
    readonly token: string
    readonly contentType?: string | undefined
    readonly filename?: string | undefined
  }): Effect.Effect<(DownloadTarget & { readonly expiresAt: Date }) | undefined>
  /** Deletes the bytes of up to `limit` unreferenced blobs and their rows; answers how many. */
  sweep(limit?: number): Effect.Effect<number>
}>()("inbox/Blobs") {
  static readonly layerNoDeps = Layer.effect(Blobs, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* BlobStore
    const settings = yield* Settings
    const ids = yield* Ids

    // One signing key per database, made by whichever process asks first.
    const signingKey = yield* Effect.gen(function*() {
      const made = yield* ids.secret(32)
      const at = yield* now
      yield* sql`INSERT INTO server_secrets (name, value, created_at) VALUES ('download_signing', ${made}, ${at})
        ON CONFLICT (name) DO NOTHING`
      const rows = yield* sql<{ value: string }>`SELECT value FROM server_secrets WHERE name = 'download_signing'`
      return rows[0]?.value ?? made
    }).pipe(Effect.orDie)

    const readAll = (sha256: string) =>
      Stream.runCollect(store.get(sha256)).pipe(Effect.map((chunks) => {
        const parts = [...chunks]
        const out = new Uint8Array(parts.reduce((n, c) => n + c.byteLength, 0))
        let at = 0
        for (const c of parts) {
          out.set(c, at)
          at += c.byteLength
        }
        return out
      }))

    return Blobs.of({
      store: (blobs) => store.putMany(blobs),
      read: (sha256) => store.get(sha256),
      readAll,
      size: (sha256) => store.size(sha256),
      downloadUrl: Effect.fn("Blobs.downloadUrl")(function*(target: DownloadTarget) {
        // Whole seconds: the token carries seconds, and expires_at must be its true expiry.
        const expiresAtSeconds = Math.floor((yield* now).getTime() / 1000) + DOWNLOAD_URL_SECONDS
        const expires_at = iso(new Date(expiresAtSeconds * 1000))
        // A part of a raw message (parts.ts) is cut out by this server: no store can presign it.
        const presigned = target.part !== undefined ? undefined : yield* store.presign(target.sha256, {
          expiresInSeconds: DOWNLOAD_URL_SECONDS,
          contentType: target.contentType,
          ...(target.filename === undefined ? {} : { filename: target.filename })
        })
        if (presigned !== undefined) return { download_url: presigned, expires_at }
        const signed = signDownload(signingKey, target, expiresAtSeconds)
        const query = new URLSearchParams({
          content_type: signed.contentType,
          ...(signed.filename === undefined ? {} : { filename: signed.filename })
        })
        return { download_url: `${settings.publicUrl.replace(/\/+$/, "")}/downloads/${signed.token}?${query}`, expires_at }
      }),
      verifyDownload: Effect.fn("Blobs.verifyDownload")(function*(parts) {
        const opened = openDownload(signingKey, parts)
        if (opened === undefined) return undefined
        const expiresAt = new Date(opened.expiresAtSeconds * 1000)
        if (expiresAt.getTime() <= (yield* now).getTime()) return undefined
        return { ...opened.target, expiresAt }
      }),
      sweep: (limit = SWEEP_BATCH) =>
        sql.withTransaction(Effect.gen(function*() {
          // SKIP LOCKED: a row a store is re-referencing right now is left for a later sweep.
          const rows = yield* sql<{ sha256: string }>`SELECT sha256 FROM blobs WHERE refs = 0 LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          // Bytes first, then the row, under the row lock: see the module comment.
          for (const row of rows) yield* store.remove(row.sha256)
          if (rows.length > 0) yield* sql`DELETE FROM blobs WHERE sha256 IN ${sql.in(rows.map((r) => r.sha256))} AND refs = 0`
          return rows.length
        })).pipe(Effect.orDie)
    })
  }))

  /**
   * Sweeps every SWEEP_INTERVAL (the first at once), batch after batch until no
   * unreferenced row is left. A failed sweep (the store unreachable, say) is logged and
   * tried again next time: its transaction rolled back, so nothing was half done.
   */
  static readonly layerSweeper = Layer.effectDiscard(Effect.gen(function*() {
    const blobs = yield* Blobs
    const sweepAll: Effect.Effect<void> = Effect.flatMap(blobs.sweep(SWEEP_BATCH), (n) => n === SWEEP_BATCH ? sweepAll : Effect.void)
    yield* sweepAll.pipe(
      Effect.catchCause(logBackgroundFailure("blob sweep failed")),
      Effect.repeat(Schedule.spaced(SWEEP_INTERVAL)),
      Effect.forkScoped
    )
  }))

  static readonly layer = Blobs.layerNoDeps
}
