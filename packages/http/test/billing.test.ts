/**
 * Billing over REST (spec: Billing summary, Billing, Key scopes on billing, Errors 409
 * no_subscription and 503 billing_not_configured; docs/billing.md): the summary with
 * nulls where the spec states them, usage counted against the plan, and who may call.
 */
import { assert, it, layer } from "@effect/vitest"
import { PERMISSIONS } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

const FREE_LIMITS = { inboxes: 3, sends_per_month: 300, sends_per_day: 100, domains: 0, webhooks: 1 }

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "180 seconds" })(
    `billing (${storage.name})`,
    (it) => {
      it.effect("the billing summary of a Free organization: status none, source free, provider, interval and current_period_end null", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const res = yield* app.request("GET", "/v0/billing", { key: org.key })
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(res.body, {
            plan: "free",
            plan_name: "Free",
            status: "none",
            source: "free",
            provider: null,
            interval: null,
            current_period_end: null,
            cancel_at_period_end: false,
            limits: FREE_LIMITS,
            usage: { inboxes: 0, sends_this_month: 0, sends_today: 0, domains: 0, webhooks: 0 }
          })
        }))

      it.effect("a plan the operator assigned shows source admin and its limits", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization({ plan: "scale" })
          const res = yield* app.request("GET", "/v0/billing", { key: org.key })
          assert.strictEqual(res.body.plan, "scale")
          assert.strictEqual(res.body.plan_name, "Scale")
          assert.strictEqual(res.body.source, "admin")
          assert.strictEqual(res.body.status, "active")
          assert.strictEqual(res.body.provider, null)
          assert.strictEqual(res.body.limits.sends_per_day, null)
        }))

      it.effect("billing usage answers { plan, limits, usage } counting inboxes and sends", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
          yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })
          const sent = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json: { to: "a@example.net", text: "hi" } })
          assert.strictEqual(sent.status, 200, sent.text)
          const res = yield* app.request("GET", "/v0/billing/usage", { key: org.key })
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(res.body, {
            plan: "free",
            limits: FREE_LIMITS,
            usage: { inboxes: 2, sends_this_month: 1, sends_today: 1, domains: 0, webhooks: 0 }
          })
        }))

      it.effect("billing routes need an organization-level key without a permission list: 403 missing_permission otherwise", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
          const key = (json: unknown) => Effect.map(app.request("POST", "/v0/api-keys", { key: org.key, json }), (r) => r.body.api_key as string)
          const podKey = yield* key({ name: "pod", pod_id: pod })
          const listed = yield* key({ name: "every permission, listed", permissions: [...PERMISSIONS] })
          for (const k of [podKey, listed]) {
            for (const [method, path] of [["GET", "/v0/billing"], ["GET", "/v0/billing/usage"], ["POST", "/v0/billing/cancel"]] as const) {
              const res = yield* app.request(method, path, { key: k, ...(method === "POST" ? { json: {} } : {}) })
              assert.strictEqual(res.status, 403, `${method} ${path}: ${res.text}`)
              assert.strictEqual(res.body.code, "missing_permission")
            }
          }
          const granted = yield* app.request("POST", "/v0/api-keys", { key: org.key, json: { name: "billing", permissions: ["billing_read"] } })
          assert.strictEqual(granted.status, 400)
          assert.strictEqual(granted.body.code, "validation_error")
        }))

      it.effect("checkout without a configured provider is 503 billing_not_configured; portal and cancel without a subscription are 409 no_subscription", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const checkout = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly" } })
          assert.strictEqual(checkout.status, 503, checkout.text)
          assert.strictEqual(checkout.body.code, "billing_not_configured")
          for (const path of ["/v0/billing/portal", "/v0/billing/cancel"]) {
            const res = yield* app.request("POST", path, { key: org.key, json: {} })
            assert.strictEqual(res.status, 409, res.text)
            assert.strictEqual(res.body.code, "no_subscription")
          }
          const free = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "free", interval: "monthly" } })
          assert.strictEqual(free.status, 400)
          assert.strictEqual(free.body.code, "validation_error")
        }))
    }
  )
}
