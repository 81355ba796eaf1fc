/**
 * Maintenance where the database runs no autovacuum: PGlite has no background processes at
 * all, and a PostgreSQL server may be configured without it (this project's CI machine is).
 * The tables that change all the time (jobs claimed and finished, webhook deliveries marked,
 * threads extended, counters folded, blob references counted) then never give back the
 * space of their dead rows, and no table's statistics move past those of the migration, so
 * plans go wrong as the data grows. Every MAINTENANCE_INTERVAL (the first one interval after
 * the start, not during it) the server's layer applies autovacuum's own default rule to
 * each of them, from the table's statistics: VACUUM when its dead rows exceed 50 + 20% of
 * its live rows, ANALYZE when the rows changed since the last one exceed 50 + 10%. A fixed
 * pass over every table instead stalled the embedded database for 1.3 s a minute at 100,000
 * messages (analyzing messages and threads whether they had changed or not). Where
 * autovacuum runs, the layer does nothing.
 */
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { logBackgroundFailure } from "./Availability.ts"
import { decodeRows, Int8, noAutovacuum } from "../shared/sql.ts"

/**
 * Autovacuum wakes each database a minute apart, but its workers run beside the queries:
 * here a VACUUM takes the embedded database's one connection. Smaller and more frequent
 * passes stall it less each time, and a queue table that turns over 1,000 jobs a second
 * (three row versions each) no longer piles up 180,000 dead rows between two passes. The
 * look itself is one read of the statistics.
 */
export const MAINTENANCE_INTERVAL = "10 seconds"

/**
 * The tables vacuumed and analyzed, those that change most; `messages`, `events` and
 * `message_search` for their statistics. Without those of message_search the planner takes
 * it for a few pages, and an inbox's search by a rare word read every row of the inbox
 * rather than the word's entries in the GIN index (search/Search.ts, issue 28).
 */
export const MAINTAINED_TABLES = ["jobs", "webhook_deliveries", "threads", "metric_counts", "blobs", "messages", "events", "message_search"] as const

const TableRow = Schema.Struct({
  name: Schema.String,
  live: Int8,
  dead: Int8,
  modified: Int8
})

/** autovacuum's defaults: threshold 50, scale factors 0.2 (vacuum) and 0.1 (analyze). */
const needsVacuum = (t: typeof TableRow.Type) => t.dead > 50 + 0.2 * t.live
const needsAnalyze = (t: typeof TableRow.Type) => t.modified > 50 + 0.1 * t.live

export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (!(yield* noAutovacuum(sql))) return
  const pass = Effect.gen(function*() {
    const tables = yield* sql`SELECT relname AS name, n_live_tup AS live, n_dead_tup AS dead, n_mod_since_analyze AS modified
      FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname IN ${sql.in([...MAINTAINED_TABLES])}`.pipe(decodeRows(TableRow))
    for (const t of tables) {
      const vacuum = needsVacuum(t)
      const analyze = needsAnalyze(t)
      if (vacuum || analyze) yield* sql.unsafe(vacuum ? `VACUUM ${analyze ? "(ANALYZE) " : ""}"${t.name}"` : `ANALYZE "${t.name}"`)
    }
  })
  yield* pass.pipe(
    Effect.catchCause(logBackgroundFailure("database maintenance failed")),
    Effect.delay(MAINTENANCE_INTERVAL),
    Effect.forever,
    Effect.forkScoped
  )
}))
