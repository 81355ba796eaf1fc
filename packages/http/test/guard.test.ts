/**
 * What every request meets before its route: the Host check against DNS rebinding, the
 * Origin check on /mcp, the CORS policy of /v0 and /public, and the caching and sniffing
 * headers. Storage plays no part here, so PGlite alone serves.
 */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, newOrganization, pglite, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

const EVIL = { host: "evil.example.com", origin: "http://evil.example.com" }

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "guard-test", version: "1" } }
}

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite, { publicUrl: "https://mail.example.com" }))), { timeout: "120 seconds" })(
  "Host, Origin, CORS and response headers",
  (it) => {
    it.effect("a request whose Host names another site is 400 bad_request on every route, before anything runs", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const requests: ReadonlyArray<readonly [string, string, object]> = [
          ["POST", "/v0/pods", { key, json: { name: "rebound" } }],
          ["GET", "/v0/pods", { key }],
          ["POST", "/v0/agent/sign-up", { json: { username: "rebound", human_email: "h@example.org" } }],
          ["GET", "/public/plans", {}],
          ["GET", "/openapi.json", {}],
          ["GET", "/v0/no-such-route", { key }],
          ["POST", "/mcp", { key, json: initialize }]
        ]
        for (const [method, path, options] of requests) {
          const res = yield* app.request(method, path, { ...options, headers: { host: EVIL.host } })
          assert.strictEqual(res.status, 400, `${method} ${path}`)
          assert.strictEqual(res.body.code, "bad_request")
          assert.include(res.body.message, "evil.example.com")
          assert.match(res.headers.get("x-request-id") ?? "", /^req_/)
        }
        const pods = yield* app.request("GET", "/v0/pods", { key })
        assert.strictEqual(pods.body.count, 1, "the refused POST created no pod")
      }))

    it.effect("the server's own names are answered, on any port: localhost, 127.0.0.1, [::1] and the public URL's host", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        for (const host of ["localhost:3000", "127.0.0.1:8080", "[::1]:3000", "mail.example.com", "MAIL.example.com:443"]) {
          const res = yield* app.request("GET", "/v0/pods", { key, headers: { host } })
          assert.strictEqual(res.status, 200, host)
        }
      }))

    it.effect("GET /health answers whatever the Host, for load balancers that probe by address", () =>
      Effect.gen(function*() {
        const res = yield* (yield* TestApp).request("GET", "/health", { headers: { host: "10.1.2.3:3000" } })
        assert.strictEqual(res.status, 200)
        assert.deepStrictEqual(res.body, { status: "ok" })
      }))

    it.effect("DNS rebinding on /mcp: Host and Origin naming another site are refused with 4xx before the key is even checked", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const rebound = yield* app.request("POST", "/mcp", { json: initialize, headers: { ...EVIL, accept: "application/json, text/event-stream" } })
        assert.strictEqual(rebound.status, 400)
        assert.strictEqual(rebound.body.code, "bad_request")
        const local = yield* app.request("POST", "/mcp", {
          key,
          json: initialize,
          headers: { host: "127.0.0.1:3000", origin: "http://127.0.0.1:3000", accept: "application/json, text/event-stream" }
        })
        assert.strictEqual(local.status, 200)
        assert.strictEqual(local.body.result.protocolVersion, "2025-11-25")
      }))

    it.effect("/mcp refuses a page on another origin with 403 forbidden; no Origin, its own origin and the public URL's pass", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const ping = { jsonrpc: "2.0", id: 1, method: "ping" }
        for (const origin of ["http://evil.example.com", "http://localhost:5173", "null"]) {
          const res = yield* app.request("POST", "/mcp", { key, json: ping, headers: { origin } })
          assert.strictEqual(res.status, 403, origin)
          assert.strictEqual(res.body.code, "forbidden")
          assert.strictEqual(res.body.name, "ForbiddenError")
          assert.strictEqual(res.headers.get("cache-control"), "no-store")
        }
        for (const headers of [{}, { origin: "http://inbox.test" }, { origin: "https://mail.example.com" }]) {
          const res = yield* app.request("POST", "/mcp", { key, json: ping, headers })
          assert.strictEqual(res.status, 200, JSON.stringify(headers))
        }
        const preflight = yield* app.request("OPTIONS", "/mcp", { headers: { origin: "http://evil.example.com", "access-control-request-method": "POST" } })
        assert.strictEqual(preflight.status, 403)
        for (const [name] of preflight.headers) assert.notMatch(name, /^access-control-/)
      }))

    it.effect("responses under /v0 carry Cache-Control: no-store and X-Content-Type-Options: nosniff, errors and 404s too", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const created = yield* app.request("POST", "/v0/api-keys", { key, json: { name: "cached?" } })
        assert.strictEqual(created.status, 200)
        assert.match(created.body.api_key, /^am_/)
        const unauthorized = yield* app.request("GET", "/v0/pods")
        const missing = yield* app.request("GET", "/v0/nothing", { key })
        const invalid = yield* app.request("POST", "/v0/pods", { key, json: { name: 1 } })
        for (const res of [created, unauthorized, missing, invalid]) {
          assert.strictEqual(res.headers.get("cache-control"), "no-store")
          assert.strictEqual(res.headers.get("x-content-type-options"), "nosniff")
        }
        const health = yield* app.request("GET", "/health")
        assert.strictEqual(health.headers.get("x-content-type-options"), "nosniff")
      }))

    it.effect("CORS: /v0 answers a preflight with 204 and lets any origin call it with a key, never with credentials", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const preflight = yield* app.request("OPTIONS", "/v0/pods", {
          headers: { origin: "https://app.example.org", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" }
        })
        assert.strictEqual(preflight.status, 204)
        assert.strictEqual(preflight.text, "")
        assert.strictEqual(preflight.headers.get("access-control-allow-origin"), "*")
        assert.include(preflight.headers.get("access-control-allow-methods") ?? "", "PATCH")
        assert.includeMembers((preflight.headers.get("access-control-allow-headers") ?? "").split(", "), ["authorization", "content-type", "idempotency-key"])
        assert.isNull(preflight.headers.get("access-control-allow-credentials"))
        const call = yield* app.request("GET", "/v0/pods", { key, headers: { origin: "https://app.example.org" } })
        assert.strictEqual(call.status, 200)
        assert.strictEqual(call.headers.get("access-control-allow-origin"), "*")
        assert.include(call.headers.get("access-control-expose-headers") ?? "", "x-request-id")
        assert.isNull(call.headers.get("access-control-allow-credentials"))
        const plans = yield* app.request("GET", "/public/plans", { headers: { origin: "https://pricing.example.org" } })
        assert.strictEqual(plans.headers.get("access-control-allow-origin"), "*")
      }))
  }
)
