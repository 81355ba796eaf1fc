/**
 * Storage: one SQL dialect (PostgreSQL), two places to run it.
 *
 * `layerPglite` runs PGlite in-process (a data folder, or memory) behind the same
 * @effect/sql-pg driver as `layerPostgres`, so statements, row decoding and SqlError
 * reasons are identical. `layerConfig` picks one from INBOX_DATABASE_URL / INBOX_DATA_DIR.
 * Every layer runs the migrations before it is ready; migrations are plain SQL files in
 * ./migrations, applied once each in id order and recorded in `inbox_migrations`.
 *
 * Contract: a built layer provides a migrated database, and Signals (Signals.ts) that reach
 * every process sharing it. An embedded folder is locked for
 * the layer's life (lock.ts): a second process fails with DataFolderInUse. Any other
 * failure to open or migrate is a defect (the process cannot serve without storage).
 */
import { PGlite } from "@electric-sql/pglite"
import { unaccent } from "@electric-sql/pglite/contrib/unaccent"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Metric, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { settingDefault } from "../settings/registry.ts"
import { lockDataFolder } from "./lock.ts"
import { pgliteStream } from "./pglite-bridge.ts"
import { Signals } from "./Signals.ts"
import { splitStatements } from "./statements.ts"

export { splitStatements }

const migrationsDir = fileURLToPath(new URL("./migrations/", import.meta.url))

/**
 * The migrations of a folder, read when the storage layer is built (not when this module
 * is imported). Each file runs in one transaction (PgMigrator's), statement by statement.
 */
export const loadMigrations = (dir: string = migrationsDir): Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> => {
  const record: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {}
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const text = readFileSync(join(dir, file), "utf8")
    record[file.replace(/\.sql$/, "")] = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (const statement of splitStatements(text)) yield* sql.unsafe(statement)
    })
  }
  return record
}

/** What opening the database did: the migrations this layer applied, in order (empty when up to date). */
export class Migrations extends Context.Service<Migrations, {
  readonly applied: ReadonlyArray<{ readonly id: number; readonly name: string }>
}>()("inbox/Migrations") {}

/**
 * A database that a newer version has migrated may hold tables and rules this version does
 * not know: it is refused at start, with a message that says so, instead of served wrongly.
 */
const refuseNewer = (known: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const latest = (yield* sql<{ id: number; name: string }>`SELECT migration_id AS id, name FROM inbox_migrations ORDER BY migration_id DESC LIMIT 1`)[0]
    const ours = Math.max(0, ...known.map((k) => Number.parseInt(k, 10)))
    if (latest !== undefined && latest.id > ours) {
      return yield* Effect.die(new Error(
        `the database was migrated by a newer version (migration ${String(latest.id).padStart(4, "0")}_${latest.name}; this version knows up to ${String(ours).padStart(4, "0")}): run that version or a newer one`
      ))
    }
  })

const migrate = Layer.effect(
  Migrations,
  Effect.suspend(() => {
    const migrations = loadMigrations()
    return PgMigrator.run({ loader: PgMigrator.fromRecord(migrations), table: "inbox_migrations" }).pipe(
      Effect.tap(() => refuseNewer(Object.keys(migrations)))
    )
  }).pipe(
    Effect.map((applied) => Migrations.of({ applied: applied.map(([id, name]) => ({ id, name })) }))
  )
).pipe(Layer.provide(NodeServices.layer))

/**
 * effect/sql's compiler keeps each compiled statement in a WeakMap keyed by the statement
 * object. The engine makes its statements afresh for each execution, so the cache is never
 * hit, but an entry keeps its value (the statement's text and parameters: a delivery's
 * bodies, say) through the young generation's next collection, so a delivery's scavenges
 * promoted more bytes with it (bench/PROFILE.md, "What a delivery's scavenges keep"). The
 * compiler's two caches
 * (with and without name transforms) are replaced by ones that keep nothing; a compiler of
 * another shape is left as it is (test/database.test.ts notices).
 */
const keepsNothing = { get: () => undefined, set() { return this }, has: () => false, delete: () => false }
export const STATEMENT_CACHES = ["statementCache", "statementCacheNoTransform"] as const

/** The compiler behind `sql`, as its statements carry it. */
export const compilerOf = (sql: SqlClient.SqlClient): Record<string, unknown> | undefined =>
  (sql`SELECT 1` as unknown as { readonly compiler?: Record<string, unknown> }).compiler

const uncachedStatements = Layer.effectDiscard(Effect.gen(function*() {
  const compiler = compilerOf(yield* SqlClient.SqlClient)
  if (compiler === undefined) return
  for (const cache of STATEMENT_CACHES) if (compiler[cache] instanceof WeakMap) compiler[cache] = keepsNothing
}))

const withMigrations = <E, R>(client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E, R>) =>
  migrate.pipe(Layer.provideMerge(uncachedStatements.pipe(Layer.provideMerge(client))), Layer.orDie)

/**
 * The most connections this process's pool opens, for `/metrics` beside the connections in
 * use (operating/metrics.ts reads those from pg_stat_activity by the application name below).
 */
export const poolMaxConnections = Metric.gauge("inbox_db_pool_max_connections", {
  description: "Most connections this process's database pool opens"
})

const notePoolMax = (n: number) => Layer.effectDiscard(Metric.update(poolMaxConnections, n))

/** Extensions the migrations create (search folds accents with unaccent). */
export const PGLITE_EXTENSIONS = { unaccent }

/**
 * The server settings the embedded database starts with, on top of PGlite's own. Its
 * shared buffers (128 MB by the data folder's postgresql.conf) are zeroed when it starts,
 * so all of them are resident from the first second: most of an idle embedded server's
 * memory (BENCHMARKS.md, "Memory"). The default, 32 MB (INBOX_EMBEDDED_SHARED_BUFFERS),
 * holds the hot pages of a mailbox; a page beyond them is read again from the data folder
 * through the system's file cache. wal_buffers keeps the 4 MB it derived from the old size,
 * so a large transaction writes its WAL as before. Given as start parameters, so the data
 * folder's own configuration is untouched.
 */
export const pgliteStartParams = (sharedBuffers: string = settingDefault("INBOX_EMBEDDED_SHARED_BUFFERS")): Array<string> => [
  ...PGlite.defaultStartParams,
  "-c",
  `shared_buffers=${sharedBuffers}`,
  "-c",
  "wal_buffers=4MB"
]

/** How every embedded database is opened: the server, the embedding API, backup and restore. */
export const pgliteOptions = (sharedBuffers?: string) => ({ extensions: PGLITE_EXTENSIONS, startParams: pgliteStartParams(sharedBuffers) })

/** A size PostgreSQL reads for shared_buffers: a number of kB, MB or GB. */
const SIZE = /^\d+(kB|MB|GB)$/

export type PgliteSource = ({ readonly dataDir: string } | { readonly loadDataDir: Blob }) & {
  /** shared_buffers (default INBOX_EMBEDDED_SHARED_BUFFERS's) */
  readonly sharedBuffers?: string
}

/** Opens (or creates) a PGlite database; `memory://` for a throwaway one. A folder is locked first. */
export const openPglite = (source: PgliteSource) =>
  Effect.andThen(
    "dataDir" in source && !/^[a-z]+:\/\//i.test(source.dataDir) ? lockDataFolder(source.dataDir) : Effect.void,
    Effect.acquireRelease(
    Effect.promise(() =>
      "dataDir" in source
        ? PGlite.create({ dataDir: source.dataDir, ...pgliteOptions(source.sharedBuffers) })
        : PGlite.create({ loadDataDir: source.loadDataDir, ...pgliteOptions(source.sharedBuffers) })
    ),
    (db) => Effect.promise(() => db.close())
  ))

/**
 * One full garbage collection, once a new embedded database is created and migrated.
 * Creating one runs initdb in a WebAssembly instance of its own and copies the new folder
 * through memory: a few hundred MB that nothing references afterwards but that V8 frees
 * only at a full collection, which a server idle after its start runs only when V8's
 * memory reducer decides to, seconds or minutes later (BENCHMARKS.md, "Memory"). Node
 * offers no collection without `--expose-gc`: the flag is set for the
 * moment it takes to fetch `gc` from a fresh context (as test runners that look for leaks
 * do), unless the application was started with it.
 */
const collectGarbage = Effect.sync(() => {
  const exposed = (globalThis as { gc?: () => void }).gc
  if (exposed !== undefined) return exposed()
  setFlagsFromString("--expose-gc")
  try {
    ;(runInNewContext("gc") as () => void)()
  } finally {
    setFlagsFromString("--no-expose-gc")
  }
})

const collectAfterCreating = Layer.effectDiscard(Effect.gen(function*() {
  if ((yield* Migrations).applied.length > 0) yield* collectGarbage
}))

export const layerPgliteInstance = (db: PGlite) =>
  Signals.layerInProcess.pipe(
    Layer.provideMerge(collectAfterCreating.pipe(Layer.provideMerge(withMigrations(
      PgClient.layer({ stream: pgliteStream(db), username: "postgres", database: "postgres", maxConnections: 1 })
    )))),
    Layer.merge(notePoolMax(1))
  )

export const layerPglite = (source: PgliteSource) =>
  Layer.unwrap(Effect.map(openPglite(source), layerPgliteInstance))

export const layerPostgres = (options: {
  readonly url: string
  readonly searchPath?: string
  readonly maxConnections?: number
}) =>
  Signals.layerPostgres.pipe(Layer.provideMerge(withMigrations(PgClient.layer({
    url: Redacted.make(options.url),
    maxConnections: options.maxConnections ?? 10,
    // One name per process: /metrics counts this process's connections by it.
    applicationName: `inbox-${process.pid}`,
    ...(options.searchPath === undefined ? {} : { startupParameters: { search_path: options.searchPath } })
  }))), Layer.merge(notePoolMax(options.maxConnections ?? 10)))

/** INBOX_DATABASE_URL selects a PostgreSQL server; otherwise PGlite in INBOX_DATA_DIR (default ./.inbox). */
export const layerConfig = Layer.unwrap(Effect.gen(function*() {
  const url = yield* Config.option(Config.String("INBOX_DATABASE_URL"))
  if (Option.isSome(url)) return layerPostgres({ url: url.value })
  const dataDir = yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR")))
  const sharedBuffers = yield* Config.String("INBOX_EMBEDDED_SHARED_BUFFERS").pipe(
    Config.withDefault(settingDefault("INBOX_EMBEDDED_SHARED_BUFFERS"))
  )
  if (!SIZE.test(sharedBuffers)) {
    return yield* Effect.die(new Error(`INBOX_EMBEDDED_SHARED_BUFFERS must be a size such as 32MB or 1GB (kB, MB or GB), not ${JSON.stringify(sharedBuffers)}`))
  }
  return layerPglite({ dataDir, sharedBuffers })
}).pipe(Effect.catchTag("ConfigError", Effect.die)))
