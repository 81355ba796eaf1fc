/**
 * Observing the server (observe.ts): one structured log line per request, with no secrets
 * and no bodies; `/metrics` in the Prometheus text format behind INBOX_METRICS_TOKEN, with
 * request counts and latency per route pattern, received messages and the job queue; and
 * `/ready`, which needs the database, the migrations and a live job worker. Webhook delivery
 * outcomes and the database pool's use are checked on PGlite and PostgreSQL.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Jobs } from "@inbox/core/internal"
import { deliverMail, engineLayer, newOrganization, pglite, storages, TEST_INBOUND_SECRET, TestApp, webhookReceiver } from "@inbox/testkit"
import { ConfigProvider, Effect, Layer, Logger } from "effect"
import { vi } from "vitest"
import { LoggingLive, redactSecrets } from "../src/observe.ts"

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

  it.effect("/metrics answers 401 unauthorized without the metrics token, or with a prefix or an extension of it", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      assert.strictEqual((yield* app.request("GET", "/metrics")).status, 401)
      // Compared by digest (sameSecret), so a prefix, an extension or an empty token costs the same time as any other.
      for (const token of ["wrong", TOKEN.slice(0, -1), `${TOKEN}x`, ""]) {
        assert.strictEqual((yield* app.request("GET", "/metrics", { headers: { authorization: `Bearer ${token}` } })).status, 401, token)
      }
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

describe("secrets in log lines", () => {
  const key = `am_${"3f".repeat(32)}`
  const line = `request failed: GET /v0/websocket?api_key=${key}&csrf_token=c0ffee&limit=2 (Authorization: Bearer ${key})`

  it("redactSecrets replaces the values of api_key and csrf_token, and any am_ key, with REDACTED", () => {
    assert.strictEqual(
      redactSecrets(line),
      "request failed: GET /v0/websocket?api_key=REDACTED&csrf_token=REDACTED&limit=2 (Authorization: Bearer am_REDACTED)"
    )
    assert.strictEqual(redactSecrets(`{"url":"/v0/x?API_KEY=${key}"}`), `{"url":"/v0/x?API_KEY=REDACTED"}`)
    const plain = `{"message":"request","annotations":{"route":"/v0/inboxes","status":200}}`
    assert.strictEqual(redactSecrets(plain), plain)
  })

  const logThrough = (format: "json" | "pretty", capture: () => { readonly text: () => string; readonly restore: () => void }) =>
    Effect.gen(function*() {
      const captured = capture()
      try {
        yield* Effect.logError(line, { url: `/v0/inboxes?api_key=${key}` }).pipe(
          Effect.provide(LoggingLive.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { INBOX_LOG_FORMAT: format } })))))
        )
        // The JSON lines of one turn of the event loop are written together, on the next.
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
        return captured.text()
      } finally {
        captured.restore()
      }
    })

  it.effect("the server's JSON logger and pretty logger write every line with them redacted", () =>
    Effect.gen(function*() {
      const json = yield* logThrough("json", () => {
        const spy = vi.spyOn(process.stdout, "write").mockImplementation(() => true)
        return { text: () => spy.mock.calls.map((c) => String(c[0])).join(""), restore: () => spy.mockRestore() }
      })
      const pretty = yield* logThrough("pretty", () => {
        const spy = vi.spyOn(console, "log").mockImplementation(() => undefined)
        return { text: () => spy.mock.calls.map((c) => c.map(String).join(" ")).join("\n"), restore: () => spy.mockRestore() }
      })
      for (const text of [json, pretty]) {
        assert.include(text, "request failed")
        assert.include(text, "api_key=REDACTED")
        assert.include(text, "csrf_token=REDACTED")
        assert.notInclude(text, "3f3f3f3f")
        assert.notInclude(text, "c0ffee")
      }
    }))
})

const scrape = Effect.gen(function*() {
  const scraped = yield* (yield* TestApp).request("GET", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })
  assert.strictEqual(scraped.status, 200)
  return scraped.text
})

/** The value of one series in a scrape (0 when absent). */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

for (const s of storages()) {
  layer(
    TestApp.layer.pipe(Layer.provideMerge(engineLayer(s.layer, { metricsToken: TOKEN, inboundSecret: TEST_INBOUND_SECRET, webhookAllowPrivate: true }))),
    { timeout: "120 seconds" }
  )(`/metrics on ${s.name}`, (it) => {
    it.effect("/metrics counts webhook deliveries by outcome: delivered, retried and failed", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const before = yield* scrape
        const count = (text: string, outcome: string) => sample(text, `inbox_webhook_deliveries_total{outcome="${outcome}"}`)
        // The first delivery is accepted, the next refused with 503 (retried).
        const receiver = yield* webhookReceiver((n) => (n === 0 ? 200 : 503))
        const org = yield* newOrganization()
        const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: "hooked" } })).body
        const hook = (yield* app.request("POST", "/v0/webhooks", { key: org.key, json: { url: receiver.url, event_types: ["message.received"] } })).body
        const runJobs = Jobs.use((jobs) => jobs.runDue({ wait: true }))
        yield* deliverMail(inbox.email, { subject: "one" })
        yield* runJobs
        yield* deliverMail(inbox.email, { subject: "two" })
        yield* runJobs
        // Disabled with a delivery queued: that delivery fails without a call.
        yield* deliverMail(inbox.email, { subject: "three" })
        assert.strictEqual((yield* app.request("PATCH", `/v0/webhooks/${hook.webhook_id}`, { key: org.key, json: { enabled: false } })).status, 200)
        yield* runJobs
        assert.lengthOf(receiver.received, 2)
        const after = yield* scrape
        assert.include(after, "# TYPE inbox_webhook_deliveries_total counter")
        assert.deepStrictEqual(
          ["delivered", "retried", "failed"].map((o) => count(after, o) - count(before, o)),
          [1, 1, 1]
        )
      }).pipe(Effect.scoped))

    it.effect("/metrics shows the database pool's size and this process's connections in use", () =>
      Effect.gen(function*() {
        const text = yield* scrape
        assert.include(text, "# TYPE inbox_db_pool_max_connections gauge")
        assert.include(text, "# TYPE inbox_db_pool_connections gauge")
        if (s.name === "PGlite") {
          assert.strictEqual(sample(text, "inbox_db_pool_max_connections"), 1)
        } else {
          assert.strictEqual(sample(text, "inbox_db_pool_max_connections"), 4)
          // The scrape's own statement runs on one of them.
          assert.isAtLeast(sample(text, `inbox_db_pool_connections{state="active"}`), 1, text)
        }
        assert.match(text, /\ninbox_jobs_oldest_due_seconds|# TYPE inbox_jobs_oldest_due_seconds gauge/)
      }))
  })
}
