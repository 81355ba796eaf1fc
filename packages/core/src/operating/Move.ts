/**
 * Moving an embedded installation to a PostgreSQL server (`inboxctl move-to-postgres`): every
 * row of the PGlite database in a data folder, and every referenced blob from its files to
 * the PostgreSQL blob store (or to S3 with a blob URL), then a check that the two sides hold
 * the same: row counts per table, and each blob's bytes read back from the new store hash to
 * its name.
 *
 * The copy is generic, so tables added by later migrations move without change here: the
 * tables come from the target's catalogue (migrated to this version first, like the source),
 * parents before children by their foreign keys; rows travel as JSON (`row_to_json` out,
 * `json_populate_recordset` in), which keeps every type exact (bytea as hex, arrays, jsonb,
 * timestamps); generated columns are left to the target to compute. Inserting messages
 * counts blob references through the target's triggers, so `blobs` goes last and takes the
 * source's counts as they were. Serial counters continue after the highest copied value.
 * The rows are written in one transaction on the target: a move that fails leaves it empty.
 * The target must be empty; the source is locked for the whole move and left unchanged.
 *
 * The secret key travels with the operator, not with the rows: webhook signing secrets and
 * header values, DKIM keys and two-step secrets are sealed under the embedded server's key (its data folder's
 * `secret.key` unless INBOX_SECRET_KEY was set), which PostgreSQL servers cannot read from
 * that folder. So the move refuses to start without INBOX_SECRET_KEY when the folder has a
 * key or a sealed secret (`secret_key_required`), or when a sealed secret does not open with
 * the key given (`secret_key_mismatch`): the servers then start with the very key the move
 * was checked with, and every secret opens there.
 */
import { Context, Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { BlobStore } from "../blobs/BlobStore.ts"
import * as BlobStores from "../blobs/stores.ts"
import * as Database from "../db/Database.ts"
import { AUTH_SEALED } from "../auth/Auth.ts"
import { DOMAIN_SEALED } from "../domains/Domains.ts"
import { unopenableWith } from "../shared/SecretRotation.ts"
import { WEBHOOK_SEALED } from "../webhooks/sealed.ts"
import { OperatingError, type Progress } from "./Backup.ts"

/** Tables that do not move as rows: the migrations' own record, and the bytes of the PostgreSQL blob store (blobs move through the stores). */
const NOT_COPIED = new Set(["inbox_migrations", "blob_data"])
/** Written after every other table, its counts replacing those the target's triggers made. */
const COUNTED = "blobs"
const BATCH = 500

export interface MoveSummary {
  readonly tables: Readonly<Record<string, number>>
  readonly blobs: number
}

const tablesOf = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const tables = (yield* sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`).map((r) => r.name).filter((t) => !NOT_COPIED.has(t))
    const edges = yield* sql<{ child: string; parent: string }>`SELECT c.relname AS child, p.relname AS parent
      FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
      WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace`
    // Parents first; a table's own references (a row pointing at another of its table) are
    // checked at the end of each statement, and a batch is one statement.
    const ordered: Array<string> = []
    const visit = (table: string, path: ReadonlySet<string>) => {
      if (ordered.includes(table) || path.has(table)) return
      for (const e of edges) if (e.child === table && e.parent !== table) visit(e.parent, new Set([...path, table]))
      ordered.push(table)
    }
    for (const t of tables.filter((t) => t !== COUNTED)) visit(t, new Set())
    return [...ordered.filter((t) => tables.includes(t)), ...(tables.includes(COUNTED) ? [COUNTED] : [])]
  })

const countOf = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}"`), (rows) => rows[0]?.n ?? 0)

const copyTable = (from: SqlClient.SqlClient, to: SqlClient.SqlClient, table: string) =>
  Effect.gen(function*() {
    const columns = (yield* to<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ${table} AND is_generated = 'NEVER' ORDER BY ordinal_position`)
      .map((c) => `"${c.name}"`).join(", ")
    const conflict = table === COUNTED ? " ON CONFLICT (sha256) DO UPDATE SET size = EXCLUDED.size, refs = EXCLUDED.refs" : ""
    const insert = `INSERT INTO "${table}" (${columns}) SELECT ${columns} FROM json_populate_recordset(NULL::"${table}", $1::json)${conflict}`
    let copied = 0
    // A cursor reads the source in batches without re-scanning it (PGlite is one session,
    // and this transaction is the only thing running on it).
    yield* from.withTransaction(Effect.gen(function*() {
      yield* from.unsafe(`DECLARE move_rows NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS r FROM "${table}" t`)
      for (;;) {
        const rows = yield* from.unsafe<{ r: string }>(`FETCH ${BATCH} FROM move_rows`)
        if (rows.length === 0) break
        yield* to.unsafe(insert, [`[${rows.map((row) => row.r).join(",")}]`])
        copied += rows.length
      }
      yield* from.unsafe("CLOSE move_rows")
    }))
    const serials = yield* to<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ${table} AND column_default LIKE 'nextval(%'`
    for (const { name } of serials) {
      yield* to.unsafe(`SELECT setval(pg_get_serial_sequence('"${table}"', '${name}'), COALESCE(max("${name}"), 1), max("${name}") IS NOT NULL) FROM "${table}"`)
    }
    return copied
  })

/** The folder's sealed secrets open with `secretKey`, and there is one when they need it (module comment). */
const checkSecretKey = (from: SqlClient.SqlClient, dataDir: string, secretKey: string | undefined) =>
  Effect.gen(function*() {
    const keyFile = join(dataDir, "secret.key")
    const { sealed, unopenable } = yield* unopenableWith(secretKey ?? "", [...DOMAIN_SEALED, ...WEBHOOK_SEALED, ...AUTH_SEALED]).pipe(Effect.provideService(SqlClient.SqlClient, from))
    if (secretKey === undefined || secretKey === "") {
      if (sealed === 0 && !existsSync(keyFile)) return
      return yield* new OperatingError({
        code: "secret_key_required",
        message: `the sealed secrets of ${dataDir} (${sealed}: webhook secrets and header values, DKIM keys, two-step secrets) need their key on the PostgreSQL servers, which cannot read ${keyFile}. ` +
          `Run the move with INBOX_SECRET_KEY set to the key the embedded server used (INBOX_SECRET_KEY="$(cat ${keyFile})" unless you set one for it), ` +
          "and start every server with the same INBOX_SECRET_KEY."
      })
    }
    if (unopenable.length > 0) {
      return yield* new OperatingError({
        code: "secret_key_mismatch",
        message: `${unopenable.length} of the ${sealed} sealed secrets of ${dataDir} do not open with INBOX_SECRET_KEY ` +
          `(${unopenable.slice(0, 3).map((u) => `${u.purpose} of ${u.owner}`).join(", ")}): set it to the key the embedded server used (${keyFile} unless you set one for it).`
      })
    }
  })

const sha256OfStream = (stream: Stream.Stream<Uint8Array>) =>
  Stream.runFold(stream, () => createHash("sha256"), (hash, chunk) => hash.update(chunk)).pipe(Effect.map((hash) => hash.digest("hex")))

/** Copies the installation in `dataDir` to the (empty) PostgreSQL database at `databaseUrl`. */
export const moveToPostgres = Effect.fn("Operating.moveToPostgres")(function*(options: {
  readonly dataDir: string
  readonly databaseUrl: string
  readonly blobUrl?: string
  /** INBOX_SECRET_KEY: the key the folder's secrets are sealed with, which the new servers will use. */
  readonly secretKey: string | undefined
  readonly progress: Progress
}) {
  const { dataDir, progress } = options
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    return yield* new OperatingError({ code: "no_database", message: `${dataDir} holds no embedded database.` })
  }
  // Both sides are opened by the storage layers, so both are migrated to this version first.
  const source = yield* Layer.build(Database.layerPglite({ dataDir }))
  const from = Context.get(source, SqlClient.SqlClient)
  // Before the target is touched: a move refused for its key changes nothing anywhere.
  yield* checkSecretKey(from, dataDir, options.secretKey)
  const target = yield* Layer.build(Database.layerPostgres({ url: options.databaseUrl, maxConnections: 2 }))
  const to = Context.get(target, SqlClient.SqlClient)
  const sourceBlobs = Context.get(yield* Layer.build(BlobStores.layerFiles(dataDir)), BlobStore)
  const targetBlobs = Context.get(
    yield* Layer.build(options.blobUrl === undefined ? BlobStores.layerPostgres.pipe(Layer.provide(Layer.succeedContext(target))) : BlobStores.layerS3(options.blobUrl)),
    BlobStore
  )

  const tables = yield* tablesOf(to)
  const used = yield* Effect.filter(tables, (t) => Effect.map(countOf(to, t), (n) => n > 0))
  if (used.length > 0) {
    return yield* new OperatingError({ code: "target_not_empty", message: `the PostgreSQL database already holds data (${used.slice(0, 5).join(", ")}); move into an empty database.` })
  }

  const shas = (yield* from<{ sha256: string }>`SELECT sha256 FROM blobs WHERE refs > 0 ORDER BY sha256`).map((r) => r.sha256)
  yield* progress(`move: ${tables.length} tables, ${shas.length} blobs`)
  // Bytes first: a row that references a blob is never committed before the blob is there.
  let moved = 0
  for (const sha of shas) {
    const chunks = yield* Stream.runCollect(sourceBlobs.get(sha))
    yield* targetBlobs.put(sha, Buffer.concat(chunks))
    moved++
    if (moved % 500 === 0) yield* progress(`move: ${moved} of ${shas.length} blobs copied`)
  }
  // Triggers off while copying: rows kept by triggers (search vectors, metric counters) are
  // copied as they are, so firing the triggers again would write them twice.
  yield* to.withTransaction(Effect.andThen(to.unsafe("SET LOCAL session_replication_role = replica"), Effect.forEach(tables, (table) =>
    Effect.tap(copyTable(from, to, table), (n) => progress(`move: ${table}: ${n} rows`)), { discard: true })))

  // The check: the same rows on both sides, and every blob's bytes whole in the new store.
  const counts: Record<string, number> = {}
  const differ: Array<string> = []
  for (const table of tables) {
    const [a, b] = [yield* countOf(from, table), yield* countOf(to, table)]
    counts[table] = b
    if (a !== b) differ.push(`${table} (${a} here, ${b} there)`)
  }
  let checked = 0
  for (const sha of shas) {
    if ((yield* sha256OfStream(targetBlobs.get(sha))) !== sha) differ.push(`blob ${sha}`)
    checked++
    if (checked % 500 === 0) yield* progress(`move: ${checked} of ${shas.length} blobs verified`)
  }
  if (differ.length > 0) {
    return yield* new OperatingError({ code: "move_mismatch", message: `the copy differs from the source: ${differ.slice(0, 5).join(", ")}` })
  }
  return { tables: counts, blobs: shas.length } satisfies MoveSummary
}, Effect.scoped, Effect.catchTag("SqlError", (e) => Effect.die(e)))
