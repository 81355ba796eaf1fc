/**
 * `pnpm bench ceiling`: how many 5 KB deliveries a second PostgreSQL itself takes on this
 * machine, with no server of ours in the way, beside the bare ingest reference that issue
 * 7's goal is measured against. It bounds what any server that stores these rows can reach
 * here.
 *
 * Our server first stores a few deliveries of the 5 KB benchmark message (bench/parse.ts)
 * in a fresh database, so the rows are the real ones. Then pgbench (8 clients, prepared
 * statements, PostgreSQL's own C client) writes what one delivery writes, copied from a
 * stored one with new ids: its thread, its message (with its triggers: the search vector,
 * blob references, metric changes), its raw bytes and its `message.received` event, one
 * transaction per delivery or 16 deliveries per transaction (a group commit without any
 * of the reads a real delivery needs first), and once more with the search trigger off to
 * show what the search index costs. Rounds interleave the reference (bench/reference.ts:
 * node:http and simpleParser storing nothing, autocannon with 8 clients).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { adminSql } from "@inbox/testkit"
import { medianOf, run, startReference, stop } from "./http.ts"
import { freshDatabase, ingestLoad, startServer } from "./messaging.ts"
import { copyDelivery, templateTables } from "./delivery-copy.ts"
import { machine } from "./report.ts"

const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const PORT = Number(process.env["BENCH_CEILING_PORT"] ?? "29501")
const SECONDS = Number(process.env["BENCH_CEILING_SECONDS"] ?? "8")
const ROUNDS = Number(process.env["BENCH_CEILING_ROUNDS"] ?? "3")
const CLIENTS = 8
const BATCH = 16
const DATABASE = "inbox_bench_ceiling"

/**
 * One pgbench transaction: `k` deliveries, each row copied from the stored templates with
 * ids made from pgbench's random `n`, its client id and the row's number in the batch.
 */
const script = (k: number) => `\\set n random(1, 2000000000)
BEGIN;
${copyDelivery("ceiling", `:n || '_' || :client_id || '_' || g`, `md5(:n::text || '.' || :client_id || '.' || g) || md5(g || '.' || :client_id || '.' || :n::text)`, `generate_series(1, ${k}) AS g`)}
COMMIT;
`

const pgbench = async (url: string, file: string, k: number): Promise<number> => {
  const u = new URL(url)
  const { stdout } = await promisify(execFile)("pgbench", [
    "-h", u.hostname, "-p", u.port || "5432", "-U", decodeURIComponent(u.username || "postgres"),
    "-n", "-M", "prepared", "-c", String(CLIENTS), "-j", "2", "-T", String(SECONDS), "-f", file, u.pathname.slice(1)
  ], { env: { ...process.env, ...(u.password === "" ? {} : { PGPASSWORD: decodeURIComponent(u.password) }) } })
  const tps = /tps = ([\d.]+)/.exec(stdout)?.[1]
  if (tps === undefined) throw new Error(`pgbench said: ${stdout}`)
  return Math.round(Number(tps) * k)
}

export interface CeilingRound {
  readonly load: number
  readonly reference: number
  readonly one: number
  readonly batched: number
  readonly batchedWithoutSearch: number
}

export const benchCeiling = async (): Promise<ReadonlyArray<CeilingRound>> => {
  const url = await freshDatabase(DATABASE)
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-ceiling-"))
  const reference = await startReference(url, PORT + 1, [], { REF_INBOUND_SECRET: "bench-inbound-secret" })
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  try {
    // Real rows: a few seconds of the 5 KB ingest load through our server.
    const ours = await startServer({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "1" }, PORT)
    const load = await ingestLoad(`http://127.0.0.1:${PORT}`, ours.keys[0]!)
    await run(load, 2)
    await stop(ours.child)
    const referenceLoad = { ...load, url: String(load.url).replace(`:${PORT}/`, `:${PORT + 1}/`) }
    await pool.query(templateTables("ceiling"))
    const one = join(dir, "one.sql")
    const batched = join(dir, "batched.sql")
    writeFileSync(one, script(1))
    writeFileSync(batched, script(BATCH))
    await run(referenceLoad, 2)
    const rounds: Array<CeilingRound> = []
    for (let r = 0; r < ROUNDS; r++) {
      const load = loadavg()[0]!
      const ref = (await run(referenceLoad, SECONDS, reference.child)).rps
      const single = await pgbench(url, one, 1)
      const many = await pgbench(url, batched, BATCH)
      await pool.query("ALTER TABLE messages DISABLE TRIGGER messages_search")
      const bare = await pgbench(url, batched, BATCH)
      await pool.query("ALTER TABLE messages ENABLE TRIGGER messages_search")
      const round = { load, reference: ref, one: single, batched: many, batchedWithoutSearch: bare }
      console.error(`ceiling round ${r + 1}: reference ${ref}/s; PostgreSQL alone ${single}/s one a transaction, ${many}/s ${BATCH} a transaction, ${bare}/s without the search trigger; load ${load.toFixed(2)}`)
      rounds.push(round)
    }
    return rounds
  } finally {
    await pool.end()
    await stop(reference.child)
    rmSync(dir, { recursive: true, force: true })
    await adminSql(SERVER, `DROP DATABASE IF EXISTS ${DATABASE}`)
  }
}

const n = (x: number) => Math.round(x).toLocaleString("en-US")
const ratio = (a: number, b: number) => (a / b).toFixed(2)

export const ceilingSection = (rounds: ReadonlyArray<CeilingRound>): string => {
  const median = (f: (r: CeilingRound) => number) => medianOf(rounds.map(f))
  return [
    `Machine: ${machine()}; ${new Date().toISOString().slice(0, 10)}.`,
    "",
    `What PostgreSQL itself takes of inbound mail's writes here, with no server of ours (bench/ceiling.ts): pgbench, ${CLIENTS} clients, prepared statements, ${SECONDS} s per run, writes what one 5 KB delivery writes (its thread; its message, with the search, blob-reference and metric triggers; its raw bytes; its \`message.received\` event), copied from a delivery our server stored, one delivery a transaction or ${BATCH} (a group commit without any of the reads a real delivery makes first: the inbox, the lists, the locks, the related messages); then ${BATCH} a transaction with the search trigger off. Each round first runs the bare ingest reference (node:http and simpleParser storing nothing, autocannon, ${CLIENTS} clients, the same message) that issue 7's goal is measured against. Messages per second.`,
    "",
    "| round | load (1 min) | reference | PostgreSQL alone, 1 a transaction | 16 a transaction | 16, without the search trigger |",
    "|---|---|---:|---:|---:|---:|",
    ...rounds.map((r, i) =>
      `| ${i + 1} | ${r.load.toFixed(2)} | ${n(r.reference)} | ${n(r.one)} (${ratio(r.one, r.reference)}) | ${n(r.batched)} (${ratio(r.batched, r.reference)}) | ${n(r.batchedWithoutSearch)} (${ratio(r.batchedWithoutSearch, r.reference)}) |`),
    "",
    `Median: the reference ${n(median((r) => r.reference))}/s; PostgreSQL alone ${n(median((r) => r.one))}/s one a transaction, **${n(median((r) => r.batched))}/s ${BATCH} a transaction** (${ratio(median((r) => r.batched), median((r) => r.reference))} of the reference), ${n(median((r) => r.batchedWithoutSearch))}/s without the search trigger. In brackets: the ratio to the reference's round.`
  ].join("\n")
}
