/**
 * `node --import tsx bench/profile.ts [ours|reference] [seconds]`: profiles one server
 * under the GET /v0/inboxes/:id load of the HTTP benchmark, on a fresh PostgreSQL
 * database, and prints where its main thread spent the load's time (bench/cpuprofile.ts).
 * The .cpuprofile stays in the folder named at the end, for a closer look (Chrome
 * DevTools, speedscope).
 */
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { adminSql } from "@inbox/testkit"
import { summarise, table } from "./cpuprofile.ts"
import { run, someInbox, startOurs, startReference, stop, waitHealthy } from "./http.ts"

const which = process.argv[2] ?? "ours"
const seconds = Number(process.argv[3] ?? "20")
const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const name = process.env["BENCH_DATABASE"] ?? "inbox_bench"
const port = Number(process.env["BENCH_PORT"] ?? "29101")
const url = server.replace(/\/[^/]*$/, `/${name}`)
const dir = mkdtempSync(join(tmpdir(), "inbox-profile-"))
const flags = ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--cpu-prof-interval=200"]

const inEffect = (module: string) => (f: { url: string }) => f.url.includes(`/effect/dist/${module}`)
const frames: Record<string, (f: { functionName: string; url: string }) => boolean> = {
  "node:http server (parser, socket, response)": (f) => f.url.startsWith("node:_http") || f.url.startsWith("node:net"),
  "@effect/platform-node (request/response adapters)": (f) => f.url.includes("/@effect/platform-node"),
  "effect/http (router, middleware, server request/response)": inEffect("http/"),
  "@effect/sql-pg (driver, protocol)": (f) => f.url.includes("/@effect/sql-pg/"),
  "effect/sql (statement compiler, client)": inEffect("sql/"),
  "Schema (decode and encode)": (f) => /\/effect\/dist\/(Schema|SchemaParser|SchemaAST|SchemaIssue|SchemaGetter|SchemaTransformation)/.test(f.url),
  "Tracer and spans": (f) => /\/effect\/dist\/(Tracer|internal\/tracer)/.test(f.url) || /[Ss]pan/.test(f.functionName) && f.url.includes("/effect/dist/"),
  "JSON.stringify": (f) => f.functionName === "stringify" && f.url === "",
  "crypto (hash, random)": (f) => f.url.startsWith("node:internal/crypto"),
  "garbage collector": (f) => f.functionName === "(garbage collector)",
  "our http package": (f) => f.url.includes("/packages/http/src/"),
  "our core package": (f) => f.url.includes("/packages/core/src/")
}

const main = async () => {
  await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(server, `CREATE DATABASE ${name}`)
  const ours = await startOurs({ INBOX_DATABASE_URL: url }, port, which === "ours" ? flags : [])
  let reference: Awaited<ReturnType<typeof startReference>>["child"] | undefined
  let window: [number, number] = [0, 0]
  let requests = 0
  try {
    await waitHealthy(port)
    const base = `http://127.0.0.1:${port}`
    const key = ours.value[0]!
    await fetch(`${base}/v0/inboxes`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" })
    const inboxId = await someInbox(base, key)
    let target = `${base}/v0/inboxes/${inboxId}`
    if (which === "reference") {
      reference = (await startReference(url, port + 2, flags)).child
      target = `http://127.0.0.1:${port + 2}/v0/inboxes/${inboxId}`
    }
    const options = { url: target, headers: { authorization: `Bearer ${key}` } }
    await run(options, 3)
    const from = Number(process.hrtime.bigint() / 1000n)
    const figures = await run(options, seconds)
    window = [from, Number(process.hrtime.bigint() / 1000n)]
    requests = Math.round(figures.rps * seconds)
    console.log(`${which}: ${figures.rps} req/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, errors ${figures.errors}`)
  } finally {
    if (reference !== undefined) await stop(reference)
    await stop(ours.child)
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  }
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`no profile was written in ${dir}`)
  const s = summarise(join(dir, file), window, frames)
  console.log(`\n${s.samples} samples, ${s.ms} ms of main-thread CPU inside the ${seconds} s load window (idle excluded), about ${requests} requests\n`)
  console.log(table("self time by kind of work", s.byBucket, requests), "\n")
  console.log(table("inclusive: samples with a frame of", s.inclusive, requests), "\n")
  console.log(table("self time by place", s.byPlace), "\n")
  console.log(table("self time by function", s.byFunction), "\n")
  console.log(`profile: ${join(dir, file)}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
