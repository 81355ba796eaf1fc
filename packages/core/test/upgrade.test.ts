/**
 * Upgrades: migrations are forward-only, and a server refuses to start on a database that a
 * newer version has migrated, saying so, rather than serve tables it does not know; two
 * servers starting at once on one PostgreSQL database migrate it once.
 */
import { assert, it } from "@effect/vitest"
import { Database } from "@inbox/core"
import { PGLITE_EXTENSIONS } from "../src/db/Database.ts"
import { PGlite } from "@electric-sql/pglite"
import { adminSql, POSTGRES_ENV } from "@inbox/testkit"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"

it.effect("refuses to start on a database migrated by a newer version, with a clear message", () =>
  Effect.gen(function*() {
    const db = yield* Effect.promise(() => PGlite.create("memory://", { extensions: PGLITE_EXTENSIONS }))
    yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped)
    // Opening it again is fine: nothing newer has touched it.
    yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped)
    yield* Effect.promise(() => db.exec("INSERT INTO inbox_migrations (migration_id, name, created_at) VALUES (9999, 'from_the_future', now())"))
    const exit = yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped, Effect.exit)
    assert.isTrue(Exit.isFailure(exit))
    const message = Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : ""
    assert.match(message, /the database was migrated by a newer version \(migration 9999_from_the_future; this version knows up to \d{4}\): run that version or a newer one/)
    yield* Effect.promise(() => db.close())
  }), { timeout: 300_000 })

const url = process.env[POSTGRES_ENV]
if (url !== undefined && url !== "") {
  it.live("two servers starting at once on one fresh PostgreSQL database migrate it once", () =>
    Effect.gen(function*() {
      const schema = `t_${randomBytes(6).toString("hex")}`
      yield* Effect.acquireRelease(
        Effect.promise(() => adminSql(url, `CREATE SCHEMA ${schema}`)),
        () => Effect.promise(() => adminSql(url, `DROP SCHEMA ${schema} CASCADE`))
      )
      const open = Layer.build(Database.layerPostgres({ url, searchPath: schema, maxConnections: 2 }))
      const [a, b] = yield* Effect.all([open, open], { concurrency: 2 })
      const known = Object.keys(Database.loadMigrations()).length
      // One of them applied every migration; the other waited for its lock and found none to do.
      const applied = [a, b].map((c) => Context.get(c, Database.Migrations).applied.length).sort((x, y) => x - y)
      assert.deepStrictEqual(applied, [0, known])
      const sql = Context.get(a, SqlClient.SqlClient)
      const rows = yield* sql<{ n: number; d: number }>`SELECT count(*)::int AS n, count(DISTINCT migration_id)::int AS d FROM inbox_migrations`
      assert.deepStrictEqual(rows[0], { n: known, d: known })
    }).pipe(Effect.scoped), { timeout: 300_000 })
}
