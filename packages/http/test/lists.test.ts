/**
 * Allow and block lists over REST (spec: Allow/block list entry; Allow and block lists; Key
 * scopes): the three path forms, entries as addresses or domains in one normal form,
 * duplicates, `reason` on block lists only, paging, and which keys reach which lists.
 */
import { assert, it, layer } from "@effect/vitest"
import { Lists } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
  const inbox = (yield* app.request("POST", `/v0/pods/${pod}/inboxes`, { key: org.key, json: {} })).body
  const key = (json: unknown) =>
    Effect.map(app.request("POST", "/v0/api-keys", { key: org.key, json }), (res) => res.body.api_key as string)
  return {
    ...org,
    podId: pod,
    inboxId: inbox.inbox_id as string,
    inboxEmail: inbox.email as string,
    podKey: yield* key({ name: "pod", pod_id: pod }),
    inboxKey: yield* key({ name: "inbox", inbox_id: inbox.inbox_id })
  }
})

type World = Effect.Success<typeof setUp>

/** The three path forms of one list, by level. */
const prefixes = (w: World) => ({
  organization: "/v0/lists",
  pod: `/v0/pods/${w.podId}/lists`,
  inbox: `/v0/inboxes/${w.inboxId}/lists`
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `allow and block lists (${storage.name})`,
    (it) => {
      it.effect("adds, gets, lists and deletes an entry at organization, pod and inbox scope", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          for (const [level, prefix] of Object.entries(prefixes(w))) {
            const created = yield* app.request("POST", `${prefix}/send/block`, { key: w.key, json: { entry: "spam@example.com" } })
            assert.strictEqual(created.status, 200, created.text)
            const expected = {
              entry: "spam@example.com",
              entry_type: "email",
              direction: "send",
              list_type: "block",
              organization_id: w.organizationId,
              // An inbox's entry names its inbox's pod too (the agentmail SDK's shape).
              ...(level === "pod" ? { pod_id: w.podId } : level === "inbox" ? { pod_id: w.podId, inbox_id: w.inboxId } : {}),
              created_at: created.body.created_at
            }
            assert.match(created.body.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
            assert.deepStrictEqual(created.body, expected, level)
            const got = yield* app.request("GET", `${prefix}/send/block/spam%40example.com`, { key: w.key })
            assert.deepStrictEqual(got.body, expected, level)
            const listed = yield* app.request("GET", `${prefix}/send/block`, { key: w.key })
            assert.deepStrictEqual(listed.body, { count: 1, limit: 50, entries: [expected] }, level)
            const deleted = yield* app.request("DELETE", `${prefix}/send/block/spam%40example.com`, { key: w.key })
            assert.strictEqual(deleted.status, 204, level)
            assert.strictEqual(deleted.text, "")
            const gone = yield* app.request("GET", `${prefix}/send/block/spam%40example.com`, { key: w.key })
            assert.strictEqual(gone.status, 404, level)
            assert.strictEqual(gone.body.code, "not_found")
            assert.strictEqual((yield* app.request("DELETE", `${prefix}/send/block/spam%40example.com`, { key: w.key })).status, 404)
          }
        }))

      it.effect("each scope, direction and type is its own list: an entry on one is absent from the others", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const p = prefixes(w)
          yield* app.request("POST", `${p.inbox}/receive/allow`, { key: w.key, json: { entry: "example.org" } })
          for (const path of [`${p.inbox}/receive/block`, `${p.inbox}/send/allow`, `${p.inbox}/reply/allow`, `${p.pod}/receive/allow`, `${p.organization}/receive/allow`]) {
            const listed = yield* app.request("GET", path, { key: w.key })
            assert.strictEqual(listed.body.count, 0, path)
            assert.strictEqual((yield* app.request("GET", `${path}/example.org`, { key: w.key })).status, 404, path)
          }
          // The same entry may stand on the allow and the block list of one scope (block wins there).
          const both = yield* app.request("POST", `${p.inbox}/receive/block`, { key: w.key, json: { entry: "example.org" } })
          assert.strictEqual(both.status, 200, both.text)
        }))

      it.effect("a duplicate entry is 403 already_exists, whatever its case", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          for (const prefix of Object.values(prefixes(w))) {
            assert.strictEqual((yield* app.request("POST", `${prefix}/reply/block`, { key: w.key, json: { entry: "bob@example.com" } })).status, 200)
            for (const entry of ["bob@example.com", "Bob@EXAMPLE.com", " bob@example.com. "]) {
              const again = yield* app.request("POST", `${prefix}/reply/block`, { key: w.key, json: { entry } })
              assert.strictEqual(again.status, 403, `${prefix} ${entry}`)
              assert.strictEqual(again.body.code, "already_exists")
              assert.strictEqual(again.body.name, "ForbiddenError")
            }
          }
        }))

      it.effect("entries are case-insensitive: stored lower-case, with IDNA domains in ASCII; get and delete accept any case", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const prefix = prefixes(w).organization
          const address = yield* app.request("POST", `${prefix}/send/allow`, { key: w.key, json: { entry: "Alice.Smith@Example.COM" } })
          assert.strictEqual(address.body.entry, "alice.smith@example.com")
          const domain = yield* app.request("POST", `${prefix}/send/allow`, { key: w.key, json: { entry: "Bücher.DE" } })
          assert.strictEqual(domain.body.entry, "xn--bcher-kva.de")
          const idnAddress = yield* app.request("POST", `${prefix}/send/allow`, { key: w.key, json: { entry: "Jo@Bücher.de" } })
          assert.strictEqual(idnAddress.body.entry, "jo@xn--bcher-kva.de")
          const got = yield* app.request("GET", `${prefix}/send/allow/${encodeURIComponent("ALICE.SMITH@example.com")}`, { key: w.key })
          assert.strictEqual(got.status, 200, got.text)
          assert.strictEqual(got.body.entry, "alice.smith@example.com")
          assert.strictEqual((yield* app.request("GET", `${prefix}/send/allow/${encodeURIComponent("bücher.de")}`, { key: w.key })).body.entry, "xn--bcher-kva.de")
          const deleted = yield* app.request("DELETE", `${prefix}/send/allow/${encodeURIComponent("JO@XN--BCHER-KVA.DE")}`, { key: w.key })
          assert.strictEqual(deleted.status, 204)
        }))

      it.effect("an entry that is neither an address nor a domain is 400 validation_error on entry, in the body and in the path", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const prefix = prefixes(w).inbox
          for (const entry of ["not an address", "localhost", "a@b", "@example.com", "", "x@-bad-.com", 42]) {
            const res = yield* app.request("POST", `${prefix}/send/block`, { key: w.key, json: { entry } })
            assert.strictEqual(res.status, 400, JSON.stringify(entry))
            assert.strictEqual(res.body.code, "validation_error")
            assert.deepStrictEqual(res.body.errors[0].path, ["entry"], JSON.stringify(entry))
          }
          const missing = yield* app.request("POST", `${prefix}/send/block`, { key: w.key, json: {} })
          assert.deepStrictEqual(missing.body.errors[0].path, ["entry"])
          for (const method of ["GET", "DELETE"]) {
            const res = yield* app.request(method, `${prefix}/send/block/not%20an%20address`, { key: w.key })
            assert.strictEqual(res.status, 400, method)
            assert.deepStrictEqual(res.body.errors[0].path, ["entry"])
          }
        }))

      it.effect("a reason is kept on a block entry and refused on an allow list with 400 bad_request", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const prefix = prefixes(w).pod
          const blocked = yield* app.request("POST", `${prefix}/receive/block`, { key: w.key, json: { entry: "spammer.example", reason: "phishing" } })
          assert.strictEqual(blocked.body.reason, "phishing")
          assert.strictEqual((yield* app.request("GET", `${prefix}/receive/block/spammer.example`, { key: w.key })).body.reason, "phishing")
          const refused = yield* app.request("POST", `${prefix}/receive/allow`, { key: w.key, json: { entry: "friend.example", reason: "trusted" } })
          assert.strictEqual(refused.status, 400)
          assert.strictEqual(refused.body.code, "bad_request")
          assert.include(refused.body.message, "reason")
          assert.strictEqual((yield* app.request("GET", `${prefix}/receive/allow`, { key: w.key })).body.count, 0)
          const unknown = yield* app.request("POST", `${prefix}/receive/block`, { key: w.key, json: { entry: "x.example", note: "?" } })
          assert.strictEqual(unknown.body.code, "bad_request")
          const badReason = yield* app.request("POST", `${prefix}/receive/block`, { key: w.key, json: { entry: "x.example", reason: "a".repeat(513) } })
          assert.deepStrictEqual(badReason.body.errors[0].path, ["reason"])
        }))

      it.effect("an unknown direction or type is 400 validation_error naming the path parameter, on every route", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          for (const prefix of Object.values(prefixes(w))) {
            const cases = [
              { method: "POST", path: `${prefix}/outbound/block`, param: "direction" },
              { method: "POST", path: `${prefix}/send/deny`, param: "type" },
              { method: "GET", path: `${prefix}/Send/block`, param: "direction" },
              { method: "GET", path: `${prefix}/send/blocks/a@example.com`, param: "type" },
              { method: "DELETE", path: `${prefix}/forward/allow/a@example.com`, param: "direction" }
            ]
            for (const c of cases) {
              const res = yield* app.request(c.method, c.path, { key: w.key, ...(c.method === "POST" ? { json: { entry: "a@example.com" } } : {}) })
              assert.strictEqual(res.status, 400, `${c.method} ${c.path}: ${res.text}`)
              assert.strictEqual(res.body.code, "validation_error")
              assert.deepStrictEqual(res.body.errors[0].path, [c.param], c.path)
            }
          }
        }))

      it.effect("pages newest first with limit and page_token, never repeating an entry", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const prefix = prefixes(w).inbox
          // Not in alphabetical order, so the page order can only come from the creation time.
          const entries = ["c.example", "a.example", "e.example", "b.example", "d.example"]
          for (const entry of entries) {
            yield* app.request("POST", `${prefix}/send/block`, { key: w.key, json: { entry } })
            yield* TestClock.adjust("1 second")
          }
          const seen: Array<string> = []
          let token: string | undefined
          const counts: Array<number> = []
          do {
            const res = yield* app.request("GET", `${prefix}/send/block?limit=2${token === undefined ? "" : `&page_token=${token}`}`, { key: w.key })
            assert.strictEqual(res.status, 200, res.text)
            assert.strictEqual(res.body.limit, 2)
            counts.push(res.body.count)
            seen.push(...res.body.entries.map((e: { entry: string }) => e.entry))
            token = res.body.next_page_token
          } while (token !== undefined)
          assert.deepStrictEqual(counts, [2, 2, 1])
          assert.deepStrictEqual(seen, [...entries].reverse())
          const bad = yield* app.request("GET", `${prefix}/send/block?page_token=nonsense`, { key: w.key })
          assert.strictEqual(bad.body.code, "validation_error")
          assert.strictEqual((yield* app.request("GET", `${prefix}/send/block?limit=101`, { key: w.key })).body.code, "validation_error")
        }))

      it.effect("a pod key manages its pod's and its inboxes' lists; the organization's lists are 403 missing_permission", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const p = prefixes(w)
          for (const prefix of [p.pod, p.inbox]) {
            const res = yield* app.request("POST", `${prefix}/send/block`, { key: w.podKey, json: { entry: "x@example.com" } })
            assert.strictEqual(res.status, 200, `${prefix}: ${res.text}`)
            assert.strictEqual((yield* app.request("GET", `${prefix}/send/block`, { key: w.podKey })).body.count, 1)
            assert.strictEqual((yield* app.request("DELETE", `${prefix}/send/block/x@example.com`, { key: w.podKey })).status, 204)
          }
          // The inbox's list by its address, as every inbox route accepts it.
          const byEmail = yield* app.request("GET", `/v0/inboxes/${encodeURIComponent(w.inboxEmail)}/lists/send/block`, { key: w.podKey })
          assert.strictEqual(byEmail.status, 200, byEmail.text)
          for (const [method, path] of [["POST", `${p.organization}/send/block`], ["GET", `${p.organization}/send/block`], ["GET", `${p.organization}/send/block/x@example.com`], ["DELETE", `${p.organization}/send/block/x@example.com`]] as const) {
            // Refused before the body is read: even an invalid entry is 403, not 400.
            const res = yield* app.request(method, path, { key: w.podKey, ...(method === "POST" ? { json: { entry: "not valid" } } : {}) })
            assert.strictEqual(res.status, 403, `${method} ${path}`)
            assert.strictEqual(res.body.code, "missing_permission")
          }
        }))

      it.effect("an inbox key manages only its inbox's lists; pod and organization lists are 403 missing_permission", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const p = prefixes(w)
          const res = yield* app.request("POST", `${p.inbox}/receive/allow`, { key: w.inboxKey, json: { entry: "partner.example" } })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual((yield* app.request("GET", `${p.inbox}/receive/allow/partner.example`, { key: w.inboxKey })).status, 200)
          for (const prefix of [p.pod, p.organization]) {
            const refused = yield* app.request("GET", `${prefix}/receive/allow`, { key: w.inboxKey })
            assert.strictEqual(refused.status, 403, prefix)
            assert.strictEqual(refused.body.code, "missing_permission")
          }
        }))

      it.effect("the lists of another organization, pod or inbox are 404 not_found", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const other = yield* setUp
          const p = prefixes(w)
          yield* app.request("POST", `${p.inbox}/send/block`, { key: w.key, json: { entry: "x@example.com" } })
          yield* app.request("POST", `${p.pod}/send/block`, { key: w.key, json: { entry: "x@example.com" } })
          // Another organization's keys, at every level, and a key of another pod and inbox of the same organization.
          const secondPod = (yield* app.request("POST", "/v0/pods", { key: w.key, json: { name: "Q" } })).body.pod_id
          const secondInbox = (yield* app.request("POST", `/v0/pods/${w.podId}/inboxes`, { key: w.key, json: {} })).body.inbox_id
          const otherPodKey = (yield* app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "q", pod_id: secondPod } })).body.api_key
          const otherInboxKey = (yield* app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "j", inbox_id: secondInbox } })).body.api_key
          const cases = [
            { who: "another organization", key: other.key, paths: [p.pod, p.inbox] },
            { who: "another organization's pod", key: other.podKey, paths: [p.pod, p.inbox] },
            { who: "another organization's inbox", key: other.inboxKey, paths: [p.inbox] },
            { who: "another pod", key: otherPodKey, paths: [p.pod, p.inbox] },
            { who: "another inbox", key: otherInboxKey, paths: [p.inbox] }
          ]
          for (const c of cases) {
            for (const prefix of c.paths) {
              for (const [method, path] of [["GET", `${prefix}/send/block`], ["GET", `${prefix}/send/block/x@example.com`], ["DELETE", `${prefix}/send/block/x@example.com`], ["POST", `${prefix}/send/block`]] as const) {
                const res = yield* app.request(method, path, { key: c.key, ...(method === "POST" ? { json: { entry: "y@example.com" } } : {}) })
                assert.strictEqual(res.status, 404, `${c.who}: ${method} ${path}: ${res.text}`)
                assert.strictEqual(res.body.code, "not_found")
              }
            }
          }
          // Another organization's own organization-level list is its own, and empty.
          assert.strictEqual((yield* app.request("GET", `${p.organization}/send/block`, { key: other.key })).body.count, 0)
          // Nothing was added or removed on w's lists.
          assert.strictEqual((yield* app.request("GET", `${p.inbox}/send/block`, { key: w.key })).body.count, 1)
        }))

      it.effect("deleting an inbox deletes its lists: its entries no longer decide a verdict", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const lists = yield* Lists
          const w = yield* setUp
          const inbox = (yield* app.request("POST", `/v0/pods/${w.podId}/inboxes`, { key: w.key, json: {} })).body.inbox_id
          yield* app.request("POST", `/v0/inboxes/${inbox}/lists/send/block`, { key: w.key, json: { entry: "x@example.com" } })
          const scope = { organizationId: w.organizationId, podId: w.podId, inboxId: inbox }
          assert.strictEqual((yield* lists.verdicts(scope, "send", ["x@example.com"])).get("x@example.com"), "block")
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox}`, { key: w.key })).status, 204)
          assert.strictEqual((yield* lists.verdicts(scope, "send", ["x@example.com"])).get("x@example.com"), "allow")
        }))

      it.effect("the MCP tools create_list_entry, list_list_entries, get_list_entry and delete_list_entry run the same operations", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const tool = (key: string, name: string, args: Record<string, unknown>) =>
            Effect.map(
              app.request("POST", "/mcp", { key, json: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } } }),
              (res) => ({ isError: res.body.result.isError === true, body: JSON.parse(res.body.result.content[0]?.text ?? "null") })
            )
          const list = { inbox_id: w.inboxId, direction: "send", type: "block" }
          const created = yield* tool(w.key, "create_list_entry", { ...list, entry: "Spam@Example.com", reason: "spam" })
          assert.strictEqual(created.body.entry, "spam@example.com")
          assert.strictEqual((yield* tool(w.key, "list_list_entries", list)).body.count, 1)
          assert.strictEqual((yield* tool(w.key, "get_list_entry", { ...list, entry: "spam@example.com" })).body.reason, "spam")
          const both = yield* tool(w.key, "list_list_entries", { ...list, pod_id: w.podId })
          assert.isTrue(both.isError)
          assert.strictEqual(both.body.code, "validation_error")
          const orgLevel = yield* tool(w.podKey, "list_list_entries", { direction: "send", type: "block" })
          assert.strictEqual(orgLevel.body.code, "missing_permission")
          assert.isFalse((yield* tool(w.key, "delete_list_entry", { ...list, entry: "spam@example.com" })).isError)
          assert.strictEqual((yield* tool(w.key, "list_list_entries", list)).body.count, 0)
        }))
    }
  )
}
