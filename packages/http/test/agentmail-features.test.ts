/**
 * The features of AgentMail's API the spec does not describe, built for the official SDK's
 * users (docs/client-compatibility.md): the caller's identity and organization, inbox
 * search, inboxes, threads and drafts under a pod's path, attachments by thread, and API
 * keys read, changed and managed under a pod or an inbox. Each keeps the engine's rules:
 * scopes, permissions, and a resource outside the path's pod is 404.
 */
import { assert, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization({ plan: "pro" })
  const tag = Math.random().toString(16).slice(2, 8)
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: `Pod ${tag}` } })).body
  const other = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: `Other ${tag}` } })).body
  const inbox = (yield* app.request("POST", `/v0/pods/${pod.pod_id}/inboxes`, { key: org.key, json: { username: `sales${tag}`, display_name: "Sales Desk" } })).body
  const elsewhere = (yield* app.request("POST", `/v0/pods/${other.pod_id}/inboxes`, { key: org.key, json: { username: `care${tag}`, client_id: `care-${tag}` } })).body
  const key = (json: unknown) => Effect.map(app.request("POST", "/v0/api-keys", { key: org.key, json }), (res) => res.body)
  return { app, org, tag, pod, other, inbox, elsewhere, key }
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `AgentMail's features beyond the spec (${storage.name})`,
    (it) => {
      it.effect("GET /v0/auth/me names the caller: an organization, pod or inbox key, whatever its permissions", () =>
        Effect.gen(function*() {
          const { app, org, pod, inbox, key } = yield* setUp
          const mine = yield* app.request("GET", "/v0/auth/me", { key: org.key })
          assert.strictEqual(mine.status, 200, mine.text)
          assert.deepInclude(mine.body, { scope_type: "organization", scope_id: org.organizationId, organization_id: org.organizationId })
          assert.match(mine.body.api_key_id, /^key_[0-9a-f]+$/)
          assert.notProperty(mine.body, "pod_id")

          const podKey = yield* key({ name: "p", pod_id: pod.pod_id, permissions: ["inbox_read"] })
          const asPod = yield* app.request("GET", "/v0/auth/me", { key: podKey.api_key })
          assert.deepStrictEqual(asPod.body, { scope_type: "pod", scope_id: pod.pod_id, organization_id: org.organizationId, pod_id: pod.pod_id, api_key_id: podKey.api_key_id })

          // A key with no permission at all still learns who it is.
          const bare = yield* key({ name: "i", inbox_id: inbox.inbox_id, permissions: [] })
          const asInbox = yield* app.request("GET", "/v0/auth/me", { key: bare.api_key })
          assert.deepStrictEqual(asInbox.body, {
            scope_type: "inbox",
            scope_id: inbox.inbox_id,
            organization_id: org.organizationId,
            pod_id: pod.pod_id,
            inbox_id: inbox.inbox_id,
            api_key_id: bare.api_key_id
          })
          assert.strictEqual((yield* app.request("GET", "/v0/auth/me")).status, 401)
        }))

      it.effect("GET /v0/organizations counts inboxes and domains against the plan's limits; a pod key is 403", () =>
        Effect.gen(function*() {
          const { app, org, pod, key } = yield* setUp
          const res = yield* app.request("GET", "/v0/organizations", { key: org.key })
          assert.strictEqual(res.status, 200, res.text)
          const billing = (yield* app.request("GET", "/v0/billing/usage", { key: org.key })).body
          assert.deepInclude(res.body, {
            organization_id: org.organizationId,
            inbox_count: 2,
            domain_count: 0,
            inbox_limit: billing.limits.inboxes,
            domain_limit: billing.limits.domains
          })
          const podKey = (yield* key({ name: "p", pod_id: pod.pod_id })).api_key
          const refused = yield* app.request("GET", "/v0/organizations", { key: podKey })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "missing_permission")
        }))

      it.effect("GET /v0/inboxes/search finds inboxes whose address, display name or client_id holds every word; under a pod, only its own", () =>
        Effect.gen(function*() {
          const { app, org, tag, pod, inbox, elsewhere } = yield* setUp
          const ids = (path: string) => Effect.map(app.request("GET", path, { key: org.key }), (res) => res.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id))
          assert.sameMembers(yield* ids(`/v0/inboxes/search?q=${tag}`), [elsewhere.inbox_id, inbox.inbox_id])
          assert.deepStrictEqual(yield* ids(`/v0/inboxes/search?q=${encodeURIComponent(`sales desk ${tag}`)}`), [inbox.inbox_id])
          assert.deepStrictEqual(yield* ids(`/v0/inboxes/search?q=care-${tag}`), [elsewhere.inbox_id])
          assert.deepStrictEqual(yield* ids(`/v0/inboxes/search?q=%25${tag}`), [])
          assert.deepStrictEqual(yield* ids(`/v0/pods/${pod.pod_id}/inboxes/search?q=${tag}`), [inbox.inbox_id])
          const empty = yield* app.request("GET", "/v0/inboxes/search?q=", { key: org.key })
          assert.strictEqual(empty.status, 400)
          // The path is search, not an inbox named "search".
          assert.strictEqual((yield* app.request("GET", "/v0/inboxes/search", { key: org.key })).status, 400)
        }))

      it.effect("an inbox, thread or draft asked for under another pod's path is 404; under its own, it answers", () =>
        Effect.gen(function*() {
          const { app, org, pod, other, inbox } = yield* setUp
          const delivered = yield* deliverMail(inbox.email, { subject: "Hello pod" })
          const threadId = delivered.body.delivered[0].thread_id as string
          const draft = (yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/drafts`, { key: org.key, json: { to: ["x@example.net"], text: "d" } })).body
          const pairs: ReadonlyArray<readonly [string, string, unknown?]> = [
            ["GET", `/inboxes/${inbox.inbox_id}`],
            ["PATCH", `/inboxes/${inbox.inbox_id}`, { display_name: "Renamed" }],
            ["GET", `/threads/${threadId}`],
            ["GET", `/drafts/${draft.draft_id}`]
          ]
          for (const [method, path, json] of pairs) {
            const own = yield* app.request(method, `/v0/pods/${pod.pod_id}${path}`, { key: org.key, ...(json === undefined ? {} : { json }) })
            assert.strictEqual(own.status, 200, `${method} ${path}: ${own.text}`)
            const foreign = yield* app.request(method, `/v0/pods/${other.pod_id}${path}`, { key: org.key, ...(json === undefined ? {} : { json }) })
            assert.strictEqual(foreign.status, 404, `${method} ${path} under another pod`)
            assert.strictEqual(foreign.body.code, "not_found")
          }
          const listed = (yield* app.request("GET", `/v0/pods/${pod.pod_id}/drafts`, { key: org.key })).body
          assert.deepStrictEqual(listed.drafts.map((d: { draft_id: string }) => d.draft_id), [draft.draft_id])
          assert.strictEqual((yield* app.request("GET", `/v0/pods/${other.pod_id}/drafts`, { key: org.key })).body.count, 0)
          assert.strictEqual((yield* app.request("GET", "/v0/pods/pod_0000000000000000000000ff/drafts", { key: org.key })).status, 404)
        }))

      it.effect("event metrics of a pod or an inbox: each event type's count per bucket, in the SDK's shape", () =>
        Effect.gen(function*() {
          const { app, org, pod, inbox, elsewhere } = yield* setUp
          yield* deliverMail(inbox.email, { subject: "one" })
          yield* deliverMail(inbox.email, { subject: "two" })
          yield* deliverMail(elsewhere.email, { subject: "elsewhere" })
          const query = "event_types=message.received&period=3600&limit=2"
          const counted = (path: string) =>
            Effect.map(app.request("GET", `${path}?${query}`, { key: org.key }), (res) => {
              assert.strictEqual(res.status, 200, res.text)
              assert.deepStrictEqual(Object.keys(res.body), ["message.received"])
              assert.strictEqual(res.body["message.received"].length, 2)
              for (const b of res.body["message.received"]) assert.match(b.timestamp, /^\d{4}-\d{2}-\d{2}T/)
              return res.body["message.received"].reduce((n: number, b: { count: number }) => n + b.count, 0)
            })
          assert.strictEqual(yield* counted(`/v0/inboxes/${inbox.inbox_id}/metrics/events`), 2)
          assert.strictEqual(yield* counted(`/v0/pods/${pod.pod_id}/metrics/events`), 2)
          assert.strictEqual(yield* counted(`/v0/inboxes/${elsewhere.inbox_id}/metrics/events`), 1)
          // The organization's stays the spec's { total, counts }.
          const org_ = yield* app.request("GET", "/v0/metrics/events?event_types=message.received", { key: org.key })
          assert.strictEqual(org_.body.total, 3)
        }))

      it.effect("include_spam (and include_trash, ...) lists hidden messages and threads beside the others, with the label's read permission", () =>
        Effect.gen(function*() {
          const { app, org, inbox, key } = yield* setUp
          const plain = (yield* deliverMail(inbox.email, { subject: "plain" })).body.delivered[0]
          const junk = (yield* deliverMail(inbox.email, { subject: "junk" })).body.delivered[0]
          const marked = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${junk.message_id}`, { key: org.key, json: { add_labels: ["spam"] } })
          assert.strictEqual(marked.status, 200, marked.text)
          const ids = (path: string, k = org.key) => Effect.map(app.request("GET", path, { key: k }), (res) => {
            assert.strictEqual(res.status, 200, res.text)
            return (res.body.messages ?? res.body.threads).map((m: { message_id?: string; thread_id: string }) => m.message_id ?? m.thread_id)
          })
          const messages = `/v0/inboxes/${inbox.inbox_id}/messages`
          assert.deepStrictEqual(yield* ids(messages), [plain.message_id])
          assert.sameMembers(yield* ids(`${messages}?include_spam=true`), [plain.message_id, junk.message_id])
          assert.deepStrictEqual(yield* ids(`${messages}?labels=spam`), [junk.message_id])
          assert.deepStrictEqual(yield* ids(`${messages}?include_trash=true`), [plain.message_id])
          const threads = `/v0/inboxes/${inbox.inbox_id}/threads`
          assert.deepStrictEqual(yield* ids(threads), [plain.thread_id])
          assert.sameMembers(yield* ids(`${threads}?include_spam=true`), [plain.thread_id, junk.thread_id])
          const noSpam = (yield* key({ name: "no spam", permissions: ["message_read", "thread_read"] })).api_key
          const refused = yield* app.request("GET", `${messages}?include_spam=true`, { key: noSpam })
          assert.strictEqual(refused.status, 403)
          assert.include(refused.body.message, "label_spam_read")
        }))

      it.effect("a draft's client_id: a create repeated with it answers the same draft, in that inbox only", () =>
        Effect.gen(function*() {
          const { app, org, inbox, elsewhere } = yield* setUp
          const path = `/v0/inboxes/${inbox.inbox_id}/drafts`
          const first = yield* app.request("POST", path, { key: org.key, json: { client_id: "draft-1", to: ["x@example.net"], text: "one" } })
          assert.strictEqual(first.status, 200, first.text)
          assert.strictEqual(first.body.client_id, "draft-1")
          const again = yield* app.request("POST", path, { key: org.key, json: { client_id: "draft-1", text: "retried" } })
          assert.strictEqual(again.body.draft_id, first.body.draft_id)
          assert.strictEqual(again.body.text, "one")
          const other = yield* app.request("POST", `/v0/inboxes/${elsewhere.inbox_id}/drafts`, { key: org.key, json: { client_id: "draft-1" } })
          assert.notStrictEqual(other.body.draft_id, first.body.draft_id)
          assert.strictEqual((yield* app.request("GET", path, { key: org.key })).body.count, 1)
          const unnamed = yield* app.request("POST", path, { key: org.key, json: { text: "no client id" } })
          assert.notProperty(unnamed.body, "client_id")
        }))

      it.effect("an attachment by its thread: metadata and a download URL from any message of the thread; another thread's is 404", () =>
        Effect.gen(function*() {
          const { app, org, pod, inbox } = yield* setUp
          const delivered = yield* deliverMail(inbox.email, {
            subject: "Report",
            attachments: [{ filename: "report.pdf", content: Buffer.from("%PDF-1.4 report"), contentType: "application/pdf" }]
          })
          const { message_id: messageId, thread_id: threadId } = delivered.body.delivered[0]
          const other = yield* deliverMail(inbox.email, { subject: "Another" })
          const message = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${messageId}`, { key: org.key })).body
          const attachmentId = message.attachments[0].attachment_id as string
          for (const prefix of ["/v0", `/v0/pods/${pod.pod_id}`, `/v0/inboxes/${inbox.inbox_id}`]) {
            const res = yield* app.request("GET", `${prefix}/threads/${threadId}/attachments/${attachmentId}`, { key: org.key })
            assert.strictEqual(res.status, 200, res.text)
            assert.deepInclude(res.body, { attachment_id: attachmentId, filename: "report.pdf", content_type: "application/pdf", size: 15 })
            assert.match(res.body.download_url, /\/downloads\//)
          }
          const wrong = yield* app.request("GET", `/v0/threads/${other.body.delivered[0].thread_id}/attachments/${attachmentId}`, { key: org.key })
          assert.strictEqual(wrong.status, 404)
        }))

      it.effect("API keys: get and update (name, permissions narrowed to the changer's, updated_at); the change applies at the key's next request", () =>
        Effect.gen(function*() {
          const { app, org, inbox, key } = yield* setUp
          const created = yield* key({ name: "reader", inbox_id: inbox.inbox_id, permissions: ["inbox_read", "message_read"] })
          const got = yield* app.request("GET", `/v0/api-keys/${created.api_key_id}`, { key: org.key })
          assert.strictEqual(got.status, 200, got.text)
          assert.notProperty(got.body, "api_key")
          assert.deepInclude(got.body, { api_key_id: created.api_key_id, name: "reader", scope: "inbox", inbox_id: inbox.inbox_id })
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key: created.api_key })).status, 200)

          const updated = yield* app.request("PATCH", `/v0/api-keys/${created.api_key_id}`, { key: org.key, json: { name: "messages only", permissions: { message_read: true } } })
          assert.strictEqual(updated.status, 200, updated.text)
          assert.strictEqual(updated.body.name, "messages only")
          assert.isTrue(updated.body.permissions.message_read)
          assert.isFalse(updated.body.permissions.inbox_read)
          assert.isTrue(updated.body.updated_at >= updated.body.created_at)
          const refused = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key: created.api_key })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "missing_permission")

          // A changer cannot give more than it holds: the rest is dropped, as on creation.
          const limited = yield* key({ name: "limited", permissions: ["api_key_update", "api_key_read", "message_read"] })
          const widened = yield* app.request("PATCH", `/v0/api-keys/${created.api_key_id}`, { key: limited.api_key, json: { permissions: ["message_read", "inbox_delete"] } })
          assert.strictEqual(widened.status, 200, widened.text)
          assert.isFalse(widened.body.permissions.inbox_delete)
          const unknown = yield* app.request("PATCH", `/v0/api-keys/${created.api_key_id}`, { key: org.key, json: { permissions: ["fly"] } })
          assert.strictEqual(unknown.status, 400)
          assert.strictEqual(unknown.body.code, "validation_error")
          assert.strictEqual((yield* app.request("GET", "/v0/api-keys/key_0000000000000000000000ff", { key: org.key })).status, 404)
        }))

      it.effect("API keys under a pod or an inbox: created scoped to it, listed and revoked only there", () =>
        Effect.gen(function*() {
          const { app, org, pod, other, inbox, key } = yield* setUp
          const podKey = yield* app.request("POST", `/v0/pods/${pod.pod_id}/api-keys`, { key: org.key, json: { name: "pod" } })
          assert.strictEqual(podKey.status, 200, podKey.text)
          assert.deepInclude(podKey.body, { scope: "pod", pod_id: pod.pod_id })
          const inboxKey = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/api-keys`, { key: org.key, json: { name: "inbox" } })
          assert.deepInclude(inboxKey.body, { scope: "inbox", inbox_id: inbox.inbox_id, pod_id: pod.pod_id })
          const outside = yield* key({ name: "other pod", pod_id: other.pod_id })
          const scopeInBody = yield* app.request("POST", `/v0/pods/${pod.pod_id}/api-keys`, { key: org.key, json: { name: "x", inbox_id: inbox.inbox_id } })
          assert.strictEqual(scopeInBody.status, 400)

          const names = (path: string) => Effect.map(app.request("GET", path, { key: org.key }), (res) => res.body.api_keys.map((k: { name: string }) => k.name).sort())
          assert.deepStrictEqual(yield* names(`/v0/pods/${pod.pod_id}/api-keys`), ["inbox", "pod"])
          assert.deepStrictEqual(yield* names(`/v0/inboxes/${inbox.inbox_id}/api-keys`), ["inbox"])
          assert.deepStrictEqual(yield* names(`/v0/pods/${other.pod_id}/api-keys`), ["other pod"])

          const wrongPlace = yield* app.request("DELETE", `/v0/pods/${pod.pod_id}/api-keys/${outside.api_key_id}`, { key: org.key })
          assert.strictEqual(wrongPlace.status, 404)
          assert.strictEqual((yield* app.request("GET", "/v0/auth/me", { key: outside.api_key })).status, 200)
          const revoked = yield* app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}/api-keys/${inboxKey.body.api_key_id}`, { key: org.key })
          assert.strictEqual(revoked.status, 204)
          assert.strictEqual((yield* app.request("GET", "/v0/auth/me", { key: inboxKey.body.api_key })).status, 401)
          // A pod key sees its pod's keys, not another pod's.
          assert.strictEqual((yield* app.request("GET", `/v0/pods/${other.pod_id}/api-keys`, { key: podKey.body.api_key })).status, 404)
        }))
    }
  )
}
