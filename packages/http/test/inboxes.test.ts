/** Pods and inboxes over REST: every rule of the spec's Pod and Inbox sections. */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `pods and inboxes (${storage.name})`,
    (it) => {
      it.effect("a default pod exists and deleting it is 403 pod_protected", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key, defaultPodId } = yield* newOrganization()
          const list = yield* app.request("GET", "/v0/pods", { key })
          assert.deepStrictEqual(list.body.pods.map((p: { pod_id: string }) => p.pod_id), [defaultPodId])
          const res = yield* app.request("DELETE", `/v0/pods/${defaultPodId}`, { key })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "pod_protected")
        }))

      it.effect("creates, gets and deletes a pod; client_id makes creation idempotent", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const a = yield* app.request("POST", "/v0/pods", { key, json: { name: "Sales", client_id: "sales-1" } })
          assert.strictEqual(a.status, 200)
          assert.match(a.body.pod_id, /^pod_[0-9a-f]+$/)
          assert.strictEqual(a.body.created_at, "1970-01-01T00:00:00.000Z")
          const b = yield* app.request("POST", "/v0/pods", { key, json: { name: "Sales again", client_id: "sales-1" } })
          assert.deepStrictEqual(b.body, a.body)
          const got = yield* app.request("GET", `/v0/pods/${a.body.pod_id}`, { key })
          assert.deepStrictEqual(got.body, a.body)
          const del = yield* app.request("DELETE", `/v0/pods/${a.body.pod_id}`, { key })
          assert.strictEqual(del.status, 204)
          assert.strictEqual(del.text, "")
          assert.strictEqual((yield* app.request("GET", `/v0/pods/${a.body.pod_id}`, { key })).status, 404)
        }))

      it.effect("deleting a pod that still has inboxes is 409 pod_not_empty", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const pod = yield* app.request("POST", "/v0/pods", { key, json: { name: "P" } })
          yield* app.request("POST", `/v0/pods/${pod.body.pod_id}/inboxes`, { key, json: {} })
          const res = yield* app.request("DELETE", `/v0/pods/${pod.body.pod_id}`, { key })
          assert.strictEqual(res.status, 409)
          assert.strictEqual(res.body.code, "pod_not_empty")
        }))

      it.effect("creates an inbox with a random username when omitted; optional fields are absent, not null", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key, defaultPodId } = yield* newOrganization()
          const res = yield* app.request("POST", "/v0/inboxes", { key, json: {} })
          assert.strictEqual(res.status, 200)
          assert.strictEqual(res.body.pod_id, defaultPodId)
          assert.match(res.body.email, /^[0-9a-f]{10}@inbox\.localhost$/)
          assert.strictEqual(res.body.status, "active")
          assert.deepStrictEqual(Object.keys(res.body).sort(), ["created_at", "email", "inbox_id", "pod_id", "status", "updated_at"])
        }))

      it.effect("refuses a reserved username with 422 reserved_username", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const username of ["admin", "postmaster", "Abuse"]) {
            const res = yield* app.request("POST", "/v0/inboxes", { key, json: { username } })
            assert.strictEqual(res.status, 422)
            assert.strictEqual(res.body.code, "reserved_username")
            assert.strictEqual(res.body.name, "UnprocessableError")
          }
        }))

      it.effect("a malformed username is 400 validation_error on username", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/inboxes", { key, json: { username: "no spaces!" } })
          assert.strictEqual(res.status, 400)
          assert.deepStrictEqual(res.body.errors[0].path, ["username"])
        }))

      it.effect("an address that already exists is 403 already_exists, across organizations too", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const first = yield* newOrganization()
          const second = yield* newOrganization()
          assert.strictEqual((yield* app.request("POST", "/v0/inboxes", { key: first.key, json: { username: "dup.name" } })).status, 200)
          for (const key of [first.key, second.key]) {
            const res = yield* app.request("POST", "/v0/inboxes", { key, json: { username: "DUP.name" } })
            assert.strictEqual(res.status, 403)
            assert.strictEqual(res.body.code, "already_exists")
          }
        }))

      it.effect("any domain other than the base domain is 422 domain_not_verified", () =>
        Effect.gen(function*() {
          const { key } = yield* newOrganization()
          const res = yield* (yield* TestApp).request("POST", "/v0/inboxes", { key, json: { username: "x1", domain: "example.com" } })
          assert.strictEqual(res.status, 422)
          assert.strictEqual(res.body.code, "domain_not_verified")
        }))

      it.effect("client_id makes inbox creation idempotent", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const a = yield* app.request("POST", "/v0/inboxes", { key, json: { client_id: "agent-7", display_name: "Seven" } })
          const b = yield* app.request("POST", "/v0/inboxes", { key, json: { client_id: "agent-7" } })
          assert.strictEqual(a.status, 200)
          assert.deepStrictEqual(b.body, a.body)
          const list = yield* app.request("GET", "/v0/inboxes", { key })
          assert.strictEqual(list.body.count, 1)
        }))

      it.effect("every inbox route accepts the full email address in place of the id", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: { username: "by.address" } })).body
          const got = yield* app.request("GET", `/v0/inboxes/${encodeURIComponent(inbox.email)}`, { key })
          assert.deepStrictEqual(got.body, inbox)
          const patched = yield* app.request("PATCH", `/v0/inboxes/${inbox.email}`, { key, json: { display_name: "By Address" } })
          assert.strictEqual(patched.body.display_name, "By Address")
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox.email}`, { key })).status, 204)
        }))

      it.effect("metadata holds caller-defined string values; a non-string value is validation_error", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const ok = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { team: "billing", tier: "gold" } } })
          assert.deepStrictEqual(ok.body.metadata, { team: "billing", tier: "gold" })
          const bad = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { n: 1 } } })
          assert.strictEqual(bad.status, 400)
          assert.strictEqual(bad.body.code, "validation_error")
          assert.deepStrictEqual(bad.body.errors[0].path, ["metadata", "n"])
        }))

      it.effect("PATCH sets status paused and back to active, and null clears display_name and metadata", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: { display_name: "D", metadata: { a: "b" } } })).body
          yield* TestClock.adjust("1 second")
          const paused = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "paused" } })
          assert.strictEqual(paused.body.status, "paused")
          assert.strictEqual(paused.body.updated_at, "1970-01-01T00:00:01.000Z")
          assert.strictEqual(paused.body.created_at, inbox.created_at)
          const active = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "active", display_name: null, metadata: null } })
          assert.strictEqual(active.body.status, "active")
          assert.notProperty(active.body, "display_name")
          assert.notProperty(active.body, "metadata")
          const bad = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "sleeping" } })
          assert.strictEqual(bad.body.code, "validation_error")
        }))

      it.effect("PATCH metadata merges: keys given are set, a key given as null is removed, the others kept; an empty object is validation_error", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { team: "care", tier: "gold", region: "eu" } } })).body
          const patch = (json: unknown) => app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json })
          const merged = yield* patch({ metadata: { tier: "platinum", owner: "ann", region: null } })
          assert.strictEqual(merged.status, 200, merged.text)
          assert.deepStrictEqual(merged.body.metadata, { team: "care", tier: "platinum", owner: "ann" })
          assert.deepStrictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key })).body.metadata, merged.body.metadata)
          // Other fields leave metadata as it is.
          assert.deepStrictEqual((yield* patch({ display_name: "Care" })).body.metadata, merged.body.metadata)
          const empty = yield* patch({ metadata: {} })
          assert.strictEqual(empty.status, 400)
          assert.strictEqual(empty.body.code, "validation_error")
          assert.include(empty.body.message, "null")
          // Past the limit once merged: refused, nothing changed.
          const many = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`k${i}`, "v"]))
          const over = yield* patch({ metadata: many })
          assert.strictEqual(over.status, 400)
          assert.strictEqual(over.body.code, "validation_error")
          assert.deepStrictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key })).body.metadata, merged.body.metadata)
          // Removing every key leaves no metadata.
          const none = yield* patch({ metadata: { team: null, tier: null, owner: null } })
          assert.notProperty(none.body, "metadata")
        }))

      it.effect("lists inboxes newest first, and page tokens stay correct while rows are inserted", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "pro" })
          const created: Array<string> = []
          for (let i = 0; i < 5; i++) {
            created.push((yield* app.request("POST", "/v0/inboxes", { key, json: { username: `list${i}` } })).body.inbox_id)
            yield* TestClock.adjust("1 millis")
          }
          const first = yield* app.request("GET", "/v0/inboxes?limit=2", { key })
          assert.strictEqual(first.body.count, 2)
          assert.strictEqual(first.body.limit, 2)
          assert.deepStrictEqual(first.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), [created[4], created[3]])
          // A new inbox arrives between pages: it sorts before the cursor and shifts nothing.
          yield* app.request("POST", "/v0/inboxes", { key, json: { username: "late" } })
          const second = yield* app.request("GET", `/v0/inboxes?limit=2&page_token=${first.body.next_page_token}`, { key })
          assert.deepStrictEqual(second.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), [created[2], created[1]])
          const third = yield* app.request("GET", `/v0/inboxes?limit=2&page_token=${second.body.next_page_token}`, { key })
          assert.deepStrictEqual(third.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), [created[0]])
          assert.notProperty(third.body, "next_page_token")
          const bad = yield* app.request("GET", "/v0/inboxes?page_token=garbage", { key })
          assert.strictEqual(bad.body.code, "validation_error")
        }))

      it.effect("the pod-prefixed forms create, list and delete inboxes of that pod", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const pod = (yield* app.request("POST", "/v0/pods", { key, json: { name: "Support" } })).body
          const inbox = (yield* app.request("POST", `/v0/pods/${pod.pod_id}/inboxes`, { key, json: { username: "in.pod" } })).body
          assert.strictEqual(inbox.pod_id, pod.pod_id)
          yield* app.request("POST", "/v0/inboxes", { key, json: { username: "in.default" } })
          const inPod = yield* app.request("GET", `/v0/pods/${pod.pod_id}/inboxes`, { key })
          assert.deepStrictEqual(inPod.body.inboxes.map((i: { email: string }) => i.email), ["in.pod@inbox.localhost"])
          const all = yield* app.request("GET", "/v0/inboxes", { key })
          assert.strictEqual(all.body.count, 2)
          assert.strictEqual((yield* app.request("GET", "/v0/pods/pod_ffff/inboxes", { key })).status, 404)
          assert.strictEqual((yield* app.request("DELETE", `/v0/pods/${pod.pod_id}/inboxes/${inbox.inbox_id}`, { key })).status, 204)
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key })).status, 404)
        }))

      it.effect("the Free plan allows 3 inboxes; the fourth is 402 plan_limit_exceeded with errors[0]", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (let i = 0; i < 3; i++) assert.strictEqual((yield* app.request("POST", "/v0/inboxes", { key, json: {} })).status, 200)
          const res = yield* app.request("POST", "/v0/inboxes", { key, json: {} })
          assert.strictEqual(res.status, 402)
          assert.strictEqual(res.body.code, "plan_limit_exceeded")
          assert.strictEqual(res.body.name, "PlanLimitError")
          assert.deepStrictEqual(res.body.errors[0], { limit: "inboxes", current: 3, max: 3, plan: "free", upgrade_to: "pro" })
        }))

      it.effect("deleting an inbox removes it; later reads are 404 not_found", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}`, { key })).status, 204)
          const res = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key })
          assert.strictEqual(res.status, 404)
          assert.strictEqual(res.body.code, "not_found")
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}`, { key })).status, 404)
        }))

      it.effect("another organization's inbox is 404 not_found", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const a = yield* newOrganization()
          const b = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key: a.key, json: {} })).body
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key: b.key })).status, 404)
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.email}`, { key: b.key })).status, 404)
        }))
    }
  )
}
