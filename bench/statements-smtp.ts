/**
 * `node --import tsx bench/statements-smtp.ts [seconds] [size]`: what PostgreSQL is asked to do
 * per stored message under the SMTP load of `pnpm bench smtp` (8 connections; size 0, 1 or 2:
 * the 5 KB, 32 KB or 280 KB message), for our server and then for the storing reference
 * (bench/reference-smtp.ts, copying the delivery ours stored last) on the same database.
 * Counts, not timings, so a busy machine does not move them: statements (pg_stat_statements,
 * top level and those run by triggers and functions), transactions, rows read and written and
 * index scans (pg_stat_database, pg_stat_user_tables). Execution time is printed as each
 * statement's share of the total only.
 *
 * BENCH_STATEMENTS_DB names the database (dropped and created); BENCH_SERVER_CWD runs the
 * server of another checkout, to compare code with code; BENCH_SMTP_PORT_OFFSET moves the ports.
 */
import pg from "pg"
import { spawnServer, stop } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { api, freshDatabase, load, openDns, publishSender, startOursSmtp, SMTP_PORT, STORING_PORT } from "./smtp.ts"
import { templateTables } from "./delivery-copy.ts"

const seconds = Number(process.argv[2] ?? "10")
const raw = benchMessages[Number(process.argv[3] ?? "0")]![1]
const name = process.env["BENCH_STATEMENTS_DB"] ?? "inbox_bench_statements_smtp"
// Past the server's first maintenance pass (db/Maintenance.ts: MAINTENANCE_INTERVAL after the
// start), which analyzes the tables where autovacuum is off: before it, the plans cached
// on the empty tables' statistics are counted, not the steady state.
const warmup = Number(process.env["BENCH_WARMUP_SECONDS"] ?? "12")

interface Snapshot {
  readonly messages: number
  readonly db: Record<string, number>
  readonly idx: number
  readonly seq: number
  readonly tables: Map<string, ReadonlyArray<number>>
}

const snapshot = async (client: pg.Client): Promise<Snapshot> => {
  await client.query("SELECT pg_stat_clear_snapshot()")
  const messages = Number((await client.query("SELECT count(*) AS n FROM messages")).rows[0].n)
  const db = (await client.query(`SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted, blks_hit + blks_read AS blocks
    FROM pg_stat_database WHERE datname = current_database()`)).rows[0] as Record<string, string>
  const t = (await client.query("SELECT coalesce(sum(idx_scan), 0) AS idx, coalesce(sum(seq_scan), 0) AS seq FROM pg_stat_user_tables")).rows[0]
  const tables = new Map((await client.query(`SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch
    FROM pg_stat_user_tables`)).rows.map((r) => [r.relname as string, [Number(r.seq_scan), Number(r.seq_tup_read), Number(r.idx_scan), Number(r.idx_tup_fetch)]] as const))
  return { messages, db: Object.fromEntries(Object.entries(db).map(([k, v]) => [k, Number(v)])), idx: Number(t.idx), seq: Number(t.seq), tables }
}

/** The kind of a statement: its text without literals' variety (a batch's VALUES lists differ by size). */
const kindOf = (query: string) =>
  query.replace(/\s+/g, " ").replace(/\(\$\d+(, ?\$\d+)*\)(, ?\(\$\d+(, ?\$\d+)*\))*/g, "(...)").replace(/\$\d+/g, "$").slice(0, 150)

const window = async (label: string, client: pg.Client, run: () => Promise<unknown>, after: () => Promise<void>) => {
  await client.query("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)")
  const a = await snapshot(client)
  await run()
  await after()
  // Backends flush their counters when they end: `after` stopped the server.
  await new Promise((r) => setTimeout(r, 1500))
  const b = await snapshot(client)
  const n = b.messages - a.messages
  const per = (x: number) => (x / n).toFixed(2)
  console.log(`\n${label}: ${n} messages stored`)
  for (const k of Object.keys(a.db)) console.log(`  ${k} per message: ${per(b.db[k]! - a.db[k]!)}`)
  console.log(`  index scans per message: ${per(b.idx - a.idx)}, sequential scans: ${per(b.seq - a.seq)}`)
  console.log("  per message, by table: sequential scans, rows they read, index scans, rows they fetched")
  for (const [table, after] of b.tables) {
    const before = a.tables.get(table) ?? [0, 0, 0, 0]
    const d = after.map((x, i) => x - before[i]!)
    if (d.some((x) => x / n >= 0.05)) console.log(`    ${table.padEnd(24)} ${d.map((x) => per(x).padStart(9)).join(" ")}`)
  }
  const rows = (await client.query(`SELECT query, toplevel, calls, rows, total_exec_time, shared_blks_hit + shared_blks_read AS blocks FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_clear_snapshot%' AND query NOT LIKE '%FROM pg_stat_database WHERE datname = current_database()%' AND query NOT LIKE '%seq_tup_read%' AND query NOT LIKE '%sum(idx_scan)%' AND query NOT LIKE '%count(*) AS n FROM messages%'`)).rows as Array<{ query: string; toplevel: boolean; calls: string; rows: string; total_exec_time: number; blocks: string }>
  const kinds = new Map<string, { top: boolean; calls: number; rows: number; time: number; blocks: number }>()
  for (const r of rows) {
    const key = `${r.toplevel ? "top " : "nested "}${kindOf(r.query)}`
    const k = kinds.get(key) ?? { top: r.toplevel, calls: 0, rows: 0, time: 0, blocks: 0 }
    k.blocks += Number(r.blocks)
    k.calls += Number(r.calls)
    k.rows += Number(r.rows)
    k.time += r.total_exec_time
    kinds.set(key, k)
  }
  const all = [...kinds.values()].filter((k) => k.top).reduce((s, k) => s + k.time, 0)
  const top = [...kinds.values()].filter((k) => k.top).reduce((s, k) => s + k.calls, 0)
  const nested = [...kinds.values()].filter((k) => !k.top).reduce((s, k) => s + k.calls, 0)
  console.log(`  statements per message: top level ${per(top)}, run by triggers and functions ${per(nested)}`)
  console.log("  calls/msg  rows/msg blocks/msg time share  statement (blocks: buffers hit or read, a nested statement's also counted in its caller's)")
  for (const [key, k] of [...kinds.entries()].sort((x, y) => y[1].calls - x[1].calls)) {
    if (k.calls / n < 0.001 && k.blocks / n < 1) continue
    console.log(`  ${per(k.calls).padStart(9)} ${per(k.rows).padStart(9)} ${per(k.blocks).padStart(10)} ${k.top ? `${(k.time / all * 100).toFixed(1)}%`.padStart(10) : "".padStart(10)}  ${key}`)
  }
}

const main = async () => {
  const dns = await openDns()
  const privateKey = publishSender(dns.zone)
  const url = await freshDatabase(name)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
  // Statements run by triggers and functions too; set on this database only, for sessions opened after.
  await client.query(`ALTER DATABASE ${name} SET pg_stat_statements.track = 'all'`)
  // BENCH_LOG_STATEMENTS=1: every statement of this database in the server's log, to see what pg_stat_statements leaves out (transaction control).
  if (process.env["BENCH_LOG_STATEMENTS"] === "1") await client.query(`ALTER DATABASE ${name} SET log_statement = 'all'`)
  // BENCH_AUTO_EXPLAIN=MS: the plans (with buffers) of statements slower than MS ms in the server's log.
  const explain = process.env["BENCH_AUTO_EXPLAIN"]
  if (explain !== undefined) {
    for (const set of ["session_preload_libraries = 'auto_explain'", `auto_explain.log_min_duration = ${Number(explain)}`, "auto_explain.log_analyze = on", "auto_explain.log_buffers = on"]) {
      await client.query(`ALTER DATABASE ${name} SET ${set}`)
    }
  }
  try {
    const ours = await startOursSmtp({ INBOX_DATABASE_URL: url }, dns.zone.server, [], process.env["BENCH_SERVER_CWD"])
    const inbox = await api("POST", "/v0/inboxes", ours.keys[0]!, {}) as { email: string }
    try {
      await load(SMTP_PORT, inbox.email, raw, privateKey, warmup)
      await window("ours", client, () => load(SMTP_PORT, inbox.email, raw, privateKey, seconds, ours.child.pid), () => stop(ours.child))
    } finally {
      // stop() waits for an exit that already happened when the window stopped it.
      if (ours.child.exitCode === null && ours.child.signalCode === null) await stop(ours.child)
    }
    await client.query(templateTables("ref"))
    const storing = await spawnServer("bench/reference-smtp.ts", { REF_SMTP_PORT: String(STORING_PORT), REF_DNS_SERVER: dns.zone.server, REF_DATABASE_URL: url }, [], (line) =>
      line === "REFERENCE_READY" ? true : undefined)
    try {
      await load(STORING_PORT, inbox.email, raw, privateKey, 2)
      await window("storing reference", client, () => load(STORING_PORT, inbox.email, raw, privateKey, seconds, storing.child.pid), () => stop(storing.child))
    } finally {
      if (storing.child.exitCode === null && storing.child.signalCode === null) await stop(storing.child)
    }
  } finally {
    await client.end()
    await dns.close()
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
