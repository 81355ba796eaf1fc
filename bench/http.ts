/**
 * HTTP benchmark: starts the server in its own process (PGlite in a temp folder, then a
 * fresh database on the local PostgreSQL server) and measures POST /v0/inboxes and
 * GET /v0/inboxes/:id with autocannon from this process: requests per second and latency
 * percentiles. Creates spread over several tenants so no plan limit is reached.
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { adminSql } from "@inbox/testkit"

export interface HttpFigure {
  readonly storage: string
  readonly route: string
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

const DURATION = Number(process.env["BENCH_SECONDS"] ?? "10")
const CONNECTIONS = Number(process.env["BENCH_CONNECTIONS"] ?? "20")

const startServer = (env: Record<string, string>, port: number) =>
  new Promise<{ child: ChildProcess; keys: ReadonlyArray<string> }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/server.ts"], {
      env: { ...process.env, ...env, INBOX_PORT: String(port), INBOX_RATE_LIMITS: "off", NODE_ENV: "production" },
      stdio: ["ignore", "pipe", "inherit"]
    })
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)))
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith("BENCH_KEYS ")) resolve({ child, keys: (JSON.parse(line.slice(11)) as { keys: Array<string> }).keys })
    })
  })

const waitHealthy = async (port: number) => {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("server did not become healthy")
}

const run = (options: autocannon.Options) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    autocannon({ duration: DURATION, connections: CONNECTIONS, ...options }, (err, result) => err ? reject(err) : resolve(result))
  })

const measure = async (storage: string, env: Record<string, string>, port: number): Promise<ReadonlyArray<HttpFigure>> => {
  const { child, keys } = await startServer(env, port)
  try {
    await waitHealthy(port)
    const base = `http://127.0.0.1:${port}`
    let turn = 0
    const post = await run({
      url: `${base}/v0/inboxes`,
      requests: [{
        method: "POST",
        setupRequest: (req) => ({
          ...req,
          headers: { ...req.headers, "content-type": "application/json", authorization: `Bearer ${keys[turn++ % keys.length]}` },
          body: "{}"
        })
      }]
    })
    const created = await (await fetch(`${base}/v0/inboxes?limit=1`, { headers: { authorization: `Bearer ${keys[0]}` } })).json() as {
      inboxes: Array<{ inbox_id: string }>
    }
    const inboxId = created.inboxes[0]?.inbox_id
    if (inboxId === undefined) throw new Error("no inbox was created")
    const get = await run({ url: `${base}/v0/inboxes/${inboxId}`, headers: { authorization: `Bearer ${keys[0]}` } })
    const figure = (route: string, r: autocannon.Result): HttpFigure => ({
      storage,
      route,
      rps: Math.round(r.requests.average),
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.non2xx
    })
    return [figure("POST /v0/inboxes", post), figure("GET /v0/inboxes/:id", get)]
  } finally {
    child.kill("SIGTERM")
    await new Promise((r) => child.once("exit", r))
  }
}

export const benchHttp = async (): Promise<ReadonlyArray<HttpFigure>> => {
  const figures: Array<HttpFigure> = []
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-"))
  try {
    figures.push(...await measure("PGlite", { INBOX_DATA_DIR: join(dir, "data") }, 39101))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
  const name = "inbox_bench"
  try {
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
    await adminSql(server, `CREATE DATABASE ${name}`)
  } catch (error) {
    console.error(`PostgreSQL at ${server} is not reachable; skipping it (${String(error)})`)
    return figures
  }
  const url = server.replace(/\/[^/]*$/, `/${name}`)
  figures.push(...await measure("PostgreSQL", { INBOX_DATABASE_URL: url }, 39102))
  await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  return figures
}
