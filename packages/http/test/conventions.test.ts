/**
 * The /v0 wire rules of the spec: request ids, JSON body rules, validation errors, unknown
 * routes, authentication and the health check, through the whole in-process app.
 */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `HTTP conventions (${storage.name})`,
    (it) => {
      it.effect("GET /health answers 200 {status: ok}", () =>
        Effect.gen(function*() {
          const res = yield* (yield* TestApp).request("GET", "/health")
          assert.strictEqual(res.status, 200)
          assert.deepStrictEqual(res.body, { status: "ok" })
        }))

      it.effect("every response carries x-request-id, also errors and unknown routes", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const ok = yield* app.request("GET", "/v0/inboxes", { key })
          const unauthorized = yield* app.request("GET", "/v0/inboxes")
          const missing = yield* app.request("GET", "/v0/no-such-route", { key })
          for (const res of [ok, unauthorized, missing]) assert.match(res.headers.get("x-request-id") ?? "", /^req_[0-9a-f]+$/)
          assert.notStrictEqual(ok.headers.get("x-request-id"), missing.headers.get("x-request-id"))
        }))

      it.effect("a malformed URL is 400 bad_request", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("GET", "/v0/inboxes/%E0%A4%A", { key })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
        }))

      it.effect("an unknown route is 404 not_found with the error body", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("GET", "/v0/nothing/here", { key })
          assert.strictEqual(res.status, 404)
          assert.strictEqual(res.body.code, "not_found")
          assert.strictEqual(res.body.name, "NotFoundError")
          assert.isString(res.body.message)
        }))

      it.effect("a missing, unknown or malformed key is 401 unauthorized", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          for (const key of [undefined, "am_0000000000000000", "not-a-key"]) {
            const res = yield* app.request("GET", "/v0/pods", key === undefined ? {} : { key })
            assert.strictEqual(res.status, 401)
            assert.strictEqual(res.body.code, "unauthorized")
            assert.strictEqual(res.body.name, "AuthenticationError")
          }
        }))

      it.effect("/v0 routes accept the key in the api_key query parameter", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("GET", `/v0/pods?api_key=${key}`)
          assert.strictEqual(res.status, 200)
          assert.strictEqual(res.body.count, 1)
        }))

      it.effect("invalid JSON is 400 bad_request", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/inboxes", {
            key,
            body: "{not json",
            headers: { "content-type": "application/json" }
          })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
        }))

      it.effect("a JSON content-type with an empty body is 400 bad_request; a body-less POST without one is {}", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const empty = yield* app.request("POST", "/v0/inboxes", { key, body: "", headers: { "content-type": "application/json" } })
          assert.strictEqual(empty.status, 400)
          assert.strictEqual(empty.body.code, "bad_request")
          const none = yield* app.request("POST", "/v0/inboxes", { key })
          assert.strictEqual(none.status, 200)
          assert.match(none.body.inbox_id, /^inbox_[0-9a-f]+$/)
        }))

      it.effect("an unsupported content type is 400 bad_request", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/pods", {
            key,
            body: "name=x",
            headers: { "content-type": "application/x-www-form-urlencoded" }
          })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
        }))

      it.effect("a field the route does not allow is 400 bad_request", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/pods", { key, json: { name: "x", colour: "blue" } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
          assert.include(res.body.message, "colour")
        }))

      it.effect("a body over the route's limit is 400 bad_request", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/pods", { key, json: { name: "x".repeat(1024 * 1024 + 10) } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
        }))

      it.effect("a wrong type is 400 validation_error whose errors[].path names the field", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/inboxes", { key, json: { display_name: 42 } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "validation_error")
          assert.strictEqual(res.body.name, "ValidationError")
          assert.deepStrictEqual(res.body.errors[0].path, ["display_name"])
          assert.isString(res.body.errors[0].message)
        }))

      it.effect("limit outside 1..100 is 400 validation_error", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const limit of ["0", "101", "abc"]) {
            const res = yield* app.request("GET", `/v0/inboxes?limit=${limit}`, { key })
            assert.strictEqual(res.status, 400, limit)
            assert.strictEqual(res.body.code, "validation_error")
            assert.deepStrictEqual(res.body.errors[0].path, ["limit"])
          }
        }))

      it.effect("GET /public/plans needs no key and lists free, pro and scale", () =>
        Effect.gen(function*() {
          const res = yield* (yield* TestApp).request("GET", "/public/plans")
          assert.strictEqual(res.status, 200)
          assert.deepStrictEqual(res.body.plans.map((p: { id: string }) => p.id), ["free", "pro", "scale"])
          assert.deepStrictEqual(res.body.plans[0].limits, { inboxes: 3, sends_per_month: 300, sends_per_day: 100, domains: 0, webhooks: 1 })
          assert.deepStrictEqual(Object.keys(res.body.plans[1].prices).sort(), ["inr", "usd"])
        }))
    }
  )
}
