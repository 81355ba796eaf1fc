/**
 * The BlobStore implementations. `layerPostgres` keeps bytes in the `blob_data` table of
 * the engine's own database: its writes join the caller's transaction, and every server
 * process sharing the database sees every blob.
 */
import { Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "./BlobStore.ts"

/** Bytes are read back in pieces of this size, so a download never holds a whole blob. */
export const READ_CHUNK_BYTES = 1024 * 1024

export const layerPostgres = Layer.effect(BlobStore, Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return BlobStore.of({
    name: "postgres",
    put: (sha256, bytes) =>
      sql`INSERT INTO blob_data (sha256, data) VALUES (${sha256}, ${bytes}) ON CONFLICT (sha256) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
    get: (sha256) =>
      Stream.unwrap(Effect.gen(function*() {
        const rows = yield* sql<{ n: number }>`SELECT octet_length(data) AS n FROM blob_data WHERE sha256 = ${sha256}`.pipe(Effect.orDie)
        const size = rows[0]?.n
        if (size === undefined) return yield* Effect.die(new Error(`blob ${sha256} is not stored`))
        const offsets = Array.from({ length: Math.ceil(size / READ_CHUNK_BYTES) }, (_, i) => i * READ_CHUNK_BYTES)
        return Stream.fromIterable(offsets).pipe(Stream.mapEffect((offset) =>
          sql<{ chunk: Uint8Array }>`SELECT substring(data FROM ${offset + 1} FOR ${READ_CHUNK_BYTES}) AS chunk
            FROM blob_data WHERE sha256 = ${sha256}`.pipe(
            Effect.orDie,
            Effect.map((r) => r[0]?.chunk ?? new Uint8Array())
          )
        ))
      })),
    has: (sha256) =>
      sql`SELECT 1 FROM blob_data WHERE sha256 = ${sha256}`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),
    remove: (sha256) => sql`DELETE FROM blob_data WHERE sha256 = ${sha256}`.pipe(Effect.asVoid, Effect.orDie),
    presign: () => Effect.succeed(undefined)
  })
}))
