/**
 * The mail provider's events at `POST /inbound/mail-provider-events` (DESIGN.md contract;
 * spec: Suppression, States: suppression; Errors on operator routes): signed like our
 * webhooks (signed here by the `standardwebhooks` package), 503 not_configured without the
 * secret, 401 on a bad signature or a timestamp more than 5 minutes off, idempotent by
 * webhook-id; each type becomes its event, hard bounces and complaints suppress.
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Webhook as StandardWebhook } from "standardwebhooks"

const SECRET = `whsec_${Buffer.from("provider events secret, 32 bytes").toString("base64")}`
const PATH = "/inbound/mail-provider-events"
let serial = 0

const signed = (body: unknown, options: { id?: string; secret?: string; skewSeconds?: number } = {}) =>
  Effect.gen(function*() {
    const text = JSON.stringify(body)
    const at = new Date((yield* Clock.currentTimeMillis) + (options.skewSeconds ?? 0) * 1000)
    const id = options.id ?? `msg_provider_${++serial}`
    const signature = new StandardWebhook(options.secret ?? SECRET).sign(id, at, text)
    return {
      body: text,
      headers: {
        "content-type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": signature
      }
    }
  })

const post = (body: unknown, options: { id?: string; secret?: string; skewSeconds?: number } = {}) =>
  Effect.flatMap(signed(body, options), (request) => TestApp.use((app) => app.request("POST", PATH, request)))

/** A message sent from a fresh inbox, with its Message-ID. */
const sentMessage = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  yield* TestClock.adjust("1 day") // off the epoch, so timestamps are ordinary
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
  const sent = (yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json: { to: ["a@example.net", "b@example.net"], text: "hi" } })).body
  const message = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${sent.message_id}`, { key: org.key })).body
  // Later events sort after message.sent.
  yield* TestClock.adjust("1 second")
  return { key: org.key, inboxId: inbox.inbox_id as string, messageId: sent.message_id as string, threadId: sent.thread_id as string, rfc: message.rfc_message_id as string }
})

const eventsOf = (key: string) => TestApp.use((app) => Effect.map(app.request("GET", "/v0/events", { key }), (r) => r.body.events as Array<any>))
const suppressionsOf = (key: string) => TestApp.use((app) => Effect.map(app.request("GET", "/v0/suppressions", { key }), (r) => r.body.suppressions as Array<any>))

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { providerEventsSecret: SECRET }))), { timeout: "120 seconds" })(
    `provider events (${storage.name})`,
    (it) => {
      it.effect("delivered becomes message.delivered with delivery { inbox_id, thread_id, message_id, timestamp, recipients }", () =>
        Effect.gen(function*() {
          const m = yield* sentMessage
          const res = yield* post({ type: "delivered", rfc_message_id: m.rfc, recipients: ["a@example.net"], timestamp: "2026-01-02T03:04:05.000Z" })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.body.status, "applied")
          const [event] = yield* eventsOf(m.key)
          assert.strictEqual(event.event_type, "message.delivered")
          assert.strictEqual(event.event_id, res.body.event_id)
          assert.deepStrictEqual(event.delivery, {
            inbox_id: m.inboxId,
            thread_id: m.threadId,
            message_id: m.messageId,
            timestamp: "2026-01-02T03:04:05.000Z",
            recipients: ["a@example.net"]
          })
        }))

      it.effect("a hard bounce records message.bounced and suppresses the recipients with reason, source_message_id, inbox_id, thread_id", () =>
        Effect.gen(function*() {
          const m = yield* sentMessage
          const res = yield* post({ type: "bounced", rfc_message_id: m.rfc.replace(/^<|>$/g, ""), recipients: ["a@example.net"], bounce_type: "hard" })
          assert.strictEqual(res.status, 200, res.text)
          const [event] = yield* eventsOf(m.key)
          assert.strictEqual(event.event_type, "message.bounced")
          assert.strictEqual(event.bounce.type, "hard")
          assert.deepStrictEqual(event.bounce.recipients, [{ address: "a@example.net", status: "bounced" }])
          const [s] = yield* suppressionsOf(m.key)
          assert.deepStrictEqual({ ...s, created_at: undefined }, {
            address: "a@example.net",
            reason: "bounce",
            source_message_id: m.messageId,
            inbox_id: m.inboxId,
            thread_id: m.threadId,
            created_at: undefined
          })
          // Later sends to it are refused.
          const again = yield* TestApp.use((app) => app.request("POST", `/v0/inboxes/${m.inboxId}/messages/send`, { key: m.key, json: { to: "a@example.net", text: "again" } }))
          assert.strictEqual(again.body.code, "recipient_suppressed")
        }))

      it.effect("a soft bounce records message.bounced and suppresses nobody", () =>
        Effect.gen(function*() {
          const m = yield* sentMessage
          yield* post({ type: "bounced", rfc_message_id: m.rfc, recipients: ["b@example.net"], bounce_type: "soft" })
          assert.strictEqual((yield* eventsOf(m.key))[0].bounce.type, "soft")
          assert.lengthOf(yield* suppressionsOf(m.key), 0)
        }))

      it.effect("complained suppresses (reason complaint) and records message.complained; rejected records message.rejected", () =>
        Effect.gen(function*() {
          const m = yield* sentMessage
          yield* TestClock.adjust("1 second")
          yield* post({ type: "complained", rfc_message_id: m.rfc, recipients: ["b@example.net"] })
          yield* TestClock.adjust("1 second")
          yield* post({ type: "rejected", rfc_message_id: m.rfc, recipients: ["a@example.net"], reason: "policy" })
          const [rejected, complained] = yield* eventsOf(m.key)
          assert.strictEqual(complained.event_type, "message.complained")
          assert.deepStrictEqual(complained.complaint.recipients, ["b@example.net"])
          assert.strictEqual(rejected.event_type, "message.rejected")
          assert.strictEqual(rejected.reject.reason, "policy")
          assert.strictEqual(rejected.reject.message_id, m.messageId)
          const [s] = yield* suppressionsOf(m.key)
          assert.strictEqual(s.address, "b@example.net")
          assert.strictEqual(s.reason, "complaint")
        }))

      it.effect("idempotent by webhook-id: a retry answers duplicate and records nothing twice", () =>
        Effect.gen(function*() {
          const m = yield* sentMessage
          const body = { type: "delivered", rfc_message_id: m.rfc, recipients: ["a@example.net"] }
          const id = `retry_${++serial}`
          assert.strictEqual((yield* post(body, { id })).body.status, "applied")
          assert.strictEqual((yield* post(body, { id })).body.status, "duplicate")
          assert.lengthOf((yield* eventsOf(m.key)).filter((e) => e.event_type === "message.delivered"), 1)
        }))

      it.effect("an unknown message id is accepted and ignored", () =>
        Effect.gen(function*() {
          const res = yield* post({ type: "bounced", rfc_message_id: "<nobody@example.org>", recipients: ["x@example.org"] })
          assert.strictEqual(res.status, 200)
          assert.deepStrictEqual(res.body, { status: "ignored" })
        }))

      it.effect("401 unauthorized on a bad signature or a timestamp more than 5 minutes off; 400 on a malformed event", () =>
        Effect.gen(function*() {
          yield* TestClock.adjust("1 day")
          const body = { type: "delivered", rfc_message_id: "<a@b>", recipients: [] }
          const wrong = yield* post(body, { secret: `whsec_${Buffer.from("another secret").toString("base64")}` })
          assert.strictEqual(wrong.status, 401)
          assert.strictEqual(wrong.body.code, "unauthorized")
          assert.strictEqual((yield* post(body, { skewSeconds: -301 })).status, 401)
          assert.strictEqual((yield* post(body, { skewSeconds: 301 })).status, 401)
          assert.strictEqual((yield* post(body, { skewSeconds: -290 })).status, 200)
          const malformed = yield* post({ type: "opened", rfc_message_id: "<a@b>", recipients: [] })
          assert.strictEqual(malformed.status, 400)
          assert.strictEqual(malformed.body.code, "validation_error")
        }))
    }
  )

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(`provider events unconfigured (${storage.name})`, (it) => {
    it.effect("without INBOX_PROVIDER_EVENTS_SECRET the route answers 503 not_configured", () =>
      Effect.gen(function*() {
        const res = yield* post({ type: "delivered", rfc_message_id: "<a@b>", recipients: [] })
        assert.strictEqual(res.status, 503)
        assert.strictEqual(res.body.code, "not_configured")
      }))
  })
}
