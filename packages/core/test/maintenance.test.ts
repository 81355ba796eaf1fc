/**
 * Database maintenance (db/Maintenance.ts) on PGlite and PostgreSQL: where no autovacuum runs
 * (always on PGlite), the server's layer vacuums a busy table past autovacuum's own threshold
 * one interval after it starts, and gives back the space of its dead rows; where autovacuum
 * runs it leaves them to it.
 */
import { assert, layer } from "@effect/vitest"
import { Maintenance, noAutovacuum } from "@inbox/core/internal"
import { engineLayer, storages } from "@inbox/testkit"
import { Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "60 seconds" })(`database maintenance (${storage.name})`, (it) => {
    it.effect("where no autovacuum runs, a busy table whose dead rows pass autovacuum's threshold is vacuumed an interval after the start, and their space comes back where no other session still sees them", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const vacuums = yield* noAutovacuum(sql)
        // Rows that churn as the job queue's do: written, then gone.
        yield* sql`INSERT INTO jobs (id, kind, payload, run_at, state, attempts, created_at, updated_at)
          SELECT 'job_m' || g, 'maintenance.test', '{}'::jsonb, now(), 'done', 1, now(), now() FROM generate_series(1, 5000) g`
        yield* sql`DELETE FROM jobs WHERE kind = 'maintenance.test'`
        // The rule reads the table's statistics, which a backend reports a moment after its writes.
        yield* sql<{ dead: number }>`SELECT pg_stat_force_next_flush(), n_dead_tup::int AS dead FROM pg_stat_user_tables
            WHERE schemaname = current_schema() AND relname = 'jobs'`.pipe(
          Effect.flatMap((rows) => (rows[0]?.dead ?? 0) >= 5000 ? Effect.void : Effect.fail("not yet")),
          Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 250 }),
          TestClock.withLive,
          Effect.orDie
        )
        const size = sql<{ bytes: string }>`SELECT pg_relation_size('jobs')::text AS bytes`.pipe(Effect.map((rows) => Number(rows[0]!.bytes)))
        const churned = yield* size
        assert.isAbove(churned, 0)
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(Maintenance.layer)
          // Where autovacuum runs it may reclaim the space at any moment: only our own pass is checked.
          if (!vacuums) return
          // Nothing during the start: the first pass waits an interval.
          yield* TestClock.withLive(Effect.sleep("100 millis"))
          assert.strictEqual(yield* size, churned)
          const vacuumed = sql<{ n: number }>`SELECT vacuum_count::int AS n FROM pg_stat_user_tables
            WHERE schemaname = current_schema() AND relname = 'jobs'`.pipe(Effect.map((rows) => rows[0]?.n ?? 0))
          const before = yield* vacuumed
          yield* TestClock.adjust(Maintenance.MAINTENANCE_INTERVAL)
          yield* vacuumed.pipe(
            Effect.flatMap((n) => n > before ? Effect.void : Effect.fail("not yet")),
            Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }),
            TestClock.withLive,
            Effect.orDie
          )
          // VACUUM gives the space back only of rows no open snapshot can still see. On PostgreSQL
          // the other test files' transactions in the same database hold that horizon back at
          // times, so the space is checked where this test's connection is the only one.
          if (storage.name === "PGlite") assert.isBelow(yield* size, churned)
        }))
      }))
  })
}
