/**
 * Correspondents of an inbox (docs/messages.md, "Correspondents"): the recipient suggestions
 * of the compose box, `GET /v0/inboxes/:inbox_id/correspondents?q=&limit=`. Mail arrives
 * through the inbound route and leaves through the send route, as a user's does; the
 * answers are read as the dashboard reads them.
 */
import { assert, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

interface Correspondent {
  readonly address: string
  readonly name: string | null
  readonly last_seen_at: string
  readonly messages: number
}

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization({ plan: "scale" })
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
  const suggest = (query = "") => app.request("GET", `/v0/inboxes/${inbox.inbox_id}/correspondents${query}`, { key: org.key })
  const addresses = (query = "") =>
    Effect.map(suggest(query), (res) => {
      assert.strictEqual(res.status, 200, res.text)
      return (res.body.correspondents as ReadonlyArray<Correspondent>).map((c) => c.address)
    })
  const receive = (from: string, subject = "Hello") =>
    Effect.gen(function*() {
      const res = yield* deliverMail(inbox.email, { from, subject, text: "hi" })
      assert.strictEqual(res.status, 200, res.text)
      yield* TestClock.adjust("1 minute")
    })
  const send = (json: Record<string, unknown>) =>
    Effect.gen(function*() {
      const res = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json: { text: "hi", ...json } })
      assert.strictEqual(res.status, 200, res.text)
      yield* TestClock.adjust("1 minute")
    })
  return { app, key: org.key, inbox, suggest, addresses, receive, send }
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `correspondents (${storage.name})`,
    (it) => {
      it.effect("the inbox's correspondents are the senders of its mail and the recipients of what it sent, most recent first, each with its name, last_seen_at and messages", () =>
        Effect.gen(function*() {
          const { suggest, receive, send } = yield* setUp
          yield* receive("Ann Archer <ann@north.example>")
          yield* receive("bo@south.example")
          yield* send({ to: "Carl Cole <carl@east.example>", cc: "ann@north.example", bcc: "dee@west.example" })
          yield* receive("Ann Archer <ANN@north.example>", "Again")
          const res = yield* suggest()
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(Object.keys(res.body).sort(), ["correspondents", "count"])
          const list = res.body.correspondents as ReadonlyArray<Correspondent>
          assert.strictEqual(res.body.count, list.length)
          assert.deepStrictEqual(list.map((c) => c.address), ["ann@north.example", "carl@east.example", "dee@west.example", "bo@south.example"])
          const [ann, carl, dee, bo] = list
          // Two received and one sent (as Cc, without a name: the name known stays).
          assert.deepStrictEqual(ann, { address: "ann@north.example", name: "Ann Archer", last_seen_at: ann!.last_seen_at, messages: 3 })
          assert.isTrue(ann!.last_seen_at > carl!.last_seen_at)
          assert.strictEqual(carl!.name, "Carl Cole")
          assert.strictEqual(carl!.messages, 1)
          assert.strictEqual(carl!.last_seen_at, dee!.last_seen_at)
          assert.strictEqual(dee!.name, null)
          assert.deepStrictEqual(bo, { address: "bo@south.example", name: null, last_seen_at: bo!.last_seen_at, messages: 1 })
          assert.match(bo!.last_seen_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        }))

      it.effect("q matches the start of the address or of any word of the name, case-insensitively", () =>
        Effect.gen(function*() {
          const { addresses, receive, send } = yield* setUp
          yield* receive("Ann Archer <ann@north.example>")
          yield* receive("\"Lee, Sam\" <s.lee@firm.example>")
          yield* send({ to: "Carl Cole <carl@east.example>" })
          yield* receive("Zoë Émile <zoe@accents.example>")
          assert.deepStrictEqual(yield* addresses("?q=ann"), ["ann@north.example"])
          assert.deepStrictEqual(yield* addresses("?q=AR"), ["ann@north.example"])
          assert.deepStrictEqual(yield* addresses("?q=co"), ["carl@east.example"])
          assert.deepStrictEqual(yield* addresses("?q=c"), ["carl@east.example"])
          assert.deepStrictEqual(yield* addresses("?q=sam"), ["s.lee@firm.example"])
          assert.deepStrictEqual(yield* addresses("?q=lee"), ["s.lee@firm.example"])
          assert.deepStrictEqual(yield* addresses(`?q=${encodeURIComponent("émi")}`), ["zoe@accents.example"])
          // Not a prefix: the middle of an address or of a word does not match.
          assert.deepStrictEqual(yield* addresses("?q=north"), [])
          assert.deepStrictEqual(yield* addresses("?q=rcher"), [])
          // LIKE's wildcards are matched as themselves.
          assert.deepStrictEqual(yield* addresses("?q=%25"), [])
          assert.deepStrictEqual(yield* addresses("?q=_"), [])
          // Empty q: everyone, most recent first.
          assert.deepStrictEqual(yield* addresses("?q="), ["zoe@accents.example", "carl@east.example", "s.lee@firm.example", "ann@north.example"])
        }))

      it.effect("limit is 10 by default and at most 50; spam and blocked mail and the inbox's own address are not suggested", () =>
        Effect.gen(function*() {
          const { app, key, inbox, suggest, addresses, receive, send } = yield* setUp
          for (let i = 0; i < 12; i++) yield* receive(`p${i}@many.example`)
          assert.strictEqual((yield* addresses()).length, 10)
          assert.deepStrictEqual(yield* addresses("?limit=2"), ["p11@many.example", "p10@many.example"])
          assert.strictEqual((yield* addresses("?limit=50")).length, 12)
          const over = yield* suggest("?limit=51")
          assert.strictEqual(over.status, 400)
          assert.strictEqual(over.body.code, "validation_error")
          const unknown = yield* suggest("?from=x")
          assert.strictEqual(unknown.status, 400)

          const blocked = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/lists/receive/block`, { key, json: { entry: "evil.example" } })
          assert.strictEqual(blocked.status, 200, blocked.text)
          yield* receive("Eve <eve@evil.example>")
          yield* send({ to: [inbox.email, "real@friend.example"] })
          // Eve's mail is stored, labelled blocked: hidden, so not a correspondent.
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages?labels=blocked`, { key })).body.count, 1)
          const all = yield* addresses("?limit=50")
          assert.notInclude(all, "eve@evil.example")
          assert.notInclude(all, inbox.email.toLowerCase())
          assert.include(all, "real@friend.example")
        }))

      it.effect("another organization's key, or a key of another inbox, is 404; a key without message_read is 403", () =>
        Effect.gen(function*() {
          const { app, key, inbox, receive } = yield* setUp
          yield* receive("ann@north.example")
          const other = yield* newOrganization()
          const foreign = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/correspondents`, { key: other.key })
          assert.strictEqual(foreign.status, 404)
          const second = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body
          const scoped = (yield* app.request("POST", `/v0/inboxes/${second.inbox_id}/api-keys`, { key, json: { name: "scoped" } })).body
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/correspondents`, { key: scoped.api_key })).status, 404)
          const noRead = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "no read", permissions: ["inbox_read"] } })).body
          const refused = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/correspondents`, { key: noRead.api_key })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "missing_permission")
        }))
    }
  )
}
