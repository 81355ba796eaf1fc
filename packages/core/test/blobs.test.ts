/**
 * Blob storage: the BlobStore contract against every store (memory, files, PostgreSQL on
 * PGlite and on a server, S3 on s3rver), reference counting through the messages
 * triggers with a real store on both databases, the sweeper (its race with a transaction
 * re-referencing the bytes, and its schedule), and download tokens.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { BlobStore, BlobStores } from "@inbox/core"
import { blobStoreContract, layerFilesInTemp, layerMemory, S3Server, storages, TempDir } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { readdirSync } from "node:fs"
import { join } from "node:path"

const filesIn = (dir: string, sha256: string) => {
  try {
    return readdirSync(join(dir, "blobs", sha256.slice(0, 2), sha256.slice(2, 4))).filter((f) => f === sha256 || f.endsWith(".tmp")).length
  } catch {
    return 0
  }
}

/** Files (the blob and any temporary file) in the store's folder for a hash. */
const fileCopies = (sha256: string) => TempDir.useSync((dir) => filesIn(dir.path, sha256))

const rowCopies = (sha256: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_data WHERE sha256 = ${sha256}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

const memoryCopies = (sha256: string) => BlobStore.use((store) => Effect.map(store.has(sha256), (has) => has ? 1 : 0))

blobStoreContract({ name: "memory", layer: layerMemory, copies: memoryCopies })

blobStoreContract({ name: "files", layer: layerFilesInTemp, copies: fileCopies })

for (const storage of storages()) {
  blobStoreContract({
    name: `PostgreSQL store (${storage.name})`,
    layer: BlobStores.layerPostgres.pipe(Layer.provideMerge(storage.layer)),
    copies: rowCopies
  })
}

const s3Layer = (prefix: string) =>
  Layer.unwrap(S3Server.useSync((server) => BlobStores.layerS3(server.url.replace("s3://blobs?", `s3://blobs/${prefix}?`)))).pipe(
    Layer.provideMerge(S3Server.layer)
  )

blobStoreContract({
  name: "S3 (s3rver on loopback)",
  layer: s3Layer("mail"),
  copies: (sha256) => S3Server.use((server) => Effect.map(server.keys(`mail/${sha256}`), (keys) => keys.length)),
  presigns: true
})
