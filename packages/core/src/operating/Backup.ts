/**
 * Backup and restore of an embedded installation: the PGlite database and the blob files of
 * one data folder, as one tar file (`inboxctl backup FILE`, `inboxctl restore FILE`).
 *
 * A backup holds the folder's lock (lock.ts) for its whole run, so no server writes while it
 * copies: it opens the database once (PGlite replays its log if the last process died),
 * checkpoints and closes it, then copies the closed database's files as they are, a cold
 * copy PostgreSQL itself can start from. This streams: nothing is held in memory but one
 * chunk, however large the folder. The archive holds `pgdata/...` (the database files),
 * `blobs/<sha256>` (raw mail and attachments) and, last, `inbox-backup.json`: the format,
 * the migrations applied, row counts, and the sha256 of every database file.
 *
 * A restore reads the manifest first, refuses an archive made by a newer version (a
 * migration this one does not know) or a folder that already holds data, then writes every
 * file, checking each against its sha256 (a blob's name is its hash), and finally opens the
 * restored database and compares its row counts with the manifest's.
 *
 * With PostgreSQL the database is backed up with its own tools (pg_dump) and the blobs with
 * the store's (docs/operating.md says how); these commands refuse INBOX_DATABASE_URL.
 */
import { PGlite } from "@electric-sql/pglite"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readSync, renameSync, statSync, writeSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { loadMigrations, pgliteOptions } from "../db/Database.ts"
import { now } from "../shared/time.ts"
import { LOCK_FILE, lockDataFolder } from "../db/lock.ts"
import { createTar, readTar } from "./tar.ts"

export const MANIFEST = "inbox-backup.json"
const FORMAT = "inbox-backup"
const BLOBS = "blobs"

/** A backup or restore the operator must correct (the message says how). */
export class OperatingError extends Schema.TaggedError<OperatingError>()("OperatingError", {
  code: Schema.String,
  message: Schema.String
}) {}

export const Manifest = Schema.Struct({
  format: Schema.Literal(FORMAT),
  version: Schema.Literal(1),
  created_at: Schema.String,
  migrations: Schema.Array(Schema.String),
  tables: Schema.Record(Schema.String, Schema.Number),
  files: Schema.Record(Schema.String, Schema.String),
  /** The database's folders, empty ones included (PostgreSQL needs them to start). */
  folders: Schema.Array(Schema.String),
  blobs: Schema.Number
})
export type Manifest = typeof Manifest.Type

/** Progress lines (`backup: 1200 of 5000 blobs`), for the operator's terminal. */
export type Progress = (line: string) => Effect.Effect<void>

/** The files (or folders) under `root`, as paths relative to it, skipping the names in `skip` at the top. */
const filesUnder = (root: string, skip: ReadonlySet<string> = new Set(), folders = false): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (dir === root && skip.has(entry.name)) continue
      if (entry.isDirectory()) {
        if (folders) out.push(relative(root, path))
        walk(path)
      } else if (entry.isFile() && !folders) out.push(relative(root, path))
    }
  }
  if (existsSync(root)) walk(root)
  return out.sort()
}

function* fileChunks(path: string, chunkBytes = 1024 * 1024): Iterable<Uint8Array> {
  const fd = openSync(path, "r")
  try {
    const size = statSync(path).size
    for (let at = 0; at < size; at += chunkBytes) {
      const chunk = Buffer.alloc(Math.min(chunkBytes, size - at))
      readSyncFully(fd, chunk, at)
      yield chunk
    }
  } finally {
    closeSync(fd)
  }
}

const readSyncFully = (fd: number, chunk: Buffer, position: number) => {
  let read = 0
  while (read < chunk.length) {
    const n = readSync(fd, chunk, read, chunk.length - read, position + read)
    if (n === 0) throw new Error("file ended early")
    read += n
  }
}

/** Runs one query for the backup: on a PGlite it opened, or on the running server's SqlClient. */
type Query = <Row>(text: string) => Effect.Effect<ReadonlyArray<Row>>

const onPglite = (db: PGlite): Query => <Row>(text: string) => Effect.promise(async () => (await db.query<Row>(text)).rows)

const onSql = (sql: SqlClient.SqlClient): Query => <Row>(text: string) => Effect.orDie(sql.unsafe<Row & object>(text)) as Effect.Effect<ReadonlyArray<Row>>

/** Row counts of every table (but the migrations' own), for the manifest and its check. */
const countRows = (query: Query) =>
  Effect.gen(function*() {
    const tables = yield* query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'inbox_migrations' ORDER BY 1"
    )
    const counts: Record<string, number> = {}
    for (const { name } of tables) counts[name] = (yield* query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}"`))[0]?.n ?? 0
    return counts
  })

const appliedMigrations = (query: Query) =>
  Effect.map(
    query<{ migration_id: number; name: string }>("SELECT migration_id, name FROM inbox_migrations ORDER BY migration_id"),
    (rows) => rows.map((r) => `${String(r.migration_id).padStart(4, "0")}_${r.name}`)
  )

const isDatabaseFolder = (dir: string) => existsSync(join(dir, "PG_VERSION"))

export interface BackupOptions {
  readonly dataDir: string
  readonly file: string
  readonly progress: Progress
}

const checkBackup = (options: BackupOptions) =>
  isDatabaseFolder(options.dataDir)
    ? Effect.succeed(options)
    : Effect.fail(new OperatingError({ code: "no_database", message: `${options.dataDir} holds no embedded database.` }))

/** Writes `dataDir`'s database and blobs to the tar file `file`; answers the manifest. */
export const backup = Effect.fn("Operating.backup")(function*(options: BackupOptions) {
  const { dataDir, file, progress } = yield* checkBackup(options)
  yield* lockDataFolder(dataDir)
  // Opened once so a database left by a crash is recovered, then closed: its files are
  // then a clean cold copy.
  const db = yield* Effect.promise(() => PGlite.create(dataDir, pgliteOptions()))
  const migrations = yield* appliedMigrations(onPglite(db))
  const tables = yield* countRows(onPglite(db))
  yield* Effect.promise(() => db.exec("CHECKPOINT"))
  yield* Effect.promise(() => db.close())
  return yield* writeArchive({ dataDir, file, progress, migrations, tables })
}, Effect.scoped)

/**
 * The same backup of a data folder a running server holds, through that server's SqlClient
 * (inboxctl reaches it over the local channel). The embedded database is one session, so a
 * transaction on it holds the only connection: nothing else in the server runs a statement
 * until the copy ends. Inside it the rows are counted, a CHECKPOINT writes everything
 * committed to the files, and the files are copied while nothing changes them: the copy a
 * crash at that moment would leave, which PostgreSQL starts from. Requests wait meanwhile.
 */
export const backupRunning = Effect.fn("Operating.backupRunning")(function*(options: BackupOptions) {
  const { dataDir, file, progress } = yield* checkBackup(options)
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    const migrations = yield* appliedMigrations(onSql(sql))
    const tables = yield* countRows(onSql(sql))
    yield* onSql(sql)("CHECKPOINT")
    return yield* writeArchive({ dataDir, file, progress, migrations, tables })
  })).pipe(Effect.catchTag("SqlError", Effect.die))
})

const writeArchive = (options: {
  readonly dataDir: string
  readonly file: string
  readonly progress: Progress
  readonly migrations: ReadonlyArray<string>
  readonly tables: Record<string, number>
}) => Effect.gen(function*() {
  const { dataDir, file, progress, migrations, tables } = options
  const databaseFiles = filesUnder(dataDir, new Set([BLOBS, LOCK_FILE]))
  const blobFiles = filesUnder(join(dataDir, BLOBS)).filter((p) => !p.split("/").at(-1)?.startsWith("."))
  const at = yield* now
  const tar = createTar(file, at)
  const files: Record<string, string> = {}
  yield* progress(`backup: ${databaseFiles.length} database files, ${blobFiles.length} blobs`)
  for (const path of databaseFiles) {
    const full = join(dataDir, path)
    const hash = createHash("sha256")
    tar.add(`pgdata/${path}`, statSync(full).size, (function*() {
      for (const chunk of fileChunks(full)) {
        hash.update(chunk)
        yield chunk
      }
    })())
    files[`pgdata/${path}`] = hash.digest("hex")
  }
  yield* progress("backup: database copied")
  let done = 0
  for (const path of blobFiles) {
    const full = join(dataDir, BLOBS, path)
    tar.add(`${BLOBS}/${path.split("/").at(-1)}`, statSync(full).size, fileChunks(full))
    done++
    if (done % 1000 === 0) yield* progress(`backup: ${done} of ${blobFiles.length} blobs`)
  }
  const manifest: Manifest = {
    format: FORMAT,
    version: 1,
    created_at: at.toISOString(),
    migrations,
    tables,
    files,
    folders: filesUnder(dataDir, new Set([BLOBS]), true),
    blobs: blobFiles.length
  }
  const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)
  tar.add(MANIFEST, body.length, [body])
  tar.close()
  yield* progress(`backup: done, ${blobFiles.length} blobs, ${Object.values(tables).reduce((a, b) => a + b, 0)} rows`)
  return manifest
})

const readManifest = (file: string) =>
  Effect.gen(function*() {
    let text: string | undefined
    const read = Effect.try(() =>
      readTar(file, (entry) => {
        if (entry.name === MANIFEST) text = Buffer.concat([...entry.chunks()]).toString("utf8")
      })
    )
    yield* read.pipe(Effect.mapError((e) => new OperatingError({ code: "backup_unreadable", message: `${file}: ${String(e.cause)}` })))
    if (text === undefined) return yield* new OperatingError({ code: "backup_unreadable", message: `${file} has no ${MANIFEST}: not an inbox backup.` })
    return yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Manifest))(text).pipe(
      Effect.mapError(() => new OperatingError({ code: "backup_unreadable", message: `${file}: ${MANIFEST} is not of a format this version reads.` }))
    )
  })

/** Writes `bytes` to `path` through a temporary file, synced, then renamed into place. */
const writeDurably = (path: string, chunks: Iterable<Uint8Array>) => {
  mkdirSync(dirname(path), { recursive: true })
  const temp = `${path}.restore-tmp`
  const fd = openSync(temp, "w")
  const hash = createHash("sha256")
  try {
    for (const chunk of chunks) {
      hash.update(chunk)
      writeSync(fd, chunk)
    }
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temp, path)
  return hash.digest("hex")
}

/** Restores the tar file `file` into `dataDir`, which must hold no database yet. */
export const restore = Effect.fn("Operating.restore")(function*(options: {
  readonly dataDir: string
  readonly file: string
  readonly progress: Progress
}) {
  const { dataDir, file, progress } = options
  const manifest = yield* readManifest(file)
  const known = new Set(Object.keys(loadMigrations()))
  const newer = manifest.migrations.filter((m) => !known.has(m))
  if (newer.length > 0) {
    return yield* new OperatingError({
      code: "backup_from_newer_version",
      message: `the backup was made by a newer version (migrations ${newer.join(", ")} are unknown here); restore it with that version.`
    })
  }
  if (isDatabaseFolder(dataDir) || filesUnder(dataDir, new Set([LOCK_FILE])).length > 0) {
    return yield* new OperatingError({ code: "data_folder_not_empty", message: `${dataDir} already holds data; restore into a new folder.` })
  }
  yield* lockDataFolder(dataDir)
  for (const folder of manifest.folders) mkdirSync(join(dataDir, folder), { recursive: true })
  let blobs = 0
  const problems: Array<string> = []
  yield* Effect.sync(() =>
    readTar(file, (entry) => {
      if (entry.name.startsWith("pgdata/")) {
        const hash = writeDurably(join(dataDir, entry.name.slice("pgdata/".length)), entry.chunks())
        if (manifest.files[entry.name] !== hash) problems.push(`${entry.name} does not match its checksum`)
      } else if (entry.name.startsWith(`${BLOBS}/`)) {
        const sha = entry.name.slice(BLOBS.length + 1)
        const hash = writeDurably(join(dataDir, BLOBS, sha.slice(0, 2), sha.slice(2, 4), sha), entry.chunks())
        if (hash !== sha) problems.push(`blob ${sha} does not match its checksum`)
        blobs++
      }
    })
  )
  const missing = Object.keys(manifest.files).filter((name) => !existsSync(join(dataDir, name.slice("pgdata/".length))))
  if (missing.length > 0) problems.push(`${missing.length} database files are missing from the archive`)
  if (blobs !== manifest.blobs) problems.push(`${blobs} blobs in the archive, ${manifest.blobs} in its manifest`)
  if (problems.length > 0) {
    return yield* new OperatingError({ code: "backup_corrupt", message: `the backup is damaged: ${problems.slice(0, 5).join("; ")}` })
  }
  yield* progress(`restore: ${Object.keys(manifest.files).length} database files, ${blobs} blobs written; checking the database`)
  const db = yield* Effect.promise(() => PGlite.create(dataDir, pgliteOptions()))
  const tables = yield* countRows(onPglite(db))
  yield* Effect.promise(() => db.close())
  const differ = Object.entries(manifest.tables).filter(([name, n]) => tables[name] !== n)
  if (differ.length > 0) {
    return yield* new OperatingError({ code: "backup_corrupt", message: `row counts differ from the backup's: ${differ.map(([n]) => n).join(", ")}` })
  }
  yield* progress(`restore: done, ${Object.values(tables).reduce((a, b) => a + b, 0)} rows and ${blobs} blobs`)
  return manifest
}, Effect.scoped)
