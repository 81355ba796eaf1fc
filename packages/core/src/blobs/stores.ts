/**
 * The BlobStore implementations (the contract is BlobStore.ts), and `layerConfig`, which
 * picks one from the settings:
 * - INBOX_BLOB_URL set: S3-compatible object storage (`layerS3`, s3.ts);
 * - else INBOX_DATABASE_URL set: PostgreSQL (`layerPostgres`), so every server process
 *   sharing the database sees every blob with no other service to run;
 * - else files under INBOX_DATA_DIR (`layerFiles`, default ./.inbox), beside the embedded
 *   database.
 * `layerMemory` keeps bytes in the process (embedded engines without a data folder, tests).
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Config, Effect, Layer, Option, Redacted, Ref, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as fs from "node:fs/promises"
import { dirname, join } from "node:path"
import { type Blob, BlobStore, checkSha256, notStored, putEach } from "./BlobStore.ts"
import { settingDefault } from "../settings/registry.ts"

/** Bytes are read back in pieces of this size, so a download never holds a whole blob. */
export const READ_CHUNK_BYTES = 1024 * 1024

/**
 * Bytes in the `blob_data` table of the engine's own database. Writes join the caller's
 * transaction, so bytes and their reference rows commit (or roll back) together. Reads
 * fetch READ_CHUNK_BYTES per statement with `substring`, which reads only the TOAST chunks
 * it needs because the column is stored uncompressed (migration 0002: compressed values
 * would be inflated whole for every piece); no connection is held between pieces.
 */
export const layerPostgres = Layer.effect(BlobStore, Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const size = (sha256: string) =>
    sql<{ n: number }>`SELECT octet_length(data) AS n FROM blob_data WHERE sha256 = ${sha256}`.pipe(
      Effect.map((rows) => rows[0] === undefined ? undefined : Number(rows[0].n)),
      Effect.orDie
    )
  // One statement for a batch's blobs (inbound mail's group commit writes many at once). A
  // concurrent put of the same hash waits on the unique index, then does nothing; rows go
  // in hash order, so two puts sharing hashes never wait for each other in a circle.
  const putMany = (blobs: ReadonlyArray<Blob>) =>
    Effect.gen(function*() {
      const unique = new Map<string, Uint8Array>()
      for (const blob of blobs) unique.set(yield* checkSha256(blob.sha256), blob.bytes)
      if (unique.size === 0) return
      const rows = [...unique].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([sha256, data]) => ({ sha256, data }))
      yield* sql`INSERT INTO blob_data ${sql.insert(rows as never)} ON CONFLICT (sha256) DO NOTHING`.pipe(Effect.orDie)
    })
  return BlobStore.of({
    name: "postgres",
    put: (sha256, bytes) => putMany([{ sha256, bytes }]),
    putMany,
    get: (sha256) =>
      Stream.unwrap(Effect.gen(function*() {
        const total = yield* size(sha256)
        if (total === undefined) return yield* Effect.die(notStored(sha256))
        const offsets = Array.from({ length: Math.ceil(total / READ_CHUNK_BYTES) }, (_, i) => i * READ_CHUNK_BYTES)
        return Stream.fromIterable(offsets).pipe(Stream.mapEffect((offset) =>
          sql<{ chunk: Uint8Array }>`SELECT substring(data FROM ${offset + 1} FOR ${READ_CHUNK_BYTES}) AS chunk
            FROM blob_data WHERE sha256 = ${sha256}`.pipe(
            Effect.orDie,
            // Removed while being read: a short answer would pass for the whole blob, so it dies.
            Effect.flatMap((rows) => rows[0] === undefined ? Effect.die(notStored(sha256)) : Effect.succeed(rows[0].chunk))
          )
        ))
      })),
    has: (sha256) => Effect.map(size(sha256), (n) => n !== undefined),
    size,
    remove: (sha256) => sql`DELETE FROM blob_data WHERE sha256 = ${sha256}`.pipe(Effect.asVoid, Effect.orDie),
    presign: () => Effect.succeed(undefined)
  })
}))

const io = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (error) => error })

const isMissing = (error: unknown) => (error as { code?: unknown } | undefined)?.code === "ENOENT"

/** fsync of a folder makes the names in it (a rename, a new subfolder) durable. */
const syncFolder = (path: string) =>
  Effect.acquireUseRelease(io(() => fs.open(path, "r")), (handle) => io(() => handle.sync()), (handle) => Effect.promise(() => handle.close()))

/**
 * Files under `<dir>/blobs/ab/cd/<sha256>` (the first two pairs of hex digits as folders,
 * so no folder grows past 65,536 names).
 *
 * put: bytes already there are only made durable again; otherwise they go to a temporary
 * file in the same folder, which is fsynced, renamed onto the final name (atomic: a reader
 * sees the whole file or none, and concurrent puts of one hash each rename a whole copy)
 * and the folder is fsynced, so the name survives a power cut. New folders are fsynced into
 * their parents. A temporary file is removed if the put fails; a crash mid-put can leave
 * one (`.<sha256>.<uuid>.tmp`), never a torn blob.
 */
export const layerFiles = (dir: string) =>
  Layer.effect(BlobStore, Effect.gen(function*() {
    const root = join(dir, "blobs")
    yield* io(() => fs.mkdir(root, { recursive: true })).pipe(Effect.orDie)
    const pathOf = (sha256: string) => join(root, sha256.slice(0, 2), sha256.slice(2, 4), sha256)
    const exists = (path: string) => io(() => fs.stat(path)).pipe(Effect.as(true), Effect.catchIf(isMissing, () => Effect.succeed(false)))

    const writeDurably = (path: string, bytes: Uint8Array) =>
      Effect.gen(function*() {
        const folder = dirname(path)
        // Only uniqueness matters here (no test depends on the name), so not the Ids port.
        const temp = join(folder, `.${randomUUID()}.tmp`)
        yield* Effect.acquireUseRelease(
          io(() => fs.open(temp, "wx")),
          (handle) => Effect.andThen(io(() => handle.writeFile(bytes)), io(() => handle.sync())),
          (handle) => Effect.promise(() => handle.close())
        ).pipe(
          Effect.andThen(io(() => fs.rename(temp, path))),
          Effect.onError(() => Effect.promise(() => fs.rm(temp, { force: true })))
        )
      })

    const put = Effect.fn("BlobStore.files.put")(function*(sha256: string, bytes: Uint8Array) {
      const path = pathOf(yield* checkSha256(sha256))
      const folder = dirname(path)
      const created = yield* io(() => fs.mkdir(folder, { recursive: true }))
      if (created !== undefined) {
        yield* syncFolder(root)
        yield* syncFolder(dirname(folder))
      }
      if (!(yield* exists(path))) yield* writeDurably(path, bytes)
      // Also when another put renamed it: that put may not have synced the folder yet.
      yield* syncFolder(folder)
    }, Effect.orDie)

    return BlobStore.of({
      name: "files",
      put,
      putMany: putEach(put),
      get: (sha256) =>
        Stream.unwrap(Effect.map(checkSha256(sha256), (sha) =>
          NodeStream.fromReadable<Uint8Array, unknown>({
            evaluate: () => createReadStream(pathOf(sha), { highWaterMark: READ_CHUNK_BYTES }),
            onError: (error) => error
          }).pipe(Stream.mapError((error) => isMissing(error) ? notStored(sha) : error), Stream.orDie))),
      has: (sha256) => Effect.flatMap(checkSha256(sha256), (sha) => exists(pathOf(sha))).pipe(Effect.orDie),
      size: (sha256) =>
        Effect.flatMap(checkSha256(sha256), (sha) => io(() => fs.stat(pathOf(sha)))).pipe(
          Effect.map((stat): number | undefined => stat.size),
          Effect.catchIf(isMissing, () => Effect.succeed(undefined)),
          Effect.orDie
        ),
      remove: (sha256) => Effect.flatMap(checkSha256(sha256), (sha) => io(() => fs.rm(pathOf(sha), { force: true }))).pipe(Effect.orDie),
      presign: () => Effect.succeed(undefined)
    })
  }))

/**
 * Bytes in a Map of this process: gone when it exits, so only for an embedded engine
 * without a data folder (whose database is in memory too) and for tests. Puts copy the
 * bytes (a caller reusing its buffer cannot change a blob); reads hand out
 * READ_CHUNK_BYTES views, like the other stores.
 */
export const layerMemory = Layer.effect(BlobStore, Effect.gen(function*() {
  const blobs = yield* Ref.make(new Map<string, Uint8Array>())
  const find = (sha256: string) => Effect.map(Ref.get(blobs), (all) => all.get(sha256))
  const put = (sha256: string, bytes: Uint8Array) =>
    Effect.andThen(checkSha256(sha256), Ref.update(blobs, (all) => all.has(sha256) ? all : new Map(all).set(sha256, bytes.slice())))
  return BlobStore.of({
    name: "memory",
    put,
    putMany: putEach(put),
    get: (sha256) =>
      Stream.unwrap(Effect.map(find(sha256), (bytes) => {
        if (bytes === undefined) return Stream.die(notStored(sha256))
        const offsets = Array.from({ length: Math.ceil(bytes.byteLength / READ_CHUNK_BYTES) }, (_, i) => i * READ_CHUNK_BYTES)
        return Stream.fromIterable(offsets.map((at) => bytes.subarray(at, at + READ_CHUNK_BYTES)))
      })),
    has: (sha256) => Effect.map(find(sha256), (bytes) => bytes !== undefined),
    size: (sha256) => Effect.map(find(sha256), (bytes) => bytes?.byteLength),
    remove: (sha256) =>
      Ref.update(blobs, (all) => {
        if (!all.has(sha256)) return all
        const next = new Map(all)
        next.delete(sha256)
        return next
      }),
    presign: () => Effect.succeed(undefined)
  })
}))

/**
 * S3-compatible object storage at `url` (`s3://bucket[/prefix]?endpoint=...&region=...`,
 * see s3.ts). The AWS SDK is loaded only when this layer is built.
 */
export const layerS3 = (url: string) =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("./s3.ts")), (s3) => s3.layerS3(url)))

const optionalSetting = (name: string) =>
  Effect.map(Config.option(Config.Redacted(name)), (value) =>
    Option.filter(Option.map(value, Redacted.value), (v) => v.trim() !== ""))

/**
 * The store the settings ask for: INBOX_BLOB_URL (S3), else INBOX_DATABASE_URL
 * (PostgreSQL), else files under INBOX_DATA_DIR (default ./.inbox). Needs the SqlClient of
 * the engine's database (Database.layerConfig reads the same settings).
 */
export const layerConfig = Layer.unwrap(Effect.gen(function*() {
  // Redacted: the URL may carry S3 credentials, which must never reach a log.
  const blobUrl = yield* optionalSetting("INBOX_BLOB_URL")
  if (Option.isSome(blobUrl)) return layerS3(blobUrl.value)
  const databaseUrl = yield* optionalSetting("INBOX_DATABASE_URL")
  if (Option.isSome(databaseUrl)) return layerPostgres
  return layerFiles(yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR"))))
}).pipe(Effect.orDie))
