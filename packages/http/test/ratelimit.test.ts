/** Per-key and per-IP request limits on /v0 and /mcp: 429 rate_limited with Retry-After. */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, newOrganization, pglite, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite, { rateLimits: true, requestsPerMinute: 3 }))), { timeout: "120 seconds" })(
  "request rate limits",
  (it) => {
    it.effect("a key over its requests per minute gets 429 rate_limited with Retry-After; other keys are unaffected", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const a = yield* newOrganization()
        const b = yield* newOrganization()
        for (let i = 0; i < 3; i++) assert.strictEqual((yield* app.request("GET", "/v0/pods", { key: a.key })).status, 200)
        yield* TestClock.adjust("20 seconds")
        const over = yield* app.request("GET", "/v0/pods", { key: a.key })
        assert.strictEqual(over.status, 429)
        assert.strictEqual(over.body.code, "rate_limited")
        assert.strictEqual(over.body.name, "RateLimitError")
        assert.strictEqual(over.headers.get("retry-after"), "40")
        const mcp = yield* app.request("POST", "/mcp", { key: a.key, json: { jsonrpc: "2.0", id: 1, method: "tools/list" } })
        assert.strictEqual(mcp.status, 429)
        assert.strictEqual((yield* app.request("GET", "/v0/pods", { key: b.key })).status, 200)
        yield* TestClock.adjust("40 seconds")
        assert.strictEqual((yield* app.request("GET", "/v0/pods", { key: a.key })).status, 200)
      }))

    it.effect("requests without a key count against the client IP", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        yield* TestClock.adjust("1 hour")
        const statuses: Array<number> = []
        for (let i = 0; i < 4; i++) statuses.push((yield* app.request("GET", "/public/plans")).status)
        assert.deepStrictEqual(statuses, [200, 200, 200, 429])
      }))

    it.effect("requests with a refused key count against the client IP, so guessing keys meets 429", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        yield* TestClock.adjust("2 hours")
        const statuses: Array<number> = []
        for (let i = 0; i < 4; i++) statuses.push((yield* app.request("GET", "/v0/pods", { key: `am_guess${i}` })).status)
        assert.deepStrictEqual(statuses, [401, 401, 401, 429])
      }))
  }
)
