/**
 * The BlobStore contract (core blobs/BlobStore.ts), written once and run against every
 * implementation: files, PostgreSQL (PGlite and a server), S3 (s3rver on loopback) and
 * memory.
 *
 * A store must give back exactly the bytes put under a hash, keep one copy however often
 * and however concurrently the hash is put, say truly what it holds, forget what is
 * removed (and accept removing what it never had), stream a large blob in bounded chunks,
 * treat a read of a missing hash as a defect, and refuse a name that is not a sha256. A
 * store that presigns hands out a URL that answers the bytes with the asked media type and
 * file name; the others answer undefined.
 */
import { assert, layer } from "@effect/vitest"
import { BlobStore, sha256Of } from "@inbox/core/internal"
import { Cause, Effect, Exit, type Layer, Stream } from "effect"
import { TestClock } from "effect/testing"

export interface BlobStoreUnderTest<E, R> {
  readonly name: string
  readonly layer: Layer.Layer<BlobStore | R, E>
  /** How many copies of the hash the far side holds (files, rows, objects), half-written ones included. */
  readonly copies: (sha256: string) => Effect.Effect<number, never, R>
  /** The store presigns its own download URLs (S3). */
  readonly presigns?: boolean
}

/** Largest chunk a store may hand out: a download holds at most this much of a blob at once. */
export const MAX_CHUNK_BYTES = 4 * 1024 * 1024

let counter = 0
/** Distinct bytes on every call, so tests sharing one store never share a hash. */
export const distinctBytes = (size: number, label = "blob"): Uint8Array => {
  const bytes = new Uint8Array(size)
  const seed = Buffer.from(`${label}-${++counter}-${size}-`)
  for (let i = 0; i < size; i++) bytes[i] = (seed[i % seed.length] ?? 0) ^ (i * 31 + (i >> 8)) & 0xff
  if (size >= seed.length) bytes.set(seed, 0)
  return bytes
}

const collect = (stream: Stream.Stream<Uint8Array>) =>
  Stream.runFold(stream, () => ({ chunks: [] as Array<number>, parts: [] as Array<Uint8Array> }), (acc, chunk) => {
    acc.chunks.push(chunk.byteLength)
    acc.parts.push(chunk)
    return acc
  }).pipe(Effect.map(({ chunks, parts }) => ({ chunks, bytes: Buffer.concat(parts) })))

export const blobStoreContract = <E, R>(impl: BlobStoreUnderTest<E, R>) =>
  layer(impl.layer, { timeout: "180 seconds" })(`BlobStore contract: ${impl.name}`, (it) => {
    it.effect("gives back exactly the bytes put under a hash", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(10_000, "round-trip")
        const sha = sha256Of(bytes)
        yield* store.put(sha, bytes)
        const got = yield* collect(store.get(sha))
        assert.strictEqual(sha256Of(got.bytes), sha)
        assert.strictEqual(got.bytes.byteLength, bytes.byteLength)
        const empty = new Uint8Array()
        yield* store.put(sha256Of(empty), empty)
        assert.strictEqual((yield* collect(store.get(sha256Of(empty)))).bytes.byteLength, 0)
        assert.strictEqual(yield* store.size(sha256Of(empty)), 0)
      }))

    it.effect("a second put of the same hash succeeds and keeps one copy", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(5_000, "idempotent")
        const sha = sha256Of(bytes)
        yield* store.put(sha, bytes)
        yield* store.put(sha, bytes.slice())
        assert.strictEqual(yield* impl.copies(sha), 1)
        assert.strictEqual(sha256Of((yield* collect(store.get(sha))).bytes), sha)
      }))

    it.effect("has and size say what is stored; remove deletes it; removing what is absent succeeds", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(1234, "has-remove")
        const sha = sha256Of(bytes)
        assert.isFalse(yield* store.has(sha))
        assert.isUndefined(yield* store.size(sha))
        yield* store.put(sha, bytes)
        assert.isTrue(yield* store.has(sha))
        assert.strictEqual(yield* store.size(sha), 1234)
        yield* store.remove(sha)
        assert.isFalse(yield* store.has(sha))
        assert.strictEqual(yield* impl.copies(sha), 0)
        yield* store.remove(sha)
        yield* store.remove(sha256Of(distinctBytes(10, "never-stored")))
      }))

    it.effect("a 20 MB blob streams in several chunks, none larger than 4 MiB", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(20 * 1024 * 1024, "large")
        const sha = sha256Of(bytes)
        yield* store.put(sha, bytes)
        assert.strictEqual(yield* store.size(sha), bytes.byteLength)
        const got = yield* collect(store.get(sha))
        assert.strictEqual(got.bytes.byteLength, bytes.byteLength)
        assert.strictEqual(sha256Of(got.bytes), sha)
        assert.isAtLeast(got.chunks.length, 5, `chunks: ${got.chunks.length}`)
        assert.isAtMost(Math.max(...got.chunks), MAX_CHUNK_BYTES)
        yield* store.remove(sha)
      }))

    it.effect("concurrent puts of one hash leave one whole copy", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(3 * 1024 * 1024, "concurrent")
        const sha = sha256Of(bytes)
        yield* Effect.all(Array.from({ length: 6 }, () => store.put(sha, bytes.slice())), { concurrency: "unbounded", discard: true })
        assert.strictEqual(yield* impl.copies(sha), 1)
        assert.strictEqual(sha256Of((yield* collect(store.get(sha))).bytes), sha)
      }))

    it.effect("putMany stores every blob of a list once, a hash listed twice or already stored included", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const stored = distinctBytes(1000, "many-stored")
        yield* store.put(sha256Of(stored), stored)
        const fresh = [distinctBytes(10, "many-a"), distinctBytes(70_000, "many-b"), distinctBytes(0, "many-empty")]
        const listed = [fresh[1]!, stored, fresh[0]!, fresh[1]!.slice(), fresh[2]!]
        yield* store.putMany(listed.map((bytes) => ({ sha256: sha256Of(bytes), bytes })))
        for (const bytes of [...fresh, stored]) {
          const sha = sha256Of(bytes)
          assert.strictEqual(yield* impl.copies(sha), 1)
          assert.strictEqual(yield* store.size(sha), bytes.byteLength)
          assert.isTrue(Buffer.from((yield* collect(store.get(sha))).bytes).equals(Buffer.from(bytes)))
        }
        yield* store.putMany([])
        const exit = yield* Effect.exit(store.putMany([{ sha256: "../x", bytes: new Uint8Array([1]) }]))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), String(exit))
      }))

    it.effect("reading a hash that is not stored is a defect", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const exit = yield* Effect.exit(Stream.runDrain(store.get(sha256Of(distinctBytes(10, "missing")))))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), String(exit))
      }))

    it.effect("a name that is not a sha256 is refused as a defect", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        for (const bad of ["../../etc/passwd", "ABCDEF".repeat(10) + "ABCD", ""]) {
          const exit = yield* Effect.exit(store.put(bad, new Uint8Array([1])))
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), bad)
        }
      }))

    // On the real clock: a presigned URL is checked against the S3 server's time.
    it.effect(impl.presigns === true ? "presigns a URL that answers the bytes as an attachment" : "presigns nothing: the server signs its own URLs", () =>
      TestClock.withLive(Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = distinctBytes(70_000, "presign")
        const sha = sha256Of(bytes)
        yield* store.put(sha, bytes)
        const url = yield* store.presign(sha, { expiresInSeconds: 60, contentType: "application/pdf", filename: "Résumé (final).pdf" })
        if (impl.presigns !== true) return assert.isUndefined(url)
        assert.isString(url)
        const response = yield* Effect.promise(() => fetch(url ?? ""))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("content-type"), "application/pdf")
        assert.strictEqual(
          response.headers.get("content-disposition"),
          `attachment; filename="R_sum_ (final).pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%28final%29.pdf`
        )
        const body = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
        assert.strictEqual(sha256Of(body), sha)
      })))
  })
