/**
 * Webhooks over REST (spec: Webhook, Webhooks, Webhook delivery; States: webhook delivery;
 * Limits; Errors invalid_webhook_url and 402): CRUD with the secret shown once, default
 * event types, scope ids, write-only custom headers, the Free plan's limit, the URL rule,
 * and signed deliveries to a real loopback receiver verified with the `standardwebhooks`
 * package, with the retry schedule driven by the TestClock; failed attempts logged at most
 * once a minute per webhook.
 */
import { assert, layer } from "@effect/vitest"
import { DEFAULT_EVENT_TYPES, DELIVERY_CONCURRENCY, ENDPOINT_CONCURRENCY, ENDPOINT_WAIT, Jobs } from "@inbox/core/internal"
import { deliverMail, engineLayer, newOrganization, type ReceivedRequest, storages, TEST_INBOUND_SECRET, TestApp, webhookReceiver } from "@inbox/testkit"
import { Effect, Fiber, Layer, Logger } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Webhook as StandardWebhook } from "standardwebhooks"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { vi } from "vitest"

const PUBLIC_URL = "https://93.184.215.14/hook"

const setUp = (plan: "free" | "pro" = "pro") =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const org = yield* newOrganization({ plan })
    const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
    const inbox = (yield* app.request("POST", `/v0/pods/${pod}/inboxes`, { key: org.key, json: {} })).body
    const other = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
    return { ...org, podId: pod, inboxId: inbox.inbox_id as string, email: inbox.email as string, otherId: other.inbox_id as string, otherEmail: other.email as string }
  })

/**
 * Verifies a received delivery with the standardwebhooks package. Its timestamp check reads
 * the wall clock, so the wall clock is set to the delivery's own time (from the TestClock)
 * while it runs: the signature is what is checked.
 */
const verify = (secret: string, request: ReceivedRequest) => {
  vi.useFakeTimers({ toFake: ["Date"] })
  try {
    vi.setSystemTime(Number(request.headers["webhook-timestamp"]) * 1000)
    return new StandardWebhook(secret).verify(request.body, request.headers as Record<string, string>) as Record<string, unknown>
  } finally {
    vi.useRealTimers()
  }
}

const runJobs = Jobs.use((jobs) => jobs.runDue({ wait: true }))

const storage = storages()

for (const s of storage) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(s.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "120 seconds" })(
    `webhooks (${s.name})`,
    (it) => {
      it.effect("create answers the webhook with a whsec_ secret and the eight default event types; get and list never show the secret", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          const res = yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })
          assert.strictEqual(res.status, 200, res.text)
          const hook = res.body
          assert.match(hook.webhook_id, /^wh_[0-9a-f]+$/)
          assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
          assert.strictEqual(Buffer.from(hook.secret.slice(6), "base64").length, 24)
          assert.deepStrictEqual(hook.event_types, [...DEFAULT_EVENT_TYPES])
          assert.strictEqual(hook.enabled, true)
          assert.strictEqual(hook.url, PUBLIC_URL)
          const got = yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}`, { key: w.key })
          assert.strictEqual(got.status, 200)
          assert.isUndefined(got.body.secret)
          const { secret: _, ...withoutSecret } = hook
          assert.deepStrictEqual(got.body, withoutSecret)
          const list = yield* app.request("GET", "/v0/webhooks", { key: w.key })
          assert.deepStrictEqual(list.body, { count: 1, limit: 50, webhooks: [withoutSecret] })
          // At rest the secret is sealed under INBOX_SECRET_KEY, never stored as shown.
          const stored = yield* SqlClient.SqlClient.use((sql) => sql<{ secret: string }>`SELECT secret FROM webhooks WHERE id = ${hook.webhook_id}`)
          assert.match(stored[0]!.secret, /^v1:/)
          assert.notInclude(stored[0]!.secret, hook.secret.slice(6))
        }))

      it.effect("PATCH changes url, enabled and event_types; DELETE answers 204 and the webhook is gone (404)", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })).body
          const patched = yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, {
            key: w.key,
            json: { url: "https://93.184.215.15/other", enabled: false, event_types: ["message.sent", "message.received.spam"] }
          })
          assert.strictEqual(patched.status, 200, patched.text)
          assert.strictEqual(patched.body.url, "https://93.184.215.15/other")
          assert.strictEqual(patched.body.enabled, false)
          assert.deepStrictEqual(patched.body.event_types, ["message.sent", "message.received.spam"])
          assert.strictEqual((yield* app.request("DELETE", `/v0/webhooks/${hook.webhook_id}`, { key: w.key })).status, 204)
          assert.strictEqual((yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}`, { key: w.key })).status, 404)
        }))

      it.effect("refuses a URL that is not public https with 400 invalid_webhook_url, at creation and on PATCH", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          const refused = [
            "http://93.184.215.14/hook", "ftp://93.184.215.14/", "not a url", "https://127.0.0.1/x", "https://10.1.2.3/",
            "https://172.16.0.1/", "https://192.168.1.1/", "https://100.64.0.1/", "https://169.254.169.254/latest",
            "https://0.0.0.0/", "https://224.0.0.1/", "https://240.0.0.1/", "https://192.0.2.1/", "https://198.51.100.7/",
            "https://203.0.113.9/", "https://198.18.0.1/", "https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[::ffff:8.8.8.8]/",
            "https://[fe80::1]/", "https://[fd00::1]/", "https://[ff02::1]/", "https://[2001:db8::1]/", "https://localhost/"
          ]
          for (const url of refused) {
            const res = yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url } })
            assert.strictEqual(res.status, 400, `${url}: ${res.text}`)
            assert.strictEqual(res.body.code, "invalid_webhook_url", url)
          }
          const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })).body
          const patched = yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, { key: w.key, json: { url: "https://10.0.0.1/" } })
          assert.strictEqual(patched.body.code, "invalid_webhook_url")
        }))

      it.effect("the Free plan's webhook limit: a second webhook is 402 plan_limit_exceeded with errors[0]", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp("free")
          assert.strictEqual((yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })).status, 200)
          const res = yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })
          assert.strictEqual(res.status, 402)
          assert.strictEqual(res.body.code, "plan_limit_exceeded")
          assert.deepStrictEqual(res.body.errors[0], { limit: "webhooks", current: 1, max: 1, plan: "free", upgrade_to: "pro" })
        }))

      it.effect("an opt-in event type needs its label_*_read permission, at creation and on PATCH (403 missing_permission), as for the events list", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const w = yield* setUp()
        const keyWith = (permissions: ReadonlyArray<string>) =>
          Effect.map(app.request("POST", "/v0/api-keys", { key: w.key, json: { name: permissions.join(" "), permissions } }), (r) => r.body.api_key as string)
        const plain = yield* keyWith(["webhook_create", "webhook_read", "webhook_update"])
        const spam = yield* keyWith(["webhook_create", "webhook_read", "webhook_update", "label_spam_read"])
        const refused = yield* app.request("POST", "/v0/webhooks", { key: plain, json: { url: PUBLIC_URL, event_types: ["message.received", "message.received.spam"] } })
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.body.code, "missing_permission")
        assert.include(refused.body.message, "label_spam_read")
        const made = yield* app.request("POST", "/v0/webhooks", { key: spam, json: { url: PUBLIC_URL, event_types: ["message.received.spam"] } })
        assert.strictEqual(made.status, 200, made.text)
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: plain, json: { url: PUBLIC_URL } })).body
        const patched = yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, { key: plain, json: { event_types: ["message.received.blocked"] } })
        assert.strictEqual(patched.status, 403, patched.text)
        assert.include(patched.body.message, "label_blocked_read")
        assert.deepStrictEqual((yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}`, { key: w.key })).body.event_types, [...DEFAULT_EVENT_TYPES])
      }))

    it.effect("inbox_ids and pod_ids take up to 10 entries each; more is 400 validation_error naming the field", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          const res = yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL, inbox_ids: Array.from({ length: 11 }, () => w.inboxId) } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "validation_error")
          assert.deepStrictEqual(res.body.errors[0].path, ["inbox_ids"])
          const scoped = yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL, inbox_ids: [w.email], pod_ids: [w.podId] } })
          assert.strictEqual(scoped.status, 200, scoped.text)
          assert.deepStrictEqual(scoped.body.inbox_ids, [w.inboxId])
          assert.deepStrictEqual(scoped.body.pod_ids, [w.podId])
        }))

      it.effect("a pod's and an inbox's webhooks are created and listed under their paths; a pod key sees only its pod's", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          const podHook = (yield* app.request("POST", `/v0/pods/${w.podId}/webhooks`, { key: w.key, json: { url: PUBLIC_URL } })).body
          assert.strictEqual(podHook.pod_id, w.podId)
          const inboxHook = (yield* app.request("POST", `/v0/inboxes/${w.inboxId}/webhooks`, { key: w.key, json: { url: PUBLIC_URL } })).body
          assert.strictEqual(inboxHook.inbox_id, w.inboxId)
          yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL } })
          const ids = (path: string, key: string) => Effect.map(app.request("GET", path, { key }), (r) => r.body.webhooks.map((h: any) => h.webhook_id))
          assert.deepStrictEqual(yield* ids(`/v0/pods/${w.podId}/webhooks`, w.key), [podHook.webhook_id])
          assert.deepStrictEqual(yield* ids(`/v0/inboxes/${w.inboxId}/webhooks`, w.key), [inboxHook.webhook_id])
          assert.lengthOf(yield* ids("/v0/webhooks", w.key), 3)
          const podKey = (yield* app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "pod", pod_id: w.podId } })).body.api_key
          assert.sameMembers(yield* ids("/v0/webhooks", podKey), [podHook.webhook_id, inboxHook.webhook_id])
          assert.strictEqual((yield* app.request("GET", `/v0/pods/${w.podId}/webhooks/${inboxHook.webhook_id}`, { key: w.key })).status, 404)
        }))

      it.effect("custom header values are write-only: GET .../headers names them; PATCH .../headers sets and removes", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const w = yield* setUp()
          // A value no field can hold by chance: "t1" turned up inside the random base64 secret
          // about once in a hundred runs.
          const value = "tenant one, write-only"
          const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: PUBLIC_URL, headers: { "X-Tenant": value } } })).body
          assert.notInclude(JSON.stringify(hook), value)
          const path = `/v0/webhooks/${hook.webhook_id}/headers`
          assert.deepStrictEqual((yield* app.request("GET", path, { key: w.key })).body, { headers: ["x-tenant"], header_names: ["x-tenant"] })
          const patched = yield* app.request("PATCH", path, { key: w.key, json: { set: { "X-Other": "o" }, remove: ["X-Tenant"] } })
          assert.deepStrictEqual(patched.body, { headers: ["x-other"], header_names: ["x-other"] })
          // The agentmail SDK's names for the same: headers to set, remove_headers to remove.
          const sdk = yield* app.request("PATCH", path, { key: w.key, json: { headers: { "X-Third": "3" }, remove_headers: ["X-Other"] } })
          assert.deepStrictEqual(sdk.body, { headers: ["x-third"], header_names: ["x-third"] })
          const twice = yield* app.request("PATCH", path, { key: w.key, json: { set: { "x-a": "1" }, headers: { "x-b": "2" } } })
          assert.strictEqual(twice.status, 400)
          assert.deepStrictEqual(twice.body.errors[0].path, ["headers"])
          const reserved = yield* app.request("PATCH", path, { key: w.key, json: { set: { "webhook-id": "forged" } } })
          assert.strictEqual(reserved.body.code, "validation_error")
          const both = yield* app.request("PATCH", path, { key: w.key, json: { set: { "x-a": "1" }, remove: ["X-A"] } })
          assert.strictEqual(both.body.code, "validation_error")
        }))
    }
  )

  layer(
    TestApp.layer.pipe(Layer.provideMerge(engineLayer(s.layer, { inboundSecret: TEST_INBOUND_SECRET, webhookAllowPrivate: true }))),
    { timeout: "120 seconds" }
  )(`webhook deliveries (${s.name})`, (it) => {
    it.effect("POST /v0/webhooks/:id/test sends one signed webhook.test event now and answers what the endpoint said; nothing is stored or retried", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver((n) => n === 0 ? 200 : 503)
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, headers: { "X-Tenant": "t1" } } })).body
        const sent = yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/test`, { key: w.key })
        assert.strictEqual(sent.status, 200, sent.text)
        assert.deepStrictEqual({ ...sent.body, event_id: typeof sent.body.event_id }, { event_id: "string", delivered: true, status_code: 200 })
        assert.lengthOf(receiver.received, 1)
        const payload = verify(hook.secret, receiver.received[0]!)
        assert.strictEqual(payload["event_type"], "webhook.test")
        assert.strictEqual(payload["event_id"], sent.body.event_id)
        assert.strictEqual(receiver.received[0]!.headers["webhook-id"], sent.body.event_id)
        assert.strictEqual(receiver.received[0]!.headers["x-tenant"], "t1")
        const failing = yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/test`, { key: w.key })
        assert.deepStrictEqual({ ...failing.body, event_id: undefined }, { event_id: undefined, delivered: false, status_code: 503, error: "http_5xx" })
        assert.strictEqual(yield* runJobs, 0)
        assert.lengthOf(receiver.received, 2)
        const deliveries = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body
        assert.strictEqual(deliveries.count, 0)
      }))

    it.effect("a secret sealed under another INBOX_SECRET_KEY is never used: the delivery fails as secret_unreadable and nothing is sent", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        // The row of another webhook, copied over: the webhook id is sealed into it, so it does not open here.
        const other = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, event_types: ["message.sent"] } })).body
        yield* SqlClient.SqlClient.use((sql) => sql`UPDATE webhooks SET secret = (SELECT secret FROM webhooks WHERE id = ${other.webhook_id}) WHERE id = ${hook.webhook_id}`)
        yield* deliverMail(w.email, { subject: "unsigned" })
        yield* runJobs
        assert.lengthOf(receiver.received, 0)
        const deliveries = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body
        assert.strictEqual(deliveries.deliveries[0].status, "failed")
        assert.strictEqual(deliveries.deliveries[0].error, "secret_unreadable")
      }))

    it.effect("custom header values are sealed at rest like the secret: the stored row holds none in plain text, and deliveries and test sends carry them", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const token = "Bearer receiver-credential-4f1c9"
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, headers: { Authorization: token, "X-Tenant": "tenant-7d2e" } } })).body
        const stored = () =>
          SqlClient.SqlClient.use((sql) =>
            sql<{ header_names: ReadonlyArray<string>; header_values: string }>`SELECT header_names, header_values FROM webhooks WHERE id = ${hook.webhook_id}`
          ).pipe(Effect.map((rows) => rows[0]!))
        const atRest = yield* stored()
        assert.deepStrictEqual([...atRest.header_names], ["authorization", "x-tenant"])
        assert.match(atRest.header_values, /^v1:/)
        for (const plain of ["receiver-credential-4f1c9", "tenant-7d2e"]) assert.notInclude(JSON.stringify(atRest), plain)
        yield* deliverMail(w.email, { subject: "credentialed" })
        assert.strictEqual(yield* runJobs, 1)
        assert.strictEqual(receiver.received[0]!.headers["authorization"], token)
        assert.strictEqual(receiver.received[0]!.headers["x-tenant"], "tenant-7d2e")
        // A change keeps the other values, sealed again; the test send carries the new set.
        const path = `/v0/webhooks/${hook.webhook_id}/headers`
        const patched = yield* app.request("PATCH", path, { key: w.key, json: { set: { "X-Region": "eu-west-9b" }, remove: ["x-tenant"] } })
        assert.deepStrictEqual(patched.body.headers, ["authorization", "x-region"])
        const changed = yield* stored()
        assert.match(changed.header_values, /^v1:/)
        for (const plain of ["receiver-credential-4f1c9", "eu-west-9b"]) assert.notInclude(changed.header_values, plain)
        assert.isTrue((yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/test`, { key: w.key })).body.delivered)
        assert.strictEqual(receiver.received[1]!.headers["authorization"], token)
        assert.strictEqual(receiver.received[1]!.headers["x-region"], "eu-west-9b")
        assert.isUndefined(receiver.received[1]!.headers["x-tenant"])
        // Without headers nothing is stored.
        yield* app.request("PATCH", path, { key: w.key, json: { remove: ["authorization", "x-region"] } })
        assert.deepStrictEqual({ ...(yield* stored()) }, { header_names: [], header_values: null })
      }))

    it.effect("header values sealed under another INBOX_SECRET_KEY are never used nor dropped: deliveries fail as secret_unreadable, and PATCH .../headers must set or remove every one (else 400 validation_error)", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, headers: { "X-A": "1", "X-B": "2" } } })).body
        const other = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, event_types: ["message.sent"], headers: { "X-A": "3", "X-B": "4" } } })).body
        // The other webhook's values, copied over: its id is sealed into them, so they do not open here.
        yield* SqlClient.SqlClient.use((sql) =>
          sql`UPDATE webhooks SET header_values = (SELECT header_values FROM webhooks WHERE id = ${other.webhook_id}) WHERE id = ${hook.webhook_id}`
        )
        yield* deliverMail(w.email, { subject: "headers unreadable" })
        yield* runJobs
        assert.lengthOf(receiver.received, 0)
        const deliveries = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body
        assert.deepStrictEqual([deliveries.deliveries[0].status, deliveries.deliveries[0].error], ["failed", "secret_unreadable"])
        assert.strictEqual((yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/test`, { key: w.key })).body.error, "secret_unreadable")
        const path = `/v0/webhooks/${hook.webhook_id}/headers`
        const partial = yield* app.request("PATCH", path, { key: w.key, json: { set: { "X-A": "5" } } })
        assert.strictEqual(partial.status, 400)
        assert.strictEqual(partial.body.code, "validation_error")
        assert.include(partial.body.errors[0].message, "x-b")
        const whole = yield* app.request("PATCH", path, { key: w.key, json: { set: { "X-A": "5" }, remove: ["X-B"] } })
        assert.deepStrictEqual(whole.body.headers, ["x-a"])
        assert.isTrue((yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/test`, { key: w.key })).body.delivered)
        assert.strictEqual(receiver.received[0]!.headers["x-a"], "5")
      }))

    it.effect("a delivery is the event's envelope, signed (verified by standardwebhooks), with webhook-id equal to the event id and the custom headers", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, headers: { "X-Tenant": "t1" } } })).body
        yield* deliverMail(w.email, { subject: "hooked" })
        assert.strictEqual(yield* runJobs, 1)
        assert.lengthOf(receiver.received, 1)
        const request = receiver.received[0]!
        const payload = verify(hook.secret, request)
        const event = (yield* app.request("GET", "/v0/events", { key: w.key })).body.events[0]
        assert.deepStrictEqual(payload, event)
        // The message's bodies, which the event's row leaves to the message's own row.
        assert.isString((payload["message"] as { text?: unknown }).text)
        assert.strictEqual(request.headers["webhook-id"], event.event_id)
        assert.strictEqual(request.headers["x-tenant"], "t1")
        assert.strictEqual(request.headers["content-type"], "application/json")
        assert.match(request.headers["webhook-signature"] as string, /^v1,[A-Za-z0-9+/]+=*$/)
        const deliveries = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body
        assert.strictEqual(deliveries.limit, 20)
        assert.strictEqual(deliveries.count, 1)
        const [d] = deliveries.deliveries
        assert.strictEqual(d.status, "delivered")
        assert.strictEqual(d.status_code, 200)
        assert.strictEqual(d.attempts, 1)
        assert.strictEqual(d.event_id, event.event_id)
        assert.strictEqual(d.event_type, "message.received")
        assert.isUndefined(d.error)
      }).pipe(Effect.scoped))

    it.effect("a delivery shows its payload as POSTed; redeliver answers 202 with a new pending delivery of the same event, sent again with the same webhook-id, the old one unchanged", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        yield* deliverMail(w.email, { subject: "again" })
        assert.strictEqual(yield* runJobs, 1)
        const path = `/v0/webhooks/${hook.webhook_id}/deliveries`
        const first = (yield* app.request("GET", path, { key: w.key })).body.deliveries[0]
        const detail = yield* app.request("GET", `${path}/${first.delivery_id}`, { key: w.key })
        assert.strictEqual(detail.status, 200)
        assert.deepStrictEqual(detail.body.payload, verify(hook.secret, receiver.received[0]!))
        assert.strictEqual(detail.body.status, "delivered")

        const again = yield* app.request("POST", `${path}/${first.delivery_id}/redeliver`, { key: w.key })
        assert.strictEqual(again.status, 202)
        assert.notStrictEqual(again.body.delivery_id, first.delivery_id)
        assert.deepStrictEqual([again.body.event_id, again.body.status, again.body.attempts], [first.event_id, "pending", 0])
        assert.strictEqual(yield* runJobs, 1)
        assert.lengthOf(receiver.received, 2)
        assert.strictEqual(receiver.received[1]!.headers["webhook-id"], first.event_id)
        assert.deepStrictEqual(verify(hook.secret, receiver.received[1]!), detail.body.payload)
        const log = (yield* app.request("GET", path, { key: w.key })).body
        assert.strictEqual(log.count, 2)
        const byId = new Map((log.deliveries as Array<{ delivery_id: string; status: string; attempts: number }>).map((d) => [d.delivery_id, d]))
        assert.deepStrictEqual([byId.get(again.body.delivery_id)?.status, byId.get(first.delivery_id)?.attempts], ["delivered", 1])
      }).pipe(Effect.scoped))

    it.effect("a delivery of another webhook, or of a webhook the key cannot see, is 404 not_found; redeliver needs webhook_update (403 missing_permission)", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        const other = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url, event_types: ["domain.verified"] } })).body
        yield* deliverMail(w.email, { subject: "mine" })
        yield* runJobs
        const delivery = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body.deliveries[0].delivery_id
        const elsewhere = yield* app.request("GET", `/v0/webhooks/${other.webhook_id}/deliveries/${delivery}`, { key: w.key })
        assert.deepStrictEqual([elsewhere.status, elsewhere.body.code], [404, "not_found"])
        const stranger = yield* newOrganization({ plan: "pro" })
        const hidden = yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/deliveries/${delivery}/redeliver`, { key: stranger.key })
        assert.deepStrictEqual([hidden.status, hidden.body.code], [404, "not_found"])
        const reader = (yield* app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "reader", permissions: ["webhook_read"] } })).body.api_key
        assert.strictEqual((yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries/${delivery}`, { key: reader })).status, 200)
        const refused = yield* app.request("POST", `/v0/webhooks/${hook.webhook_id}/deliveries/${delivery}/redeliver`, { key: reader })
        assert.deepStrictEqual([refused.status, refused.body.code], [403, "missing_permission"])
      }).pipe(Effect.scoped))

    it.effect("a failing endpoint is retried after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h; the eighth failure marks it failed; webhook-id is equal on every retry", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver(() => 500)
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        yield* deliverMail(w.email, { subject: "retried" })
        yield* runJobs
        const delivery = () => Effect.map(app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key }), (r) => r.body.deliveries[0])
        const first = yield* delivery()
        assert.strictEqual(first.status, "pending")
        assert.strictEqual(first.status_code, 500)
        assert.strictEqual(first.error, "http_5xx")
        assert.strictEqual(first.attempts, 1)
        const waits = [5, 30, 120, 600, 1800, 3600, 7200]
        for (const [i, seconds] of waits.entries()) {
          // Not before the wait (the runner spreads each by at most 10%)...
          yield* TestClock.adjust(`${Math.floor(seconds * 0.85)} seconds`)
          yield* runJobs
          assert.lengthOf(receiver.received, i + 1, `attempt ${i + 2} came early`)
          // ...and once it has passed.
          yield* TestClock.adjust(`${Math.ceil(seconds * 0.3)} seconds`)
          yield* runJobs
          assert.lengthOf(receiver.received, i + 2)
        }
        const last = yield* delivery()
        assert.strictEqual(last.status, "failed")
        assert.strictEqual(last.attempts, 8)
        yield* TestClock.adjust("1 day")
        yield* runJobs
        assert.lengthOf(receiver.received, 8)
        const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]))
        assert.strictEqual(ids.size, 1)
        for (const r of receiver.received) verify(hook.secret, r)
      }).pipe(Effect.scoped))

    it.effect("failed attempts are logged at most once a minute per webhook, with the failures since that webhook's last line", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver(() => 500)
        const w = yield* setUp()
        const hooks = [
          (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body.webhook_id as string,
          (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: `${receiver.url}?second` } })).body.webhook_id as string
        ]
        const lines: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
        const capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => void lines.push(entry))])
        const failing = (webhookId: string) =>
          lines.filter((l) => l.message === "webhook deliveries failing" && l.annotations["webhook_id"] === webhookId).map((l) => l.annotations)
        yield* Effect.gen(function*() {
          for (const n of [1, 2, 3]) yield* deliverMail(w.email, { subject: `down ${n}` })
          // Three first attempts per webhook at once: the first is logged, the other two counted.
          yield* runJobs
          // The retries after 5 s, within the minute: counted.
          yield* TestClock.adjust("6 seconds")
          yield* runJobs
          // The retries after 30 s more, a minute after the first line: one line with the six failures since it.
          yield* TestClock.adjust("60 seconds")
          yield* runJobs
        }).pipe(Effect.provide(capture))
        assert.lengthOf(receiver.received, 18)
        for (const id of hooks) {
          assert.deepStrictEqual(failing(id), [
            { webhook_id: id, failures: 1, error: "http_5xx", status_code: 500, delivery_status: "pending" },
            { webhook_id: id, failures: 6, error: "http_5xx", status_code: 500, delivery_status: "pending" }
          ])
        }
      }).pipe(Effect.scoped))

    it.effect("a retry that answers 2xx is delivered; status codes map to http_4xx", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver((n) => n === 0 ? 404 : 204)
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        yield* deliverMail(w.email)
        yield* runJobs
        const path = `/v0/webhooks/${hook.webhook_id}/deliveries`
        assert.strictEqual((yield* app.request("GET", path, { key: w.key })).body.deliveries[0].error, "http_4xx")
        yield* TestClock.adjust("6 seconds")
        yield* runJobs
        const d = (yield* app.request("GET", path, { key: w.key })).body.deliveries[0]
        assert.deepStrictEqual([d.status, d.status_code, d.attempts], ["delivered", 204, 2])
      }).pipe(Effect.scoped))

    it.effect("redirects are not followed: a 3xx is http_3xx and its Location is never called", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const target = yield* webhookReceiver()
        let redirected = 0
        const redirecting = yield* Effect.acquireRelease(
          Effect.promise(() =>
            new Promise<Server>((resolve) => {
              const server = createServer((req, res) => {
                redirected++
                req.resume()
                res.writeHead(307, { location: target.url }).end()
              })
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
          ),
          (server) => Effect.promise(() => new Promise<void>((done) => server.close(() => done())))
        )
        const w = yield* setUp()
        const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/hook`
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url } })).body
        yield* deliverMail(w.email)
        yield* runJobs
        const d = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body.deliveries[0]
        assert.deepStrictEqual([d.status, d.status_code, d.error], ["pending", 307, "http_3xx"])
        assert.strictEqual(redirected, 1)
        assert.lengthOf(target.received, 0)
      }).pipe(Effect.scoped))

    it.effect("no 2xx within 10 seconds is a timeout; a closed port is connection_refused", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver(() => "hang")
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        yield* deliverMail(w.email)
        const running = yield* Effect.forkChild(runJobs)
        while (receiver.received.length === 0) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
        yield* TestClock.adjust("10 seconds")
        yield* Fiber.join(running)
        const d = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body.deliveries[0]
        assert.strictEqual(d.error, "timeout")
        assert.isUndefined(d.status_code)
        const closed = yield* webhookReceiver()
        const closedUrl = closed.url
        yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, { key: w.key, json: { url: closedUrl.replace(/:\d+\//, ":9/") } })
        yield* TestClock.adjust("6 seconds")
        yield* runJobs
        const again = (yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body.deliveries[0]
        assert.strictEqual(again.error, "connection_refused")
      }).pipe(Effect.scoped))

    it.effect("a slow endpoint never holds up others: attempts that wait a second for its turn give their jobs back, uncounted, and another webhook's delivery goes out", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const jobs = yield* Jobs
        const slow = yield* webhookReceiver(() => "hang")
        const fast = yield* webhookReceiver()
        const w = yield* setUp()
        const slowHook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: slow.url, inbox_ids: [w.inboxId] } })).body
        yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: fast.url, inbox_ids: [w.otherId] } })
        // More deliveries to the hanging endpoint than a process attempts at once, all older
        // than the other webhook's one: the runner claims the oldest first.
        const backlog = DELIVERY_CONCURRENCY + 20
        yield* Effect.forEach(Array.from({ length: backlog }, (_, i) => i), (i) => deliverMail(w.email, { subject: `slow ${i}` }), { concurrency: 8, discard: true })
        yield* TestClock.adjust("1 millis")
        yield* deliverMail(w.otherEmail, { subject: "fast" })
        const settle = (check: () => boolean, what: string) =>
          Effect.gen(function*() {
            for (let i = 0; i < 250 && !check(); i++) {
              yield* jobs.runDue()
              yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
            }
            assert.isTrue(check(), what)
          })
        yield* settle(() => slow.received.length === ENDPOINT_CONCURRENCY, "the hanging endpoint has its turns")
        assert.lengthOf(fast.received, 0)
        yield* TestClock.adjust(ENDPOINT_WAIT)
        yield* settle(() => fast.received.length === 1, "the other webhook's delivery went out")
        assert.lengthOf(slow.received, ENDPOINT_CONCURRENCY, "no attempt beyond the endpoint's turns")
        // The attempts given back left no trace: queued, not counted, their deliveries pending.
        const rows = yield* sql<{ status: string; delivery_attempts: number; job_attempts: number; state: string }>`
          SELECT d.status, d.attempts AS delivery_attempts, j.attempts AS job_attempts, j.state
          FROM webhook_deliveries d JOIN jobs j ON j.kind = 'webhook.delivery' AND j.key = d.id
          WHERE d.webhook_id = ${slowHook.webhook_id}`
        assert.lengthOf(rows, backlog)
        const givenBack = rows.filter((r) => r.state === "queued")
        assert.isAtLeast(givenBack.length, DELIVERY_CONCURRENCY - ENDPOINT_CONCURRENCY)
        for (const r of givenBack) assert.deepStrictEqual([r.status, r.delivery_attempts, r.job_attempts], ["pending", 0, 0])
        yield* app.request("DELETE", `/v0/webhooks/${slowHook.webhook_id}`, { key: w.key })
      }).pipe(Effect.scoped))

    it.effect("a disabled webhook is not called", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: w.key, json: { url: receiver.url } })).body
        yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, { key: w.key, json: { enabled: false } })
        yield* deliverMail(w.email)
        yield* runJobs
        assert.lengthOf(receiver.received, 0)
        assert.strictEqual((yield* app.request("GET", `/v0/webhooks/${hook.webhook_id}/deliveries`, { key: w.key })).body.count, 0)
      }).pipe(Effect.scoped))

    it.effect("deliveries are filtered by the webhook's event_types and its inbox and pod scope; PATCH of inbox_ids and pod_ids moves it", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const receiver = yield* webhookReceiver()
        const w = yield* setUp()
        const create = (path: string, json: object) =>
          Effect.map(app.request("POST", path, { key: w.key, json: { url: receiver.url, ...json } }), (r) => r.body.webhook_id as string)
        const sentOnly = yield* create("/v0/webhooks", { event_types: ["message.sent"] })
        const inboxOnly = yield* create("/v0/webhooks", { inbox_ids: [w.inboxId] })
        const podHook = yield* create(`/v0/pods/${w.podId}/webhooks`, {})
        yield* deliverMail(w.email, { subject: "to I" })
        yield* deliverMail(w.otherEmail, { subject: "to other" })
        yield* runJobs
        const count = (id: string) => Effect.map(app.request("GET", `/v0/webhooks/${id}/deliveries`, { key: w.key }), (r) => r.body.count as number)
        assert.strictEqual(yield* count(sentOnly), 0)
        assert.strictEqual(yield* count(inboxOnly), 1)
        assert.strictEqual(yield* count(podHook), 1)
        assert.lengthOf(receiver.received, 2)

        // PATCH moves the scope: the inbox-only webhook now wants the other inbox, by pod; [] clears it.
        const otherPod = (yield* app.request("GET", `/v0/inboxes/${w.otherId}`, { key: w.key })).body.pod_id as string
        const moved = yield* app.request("PATCH", `/v0/webhooks/${inboxOnly}`, { key: w.key, json: { inbox_ids: [], pod_ids: [otherPod] } })
        assert.strictEqual(moved.status, 200, moved.text)
        assert.deepStrictEqual([moved.body.inbox_ids, moved.body.pod_ids], [undefined, [otherPod]])
        yield* deliverMail(w.email, { subject: "to I again" })
        yield* deliverMail(w.otherEmail, { subject: "to other again" })
        yield* runJobs
        const deliveries = (yield* app.request("GET", `/v0/webhooks/${inboxOnly}/deliveries`, { key: w.key })).body
        assert.strictEqual(deliveries.count, 2, "one delivery more")
        // Which events they carried (the TestClock stood still: their times are equal, their order not fixed).
        const events = (yield* app.request("GET", "/v0/events", { key: w.key })).body.events as Array<any>
        const subjects = (deliveries.deliveries as Array<{ event_id: string }>).map((d) => events.find((e) => e.event_id === d.event_id)?.message.subject)
        assert.sameMembers(subjects, ["to I", "to other again"])
      }).pipe(Effect.scoped))
  })
}
