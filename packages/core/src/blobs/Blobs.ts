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
 * sweep can touch, and its bytes were written after any sweep of that hash finished. A
 * crash between 2 and 3 leaves bytes without a row (harmless; reclaimed by `sweepStray`
 * later, not needed for correctness).
 *
 * Download URLs: a store that presigns (S3) answers with its own URL; otherwise the server
 * signs `/downloads/<token>`, where the token carries the hash, the media type, the file
 * name and the expiry, with an HMAC keyed by a secret kept in `server_secrets` (made once,
 * shared by every process on the database).
 */
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Settings } from "../settings/Settings.ts"
import { iso, now } from "../shared/time.ts"
import { BlobStore } from "./BlobStore.ts"

/** Lifetime of a download URL. */
export const DOWNLOAD_URL_SECONDS = 15 * 60

export const sha256Of = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

export interface DownloadTarget {
  readonly sha256: string
  readonly contentType: string
  readonly filename?: string
}

export interface SignedDownload {
  readonly download_url: string
  readonly expires_at: string
}

const Token = Schema.Struct({
  s: Schema.String,
  t: Schema.String,
  f: Schema.optionalKey(Schema.String),
  e: Schema.Number
})

export class Blobs extends Context.Service<Blobs, {
  /** Step 2 of the module comment: inside the transaction that inserted the referencing rows. */
  store(blobs: ReadonlyArray<{ readonly sha256: string; readonly bytes: Uint8Array }>): Effect.Effect<void>
  read(sha256: string): Stream.Stream<Uint8Array>
  readAll(sha256: string): Effect.Effect<Uint8Array>
  downloadUrl(target: DownloadTarget): Effect.Effect<SignedDownload>
  /** The target of a server-signed download token, or undefined when it is forged or expired. */
  verifyToken(token: string): Effect.Effect<DownloadTarget | undefined>
  /** Deletes the bytes of up to `limit` unreferenced blobs; answers how many. */
  sweep(limit?: number): Effect.Effect<number>
}>()("inbox/Blobs") {
  static readonly layer = Layer.effect(Blobs, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* BlobStore
    const settings = yield* Settings

    // One signing key per database, made by whichever process asks first.
    const signingKey = yield* Effect.gen(function*() {
      const made = randomBytes(32).toString("base64url")
      const at = yield* now
      yield* sql`INSERT INTO server_secrets (name, value, created_at) VALUES ('download_signing', ${made}, ${at})
        ON CONFLICT (name) DO NOTHING`
      const rows = yield* sql<{ value: string }>`SELECT value FROM server_secrets WHERE name = 'download_signing'`
      return Buffer.from(rows[0]?.value ?? made, "base64url")
    }).pipe(Effect.orDie)

    const mac = (key: Buffer, payload: string) => createHmac("sha256", key).update(payload).digest("base64url")

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
      store: (blobs) => Effect.forEach(blobs, (b) => store.put(b.sha256, b.bytes), { discard: true }),
      read: (sha256) => store.get(sha256),
      readAll,
      downloadUrl: Effect.fn("Blobs.downloadUrl")(function*(target: DownloadTarget) {
        const at = yield* now
        const expires = new Date(at.getTime() + DOWNLOAD_URL_SECONDS * 1000)
        const presigned = yield* store.presign(target.sha256, {
          expiresInSeconds: DOWNLOAD_URL_SECONDS,
          contentType: target.contentType,
          ...(target.filename === undefined ? {} : { filename: target.filename })
        })
        if (presigned !== undefined) return { download_url: presigned, expires_at: iso(expires) }
        const payload = Buffer.from(JSON.stringify({
          s: target.sha256,
          t: target.contentType,
          ...(target.filename === undefined ? {} : { f: target.filename }),
          e: Math.floor(expires.getTime() / 1000)
        })).toString("base64url")
        const token = `${payload}.${mac(signingKey, payload)}`
        return { download_url: `${settings.publicUrl}/downloads/${token}`, expires_at: iso(expires) }
      }),
      verifyToken: Effect.fn("Blobs.verifyToken")(function*(token: string) {
        const [payload, signature] = token.split(".")
        if (payload === undefined || signature === undefined) return undefined
        const expected = Buffer.from(mac(signingKey, payload))
        const given = Buffer.from(signature)
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
        const decoded = Schema.decodeUnknownOption(Schema.fromJsonString(Token))(Buffer.from(payload, "base64url").toString("utf8"))
        if (decoded._tag === "None") return undefined
        const at = yield* now
        if (decoded.value.e * 1000 < at.getTime()) return undefined
        return {
          sha256: decoded.value.s,
          contentType: decoded.value.t,
          ...(decoded.value.f === undefined ? {} : { filename: decoded.value.f })
        }
      }),
      sweep: (limit = 100) =>
        sql.withTransaction(Effect.gen(function*() {
          // SKIP LOCKED: a row a store is re-referencing right now is left for a later sweep.
          const rows = yield* sql<{ sha256: string }>`SELECT sha256 FROM blobs WHERE refs = 0 LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          for (const row of rows) yield* store.remove(row.sha256)
          if (rows.length > 0) yield* sql`DELETE FROM blobs WHERE sha256 IN ${sql.in(rows.map((r) => r.sha256))} AND refs = 0`
          return rows.length
        })).pipe(Effect.orDie)
    })
  }))
}
