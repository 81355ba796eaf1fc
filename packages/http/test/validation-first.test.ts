/**
 * Validation before state (docs/api.md, "Order of checks"): a request that can never succeed is
 * refused with 400 or 422 before any limit or conflict (402, 403 already_exists,
 * email_unverified, 409) is looked at, so a client learns what to fix first.
 */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `validation before state (${storage.name})`,
    (it) => {
      it.effect("on a Free plan that is full, a reserved or malformed username is still 422 or 400, not 402", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (let i = 0; i < 3; i++) assert.strictEqual((yield* app.request("POST", "/v0/inboxes", { key, json: {} })).status, 200)
          assert.strictEqual((yield* app.request("POST", "/v0/inboxes", { key, json: {} })).status, 402)
          const reserved = yield* app.request("POST", "/v0/inboxes", { key, json: { username: "postmaster" } })
          assert.strictEqual(reserved.body.code, "reserved_username")
          const malformed = yield* app.request("POST", "/v0/inboxes", { key, json: { username: "no spaces allowed" } })
          assert.strictEqual(malformed.body.code, "validation_error")
          assert.deepStrictEqual(malformed.body.errors[0].path, ["username"])
          const domain = yield* app.request("POST", "/v0/inboxes", { key, json: { domain: "not a domain" } })
          assert.strictEqual(domain.body.code, "validation_error")
        }))

      it.effect("an address that is taken and reserved is 422 reserved_username, not 403 already_exists", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const res = yield* app.request("POST", "/v0/inboxes", { key, json: { username: "Abuse" } })
          assert.strictEqual(res.status, 422)
        }))

      it.effect("an unverified organization asking for an unknown permission is 400 validation_error before 403 email_unverified", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ verified: false })
          const bad = yield* app.request("POST", "/v0/api-keys", { key, json: { name: "k", permissions: ["nope"] } })
          assert.strictEqual(bad.body.code, "validation_error")
          const good = yield* app.request("POST", "/v0/api-keys", { key, json: { name: "k", permissions: ["inbox_read"] } })
          assert.strictEqual(good.body.code, "email_unverified")
        }))

      it.effect("agent sign-up with a taken username is 409 ConflictError; with a malformed email it is 400 first", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const first = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: "taken-one", human_email: "a@example.org" } })
          assert.strictEqual(first.status, 200)
          const taken = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: "taken-one", human_email: "b@example.org" } })
          assert.strictEqual(taken.status, 409)
          assert.strictEqual(taken.body.name, "ConflictError")
          assert.strictEqual(taken.body.code, "already_exists")
          const malformed = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: "taken-one", human_email: "a@b.c" } })
          assert.strictEqual(malformed.status, 400)
          assert.deepStrictEqual(malformed.body.errors[0].path, ["human_email"])
        }))
    }
  )
}
