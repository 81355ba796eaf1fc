/**
 * Maintenance where the database runs no autovacuum: PGlite has no background processes at
 * all, and a PostgreSQL server may be configured without it (this project's CI machine is).
 * The tables that change all the time (jobs claimed and finished, webhook deliveries marked,
 * threads extended, counters folded, blob references counted) then never give back the
 * space of their dead rows, and no table's statistics move past those of the migration, so
 * plans go wrong as the data grows. The server's layer runs one VACUUM (ANALYZE) of them
 * every MAINTENANCE_INTERVAL, the first one interval after it starts (not during the start);
 * where autovacuum runs it does nothing. After its first pass a VACUUM skips the pages that
 * did not change since, so a large, mostly settled table costs little.
 */
import { Cause, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { noAutovacuum } from "../shared/sql.ts"

export const MAINTENANCE_INTERVAL = "1 minute"

/** The tables vacuumed and analyzed, those that change most; `messages` and `events` for their statistics. */
export const MAINTAINED_TABLES = ["jobs", "webhook_deliveries", "threads", "metric_counts", "blobs", "messages", "events"] as const

export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (!(yield* noAutovacuum(sql))) return
  yield* sql.unsafe(`VACUUM (ANALYZE) ${MAINTAINED_TABLES.join(", ")}`).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("database maintenance failed", Cause.pretty(cause))),
    Effect.delay(MAINTENANCE_INTERVAL),
    Effect.forever,
    Effect.forkScoped
  )
}))
