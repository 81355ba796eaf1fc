/**
 * The operator's day-two commands over an embedded installation: `backup FILE`, `restore
 * FILE` (INBOX_DATA_DIR and its blobs, as one tar file) and `move-to-postgres` (INBOX_DATA_DIR
 * to the PostgreSQL server of --database-url, blobs to --blob-url when given, checked against
 * INBOX_SECRET_KEY). The work is core's (operating/); here are the settings, progress on
 * stderr, and the closing advice.
 */
import { Backup, type DataFolderInUse, Engine, Move, settingDefault } from "@inbox/core"
import { Config, Effect, Option } from "effect"
import { callerPath, inServer, writeErr } from "./ambient.ts"
import { print } from "./output.ts"
import { CliError, storageInUse } from "./runtime.ts"

const progress = (line: string) => Effect.sync(() => writeErr(`${line}\n`))

const dataDir = Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR")))
const databaseUrl = Config.option(Config.String("INBOX_DATABASE_URL"))
const blobUrl = Config.option(Config.String("INBOX_BLOB_URL"))
const secretKey = Config.option(Config.String("INBOX_SECRET_KEY"))

const asCli = <A, R>(effect: Effect.Effect<A, Backup.OperatingError | DataFolderInUse, R>) =>
  effect.pipe(
    Effect.catchTag("OperatingError", (e) => Effect.fail(new CliError({ code: e.code, message: e.message }))),
    Effect.catchTag("DataFolderInUse", (e) => Effect.fail(storageInUse(e)))
  )

/** Backup and restore work on the embedded database; a PostgreSQL server has its own tools. */
const embeddedOnly = (command: string) =>
  Effect.gen(function*() {
    if (Option.isSome(yield* databaseUrl)) {
      return yield* new CliError({
        code: "not_embedded",
        message: `${command} works on the embedded database; with PostgreSQL use pg_dump / pg_restore and your blob store's own backup (docs/operating.md).`
      })
    }
    return yield* dataDir
  }).pipe(Effect.catchTag("ConfigError", Effect.die))

export const backupCommand = (file: string) =>
  Effect.gen(function*() {
    const dir = yield* embeddedOnly("backup")
    const server = inServer()
    // Inside the running server that holds the folder: through its own database connection.
    const manifest = server === undefined
      ? yield* asCli(Backup.backup({ dataDir: dir, file, progress }))
      : yield* asCli(Engine.use((engine) => engine.backup({ dataDir: callerPath(dir), file: callerPath(file), progress })).pipe(Effect.provide(server.services)))
    const rows = Object.values(manifest.tables).reduce((a, b) => a + b, 0)
    yield* print(`backed up ${dir} to ${file}: ${rows} rows, ${manifest.blobs} blobs`)
  })

export const restoreCommand = (file: string) =>
  Effect.gen(function*() {
    const dir = yield* embeddedOnly("restore")
    const manifest = yield* asCli(Backup.restore({ dataDir: dir, file, progress }))
    const rows = Object.values(manifest.tables).reduce((a, b) => a + b, 0)
    yield* print(`restored ${file} (made ${manifest.created_at}) into ${dir}: ${rows} rows, ${manifest.blobs} blobs`)
  })

const redact = (url: string) => {
  const parsed = URL.parse(url)
  if (parsed === null) return url
  if (parsed.password !== "") parsed.password = "***"
  return parsed.toString()
}

export const moveCommand = Effect.gen(function*() {
  const target = yield* databaseUrl
  if (Option.isNone(target)) {
    return yield* new CliError({ code: "validation_error", message: "move-to-postgres needs --database-url postgres://... (the target server)." })
  }
  const dir = yield* dataDir
  const blobs = yield* blobUrl
  const key = Option.getOrUndefined(yield* secretKey)
  const summary = yield* asCli(Move.moveToPostgres({
    dataDir: dir,
    databaseUrl: target.value,
    ...(Option.isSome(blobs) ? { blobUrl: blobs.value } : {}),
    secretKey: key,
    progress
  }))
  const rows = Object.values(summary.tables).reduce((a, b) => a + b, 0)
  yield* print([
    `moved ${dir}: ${rows} rows in ${Object.keys(summary.tables).length} tables, ${summary.blobs} blobs; counts and checksums match.`,
    "Next: start every server with",
    `  INBOX_DATABASE_URL=${redact(target.value)}`,
    ...(Option.isSome(blobs) ? [`  INBOX_BLOB_URL=${blobs.value}`] : ["  (blobs are in the database; set INBOX_BLOB_URL only after moving them to S3)"]),
    ...(key === undefined ? [] : ["  INBOX_SECRET_KEY set to the same key as for this move (the sealed webhook, DKIM and two-step secrets open with it)"]),
    `and without INBOX_DATA_DIR. ${dir} is left as it was: keep it until the new setup has run for a while.`
  ].join("\n"))
}).pipe(Effect.catchTag("ConfigError", Effect.die))
