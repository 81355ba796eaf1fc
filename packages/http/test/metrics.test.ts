/**
 * Metrics over REST (spec: Metric series, Metrics, Limits "Metrics window", Errors 400
 * validation_error and 422 range_too_large; docs/metrics.md): usage running totals,
 * event counts and per-recipient rates, at organization, pod and inbox level, from the
 * counters the writes themselves maintain.
 */
import { assert, it, layer } from "@effect/vitest"
import { Events, Metrics, noAutovacuum } from "@inbox/core/internal"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Clock, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const HOUR = 3_600_000
/** The start of the hour each test begins at (the test clock moves on from test to test). */
let T0 = 0

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  // A small step to the next whole hour: a long jump would run every periodic task of the layer on the way.
  const now = yield* Clock.currentTimeMillis
  T0 = (Math.floor(now / HOUR) + 1) * HOUR
  yield* TestClock.adjust(T0 - now)
  const org = yield* newOrganization({ plan: "scale" })
  const pod = (yield* app.request("POST", "/v0/pods", { key: org.key, json: { name: "P" } })).body.pod_id as string
  const inbox = (yield* app.request("POST", `/v0/pods/${pod}/inboxes`, { key: org.key, json: {} })).body
  const get = (path: string, key = org.key) => app.request("GET", path, { key })
  return { app, org, key: org.key, pod, inboxId: inbox.inbox_id as string, email: inbox.email as string, get }
})

/** The last value of each usage series. */
const latest = (body: Record<string, ReadonlyArray<{ value: number }>>) =>
  Object.fromEntries(Object.entries(body).map(([k, points]) => [k, points[points.length - 1]?.value]))

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `metrics (${storage.name})`,
    (it) => {
      it.effect("usage answers running totals of storage_bytes, message_count, thread_count, inbox_count, domain_count and pod_count per bucket", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* TestClock.adjust("1 hour")
          const received = yield* deliverMail(w.email, { subject: "one", text: "first" })
          assert.strictEqual(received.status, 200, received.text)
          yield* TestClock.adjust("1 hour")
          yield* deliverMail(w.email, { subject: "two", text: "second" })
          const res = yield* w.get("/v0/metrics/usage?period=3600&limit=3")
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(Object.keys(res.body).sort(), ["domain_count", "inbox_count", "message_count", "pod_count", "storage_bytes", "thread_count"])
          assert.deepStrictEqual(res.body.message_count.map((p: { timestamp: string }) => p.timestamp), [
            new Date(T0).toISOString(),
            new Date(T0 + HOUR).toISOString(),
            new Date(T0 + 2 * HOUR).toISOString()
          ])
          assert.deepStrictEqual(res.body.message_count.map((p: { value: number }) => p.value), [0, 1, 2])
          assert.deepStrictEqual(res.body.thread_count.map((p: { value: number }) => p.value), [0, 1, 2])
          assert.deepStrictEqual(res.body.inbox_count.map((p: { value: number }) => p.value), [1, 1, 1])
          // the default pod and the one made in setUp
          assert.deepStrictEqual(res.body.pod_count.map((p: { value: number }) => p.value), [2, 2, 2])
          assert.deepStrictEqual(res.body.domain_count.map((p: { value: number }) => p.value), [0, 0, 0])
          const sizes = yield* (yield* SqlClient.SqlClient)<{ size: number }>`SELECT size FROM messages WHERE inbox_id = ${w.inboxId} ORDER BY created_at`
          const [first, second] = sizes.map((r) => Number(r.size))
          assert.deepStrictEqual(res.body.storage_bytes.map((p: { value: number }) => p.value), [0, first, (first ?? 0) + (second ?? 0)])
        }))

      it.effect("usage_types names the series; deleting lowers the running totals", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "gone soon", text: "x" })
          const before = yield* w.get("/v0/metrics/usage?usage_types=message_count,inbox_count")
          assert.deepStrictEqual(Object.keys(before.body).sort(), ["inbox_count", "message_count"])
          assert.deepStrictEqual(latest(before.body), { message_count: 1, inbox_count: 1 })
          assert.strictEqual(before.body.message_count.length, 24)
          assert.strictEqual((yield* w.app.request("DELETE", `/v0/inboxes/${w.inboxId}`, { key: w.key })).status, 204)
          const after = yield* w.get("/v0/metrics/usage?usage_types=message_count,inbox_count")
          assert.deepStrictEqual(latest(after.body), { message_count: 0, inbox_count: 0 })
        }))

      it.effect("counters are exact whether their changes are folded or not: a fold changes no answer", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const sql = yield* SqlClient.SqlClient
          yield* deliverMail(w.email, { subject: "one", text: "first" })
          yield* deliverMail(w.email, { subject: "two", text: "second" })
          const read = Effect.gen(function*() {
            const usage = yield* w.get(`/v0/inboxes/${w.inboxId}/metrics/usage?usage_types=message_count,thread_count,storage_bytes`)
            const events = yield* w.get("/v0/metrics/events?event_types=message.received")
            return { usage: latest(usage.body), received: events.body.counts["message.received"] as number }
          })
          const pending = yield* read
          assert.strictEqual(pending.usage.message_count, 2)
          assert.strictEqual(pending.received, 2)
          const waiting = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM metric_changes WHERE organization_id = ${w.org.organizationId}`
          assert.isAbove(waiting[0]!.n, 0, "the deliveries appended changes")
          yield* sql`SELECT metric_fold(3)`
          yield* sql`SELECT metric_fold(100000)`
          const left = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM metric_changes WHERE organization_id = ${w.org.organizationId}`
          assert.strictEqual(left[0]!.n, 0)
          assert.deepStrictEqual(yield* read, pending)
          yield* deliverMail(w.email, { subject: "three", text: "third" })
          const after = yield* read
          assert.strictEqual(after.usage.message_count, 3)
          assert.strictEqual(after.received, 3)
        }))

      it.effect("the server's fold empties the appended changes every second, and where no autovacuum runs it vacuums them, giving their space back where no other session still sees them", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const sql = yield* SqlClient.SqlClient
          const vacuums = yield* noAutovacuum(sql)
          const vacuumed = sql<{ n: number }>`SELECT vacuum_count::int AS n FROM pg_stat_user_tables
            WHERE schemaname = current_schema() AND relname = 'metric_changes'`.pipe(Effect.map((rows) => rows[0]?.n ?? 0))
          const before = yield* vacuumed
          yield* sql`SELECT metric_add(${w.org.organizationId}, NULL, NULL, 'message.sent', ${new Date(T0)}, 1) FROM generate_series(1, 5000)`
          const answer = yield* w.get("/v0/metrics/events?event_types=message.sent")
          yield* Effect.scoped(Effect.gen(function*() {
            yield* Layer.build(Metrics.layerFold)
            // The first fold runs as the layer starts; its statements take real time.
            yield* Effect.all([sql<{ n: number }>`SELECT count(*)::int AS n FROM metric_changes`, vacuumed]).pipe(
              Effect.flatMap(([rows, n]) => rows[0]!.n === 0 && (!vacuums || n > before) ? Effect.void : Effect.fail("not yet")),
              // Up to 15 s of real time: a loaded 2-core machine once took more than 3 s.
              Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 750 }),
              TestClock.withLive,
              Effect.orDie
            )
          }))
          const left = yield* sql<{ n: number; bytes: string }>`SELECT count(*)::int AS n, pg_relation_size('metric_changes')::text AS bytes FROM metric_changes`
          assert.strictEqual(left[0]!.n, 0)
          assert.deepStrictEqual((yield* w.get("/v0/metrics/events?event_types=message.sent")).body, answer.body)
          if (vacuums) assert.isAbove(yield* vacuumed, before, "the emptied table was vacuumed")
          // VACUUM gives back the space only of rows no open snapshot can still see: on
          // PostgreSQL the other test files' transactions in the same database hold that
          // back at times, so the space is checked where this test's connection is the only one.
          if (storage.name === "PGlite") assert.strictEqual(Number(left[0]!.bytes), 0, "the emptied table gave its space back")
        }))

      it.effect("a series of any period counts the same changes, read from minute, five-minute, hour or day counters, folded or not", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const sql = yield* SqlClient.SqlClient
          yield* TestClock.adjust("7 minutes")
          yield* deliverMail(w.email, { subject: "one", text: "first" })
          yield* TestClock.adjust("1 hour")
          yield* deliverMail(w.email, { subject: "two", text: "second" })
          // Each period's buckets: messages counted per bucket, the running total at its end.
          const series = (period: number, limit: number) =>
            Effect.map(w.get(`/v0/metrics/usage?usage_types=message_count&period=${period}&limit=${limit}`), (res) =>
              (res.body.message_count as ReadonlyArray<{ value: number }>).map((p) => p.value))
          const read = Effect.all({ twoMinutes: series(120, 40), fiveMinutes: series(300, 16), hours: series(3600, 3), days: series(86_400, 2) })
          const pending = yield* read
          yield* sql`SELECT metric_fold(100000)`
          assert.deepStrictEqual(yield* read, pending)
          // Now is T0 + 1 h 7 min: the first message came 60 minutes back, the second in the current bucket.
          assert.deepStrictEqual(pending.fiveMinutes.slice(-14), [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2])
          assert.deepStrictEqual(pending.twoMinutes.slice(-32), [0, ...Array(30).fill(1), 2])
          assert.deepStrictEqual(pending.hours, [0, 1, 2])
          assert.deepStrictEqual(pending.days.slice(-1), [2])
        }))

      it.effect("usage and rates also answer under pods and inboxes; scope applies and a pod outside it is 404", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const other = (yield* w.app.request("POST", "/v0/inboxes", { key: w.key, json: {} })).body
          yield* deliverMail(w.email, { subject: "a", text: "a" })
          yield* deliverMail(other.email, { subject: "b", text: "b" })
          yield* deliverMail(other.email, { subject: "c", text: "c" })
          const count = (path: string, key?: string) =>
            Effect.map(w.get(path, key), (res) => latest(res.body).message_count)
          assert.strictEqual(yield* count("/v0/metrics/usage"), 3)
          assert.strictEqual(yield* count(`/v0/pods/${w.pod}/metrics/usage`), 1)
          assert.strictEqual(yield* count(`/v0/inboxes/${other.inbox_id}/metrics/usage`), 2)
          const podKey = (yield* w.app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "pod", pod_id: w.pod } })).body.api_key as string
          assert.strictEqual(yield* count("/v0/metrics/usage", podKey), 1)
          assert.strictEqual((yield* w.get(`/v0/inboxes/${other.inbox_id}/metrics/usage`, podKey)).status, 404)
          assert.strictEqual((yield* w.get(`/v0/pods/${w.org.defaultPodId}/metrics/rates`, podKey)).status, 404)
          assert.strictEqual((yield* w.get(`/v0/pods/${w.pod}/metrics/rates`, podKey)).status, 200)
        }))

      it.effect("events answers { total, counts } per event type between start and end", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* deliverMail(w.email, { subject: "early", text: "x" })
          yield* TestClock.adjust("2 hours")
          yield* deliverMail(w.email, { subject: "late 1", text: "x" })
          yield* deliverMail(w.email, { subject: "late 2", text: "x" })
          const all = yield* w.get("/v0/metrics/events?event_types=message.received,message.sent")
          assert.strictEqual(all.status, 200, all.text)
          assert.deepStrictEqual(all.body, { total: 3, counts: { "message.received": 3, "message.sent": 0 } })
          const start = new Date(T0 + HOUR).toISOString()
          const late = yield* w.get(`/v0/metrics/events?event_types=message.received&start=${start}`)
          assert.deepStrictEqual(late.body, { total: 2, counts: { "message.received": 2 } })
          const end = new Date(T0 + 30 * 60_000).toISOString()
          const early = yield* w.get(`/v0/metrics/events?event_types=message.received&start=${new Date(T0).toISOString()}&end=${end}`)
          assert.deepStrictEqual(early.body, { total: 1, counts: { "message.received": 1 } })
          const every = yield* w.get("/v0/metrics/events")
          assert.strictEqual(every.body.total, 3)
          assert.includeMembers(Object.keys(every.body.counts), ["message.received", "message.sent", "message.bounced", "domain.verified"])
        }))

      it.effect("rates are bounce and complaint rates per recipient sent; rate is null when nothing was sent; open appears with tracking data", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const events = yield* Events
          const record = (type: "message.sent" | "message.bounced" | "message.complained" | "message.opened", recipients: ReadonlyArray<string>) =>
            events.record({ organizationId: w.org.organizationId, podId: w.pod, inboxId: w.inboxId, type, payload: { detail: { recipients } } })
          yield* TestClock.adjust("1 hour")
          yield* record("message.sent", ["a@example.net", "b@example.net", "c@example.net", "d@example.net"])
          yield* record("message.bounced", ["a@example.net"])
          yield* record("message.complained", ["b@example.net"])
          yield* record("message.complained", ["c@example.net"])
          const res = yield* w.get("/v0/metrics/rates?period=3600&limit=2")
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(res.body, {
            bounce: [{ timestamp: new Date(T0).toISOString(), sent: 0, rate: null }, { timestamp: new Date(T0 + HOUR).toISOString(), sent: 4, rate: 0.25 }],
            complaint: [{ timestamp: new Date(T0).toISOString(), sent: 0, rate: null }, { timestamp: new Date(T0 + HOUR).toISOString(), sent: 4, rate: 0.5 }]
          })
          yield* record("message.opened", [])
          const opened = yield* w.get(`/v0/inboxes/${w.inboxId}/metrics/rates?period=3600&limit=1&rate_types=open`)
          assert.deepStrictEqual(opened.body, { open: [{ timestamp: new Date(T0 + HOUR).toISOString(), sent: 4, rate: 0.25 }] })
          assert.deepStrictEqual(Object.keys((yield* w.get("/v0/metrics/rates")).body).sort(), ["bounce", "complaint", "open"])
        }))

      it.effect("a window starting more than 90 days back or needing more than 1000 buckets is 400 validation_error", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const refused = [
            "/v0/metrics/usage?period=86400&limit=91",
            "/v0/metrics/rates?period=60&limit=1001",
            `/v0/metrics/events?start=${new Date(T0 - 91 * 86_400_000).toISOString()}`,
            `/v0/metrics/events?period=60&start=${new Date(T0 - 2 * 86_400_000).toISOString()}`,
            "/v0/metrics/usage?usage_types=mailbox_count",
            "/v0/metrics/events?event_types=message.teleported",
            "/v0/metrics/rates?period=90"
          ]
          for (const path of refused) {
            const res = yield* w.get(path)
            assert.strictEqual(res.status, 400, path)
            assert.strictEqual(res.body.code, "validation_error", path)
          }
          assert.strictEqual((yield* w.get("/v0/metrics/usage?period=86400&limit=90")).status, 200)
          assert.strictEqual((yield* w.get("/v0/metrics/rates?period=60&limit=1000")).status, 200)
        }))

      it.effect("a rates query over 200,000 events is 422 range_too_large", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const sql = yield* SqlClient.SqlClient
          // 200,001 sends counted in this hour, as the counters would hold them after that many events.
          yield* sql`SELECT metric_add(${w.org.organizationId}, NULL, NULL, 'message.sent', ${new Date(T0)}, 200001)`
          const res = yield* w.get("/v0/metrics/rates")
          assert.strictEqual(res.status, 422, res.text)
          assert.strictEqual(res.body.code, "range_too_large")
          assert.strictEqual((yield* w.get(`/v0/pods/${w.pod}/metrics/rates`)).status, 200)
        }))
    }
  )
}
