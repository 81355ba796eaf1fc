/**
 * The events list over REST (spec: Events; "GET /v0/events needs message_read"): the
 * envelope, newest first with pages, one inbox's events, scope filtering, and the opt-in
 * `message.received.*` types only for keys with the matching `label_*_read` permission.
 * The WebSocket's frames and each webhook delivery are checked equal to the list's envelope
 * (websocket.test.ts, webhooks.test.ts), so the bodies joined back here reach them too.
 */
import { assert, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
  const inbox = (yield* app.request("POST", `/v0/pods/${pod}/inboxes`, { key: org.key, json: {} })).body
  const other = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
  const key = (json: unknown) => Effect.map(app.request("POST", "/v0/api-keys", { key: org.key, json }), (res) => res.body.api_key as string)
  return {
    ...org,
    podId: pod,
    inboxId: inbox.inbox_id as string,
    email: inbox.email as string,
    otherId: other.inbox_id as string,
    otherEmail: other.email as string,
    makeKey: key,
    podKey: yield* key({ name: "pod", pod_id: pod }),
    inboxKey: yield* key({ name: "inbox", inbox_id: inbox.inbox_id })
  }
})

const types = (body: { events: ReadonlyArray<{ event_type: string }> }) => body.events.map((e) => e.event_type)

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "120 seconds" })(
    `events list (${storage.name})`,
    (it) => {
      it.effect("GET /v0/events lists the envelope newest first: type event, event_type, event_id, inbox_id, pod_id, created_at and the payload", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "first" })
          yield* TestClock.adjust("1 second")
          const sent = yield* app.request("POST", `/v0/inboxes/${w.inboxId}/messages/send`, { key: w.key, json: { to: "x@example.net", text: "hi" } })
          assert.strictEqual(sent.status, 200, sent.text)
          const res = yield* app.request("GET", "/v0/events", { key: w.key })
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(types(res.body), ["message.sent", "message.received"])
          const [send, received] = res.body.events
          assert.strictEqual(res.body.count, 2)
          assert.strictEqual(res.body.limit, 50)
          assert.strictEqual(send.type, "event")
          assert.match(send.event_id, /^evt_[0-9a-f]+$/)
          assert.strictEqual(send.inbox_id, w.inboxId)
          assert.strictEqual(send.pod_id, w.podId)
          assert.match(send.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          assert.strictEqual(send.send.message_id, sent.body.message_id)
          assert.strictEqual(received.message.subject, "first")
          assert.strictEqual(received.thread.thread_id, received.message.thread_id)
        }))

      it.effect("message.received carries the full message under about 1 MB and leaves the body fields out above it, counted in bytes", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "small", text: "short body" })
          // 400,000 characters of two bytes each, twice in the message (text and extracted_text):
          // under a million characters, 1.6 MB.
          yield* deliverMail(w.email, { subject: "large", text: "é".repeat(400_000) })
          const events = (yield* app.request("GET", "/v0/events", { key: w.key })).body.events as Array<any>
          const small = events.find((e) => e.message?.subject === "small")
          const large = events.find((e) => e.message?.subject === "large")
          assert.strictEqual(small.message.text, "short body\n")
          assert.isUndefined(large.message.text)
          assert.isUndefined(large.message.extracted_text)
          assert.strictEqual(large.message.subject, "large")
          assert.isAbove(large.message.size, 800_000)
        }))

      it.effect("message.received's message is the full message get, bodies included, while the event's stored row leaves the bodies to the message's own row; after the message is deleted its event has no bodies", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const html = "<p>Hello <b>there</b></p>"
          yield* deliverMail(w.email, { subject: "bodies", text: "Hello there", html })
          const event = (yield* app.request("GET", "/v0/events", { key: w.key })).body.events[0]
          const got = yield* app.request("GET", `/v0/inboxes/${w.inboxId}/messages/${event.message.message_id}`, { key: w.key })
          assert.strictEqual(got.status, 200, got.text)
          assert.deepStrictEqual(event.message, got.body)
          assert.include(event.message.html, "<b>there</b>")
          assert.strictEqual(event.message.extracted_html, event.message.html)
          assert.include(event.message.text, "Hello there")
          const stored = yield* SqlClient.SqlClient.use((sql) =>
            sql<{ payload: unknown; bodies_of: string | null }>`SELECT payload, bodies_of FROM events WHERE id = ${event.event_id}`
          )
          const message = (typeof stored[0]!.payload === "string" ? JSON.parse(stored[0]!.payload) : stored[0]!.payload).message
          assert.strictEqual(stored[0]!.bodies_of, event.message.message_id)
          assert.strictEqual(message.subject, "bodies")
          for (const field of ["text", "html", "extracted_text", "extracted_html"]) assert.notProperty(message, field)

          const deleted = yield* app.request("DELETE", `/v0/inboxes/${w.inboxId}/messages/${event.message.message_id}`, { key: w.key })
          assert.isBelow(deleted.status, 300, deleted.text)
          const after = (yield* app.request("GET", "/v0/events", { key: w.key })).body.events[0]
          assert.strictEqual(after.event_id, event.event_id)
          const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...withoutBodies } = event.message
          assert.deepStrictEqual(after.message, withoutBodies)
        }))

      it.effect("pages with limit and page_token without repeating or skipping an event", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          for (let i = 0; i < 5; i++) {
            yield* deliverMail(w.email, { subject: `m${i}` })
            yield* TestClock.adjust("1 second")
          }
          const seen: Array<string> = []
          let token: string | undefined
          for (let page = 0; page < 3; page++) {
            const res = yield* app.request("GET", `/v0/events?limit=2${token === undefined ? "" : `&page_token=${token}`}`, { key: w.key })
            assert.strictEqual(res.status, 200, res.text)
            seen.push(...res.body.events.map((e: any) => e.message.subject))
            token = res.body.next_page_token
          }
          assert.deepStrictEqual(seen, ["m4", "m3", "m2", "m1", "m0"])
          assert.isUndefined(token)
        }))

      it.effect("GET /v0/inboxes/:inbox_id/events lists one inbox's events (by id or address); an inbox outside the key's scope is 404", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "mine" })
          yield* deliverMail(w.otherEmail, { subject: "other" })
          const byId = yield* app.request("GET", `/v0/inboxes/${w.inboxId}/events`, { key: w.key })
          assert.deepStrictEqual(byId.body.events.map((e: any) => e.message.subject), ["mine"])
          const byAddress = yield* app.request("GET", `/v0/inboxes/${encodeURIComponent(w.email)}/events`, { key: w.key })
          assert.deepStrictEqual(byAddress.body.events.map((e: any) => e.message.subject), ["mine"])
          const outside = yield* app.request("GET", `/v0/inboxes/${w.otherId}/events`, { key: w.inboxKey })
          assert.strictEqual(outside.status, 404)
          const stranger = yield* newOrganization()
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${w.inboxId}/events`, { key: stranger.key })).status, 404)
        }))

      it.effect("the list is filtered by the key's scope: a pod key sees its pod's events, an inbox key its inbox's, another organization none", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "in pod" })
          yield* deliverMail(w.otherEmail, { subject: "default pod" })
          const subjects = (key: string) =>
            Effect.map(app.request("GET", "/v0/events", { key }), (res) => res.body.events.map((e: any) => e.message.subject).sort())
          assert.deepStrictEqual(yield* subjects(w.key), ["default pod", "in pod"])
          assert.deepStrictEqual(yield* subjects(w.podKey), ["in pod"])
          assert.deepStrictEqual(yield* subjects(w.inboxKey), ["in pod"])
          assert.deepStrictEqual(yield* subjects((yield* newOrganization()).key), [])
        }))

      it.effect("opt-in message.received.spam is listed only for keys with label_spam_read (or no permission list)", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const res = yield* deliverMail(w.email, { subject: "spammy" }, { "x-spam-verdict": "spam" })
          assert.strictEqual(res.status, 200, res.text)
          const reader = yield* w.makeKey({ name: "reader", permissions: ["message_read"] })
          const spamReader = yield* w.makeKey({ name: "spam reader", permissions: ["message_read", "label_spam_read"] })
          assert.deepStrictEqual(types((yield* app.request("GET", "/v0/events", { key: w.key })).body), ["message.received.spam"])
          assert.deepStrictEqual(types((yield* app.request("GET", "/v0/events", { key: reader })).body), [])
          assert.deepStrictEqual(types((yield* app.request("GET", "/v0/events", { key: spamReader })).body), ["message.received.spam"])
        }))

      it.effect("GET /v0/events needs message_read: 403 missing_permission without it", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp
          const key = yield* w.makeKey({ name: "no read", permissions: ["inbox_read"] })
          const res = yield* app.request("GET", "/v0/events", { key })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "missing_permission")
        }))
    }
  )
}
