/**
 * Suppressions over REST (spec: Suppression; Suppressions; States: "Suppression | present |
 * DELETE suppression | absent | sending allowed again"): the list envelope, fields never set
 * are absent, the first record wins, deletion by URL-encoded address, which keys see which
 * suppressions, and the org-wide `suppressed` check sends rely on.
 */
import { assert, it, layer } from "@effect/vitest"
import { Suppressions } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
  const inbox = (yield* app.request("POST", `/v0/pods/${pod}/inboxes`, { key: org.key, json: {} })).body.inbox_id as string
  const otherInbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
  const key = (json: unknown) =>
    Effect.map(app.request("POST", "/v0/api-keys", { key: org.key, json }), (res) => res.body.api_key as string)
  return {
    ...org,
    podId: pod,
    inboxId: inbox,
    otherInboxId: otherInbox.inbox_id as string,
    podKey: yield* key({ name: "pod", pod_id: pod }),
    inboxKey: yield* key({ name: "inbox", inbox_id: inbox })
  }
})

const addresses = (body: { suppressions: ReadonlyArray<{ address: string }> }) => body.suppressions.map((s) => s.address)

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `suppressions (${storage.name})`,
    (it) => {
      it.effect("GET /v0/suppressions answers { count, suppressions, limit }; fields never set are absent", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, {
            address: "Bounced@Example.com",
            reason: "bounce",
            inbox_id: w.inboxId,
            thread_id: "thr_1",
            source_message_id: "msg_1"
          })
          yield* TestClock.adjust("1 second")
          yield* suppressions.add(w.organizationId, { address: "manual@example.com", reason: "manual" })
          const res = yield* app.request("GET", "/v0/suppressions", { key: w.key })
          assert.strictEqual(res.status, 200, res.text)
          const [manual, bounced] = res.body.suppressions
          assert.match(bounced.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          assert.isAbove(Date.parse(manual.created_at), Date.parse(bounced.created_at))
          assert.deepStrictEqual(res.body, {
            count: 2,
            limit: 50,
            suppressions: [
              { address: "manual@example.com", reason: "manual", created_at: manual.created_at },
              {
                address: "bounced@example.com",
                reason: "bounce",
                source_message_id: "msg_1",
                inbox_id: w.inboxId,
                thread_id: "thr_1",
                created_at: bounced.created_at
              }
            ]
          })
        }))

      it.effect("an address already suppressed keeps its first record", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, { address: "x@example.com", reason: "complaint", inbox_id: w.inboxId })
          const first = (yield* app.request("GET", "/v0/suppressions", { key: w.key })).body
          assert.strictEqual(first.suppressions[0].reason, "complaint")
          yield* TestClock.adjust("1 minute")
          yield* suppressions.add(w.organizationId, { address: "X@EXAMPLE.COM", reason: "bounce", inbox_id: w.otherInboxId, thread_id: "thr_2" })
          const res = yield* app.request("GET", "/v0/suppressions", { key: w.key })
          assert.deepStrictEqual(res.body, first)
        }))

      it.effect("DELETE /v0/suppressions/:address removes it (204, no body), whatever the case; sending is then allowed again", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, { address: "gone@example.com", reason: "bounce" })
          assert.deepStrictEqual(yield* suppressions.suppressed(w.organizationId, ["gone@example.com"]), ["gone@example.com"])
          const res = yield* app.request("DELETE", `/v0/suppressions/${encodeURIComponent("Gone@Example.COM")}`, { key: w.key })
          assert.strictEqual(res.status, 204, res.text)
          assert.strictEqual(res.text, "")
          assert.deepStrictEqual(yield* suppressions.suppressed(w.organizationId, ["gone@example.com"]), [])
          assert.strictEqual((yield* app.request("GET", "/v0/suppressions", { key: w.key })).body.count, 0)
          const again = yield* app.request("DELETE", "/v0/suppressions/gone%40example.com", { key: w.key })
          assert.strictEqual(again.status, 404)
          assert.strictEqual(again.body.code, "not_found")
        }))

      it.effect("deleting a malformed address is 400 validation_error naming address", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          for (const address of ["not-an-address", "a@b", "example.com"]) {
            const res = yield* app.request("DELETE", `/v0/suppressions/${encodeURIComponent(address)}`, { key: w.key })
            assert.strictEqual(res.status, 400, address)
            assert.strictEqual(res.body.code, "validation_error")
            assert.deepStrictEqual(res.body.errors[0].path, ["address"])
          }
        }))

      it.effect("an organization key sees every suppression; a pod key those of its pod's inboxes; an inbox key those of its inbox", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, { address: "inbox@example.com", reason: "bounce", inbox_id: w.inboxId })
          yield* TestClock.adjust("1 second")
          yield* suppressions.add(w.organizationId, { address: "elsewhere@example.com", reason: "bounce", inbox_id: w.otherInboxId })
          yield* TestClock.adjust("1 second")
          yield* suppressions.add(w.organizationId, { address: "manual@example.com", reason: "manual" })
          const seen = (key: string) => Effect.map(app.request("GET", "/v0/suppressions", { key }), (res) => addresses(res.body))
          assert.deepStrictEqual(yield* seen(w.key), ["manual@example.com", "elsewhere@example.com", "inbox@example.com"])
          assert.deepStrictEqual(yield* seen(w.podKey), ["inbox@example.com"])
          assert.deepStrictEqual(yield* seen(w.inboxKey), ["inbox@example.com"])
          // Deleting one it cannot see is 404, and leaves it in place.
          for (const key of [w.podKey, w.inboxKey]) {
            const res = yield* app.request("DELETE", "/v0/suppressions/manual%40example.com", { key })
            assert.strictEqual(res.status, 404)
            assert.strictEqual((yield* app.request("DELETE", "/v0/suppressions/elsewhere%40example.com", { key })).status, 404)
          }
          assert.strictEqual((yield* app.request("DELETE", "/v0/suppressions/inbox%40example.com", { key: w.inboxKey })).status, 204)
          assert.deepStrictEqual(yield* seen(w.key), ["manual@example.com", "elsewhere@example.com"])
        }))

      it.effect("another organization's suppressions are invisible: its list is empty, its delete is 404", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          const other = yield* newOrganization()
          yield* suppressions.add(w.organizationId, { address: "mine@example.com", reason: "bounce" })
          assert.strictEqual((yield* app.request("GET", "/v0/suppressions", { key: other.key })).body.count, 0)
          assert.strictEqual((yield* app.request("DELETE", "/v0/suppressions/mine%40example.com", { key: other.key })).status, 404)
          assert.deepStrictEqual(yield* suppressions.suppressed(other.organizationId, ["mine@example.com"]), [])
          assert.deepStrictEqual(yield* suppressions.suppressed(w.organizationId, ["mine@example.com"]), ["mine@example.com"])
        }))

      it.effect("suppressed() answers the given addresses suppressed anywhere in the organization, lower-cased", () =>
        Effect.gen(function*() {
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, { address: "a@example.com", reason: "bounce", inbox_id: w.otherInboxId })
          yield* suppressions.add(w.organizationId, { address: "b@bücher.de", reason: "complaint" })
          const found = yield* suppressions.suppressed(w.organizationId, ["A@Example.com", "c@example.com", "B@XN--BCHER-KVA.DE", "b@Bücher.de"])
          assert.deepStrictEqual(found, ["a@example.com", "b@xn--bcher-kva.de", "b@bücher.de"])
          assert.deepStrictEqual(yield* suppressions.suppressed(w.organizationId, []), [])
        }))

      it.effect("pages newest first with limit and page_token", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          for (const name of ["one", "two", "three"]) {
            yield* suppressions.add(w.organizationId, { address: `${name}@example.com`, reason: "bounce" })
            yield* TestClock.adjust("1 second")
          }
          const first = yield* app.request("GET", "/v0/suppressions?limit=2", { key: w.key })
          assert.deepStrictEqual(addresses(first.body), ["three@example.com", "two@example.com"])
          assert.strictEqual(first.body.limit, 2)
          assert.isString(first.body.next_page_token)
          const second = yield* app.request("GET", `/v0/suppressions?limit=2&page_token=${first.body.next_page_token}`, { key: w.key })
          assert.deepStrictEqual(addresses(second.body), ["one@example.com"])
          assert.isUndefined(second.body.next_page_token)
        }))

      it.effect("the MCP tools list_suppressions and delete_suppression run the same operations", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const suppressions = yield* Suppressions
          const w = yield* setUp
          yield* suppressions.add(w.organizationId, { address: "tool@example.com", reason: "complaint" })
          const tool = (name: string, args: Record<string, unknown>) =>
            Effect.map(
              app.request("POST", "/mcp", { key: w.key, json: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } } }),
              (res) => JSON.parse(res.body.result.content[0]?.text ?? "null")
            )
          assert.deepStrictEqual(addresses(yield* tool("list_suppressions", {})), ["tool@example.com"])
          yield* tool("delete_suppression", { address: "tool@example.com" })
          assert.strictEqual((yield* tool("list_suppressions", {})).count, 0)
        }))
    }
  )
}
