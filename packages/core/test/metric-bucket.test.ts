/**
 * metric_bucket (migrations 0020, 0054), on PGlite and PostgreSQL: the start of a moment's
 * bucket at a resolution in seconds (0: the all-time bucket, the epoch), before and after the
 * epoch and on a bucket's edges; and written so the planner inlines it (no function call per
 * row folded).
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, storages } from "@inbox/testkit"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const moments = ["2026-12-07T09:59:59.999Z", "2026-12-07T10:00:00.000Z", "2026-12-07T10:00:00.001Z", "2024-02-29T23:59:30.250Z", "1969-12-31T23:59:59.500Z", "1970-01-01T00:00:00.000Z"]
const resolutions = [0, 60, 3600, 86400]
const expected = (at: string, res: number) => res === 0 ? 0 : Math.floor(Date.parse(at) / 1000 / res) * res * 1000

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "60 seconds", excludeTestServices: true })(`metric_bucket on ${storage.name}`, (it) => {
    it.effect("the start of each moment's bucket at each resolution, before and after the epoch; inlined by the planner", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const at of moments) {
          for (const res of resolutions) {
            const [row] = yield* sql<{ ms: number }>`SELECT (extract(epoch FROM metric_bucket(${at}::timestamptz, ${res}::int)) * 1000)::float8 AS ms`
            assert.strictEqual(Number(row!.ms), expected(at, res), `${at} at ${res} s`)
          }
        }
        const plan = yield* sql<{ "QUERY PLAN": string }>`EXPLAIN VERBOSE SELECT metric_bucket(t, 60) FROM (VALUES (now())) AS v (t)`
        assert.notInclude(plan.map((r) => r["QUERY PLAN"]).join("\n"), "metric_bucket(")
      }))
  })
}
