/**
 * The app behind Node's real HTTP server on a loopback port: what a deployed client meets,
 * including bodies streamed without a content-length.
 */
import { assert, it, layer } from "@effect/vitest"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { engineLayer, newOrganization, pglite } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { request } from "node:http"

const Served = HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(layerNodeServer({ port: 0, host: "127.0.0.1" }, NODE_SERVER_DEFAULTS)),
  Layer.provideMerge(engineLayer(pglite))
)

const port = HttpServer.HttpServer.useSync((s) => ("port" in s.address ? s.address.port : 0))

/** Streams `chunks` with Transfer-Encoding: chunked (no content-length). */
const postChunked = (p: number, path: string, key: string, chunks: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; body: string; requestId: string | undefined }>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: p, path, method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } }, (res) => {
        let body = ""
        res.on("data", (c: Buffer) => (body += c.toString()))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, requestId: res.headers["x-request-id"] as string | undefined }))
      })
      req.on("error", reject)
      for (const c of chunks) req.write(c)
      req.end()
    })
  )

layer(Served, { timeout: "120 seconds" })("the app on a real HTTP server", (it) => {
  it.effect("answers /health and a JSON request over TCP", () =>
    Effect.gen(function*() {
      const p = yield* port
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${p}/health`))
      assert.strictEqual(health.status, 200)
      assert.match(health.headers.get("x-request-id") ?? "", /^req_/)
      const { key } = yield* newOrganization()
      const created = yield* postChunked(p, "/v0/pods", key, ['{"name":', '"streamed"}'])
      assert.strictEqual(created.status, 200)
      assert.strictEqual(JSON.parse(created.body).name, "streamed")
    }))

  it.effect("a chunked body over the route's limit is 400 bad_request, without reading it whole", () =>
    Effect.gen(function*() {
      const p = yield* port
      const { key } = yield* newOrganization()
      const chunk = "x".repeat(64 * 1024)
      const res = yield* postChunked(p, "/v0/pods", key, ['{"name":"', ...Array.from({ length: 20 }, () => chunk), '"}'])
      assert.strictEqual(res.status, 400)
      assert.strictEqual(JSON.parse(res.body).code, "bad_request")
    }))
})
