/**
 * `node --import tsx bench/profile-ingest.ts [seconds]`: profiles our server under the 5 KB
 * ingest load of `pnpm bench ingest` (8 clients on `POST /inbound/raw`, PostgreSQL, a fresh
 * database) and prints where its main thread spent the time, and how much of the load's
 * wall time the main thread was busy at all (the rest is waiting: the database, the parse
 * worker).
 */
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { adminSql } from "@inbox/testkit"
import { summarise, table } from "./cpuprofile.ts"
import { run, stop } from "./http.ts"
import { ingestLoad, startServer } from "./messaging.ts"

const seconds = Number(process.argv[2] ?? "15")
const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const name = "inbox_bench_profile_ingest"
const url = server.replace(/\/[^/]*$/, `/${name}`)
const dir = mkdtempSync(join(tmpdir(), "inbox-profile-ingest-"))
const port = Number(process.env["BENCH_PORT"] ?? "29401")

const frames: Record<string, (f: { functionName: string; url: string }) => boolean> = {
  "@effect/sql-pg (driver, protocol)": (f) => f.url.includes("/@effect/sql-pg/") || f.url.includes("/postgres/"),
  "effect/sql (statement compiler, client)": (f) => f.url.includes("/effect/dist/sql/"),
  "mail parse (main thread side)": (f) => f.url.includes("/packages/core/src/mail/"),
  "messages, threads, inbound (ours)": (f) => /\/packages\/core\/src\/(messages|inbound|threads)\//.test(f.url),
  "events (ours)": (f) => f.url.includes("/packages/core/src/events/"),
  "blobs (ours)": (f) => f.url.includes("/packages/core/src/blobs/"),
  "Schema (decode and encode)": (f) => /\/effect\/dist\/(Schema|SchemaParser|SchemaAST|SchemaIssue|SchemaGetter|SchemaTransformation)/.test(f.url),
  "JSON.stringify": (f) => f.functionName === "stringify" && f.url === "",
  "crypto (hash, random)": (f) => f.url.startsWith("node:internal/crypto"),
  "garbage collector": (f) => f.functionName === "(garbage collector)",
  "node:http server": (f) => f.url.startsWith("node:_http") || f.url.startsWith("node:net")
}

const main = async () => {
  await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(server, `CREATE DATABASE ${name}`)
  const ours = await startServer({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "1" }, port, ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--cpu-prof-interval=500"])
  let window: [number, number] = [0, 0]
  let requests = 0
  try {
    const options = await ingestLoad(`http://127.0.0.1:${port}`, ours.keys[0]!)
    await run({ ...options, connections: 8 }, 3)
    const from = Number(process.hrtime.bigint() / 1000n)
    const figures = await run({ ...options, connections: 8 }, seconds)
    window = [from, Number(process.hrtime.bigint() / 1000n)]
    requests = Math.round(figures.rps * seconds)
    console.log(`ours: ${figures.rps} msg/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, errors ${figures.errors}`)
  } finally {
    await stop(ours.child)
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  }
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`no profile was written in ${dir}`)
  const s = summarise(join(dir, file), window, frames)
  console.log(`\n${s.samples} samples, ${s.ms} ms of main-thread CPU inside the ${seconds} s load window (idle excluded): the main thread was busy ${Math.round(s.ms / (seconds * 10))}% of the time, about ${requests} messages\n`)
  console.log(table("self time by kind of work", s.byBucket, requests), "\n")
  console.log(table("inclusive: samples with a frame of", s.inclusive, requests), "\n")
  console.log(table("self time by place", s.byPlace), "\n")
  console.log(`profile: ${join(dir, file)}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
