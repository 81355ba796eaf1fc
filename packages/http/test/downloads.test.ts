/**
 * Download URLs (spec: raw and attachment `download_url` with `expires_at`): a URL the
 * server signed fetches the bytes without an API key until it expires, with the protective
 * headers of every download; a forged, tampered or expired one, or one whose bytes were
 * swept, is 404 not_found and says nothing more. A 20 MB blob goes through Node's HTTP
 * server as a stream: the store is read a chunk at a time, only as fast as the client reads.
 *
 * Each storage runs with the store the settings would pick for it: files beside PGlite,
 * the PostgreSQL store with a server.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, layer } from "@effect/vitest"
import { Blobs, BlobStore, BlobStores, DOWNLOAD_URL_SECONDS, sha256Of } from "@inbox/core/internal"
import { AppRoutes } from "@inbox/http"
import { distinctBytes, engineLayer, storages, TempDir, TestApp } from "@inbox/testkit"
import { Context, Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { TestClock } from "effect/testing"
import { createHash } from "node:crypto"
import { createServer, get } from "node:http"

type Storage = ReturnType<typeof storages>[number]

const storeFor = (storage: Storage) =>
  storage.name === "PGlite"
    ? Layer.unwrap(TempDir.useSync((dir) => BlobStores.layerFiles(dir.path))).pipe(Layer.provideMerge(TempDir.layer))
    : BlobStores.layerPostgres.pipe(Layer.provideMerge(TempDir.layer))

const PUBLIC_URL = "https://mail.example.com"

/** Stores bytes and signs a URL for them; answers the URL's path on our server. */
const signed = (bytes: Uint8Array, contentType: string, filename?: string) =>
  Effect.gen(function*() {
    const blobs = yield* Blobs
    const sha256 = sha256Of(bytes)
    yield* blobs.store([{ sha256, bytes }])
    const url = yield* blobs.downloadUrl({ sha256, contentType, ...(filename === undefined ? {} : { filename }) })
    assert.isTrue(url.download_url.startsWith(`${PUBLIC_URL}/downloads/`), url.download_url)
    return { ...url, path: url.download_url.slice(PUBLIC_URL.length), sha256 }
  })

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { publicUrl: PUBLIC_URL }, {}, storeFor(storage)))), {
    timeout: "120 seconds"
  })(`download URLs (${storage.name})`, (it) => {
    it.effect("a signed URL answers the bytes without an API key, with the download headers", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const bytes = new TextEncoder().encode("<script>alert(1)</script>")
        const url = yield* signed(bytes, "text/html; charset=UTF-8", "Rapport d'été \"final\".html")
        assert.strictEqual(url.expires_at, new Date(DOWNLOAD_URL_SECONDS * 1000).toISOString())
        const res = yield* app.request("GET", url.path)
        assert.strictEqual(res.status, 200, res.text)
        assert.strictEqual(res.text, "<script>alert(1)</script>")
        assert.strictEqual(res.headers.get("content-type"), "text/html; charset=utf-8")
        assert.strictEqual(res.headers.get("content-length"), String(bytes.byteLength))
        assert.strictEqual(
          res.headers.get("content-disposition"),
          `attachment; filename="Rapport d'_t_ _final_.html"; filename*=UTF-8''Rapport%20d%27%C3%A9t%C3%A9%20%22final%22.html`
        )
        assert.strictEqual(res.headers.get("x-content-type-options"), "nosniff")
        assert.strictEqual(res.headers.get("content-security-policy"), "sandbox")
        assert.strictEqual(res.headers.get("cache-control"), `private, max-age=${DOWNLOAD_URL_SECONDS}`)
      }))

    it.effect("the URL expires: at expires_at it is 404 not_found, and Cache-Control never outlives it", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const url = yield* signed(distinctBytes(100, "expiry"), "application/pdf", "a.pdf")
        yield* TestClock.adjust(`${DOWNLOAD_URL_SECONDS - 60} seconds`)
        const late = yield* app.request("GET", url.path)
        assert.strictEqual(late.status, 200)
        assert.strictEqual(late.headers.get("cache-control"), "private, max-age=60")
        yield* TestClock.adjust("60 seconds")
        const expired = yield* app.request("GET", url.path)
        assert.strictEqual(expired.status, 404)
        assert.strictEqual(expired.body.code, "not_found")
      }))

    it.effect("a tampered, forged or truncated token is 404 not_found with the same answer as an expired one", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const url = yield* signed(distinctBytes(100, "tamper"), "text/plain", "notes.txt")
        const [path = "", query = ""] = url.path.split("?")
        const token = path.slice("/downloads/".length)
        const answers = []
        for (const bad of [
          `/downloads/${token.slice(0, 20)}${token[20] === "A" ? "B" : "A"}${token.slice(21)}?${query}`,
          `/downloads/${token.slice(0, -2)}?${query}`,
          `${path}?${query.replace("text%2Fplain", "text%2Fhtml")}`,
          `${path}?${query.replace("notes.txt", "notes.html")}`,
          `${path}?content_type=text%2Fplain`,
          path,
          `/downloads/${Buffer.from(`{"s":"${url.sha256.slice(0, 20)}","e":9999999999}`).toString("base64url")}?${query}`,
          `/downloads/x?${query}`
        ]) {
          const res = yield* app.request("GET", bad)
          assert.strictEqual(res.status, 404, bad)
          answers.push({ status: res.status, body: res.body })
        }
        yield* TestClock.adjust(`${DOWNLOAD_URL_SECONDS} seconds`)
        const expired = yield* app.request("GET", url.path)
        for (const a of answers) assert.deepStrictEqual(a, { status: 404, body: expired.body })
        assert.deepStrictEqual(Object.keys(expired.body).sort(), ["code", "fix", "message", "name"])
        // Longer than any token: the router refuses it before the operation, still 404 not_found.
        const long = yield* app.request("GET", `/downloads/${"A".repeat(101)}?${query}`)
        assert.strictEqual(long.status, 404)
        assert.strictEqual(long.body.code, "not_found")
      }))

    it.effect("once the bytes are swept, their URL is 404 not_found", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const url = yield* signed(distinctBytes(100, "swept"), "text/plain")
        yield* (yield* BlobStore).remove(url.sha256)
        const res = yield* app.request("GET", url.path)
        assert.strictEqual(res.status, 404)
        assert.strictEqual(res.body.code, "not_found")
      }))
  })
}

/** The sizes of the chunks the store has handed out so far, in order. */
class Emitted extends Context.Service<Emitted, { readonly chunks: Array<number> }>()("test/Emitted") {
  static readonly layer = Layer.sync(Emitted, () => Emitted.of({ chunks: [] }))
}

/** The store, recording each chunk as it hands it out. */
const spied = Layer.effect(BlobStore, Effect.gen(function*() {
  const store = yield* BlobStore
  const { chunks } = yield* Emitted
  return BlobStore.of({ ...store, get: (sha256) => store.get(sha256).pipe(Stream.tap((c) => Effect.sync(() => chunks.push(c.byteLength)))) })
}))

interface Fetched {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly sha256: string
  readonly length: number
  /** Chunks the store had handed out while the client held the first bytes and read nothing more. */
  readonly emittedWhilePaused: number
}

/** GETs a path with Node's client, pausing half a second after the first bytes. */
const fetchSlowly = (port: number, path: string, emitted: Array<number>) =>
  Effect.callback<Fetched>((resume) => {
    get({ host: "127.0.0.1", port, path }, (res) => {
      const hash = createHash("sha256")
      let length = 0
      let emittedWhilePaused = -1
      res.on("data", (chunk: Buffer) => {
        hash.update(chunk)
        length += chunk.byteLength
        if (emittedWhilePaused !== -1) return
        emittedWhilePaused = 0
        res.pause()
        setTimeout(() => {
          emittedWhilePaused = emitted.length
          res.resume()
        }, 500)
      })
      res.on("end", () =>
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, sha256: hash.digest("hex"), length, emittedWhilePaused })))
    }).on("error", (e) => resume(Effect.die(e)))
  })

const port = HttpServer.HttpServer.useSync((s) => ("port" in s.address ? s.address.port : 0))

for (const storage of storages()) {
  const served = HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(engineLayer(storage.layer, { publicUrl: PUBLIC_URL }, {}, spied.pipe(Layer.provide(storeFor(storage))))),
    Layer.provideMerge(Emitted.layer)
  )

  layer(served, { timeout: "180 seconds" })(`a large download over Node's HTTP server (${storage.name})`, (it) => {
    it.effect("a 20 MB blob is streamed: the store is read a chunk at a time, as fast as the client reads", () =>
      TestClock.withLive(Effect.gen(function*() {
        const bytes = distinctBytes(20 * 1024 * 1024, "http-large")
        const url = yield* signed(bytes, "application/octet-stream", "big.bin")
        const { chunks } = yield* Emitted
        chunks.length = 0
        const res = yield* fetchSlowly(yield* port, url.path, chunks)
        assert.strictEqual(res.status, 200)
        assert.strictEqual(res.headers["content-length"], String(bytes.byteLength))
        assert.strictEqual(res.headers["content-disposition"], `attachment; filename="big.bin"; filename*=UTF-8''big.bin`)
        assert.strictEqual(res.length, bytes.byteLength)
        assert.strictEqual(res.sha256, url.sha256)
        assert.isAtLeast(chunks.length, 20)
        assert.isAtMost(Math.max(...chunks), 1024 * 1024)
        assert.isBelow(res.emittedWhilePaused, chunks.length / 2, `store chunks handed out while the client paused: ${res.emittedWhilePaused} of ${chunks.length}`)
      })))
  })
}
