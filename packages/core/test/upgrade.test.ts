/**
 * Upgrades: migrations are forward-only, and a server refuses to start on a database that a
 * newer version has migrated, saying so, rather than serve tables it does not know; two
 * servers starting at once on one PostgreSQL database migrate it once; a migration that
 * rewrites rows (0031, domains per organization) carries the rows before it over.
 */
import { assert, it } from "@effect/vitest"
import { Database } from "@inbox/core/internal"
import { PGLITE_EXTENSIONS } from "../src/db/Database.ts"
import { PGlite } from "@electric-sql/pglite"
import { adminSql, POSTGRES_ENV } from "@inbox/testkit"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

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

it.effect("migration 0031 keeps every domain, moves its queued check to the key of its organization and name, and lets one holder of a name be VERIFIED", () =>
  Effect.gen(function*() {
    const dir = fileURLToPath(new URL("../src/db/migrations/", import.meta.url))
    const files = readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()
    const run = (db: PGlite, file: string) => db.exec(readFileSync(`${dir}${file}`, "utf8"))
    const rows = yield* Effect.promise(async () => {
      const db = await PGlite.create("memory://", { extensions: PGLITE_EXTENSIONS })
      try {
        for (const file of files.filter((f) => f < "0031")) await run(db, file)
        const domain = (org: string, status: string) =>
          `INSERT INTO domains (id, organization_id, status, verification_token, dkim_selector, dkim_public_key, dkim_private_key, created_at, updated_at)
           VALUES ('shop.example', '${org}', '${status}', 't', 's', 'p', 'k', now(), now())`
        await db.exec(`INSERT INTO organizations (id, name, owner_email, created_at, updated_at) VALUES
            ('org_a', 'A', 'a@example.com', now(), now()), ('org_b', 'B', 'b@example.com', now(), now()), ('org_c', 'C', 'c@example.com', now(), now());
          ${domain("org_a", "VERIFIED")};
          INSERT INTO jobs (id, kind, key, payload, run_at, state, created_at, updated_at)
            VALUES ('job_1', 'domain.check', 'shop.example', '{"domain":"shop.example"}', now(), 'queued', now(), now());`)
        await run(db, files.find((f) => f.startsWith("0031")) ?? "")
        const jobs = (await db.query<{ key: string; payload: unknown }>("SELECT key, payload FROM jobs")).rows
        // The name is no longer the key: another organization may hold it, but not VERIFIED as well.
        await db.exec(domain("org_b", "PENDING"))
        const second = await db.exec(domain("org_c", "VERIFIED")).then(() => "inserted", (e: Error) => e.message)
        const domains = (await db.query<{ organization_id: string; status: string }>("SELECT organization_id, status FROM domains ORDER BY 1")).rows
        return { jobs, second, domains }
      } finally {
        await db.close()
      }
    })
    assert.deepStrictEqual(rows.jobs, [{ key: "org_a/shop.example", payload: { domain: "shop.example", organization_id: "org_a" } }])
    assert.match(rows.second, /duplicate key value violates unique constraint "domains_verified"/)
    assert.deepStrictEqual(rows.domains, [{ organization_id: "org_a", status: "VERIFIED" }, { organization_id: "org_b", status: "PENDING" }])
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
