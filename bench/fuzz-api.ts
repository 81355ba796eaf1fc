/**
 * `pnpm fuzz:api [--count N] [--seed S] [--storage pglite|postgres|both] [--concurrency C]`:
 * requests generated from every operation's input schema, valid and hostile (testkit
 * api-fuzz.ts), sent over HTTP to a real `inboxctl serve` on each storage (a data folder
 * for PGlite; a fresh database on BENCH_POSTGRES_URL's server for PostgreSQL), C at a time
 * (default 8). Meanwhile `/health` is asked every 50 ms and its latency kept.
 *
 * It prints the answers per status, every request answered 500 (or with a 5xx other than
 * the documented 502 and 503, or not at all) with its operation, and `/health`'s p50, p99
 * and max during the run; it exits 1 when any request failed. The count defaults to
 * 100,000 per storage; CI runs the same generator for 1,000 per storage in process
 * (packages/http/test/api-fuzz.test.ts).
 */
import {
  buildFuzzWorld,
  createOrganization,
  type FuzzClient,
  type FuzzRequest,
  pgliteStorage,
  postgresStorage,
  runFuzz,
  serverEnv,
  startServer,
  TEST_INBOUND_SECRET
} from "@inbox/testkit"
import { mkdtempSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Agent, request as httpRequest } from "node:http"

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : process.argv[at + 1] ?? fallback
}
const COUNT = Number(arg("count", "100000"))
const SEED = Number(arg("seed", String(Date.now() % 2 ** 31)))
const CONCURRENCY = Number(arg("concurrency", "8"))
const STORAGES = arg("storage", "both")
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const PROVIDER_SECRET = `whsec_${Buffer.from("the fuzz run's provider secret").toString("base64")}`

const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

/** Requests over keep-alive connections with node:http: paths are sent as generated, unnormalised. */
const overHttp = (base: string): FuzzClient => {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 })
  const { hostname, port } = new URL(base)
  return (r: FuzzRequest) =>
    new Promise((resolve, reject) => {
      const body = r.body === undefined ? undefined : typeof r.body === "string" ? Buffer.from(r.body) : Buffer.from(r.body)
      const req = httpRequest({
        agent,
        hostname,
        port,
        method: r.method,
        path: r.path,
        headers: { ...r.headers, ...(body === undefined ? {} : { "content-length": String(body.byteLength) }) }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let parsed: unknown
          try {
            parsed = text === "" ? undefined : JSON.parse(text)
          } catch {
            parsed = text.slice(0, 200)
          }
          resolve({ status: res.statusCode ?? 0, body: parsed })
        })
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(body)
    })
}

/** `/health` every 50 ms until stopped: the latencies in ms, and the failures. */
const probeHealth = (base: string) => {
  const latencies: Array<number> = []
  let failures = 0
  let running = true
  const loop = (async () => {
    while (running) {
      const started = performance.now()
      const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false)
      latencies.push(performance.now() - started)
      if (!ok) failures++
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  return async () => {
    running = false
    await loop
    return { latencies: [...latencies].sort((a, b) => a - b), failures }
  }
}

const runOn = async (storage: Awaited<ReturnType<typeof pgliteStorage>>) => {
  const env = serverEnv({ ...storage.env, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET, INBOX_PROVIDER_EVENTS_SECRET: PROVIDER_SECRET })
  const owner = await createOrganization(env, "fuzz-owner@example.com")
  const foreign = await createOrganization(env, "fuzz-foreign@example.com")
  // Only error lines are logged (a defect names its request id and cause), so a long run
  // keeps its log small and a failure can be traced to its cause.
  const server = await startServer({ ...env, INBOX_LOG_LEVEL: "error", INBOX_LOG_FORMAT: "json" }, undefined, { captureStdout: true })
  try {
    const client = overHttp(server.url)
    const world = await buildFuzzWorld(client, {
      key: owner.api_key,
      foreignKey: foreign.api_key,
      inboundSecret: TEST_INBOUND_SECRET,
      providerSecret: PROVIDER_SECRET,
      now: () => Math.floor(Date.now() / 1000)
    })
    const load = loadavg()[0]!.toFixed(2)
    const stopProbe = probeHealth(server.url)
    const started = performance.now()
    const outcome = await runFuzz(client, world, {
      seed: SEED,
      count: COUNT,
      concurrency: CONCURRENCY,
      onProgress: (done) => {
        if (done % 10_000 === 0) console.log(`  ${storage.name}: ${done} requests, ${((performance.now() - started) / 1000).toFixed(0)} s`)
      }
    })
    const seconds = (performance.now() - started) / 1000
    const health = await stopProbe()
    console.log(`${storage.name}: ${outcome.requests} requests in ${seconds.toFixed(0)} s (seed ${SEED}, ${CONCURRENCY} at a time, 1-minute load ${load} at the start)`)
    console.log(`  statuses: ${[...outcome.statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}: ${n}`).join(", ")}`)
    console.log(
      `  /health during the run: ${health.latencies.length} probes, p50 ${quantile(health.latencies, 0.5).toFixed(1)} ms, p99 ${quantile(health.latencies, 0.99).toFixed(1)} ms, max ${
        (health.latencies.at(-1) ?? 0).toFixed(1)
      } ms, ${health.failures} failed`
    )
    for (const f of outcome.failures.slice(0, 20)) {
      console.log(`  FAILED ${f.status} ${f.request.op} ${f.request.method} ${f.request.path.slice(0, 160)} ${JSON.stringify(f.body).slice(0, 200)}`)
    }
    if (outcome.failures.length > 0) {
      // Each failing request is written whole, so it can be sent again alone.
      const folder = mkdtempSync(join(tmpdir(), "fuzz-api-failures-"))
      outcome.failures.forEach((f, i) =>
        writeFileSync(join(folder, `${i}.json`), JSON.stringify({ ...f.request, body: f.request.body === undefined ? undefined : Buffer.from(f.request.body).toString("base64") })))
      console.log(`  ${outcome.failures.length} requests failed, written to ${folder}; the server's error lines:\n${server.stdout().slice(-6000)}\n${server.stderr().slice(-2000)}`)
    }
    return outcome.failures.length + health.failures
  } finally {
    await server.stop()
    await storage.done()
  }
}

let failed = 0
if (STORAGES === "pglite" || STORAGES === "both") failed += await runOn(await pgliteStorage())
if (STORAGES === "postgres" || STORAGES === "both") failed += await runOn(await postgresStorage(SERVER))
process.exit(failed > 0 ? 1 : 0)
