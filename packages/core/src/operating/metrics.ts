/**
 * What operators watch, as Effect metrics (Metric.counter, Metric.histogram) that the
 * services update where the thing happens, and their rendering in the Prometheus text
 * format for `/metrics`. The job queue's depth and age are read from the database when
 * scraped (`jobQueue`), so every process reports the shared queue, not only its own work.
 * Database pool use is read at scrape time too, from PostgreSQL's own view of this process's
 * connections (`databasePool`): the SQL client keeps no counts of its own to read.
 */
import { Effect, Metric } from "effect"
import { SqlClient } from "effect/sql"
import { now } from "../shared/time.ts"

/** Messages stored by the inbound path (one per inbox a delivery reached; duplicates not counted). */
export const messagesReceived = Metric.counter("inbox_messages_received_total", {
  description: "Messages stored by inbound delivery, one per receiving inbox",
  incremental: true
})

/**
 * Inbound group-commit batches whose shared transaction failed, each delivery then written
 * again alone (Inbound.ts): every one is a rollback of its neighbours' work, so a steady
 * rise means some message (or the database) keeps failing.
 */
export const inboundBatchesSplit = Metric.counter("inbox_inbound_batches_split_total", {
  description: "Inbound group-commit batches whose transaction failed, each delivery then written alone",
  incremental: true
})

/** Messages the relay accepted (sends, replies, forwards). */
export const messagesSent = Metric.counter("inbox_messages_sent_total", {
  description: "Messages accepted by the outbound relay",
  incremental: true
})

/**
 * Webhook delivery attempts by outcome: `delivered` (2xx), `retried` (failed, another
 * attempt is queued by the webhook retry policy), `failed` (attempts spent, or undeliverable:
 * the webhook was disabled, its event deleted, its secret unreadable).
 */
export const webhookDeliveries = Metric.counter("inbox_webhook_deliveries_total", {
  description: "Webhook delivery attempts by outcome (delivered, retried, failed)",
  incremental: true
})

/** The webhook counter labelled once per outcome (labelling builds a key). */
export const webhookOutcome = {
  delivered: Metric.withAttributes(webhookDeliveries, { outcome: "delivered" }),
  retried: Metric.withAttributes(webhookDeliveries, { outcome: "retried" }),
  failed: Metric.withAttributes(webhookDeliveries, { outcome: "failed" })
} as const

/** HTTP requests answered, by method, route pattern and status. */
export const httpRequests = Metric.counter("inbox_http_requests_total", {
  description: "HTTP requests answered, by method, route and status",
  incremental: true
})

/** Seconds from a request's arrival to its answer, by method and route pattern. */
export const httpDuration = Metric.histogram("inbox_http_request_duration_seconds", {
  description: "Time to answer an HTTP request, by method and route",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
})

const labelValue = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const labels = (attributes: Readonly<Record<string, string>> | undefined, extra: Record<string, string> = {}) => {
  const all = { ...attributes, ...extra }
  const keys = Object.keys(all)
  return keys.length === 0 ? "" : `{${keys.map((k) => `${k}="${labelValue(all[k] ?? "")}"`).join(",")}}`
}

/** The job queue by kind and state, with the age of the oldest due job, read at scrape time. */
export const jobQueue = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const at = yield* now
  const rows = yield* sql<{ kind: string; state: string; n: number; oldest: Date | null }>`SELECT kind, state, count(*)::int AS n,
      min(run_at) FILTER (WHERE state = 'queued' AND run_at <= ${at}) AS oldest
    FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind, state ORDER BY kind, state`
  return rows.map((r) => ({ kind: r.kind, state: r.state, count: r.n, oldestDueSeconds: r.oldest === null ? 0 : Math.max(0, (at.getTime() - new Date(r.oldest).getTime()) / 1000) }))
}).pipe(Effect.orDie)

/**
 * This process's database connections by state (`active`, `idle`, `idle in transaction`),
 * from pg_stat_activity: the pool tags its connections with an application name unique to
 * the process, which the scraping connection shares. The embedded database has one session
 * and no such view (no rows).
 */
export const databasePool = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ state: string; n: number }>`SELECT coalesce(state, 'unknown') AS state, count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = current_setting('application_name')
      AND application_name <> '' GROUP BY 1 ORDER BY 1`
}).pipe(Effect.catch(() => Effect.succeed([])), Effect.orDie)

/** Every registered metric and the job queue, in the Prometheus text exposition format (0.0.4). */
export const prometheusText = Effect.gen(function*() {
  const snapshot = yield* Metric.snapshot
  const queue = yield* jobQueue
  const pool = yield* databasePool
  const byName = new Map<string, Array<(typeof snapshot)[number]>>()
  for (const m of snapshot) byName.set(m.id, [...(byName.get(m.id) ?? []), m])
  const lines: Array<string> = []
  for (const [name, series] of [...byName.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const first = series[0]
    if (first === undefined) continue
    if (first.description !== undefined) lines.push(`# HELP ${name} ${first.description}`)
    switch (first.type) {
      case "Counter":
        lines.push(`# TYPE ${name} counter`)
        for (const s of series) if (s.type === "Counter") lines.push(`${name}${labels(s.attributes)} ${s.state.count}`)
        break
      case "Gauge":
        lines.push(`# TYPE ${name} gauge`)
        for (const s of series) if (s.type === "Gauge") lines.push(`${name}${labels(s.attributes)} ${s.state.value}`)
        break
      case "Histogram":
        lines.push(`# TYPE ${name} histogram`)
        for (const s of series) {
          if (s.type !== "Histogram") continue
          for (const [le, count] of s.state.buckets) lines.push(`${name}_bucket${labels(s.attributes, { le: String(le) })} ${count}`)
          lines.push(`${name}_bucket${labels(s.attributes, { le: "+Inf" })} ${s.state.count}`)
          lines.push(`${name}_sum${labels(s.attributes)} ${s.state.sum}`)
          lines.push(`${name}_count${labels(s.attributes)} ${s.state.count}`)
        }
        break
      default:
        // Frequencies and summaries are not used for operators' metrics.
        lines.pop()
    }
  }
  lines.push("# HELP inbox_jobs Jobs queued or running, by kind and state", "# TYPE inbox_jobs gauge")
  for (const q of queue) lines.push(`inbox_jobs${labels({ kind: q.kind, state: q.state })} ${q.count}`)
  lines.push("# HELP inbox_jobs_oldest_due_seconds Age of the oldest queued job that is due, by kind", "# TYPE inbox_jobs_oldest_due_seconds gauge")
  for (const q of queue) if (q.state === "queued") lines.push(`inbox_jobs_oldest_due_seconds${labels({ kind: q.kind })} ${q.oldestDueSeconds}`)
  lines.push("# HELP inbox_db_pool_connections This process's database connections, by state", "# TYPE inbox_db_pool_connections gauge")
  for (const p of pool) lines.push(`inbox_db_pool_connections${labels({ state: p.state })} ${p.n}`)
  return `${lines.join("\n")}\n`
})
