/**
 * Receiving mail (spec: Operator routes `/inbound/raw`, Message, Thread; docs/receiving.md):
 * the forwarder's route, storage, labels, threading, retries, events.
 */
import { assert, it, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

const inbound = deliverMail

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const { key, organizationId } = yield* newOrganization({ plan: "scale" })
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: { username: `in${Math.random().toString(16).slice(2, 10)}` } })).body
  return { app, key, organizationId, inbox: inbox as { inbox_id: string; email: string; pod_id: string } }
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `receiving mail (${storage.name})`,
    (it) => {
      it.effect("without the server's secret /inbound/raw is 401 unauthorized; a hosted address is stored with labels received and unread", () =>
        Effect.gen(function*() {
          const { app, key, inbox } = yield* setUp
          const refused = yield* inbound(inbox.email, {}, { "x-inbound-secret": "wrong" })
          assert.strictEqual(refused.status, 401)
          const res = yield* inbound(inbox.email, { subject: "First contact", text: "Hello from outside." })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.body.delivered.length, 1)
          const { message_id, thread_id } = res.body.delivered[0]
          const got = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${message_id}`, { key })
          assert.strictEqual(got.status, 200, got.text)
          assert.deepStrictEqual(got.body.labels, ["received", "unread"])
          assert.strictEqual(got.body.subject, "First contact")
          assert.strictEqual(got.body.thread_id, thread_id)
          assert.strictEqual(got.body.from, "Ann Sender <ann@example.org>")
          assert.strictEqual(got.body.text.trim(), "Hello from outside.")
          assert.strictEqual(got.body.extracted_text.trim(), "Hello from outside.")
          const list = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key })
          assert.deepStrictEqual(list.body.messages.map((m: { message_id: string }) => m.message_id), [message_id])
          const thread = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads/${thread_id}`, { key })
          assert.strictEqual(thread.body.message_count, 1)
          assert.strictEqual(thread.body.messages.length, 1)
        }))

      it.effect("addresses not hosted here are skipped and named; none hosted is 404 not_found", () =>
        Effect.gen(function*() {
          const { inbox } = yield* setUp
          const res = yield* inbound([inbox.email, "nobody@elsewhere.example"], {})
          assert.deepStrictEqual(res.body.skipped, ["nobody@elsewhere.example"])
          const none = yield* inbound("nobody@elsewhere.example", {})
          assert.strictEqual(none.status, 404)
          assert.strictEqual(none.body.code, "not_found")
        }))

      it.effect("the same Message-ID delivered again to the same inbox is stored once and emits no second event", () =>
        Effect.gen(function*() {
          const { app, key, inbox, organizationId } = yield* setUp
          const mail = { messageId: "<retry-1@example.org>", subject: "Once" }
          const first = yield* inbound(inbox.email, mail)
          const second = yield* inbound(inbox.email, mail)
          assert.strictEqual(second.status, 200)
          assert.isTrue(second.body.delivered[0].duplicate)
          assert.strictEqual(second.body.delivered[0].message_id, first.body.delivered[0].message_id)
          const list = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key })
          assert.strictEqual(list.body.count, 1)
          const sql = yield* SqlClient.SqlClient
          const events = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE organization_id = ${organizationId} AND event_type = 'message.received'`
          assert.strictEqual(events[0]?.n, 1)
        }))

      it.effect("a reply joins its parent's thread by In-Reply-To; a subject alone never joins", () =>
        Effect.gen(function*() {
          const { app, key, inbox } = yield* setUp
          const parent = yield* inbound(inbox.email, { messageId: "<p1@example.org>", subject: "Invoice" })
          const reply = yield* inbound(inbox.email, { messageId: "<r1@example.org>", subject: "Re: Invoice", inReplyTo: "<p1@example.org>", references: ["<p1@example.org>"] })
          const stranger = yield* inbound(inbox.email, { messageId: "<s1@example.org>", subject: "Invoice" })
          assert.strictEqual(reply.body.delivered[0].thread_id, parent.body.delivered[0].thread_id)
          assert.notStrictEqual(stranger.body.delivered[0].thread_id, parent.body.delivered[0].thread_id)
          const thread = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads/${parent.body.delivered[0].thread_id}`, { key })
          assert.strictEqual(thread.body.message_count, 2)
          assert.deepStrictEqual(thread.body.messages.map((m: { rfc_message_id: string }) => m.rfc_message_id), ["<p1@example.org>", "<r1@example.org>"])
          assert.strictEqual(thread.body.subject, "Invoice")
          assert.strictEqual(thread.body.last_message_id, reply.body.delivered[0].message_id)
        }))
    }
  )
}

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storages()[0]!.layer))), { timeout: "60 seconds" })("receiving mail, no inbound secret set", (it) => {
  it.effect("a server without an inbound secret answers /inbound/raw 503 not_configured, whatever secret is sent", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      for (const headers of [{}, { "x-inbound-secret": TEST_INBOUND_SECRET }]) {
        const res = yield* app.request("POST", "/inbound/raw?to=someone@example.org", {
          body: "Subject: x\r\n\r\nbody",
          headers: { "content-type": "message/rfc822", ...headers }
        })
        assert.strictEqual(res.status, 503, res.text)
        assert.strictEqual(res.body.code, "not_configured")
      }
    }))
})
