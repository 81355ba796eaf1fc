/**
 * What the young generation's collections keep, per server, under the HTTP benchmark's GET
 * (`GET /v0/inboxes/:id` on PostgreSQL): a count the machine's load does not move, for the
 * tail latency that scavenges cause (bench/PROFILE.md, "The GET path's tail").
 *
 *   node --import tsx bench/survivors.ts [ours|reference|effect ...] [connections,...]
 *
 * Each server runs with `--trace-gc-nvp` (ours with `inboxctl serve`'s Node flags, the others
 * with the same young generation) and is driven for 8 s at 20 connections to warm up, then for
 * 6 s at each number of connections given (default 1 and 20). For each window it prints the
 * scavenges, their mean pause, the bytes each promoted to the old generation, and those bytes
 * per answered request. A request's objects that die before the next scavenge cost a
 * scavenge nothing; what survives is copied, and what survives twice is promoted, to be
 * marked by the next full collection.
 *
 * - `ours`: bench/server.ts, the real server;
 * - `reference`: bench/reference.ts (node:http and `pg`, the same statements);
 * - `effect`: bench/reference-effect.ts, Effect's own HTTP server and our database layer
 *   answering the route with the reference's inbox statement: the floor for a server built
 *   on Effect and effect/sql.
 *
 * All three read the same fresh database that our server set up (one tenant, its key, one
 * inbox). `BENCH_OURS_NODE_FLAGS` changes ours' flags, as in bench/http.ts.
 */
import { createInterface } from "node:readline"
import autocannon from "autocannon"
import { adminSql } from "@inbox/testkit"
import { type Flags, oneInbox, OURS_NODE_FLAGS, spawnServer, startOurs, stop } from "./http.ts"

const args = process.argv.slice(2)
const sides = args.filter((a) => /^[a-z]+$/.test(a))
const connections = (args.find((a) => /^[\d,]+$/.test(a)) ?? "1,20").split(",").map(Number)
const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const name = process.env["BENCH_DATABASE"] ?? "inbox_survivors"
const url = server.replace(/\/[^/]*$/, `/${name}`)
const port = Number(process.env["BENCH_PORT"] ?? "29161")
const WARMUP_S = 8
const WINDOW_S = 6

/** The young generation ours runs with, given to the others so that all scavenge alike. */
const semiSpace = OURS_NODE_FLAGS.filter((f) => f.startsWith("--max-semi-space-size"))

const start = async (side: string, flags: Flags) => {
  if (side === "ours") return startOurs({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "0" }, port, flags, undefined, "pipe")
  const script = side === "reference" ? "bench/reference.ts" : "bench/reference-effect.ts"
  const env = side === "reference" ? { REF_DATABASE_URL: url, REF_PORT: String(port) } : { INBOX_DATABASE_URL: url, INBOX_PORT: String(port) }
  return spawnServer(script, env, [...semiSpace, ...flags], (line) => line === "REFERENCE_READY" ? true : undefined, undefined, "pipe")
}

const field = (line: string, key: string) => Number(new RegExp(` ${key}=([0-9.]+)`).exec(line)?.[1] ?? NaN)

const measure = async (side: string, target: string, key: string) => {
  const { child } = await start(side, ["--trace-gc-nvp"])
  const scavenges: Array<string> = []
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (line.includes(" gc=s ")) scavenges.push(line)
  })
  const drive = (conns: number, seconds: number) =>
    new Promise<autocannon.Result>((done, fail) =>
      autocannon({ url: target, headers: { authorization: `Bearer ${key}` }, connections: conns, duration: seconds }, (e, r) => e ? fail(e) : done(r)))
  try {
    await drive(20, WARMUP_S)
    for (const conns of connections) {
      scavenges.length = 0
      const result = await drive(conns, WINDOW_S)
      const answered = result.requests.total
      const promoted = scavenges.reduce((sum, l) => sum + field(l, "promoted"), 0)
      const pause = scavenges.reduce((sum, l) => sum + field(l, "pause"), 0)
      const n = scavenges.length
      console.log(
        `${side.padEnd(9)} ${String(conns).padStart(2)} connections: ${Math.round(answered / WINDOW_S)} req/s, ${n} scavenges, ` +
          `mean pause ${n === 0 ? "-" : (pause / n).toFixed(2)} ms, promoted ${n === 0 ? "-" : Math.round(promoted / n / 1024)} KB per scavenge, ` +
          `${answered === 0 ? "-" : Math.round(promoted / answered)} bytes per request${result.non2xx + result.errors > 0 ? ` (${result.non2xx + result.errors} failed)` : ""}`
      )
    }
  } finally {
    await stop(child)
  }
}

const main = async () => {
  await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(server, `CREATE DATABASE ${name}`)
  try {
    // Our server creates the tenant, its key and one inbox, then steps aside.
    const { key, inboxId } = await oneInbox(url, port)
    console.log(`GET /v0/inboxes/:id, ${WINDOW_S} s per window after ${WARMUP_S} s at 20 connections; ours with ${OURS_NODE_FLAGS.join(" ") || "Node's defaults"}, the others with ${semiSpace.join(" ") || "Node's defaults"}`)
    for (const side of sides.length === 0 ? ["ours", "reference", "effect"] : sides) {
      await measure(side, `http://127.0.0.1:${port}/v0/inboxes/${inboxId}`, key)
    }
  } finally {
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
