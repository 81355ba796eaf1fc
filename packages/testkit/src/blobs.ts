/**
 * Blob stores for tests: the in-memory store (the default of `engineLayer`), a throwaway
 * folder for the files store, and a real S3 server on loopback (s3rver, loaded only by the
 * tests that start it, with the AWS SDK) for the S3 store and its presigned URLs.
 */
import { BlobStores } from "@inbox/core/internal"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The in-memory BlobStore: fast, and gone with the layer. */
export const layerMemory = BlobStores.layerMemory

/** A fresh folder under the system temp folder, deleted with the layer. */
export class TempDir extends Context.Service<TempDir, { readonly path: string }>()("testkit/TempDir") {
  static readonly layer = Layer.effect(TempDir, Effect.acquireRelease(
    Effect.sync(() => TempDir.of({ path: mkdtempSync(join(tmpdir(), "inbox-test-")) })),
    (dir) => Effect.sync(() => rmSync(dir.path, { recursive: true, force: true }))
  ))
}

/** The files store in a TempDir. */
export const layerFilesInTemp = Layer.unwrap(TempDir.useSync((dir) => BlobStores.layerFiles(dir.path))).pipe(
  Layer.provideMerge(TempDir.layer)
)

const BUCKET = "blobs"

/**
 * s3rver on 127.0.0.1 (a free port) with one bucket, its objects in a TempDir. `url` is an
 * INBOX_BLOB_URL for it (s3rver accepts the credentials S3RVER/S3RVER); `keys` lists the
 * object names under a prefix, through a client of its own.
 */
export class S3Server extends Context.Service<S3Server, {
  readonly url: string
  readonly endpoint: string
  keys(prefix: string): Effect.Effect<ReadonlyArray<string>>
}>()("testkit/S3Server") {
  static readonly layer = Layer.effect(S3Server, Effect.gen(function*() {
    const dir = yield* TempDir
    const { default: S3rver } = yield* Effect.promise(() => import("s3rver"))
    const { ListObjectsV2Command, S3Client } = yield* Effect.promise(() => import("@aws-sdk/client-s3"))
    const server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      silent: true,
      directory: dir.path,
      configureBuckets: [{ name: BUCKET, configs: [] }]
    })
    const address = yield* Effect.acquireRelease(Effect.promise(() => server.run()), () => Effect.promise(() => server.close()))
    const endpoint = `http://127.0.0.1:${address.port}`
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } })
      ),
      (c) => Effect.sync(() => c.destroy())
    )
    return S3Server.of({
      url: `s3://${BUCKET}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&access_key_id=S3RVER&secret_access_key=S3RVER`,
      endpoint,
      keys: (prefix) =>
        Effect.promise(() => client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).pipe(
          Effect.map((out) => (out.Contents ?? []).flatMap((o) => o.Key === undefined ? [] : [o.Key]))
        )
    })
  })).pipe(Layer.provideMerge(TempDir.layer))
}
