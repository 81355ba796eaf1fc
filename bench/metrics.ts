/**
 * `pnpm bench metrics`: latency of every metrics query, and the cost of the shared request
 * limiter, on PostgreSQL (issue 11).
 *
 * Metrics read only the counters of `metric_counts` (migrations 0007, 0020; here no change
 * waits to be folded), so what a query costs depends on the counter rows in its window, not
 * on how the events got there. The organization is therefore seeded with the counters that
 * 10,000,000 events spread over 90 days leave (every bucket of every resolution in the
 * window filled for the rate and event metrics, and the usage deltas), written directly; a bare reference (a primary-key read of one row)
 * runs interleaved, and the ratio is reported. The limiter is measured as one `take` per
 * request: sequential (latency) and with 16 concurrent callers (throughput), against the
 * same bare read.
 */
import { Database, EVENT_TYPES, Metrics, Organizations, RATE_POLICIES, RateLimiter } from "@inbox/core/internal"
import { adminSql, engineLayer } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { performance } from "node:perf_hooks"
import { machine } from "./report.ts"

const EVENTS = 10_000_000
const DAYS = 90
const RUNS = Number(process.env["BENCH_RUNS"] ?? 300)
/** The stored resolutions besides the all-time total (migration 0020), each seeded in full. */
const RESOLUTIONS = [60, 300, 3600, 86_400]

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    yield* effect
    return performance.now() - start
  })

export const benchMetrics = async () => {
  const url = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
  const schema = `bench_metrics_${randomBytes(4).toString("hex")}`
  await adminSql(url, `CREATE SCHEMA ${schema}`)
  try {
    const layer = engineLayer(Database.layerPostgres({ url, searchPath: schema, maxConnections: 8 }), { rateLimits: true, requestsPerMinute: 1_000_000_000 })
    return await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const metrics = yield* Metrics
      const limiter = yield* RateLimiter
      const { organization } = yield* (yield* Organizations).create({ ownerEmail: "bench@example.com", verified: true, plan: "scale" })
      const org = organization.id
      const now = Date.now()
      const from = new Date(now - DAYS * 86_400_000)
      const minutes = DAYS * 24 * 60
      const perMinute = Math.ceil(EVENTS / minutes / 4)
      const seedStart = performance.now()
      // Four event types share the 10,000,000 events, the senders' events naming 3 recipients each.
      for (const metric of ["message.sent", "message.received", "message.bounced", "message.complained"]) {
        const recipients = metric === "message.sent" ? 3 : 1
        for (const [name, factor] of [[metric, 1], [`recipients:${metric}`, recipients]] as const) {
          for (const resolution of RESOLUTIONS) {
            yield* sql`INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
              SELECT ${org}, ${name}, ${resolution}, b, ${perMinute * factor} * (${resolution} / 60), ${org}
              FROM generate_series(to_timestamp(floor(extract(epoch FROM ${from}::timestamptz) / ${resolution}) * ${resolution}), ${new Date(now)}::timestamptz, make_interval(secs => ${resolution})) AS b`
          }
          yield* sql`INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
            VALUES (${org}, ${name}, 0, 'epoch', ${perMinute * factor * minutes}, ${org})`
        }
      }
      for (const usage of ["message_count", "storage_bytes", "thread_count"]) {
        for (const resolution of RESOLUTIONS) {
          yield* sql`INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
            SELECT ${org}, ${usage}, ${resolution}, b, ${resolution / 60}, ${org}
            FROM generate_series(to_timestamp(floor(extract(epoch FROM ${from}::timestamptz) / ${resolution}) * ${resolution}), ${new Date(now)}::timestamptz, make_interval(secs => ${resolution})) AS b`
        }
      }
      yield* sql`ANALYZE metric_counts`
      const seedSeconds = (performance.now() - seedStart) / 1000
      const principal = { organizationId: org, scope: { type: "organization" as const } }
      const start90 = new Date(now - 89 * 86_400_000).toISOString()
      const queries: Record<string, Effect.Effect<unknown, unknown>> = {
        "usage, 24 hours by hour": metrics.usage(principal, {}, {}),
        "usage, 90 days by day": metrics.usage(principal, {}, { period: 86_400, limit: 90 }),
        "usage, 1000 buckets of 5 minutes": metrics.usage(principal, {}, { period: 300, limit: 1000 }),
        "events, all types, 89 days": metrics.events(principal, { start: start90, period: 86_400 }),
        "events, 24 hours by default": metrics.events(principal, { event_types: [...EVENT_TYPES] }),
        "rates, 24 hours by hour (the window holds under 200,000 events)": metrics.rates(principal, {}, {}),
        "rates, 1000 buckets of 1 minute": metrics.rates(principal, {}, { period: 60, limit: 1000 })
      }
      const reference = sql`SELECT value FROM metric_counts WHERE scope_id = ${org} AND metric = 'message.sent' AND resolution = 0 AND bucket = 'epoch'`
      const rows: Array<{ name: string; p50: number; p99: number; ref99: number }> = []
      for (const [name, query] of Object.entries(queries)) {
        const ours: Array<number> = []
        const bare: Array<number> = []
        for (let i = 0; i < 20; i++) yield* Effect.orDie(query)
        for (let i = 0; i < RUNS; i++) {
          ours.push(yield* timed(Effect.orDie(query)))
          bare.push(yield* timed(reference))
        }
        rows.push({ name, p50: percentile(ours, 50), p99: percentile(ours, 99), ref99: percentile(bare, 99) })
      }
      // The limiter: one upsert per request.
      const take = (i: number) => limiter.take(`bench-key-${i % 64}`, { ...RATE_POLICIES.requestsPerKey, limit: 1_000_000_000 })
      const sequential: Array<number> = []
      const bareSeq: Array<number> = []
      for (let i = 0; i < 2000; i++) {
        sequential.push(yield* timed(take(i)))
        bareSeq.push(yield* timed(reference))
      }
      const concurrentRuns = 20_000
      const t0 = performance.now()
      yield* Effect.forEach(Array.from({ length: concurrentRuns }, (_, i) => i), take, { concurrency: 16, discard: true })
      const takesPerSecond = concurrentRuns / ((performance.now() - t0) / 1000)
      const t1 = performance.now()
      yield* Effect.forEach(Array.from({ length: concurrentRuns }, (_, i) => i), () => reference, { concurrency: 16, discard: true })
      const bareReadsPerSecond = concurrentRuns / ((performance.now() - t1) / 1000)
      return {
        seedSeconds,
        rows,
        limiter: {
          p50: percentile(sequential, 50),
          p99: percentile(sequential, 99),
          bareP50: percentile(bareSeq, 50),
          takesPerSecond,
          bareReadsPerSecond
        }
      }
    }).pipe(Effect.provide(Layer.orDie(layer)), Effect.scoped, Effect.orDie))
  } finally {
    await adminSql(url, `DROP SCHEMA ${schema} CASCADE`)
  }
}

export const metricsSection = (r: Awaited<ReturnType<typeof benchMetrics>>) => {
  const ms = (n: number) => n.toFixed(2)
  return [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}.`,
    `PostgreSQL, in-process calls of the Metrics service (no HTTP), ${RUNS} runs per query after 20 warm-up runs; one organization holding the counters of ${EVENTS.toLocaleString("en")} events over ${DAYS} days (seeded in ${r.seedSeconds.toFixed(1)} s). The reference is a primary-key read of one counter row, interleaved with ours. Goal (issue 11): p99 under 20 ms. Latencies in ms.`,
    "",
    "| query | p50 | p99 | reference p99 | p99 ratio |",
    "|---|---:|---:|---:|---:|",
    ...r.rows.map((row) => `| ${row.name} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.ref99)} | ${(row.p99 / row.ref99).toFixed(1)} |`),
    "",
    "### Shared request limiter (PostgreSQL)",
    "",
    `One \`take\` (the per-request upsert into \`rate_counters\`): p50 ${ms(r.limiter.p50)} ms, p99 ${ms(r.limiter.p99)} ms sequentially (bare read p50 ${ms(r.limiter.bareP50)} ms); ${Math.round(r.limiter.takesPerSecond).toLocaleString("en")} takes/s with 16 concurrent callers against ${Math.round(r.limiter.bareReadsPerSecond).toLocaleString("en")} bare reads/s (ratio ${(r.limiter.takesPerSecond / r.limiter.bareReadsPerSecond).toFixed(2)}).`
  ].join("\n")
}
