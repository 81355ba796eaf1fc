/**
 * Test databases. PGlite: every test file starts from one migrated template data dir
 * (built once per run by vitest's global setup and handed over in
 * INBOX_TEST_PGLITE_TEMPLATE), which costs about a second instead of an initdb and a
 * migration run. PostgreSQL: when INBOX_TEST_DATABASE_URL is set, each layer gets a fresh
 * schema on that server (dropped when the layer closes), so files run in parallel without
 * seeing each other's rows.
 */
import { PGlite } from "@electric-sql/pglite"
import { Database } from "@inbox/core/internal"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import postgres from "./pg-admin.ts"
import { postgresUrl } from "./requirements.ts"

export const TEMPLATE_ENV = "INBOX_TEST_PGLITE_TEMPLATE"

/** A fresh migrated PGlite database in memory. */
export const pglite = Layer.unwrap(Effect.gen(function*() {
  const template = process.env[TEMPLATE_ENV]
  if (template === undefined) return Database.layerPglite({ dataDir: "memory://" })
  const blob = new Blob([readFileSync(template)])
  return Database.layerPglite({ loadDataDir: blob })
}))

/** A fresh schema on the PostgreSQL server named by INBOX_TEST_DATABASE_URL. */
export const postgresSchema = (url: string) =>
  Layer.unwrap(Effect.gen(function*() {
    const schema = `t_${randomBytes(6).toString("hex")}`
    yield* Effect.acquireRelease(
      Effect.promise(() => postgres(url, `CREATE SCHEMA ${schema}`)),
      () => Effect.promise(() => postgres(url, `DROP SCHEMA ${schema} CASCADE`))
    )
    return Database.layerPostgres({ url, searchPath: schema, maxConnections: 4 })
  }))

/** The storages the suite runs against: PGlite always, PostgreSQL when configured. */
export const storages = (): ReadonlyArray<{ readonly name: string; readonly layer: typeof pglite }> => {
  const url = postgresUrl()
  return [
    { name: "PGlite", layer: pglite },
    ...(url === undefined ? [] : [{ name: "PostgreSQL", layer: postgresSchema(url) }])
  ]
}

/** Builds the template data dir: a migrated PGlite, dumped as a tarball. */
export const buildPgliteTemplate = async (): Promise<Blob> => {
  const db = await PGlite.create({ dataDir: "memory://", ...Database.pgliteOptions() })
  await Effect.runPromise(Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped))
  const dump = await db.dumpDataDir("none")
  await db.close()
  return dump
}
