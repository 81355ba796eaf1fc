/** API keys over REST: every rule of the spec's "Key scopes" and "Permissions" sections. */
import { assert, it, layer } from "@effect/vitest"
import { PERMISSIONS } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

const setup = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "Pod A" } })).body
  const inboxA = (yield* app.request("POST", `/v0/pods/${pod.pod_id}/inboxes`, { key: org.key, json: { username: `a${pod.pod_id.slice(-6)}` } })).body
  const inboxB = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `b${pod.pod_id.slice(-6)}` } })).body
  const createKey = (key: string, json: unknown) => app.request("POST", "/v0/api-keys", { key, json })
  return { app, org, pod, inboxA, inboxB, createKey }
})

/** The names a key's permission object grants. */
const granted = (permissions: Record<string, boolean>) => Object.keys(permissions).filter((name) => permissions[name]).sort()

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `API keys (${storage.name})`,
    (it) => {
      it.effect("creates a key whose secret starts with am_ and is shown once; list items carry scope, no secret", () =>
        Effect.gen(function*() {
          const { app, org, createKey } = yield* setup
          const created = yield* createKey(org.key, { name: "ci" })
          assert.strictEqual(created.status, 200)
          assert.match(created.body.api_key, /^am_[0-9a-f]{64}$/)
          assert.match(created.body.api_key_id, /^key_[0-9a-f]+$/)
          assert.strictEqual(created.body.prefix, created.body.api_key.slice(0, 11))
          assert.strictEqual(created.body.scope, "organization")
          // Every permission by name, the SDK's object form; an unrestricted key has each.
          assert.deepStrictEqual(created.body.permissions, Object.fromEntries(PERMISSIONS.map((p) => [p, true])))
          assert.strictEqual(created.body.type, "bearer")
          assert.strictEqual(created.body.updated_at, created.body.created_at)
          const list = yield* app.request("GET", "/v0/api-keys", { key: org.key })
          const item = list.body.api_keys.find((k: { api_key_id: string }) => k.api_key_id === created.body.api_key_id)
          assert.notProperty(item, "api_key")
          assert.strictEqual(item.scope, "organization")
          assert.strictEqual(item.name, "ci")
        }))

      it.effect("creating a key needs a verified owner email: 403 email_unverified", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ verified: false })
          const res = yield* app.request("POST", "/v0/api-keys", { key, json: { name: "x" } })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "email_unverified")
        }))

      it.effect("permissions accept a list of names or an object of name to boolean", () =>
        Effect.gen(function*() {
          const { org, createKey } = yield* setup
          const list = yield* createKey(org.key, { name: "l", permissions: ["inbox_read", "pod_read"] })
          assert.deepStrictEqual(granted(list.body.permissions), ["inbox_read", "pod_read"])
          const object = yield* createKey(org.key, { name: "o", permissions: { inbox_read: true, inbox_delete: false } })
          assert.deepStrictEqual(granted(object.body.permissions), ["inbox_read"])
        }))

      it.effect("unknown permission names are rejected with 400 validation_error", () =>
        Effect.gen(function*() {
          const { org, createKey } = yield* setup
          const res = yield* createKey(org.key, { name: "x", permissions: ["inbox_read", "fly"] })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "validation_error")
          assert.deepStrictEqual(res.body.errors[0].path, ["permissions", "1"])
        }))

      it.effect("the former names provider_connect and provider_share_owner are rejected", () =>
        Effect.gen(function*() {
          const { org, createKey } = yield* setup
          for (const name of ["provider_connect", "provider_share_owner"]) {
            const res = yield* createKey(org.key, { name: "x", permissions: [name] })
            assert.strictEqual(res.status, 400)
            assert.strictEqual(res.body.code, "validation_error")
            assert.include(res.body.errors[0].message, "renamed")
          }
          const ok = yield* createKey(org.key, { name: "x", permissions: ["app_connect", "app_share_owner"] })
          assert.strictEqual(ok.status, 200)
        }))

      it.effect("a creator with a permission list silently narrows the new key", () =>
        Effect.gen(function*() {
          const { org, createKey } = yield* setup
          const limited = (yield* createKey(org.key, { name: "limited", permissions: ["api_key_create", "inbox_read"] })).body.api_key
          const asked = yield* createKey(limited, { name: "wider", permissions: ["inbox_read", "inbox_delete", "pod_create"] })
          assert.strictEqual(asked.status, 200)
          assert.deepStrictEqual(granted(asked.body.permissions), ["inbox_read"])
          const inherited = yield* createKey(limited, { name: "inherits" })
          assert.deepStrictEqual(granted(inherited.body.permissions), ["api_key_create", "inbox_read"])
        }))

      it.effect("a key lacking the required permission gets 403 missing_permission naming it", () =>
        Effect.gen(function*() {
          const { app, org, createKey } = yield* setup
          const readOnly = (yield* createKey(org.key, { name: "ro", permissions: ["inbox_read"] })).body.api_key
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes", { key: readOnly })).status, 200)
          const res = yield* app.request("POST", "/v0/inboxes", { key: readOnly, json: {} })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "missing_permission")
          assert.include(res.body.message, "inbox_create")
        }))

      it.effect("an inbox-scoped key sees only its inbox; other resources are 404 not_found", () =>
        Effect.gen(function*() {
          const { app, org, inboxA, inboxB, createKey } = yield* setup
          const scoped = yield* createKey(org.key, { name: "a-only", inbox_id: inboxA.inbox_id })
          assert.strictEqual(scoped.body.scope, "inbox")
          assert.strictEqual(scoped.body.inbox_id, inboxA.inbox_id)
          assert.strictEqual(scoped.body.pod_id, inboxA.pod_id)
          const key = scoped.body.api_key
          const list = yield* app.request("GET", "/v0/inboxes", { key })
          assert.deepStrictEqual(list.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), [inboxA.inbox_id])
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inboxA.inbox_id}`, { key })).status, 200)
          const other = yield* app.request("GET", `/v0/inboxes/${inboxB.inbox_id}`, { key })
          assert.strictEqual(other.status, 404)
          assert.strictEqual(other.body.code, "not_found")
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inboxB.inbox_id}`, { key })).status, 404)
        }))

      it.effect("a pod-scoped key reaches only that pod's inboxes and creates inboxes in it", () =>
        Effect.gen(function*() {
          const { app, org, pod, inboxA, inboxB, createKey } = yield* setup
          const key = (yield* createKey(org.key, { name: "pod", pod_id: pod.pod_id })).body.api_key
          const list = yield* app.request("GET", "/v0/inboxes", { key })
          assert.deepStrictEqual(list.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), [inboxA.inbox_id])
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inboxB.inbox_id}`, { key })).status, 404)
          const created = yield* app.request("POST", "/v0/inboxes", { key, json: {} })
          assert.strictEqual(created.body.pod_id, pod.pod_id)
          const pods = yield* app.request("GET", "/v0/pods", { key })
          assert.deepStrictEqual(pods.body.pods.map((p: { pod_id: string }) => p.pod_id), [pod.pod_id])
        }))

      it.effect("a scoped key attempting what its scope never allows gets 403 missing_permission", () =>
        Effect.gen(function*() {
          const { app, org, pod, inboxA, createKey } = yield* setup
          const inboxKey = (yield* createKey(org.key, { name: "i", inbox_id: inboxA.inbox_id })).body.api_key
          const podKey = (yield* createKey(org.key, { name: "p", pod_id: pod.pod_id })).body.api_key
          for (const [key, path] of [[inboxKey, "/v0/inboxes"], [inboxKey, "/v0/pods"], [podKey, "/v0/pods"]] as const) {
            const res = yield* app.request("POST", path, { key, json: path === "/v0/pods" ? { name: "x" } : {} })
            assert.strictEqual(res.status, 403, `${path}`)
            assert.strictEqual(res.body.code, "missing_permission")
          }
        }))

      it.effect("a new key cannot have wider scope than its creator", () =>
        Effect.gen(function*() {
          const { org, pod, inboxA, inboxB, createKey } = yield* setup
          const podKey = (yield* createKey(org.key, { name: "p", pod_id: pod.pod_id })).body.api_key
          const inboxKey = (yield* createKey(org.key, { name: "i", inbox_id: inboxA.inbox_id })).body.api_key
          assert.strictEqual((yield* createKey(podKey, { name: "org" })).body.code, "missing_permission")
          assert.strictEqual((yield* createKey(inboxKey, { name: "org" })).body.code, "missing_permission")
          assert.strictEqual((yield* createKey(inboxKey, { name: "pod", pod_id: pod.pod_id })).body.code, "missing_permission")
          // Narrower is fine; outside the creator's scope is not found.
          assert.strictEqual((yield* createKey(podKey, { name: "a", inbox_id: inboxA.inbox_id })).status, 200)
          assert.strictEqual((yield* createKey(inboxKey, { name: "a", inbox_id: inboxA.inbox_id })).status, 200)
          assert.strictEqual((yield* createKey(podKey, { name: "b", inbox_id: inboxB.inbox_id })).status, 404)
        }))

      it.effect("revocation is immediate: the revoked key is 401 on its next request", () =>
        Effect.gen(function*() {
          const { app, org, createKey } = yield* setup
          const created = (yield* createKey(org.key, { name: "temp" })).body
          assert.strictEqual((yield* app.request("GET", "/v0/pods", { key: created.api_key })).status, 200)
          const revoke = yield* app.request("DELETE", `/v0/api-keys/${created.api_key_id}`, { key: org.key })
          assert.strictEqual(revoke.status, 204)
          const after = yield* app.request("GET", "/v0/pods", { key: created.api_key })
          assert.strictEqual(after.status, 401)
          assert.strictEqual(after.body.code, "unauthorized")
          const list = yield* app.request("GET", "/v0/api-keys", { key: org.key })
          assert.isFalse(list.body.api_keys.some((k: { api_key_id: string }) => k.api_key_id === created.api_key_id))
          assert.strictEqual((yield* app.request("DELETE", `/v0/api-keys/${created.api_key_id}`, { key: org.key })).status, 404)
        }))

      it.effect("a key whose scoped inbox was deleted gives 401", () =>
        Effect.gen(function*() {
          const { app, org, inboxB, createKey } = yield* setup
          const key = (yield* createKey(org.key, { name: "b", inbox_id: inboxB.inbox_id })).body.api_key
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes", { key })).status, 200)
          yield* app.request("DELETE", `/v0/inboxes/${inboxB.inbox_id}`, { key: org.key })
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes", { key })).status, 401)
        }))

      it.effect("a key whose scoped pod was deleted gives 401, though it answered a moment before", () =>
        Effect.gen(function*() {
          const { app, org, createKey } = yield* setup
          const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "short-lived" } })).body
          const key = (yield* createKey(org.key, { name: "p", pod_id: pod.pod_id })).body.api_key
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes", { key })).status, 200)
          assert.strictEqual((yield* app.request("DELETE", `/v0/pods/${pod.pod_id}`, { key: org.key })).status, 204)
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes", { key })).status, 401)
        }))

      it.effect("a client_id already used outside the key's scope is 403 already_exists, never the hidden inbox", () =>
        Effect.gen(function*() {
          const { app, org, pod, createKey } = yield* setup
          yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { client_id: `shared-${pod.pod_id}` } })
          const podKey = (yield* createKey(org.key, { name: "p", pod_id: pod.pod_id })).body.api_key
          const res = yield* app.request("POST", "/v0/inboxes", { key: podKey, json: { client_id: `shared-${pod.pod_id}` } })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "already_exists")
          assert.notProperty(res.body, "inbox_id")
        }))

      it.effect("giving both pod_id and inbox_id is 400 validation_error", () =>
        Effect.gen(function*() {
          const { org, pod, inboxA, createKey } = yield* setup
          const res = yield* createKey(org.key, { name: "x", pod_id: pod.pod_id, inbox_id: inboxA.inbox_id })
          assert.strictEqual(res.body.code, "validation_error")
        }))
    }
  )
}
