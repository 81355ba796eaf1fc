/**
 * Observing the server (observe.ts): one structured log line per request, with no secrets
 * and no bodies; `/metrics` in the Prometheus text format behind INBOX_METRICS_TOKEN, with
 * request counts and latency per route pattern, received messages and the job queue; and
 * `/ready`, which needs the database, the migrations and a live job worker.
 */
import { assert, it, layer } from "@effect/vitest"
import { Jobs } from "@inbox/core"
import { deliverMail, engineLayer, newOrganization, pglite, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer, Logger } from "effect"

const TOKEN = "metrics-test-token"
const logged: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
const Capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => void logged.push(entry as never))])

layer(
  TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite, { metricsToken: TOKEN, inboundSecret: TEST_INBOUND_SECRET })), Layer.provideMerge(Capture)),
  { timeout: "120 seconds" }
)("observing the server", (it) => {
  it.effect("logs one line per request with request id, organization, route, status and duration, and never the key or the body", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const org = yield* newOrganization()
      const created = yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: "observed", display_name: "Secret Display Name" } })
      assert.strictEqual(created.status, 200)
      const requestId = created.headers.get("x-request-id")
      const lines = logged.filter((l) => l.annotations["request_id"] === requestId)
      assert.strictEqual(lines.length, 1)
      const line = lines[0]
      assert.deepStrictEqual(
        { ...line?.annotations, duration_ms: typeof line?.annotations["duration_ms"] },
        { request_id: requestId, organization_id: org.organizationId, method: "POST", route: "/v0/inboxes", status: 200, duration_ms: "number" }
      )
      const text = JSON.stringify(logged)
      assert.notInclude(text, org.key)
      assert.notInclude(text, "Secret Display Name")
    }))

  it.effect("/metrics answers 401 unauthorized without the metrics token", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      assert.strictEqual((yield* app.request("GET", "/metrics")).status, 401)
      assert.strictEqual((yield* app.request("GET", "/metrics", { headers: { authorization: "Bearer wrong" } })).status, 401)
      const org = yield* newOrganization()
      assert.strictEqual((yield* app.request("GET", "/metrics", { key: org.key })).status, 401, "an API key is not the metrics token")
    }))

  it.effect("/metrics counts requests and latency per route pattern, received messages and the job queue, in Prometheus text", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const org = yield* newOrganization()
      const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: "metered" } })).body
      assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key: org.key })).status, 200)
      assert.strictEqual((yield* deliverMail(inbox.email)).status, 200)
      yield* Jobs.use((jobs) => jobs.enqueue({ kind: "t.metrics", payload: {} }))
      const scraped = yield* app.request("GET", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })
      assert.strictEqual(scraped.status, 200)
      assert.match(scraped.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
      assert.include(scraped.text, "# TYPE inbox_http_requests_total counter")
      assert.match(scraped.text, /\ninbox_http_requests_total\{method="GET",route="\/v0\/inboxes\/:inbox_id",status="200"\} [1-9]\d*\n/)
      assert.match(scraped.text, /\ninbox_http_request_duration_seconds_bucket\{method="GET",route="\/v0\/inboxes\/:inbox_id",le="\+Inf"\} [1-9]\d*\n/)
      assert.match(scraped.text, /\ninbox_http_request_duration_seconds_count\{method="GET",route="\/v0\/inboxes\/:inbox_id"\} [1-9]\d*\n/)
      assert.match(scraped.text, /\ninbox_messages_received_total [1-9]\d*\n/)
      assert.match(scraped.text, /\ninbox_jobs\{kind="t\.metrics",state="queued"\} 1\n/)
      assert.notInclude(scraped.text, inbox.inbox_id, "routes are labelled by pattern, not by concrete path")
    }))

  it.effect("/ready answers 503 not_ready while no job worker runs, and 200 ready once one does", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const before = yield* app.request("GET", "/ready")
      assert.strictEqual(before.status, 503)
      assert.deepStrictEqual(before.body, { status: "not_ready", checks: { database: "ok", migrations: "ok", job_worker: "not running" } })
      yield* Layer.build(Jobs.layerWorker)
      yield* Effect.yieldNow
      const after = yield* app.request("GET", "/ready")
      assert.deepStrictEqual([after.status, after.body], [200, { status: "ready", checks: { database: "ok", migrations: "ok", job_worker: "ok" } }])
      assert.deepStrictEqual((yield* app.request("GET", "/health")).body, { status: "ok" })
    }).pipe(Effect.scoped))
})
