/**
 * HTTP benchmark. Each server runs in its own process and autocannon drives it from this
 * one, with the same connections and duration for every run.
 *
 * - PGlite (a temp folder): our POST /v0/inboxes, then GET /v0/inboxes/:id.
 * - PostgreSQL (a fresh database on the local server): our POST /v0/inboxes, then
 *   GET /v0/inboxes/:id against the bare reference (bench/reference.ts: node:http + pg on
 *   the same database, the same statements, the same body), interleaved: after one
 *   unmeasured warm-up run each, rounds of ours then the reference. The machine's speed
 *   drifts by up to threefold from hour to hour, so only a ratio taken within one round
 *   means anything; absolute figures say how busy the machine was.
 *
 * Latency percentiles are computed here from every 2xx response time (autocannon's own
 * histogram rounds to whole milliseconds, too coarse for a p99 ratio at 2-5 ms).
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { settingDefault } from "@inbox/core/internal"
import { adminSql } from "@inbox/testkit"
import { machine } from "./report.ts"

export interface Run {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** The server process's CPU time (user + system) per answered request, in microseconds, when known. */
  readonly cpuUs?: number
}

export interface HttpFigure extends Run {
  readonly storage: string
  readonly route: string
}

/** One interleaved round: ours and the reference, measured back to back. */
export interface Round {
  readonly ours: Run
  readonly reference: Run
  /** With BENCH_BASELINE: the other checkout's server in the same round. */
  readonly baseline?: Run
  /** The reference without its key cache (REF_KEY_CACHE=0): two statements per request. */
  readonly uncached?: Run
  /** Ours with the request limits on, shared through PostgreSQL (one upsert per request). */
  readonly limited?: Run
}

export interface HttpResults {
  readonly figures: ReadonlyArray<HttpFigure>
  /** GET /v0/inboxes/:id on PostgreSQL, ours against the reference; empty without PostgreSQL. */
  readonly rounds: ReadonlyArray<Round>
}

export const DURATION = Number(process.env["BENCH_SECONDS"] ?? "10")
export const CONNECTIONS = Number(process.env["BENCH_CONNECTIONS"] ?? "20")
export const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? "5")
const WARMUP = Number(process.env["BENCH_WARMUP_SECONDS"] ?? "3")
/** Five ports from here; another port (and BENCH_DATABASE) lets two checkouts bench at once. */
// The benchmarks' ports sit below Linux's ephemeral range (32768-60999): after the WebSocket
// benchmark's 10,000 clients, sockets in TIME_WAIT on ports of that range made the next
// benchmark's listen fail with EADDRINUSE.
const PORT = Number(process.env["BENCH_PORT"] ?? "29101")
/**
 * Another checkout (its own node_modules installed) whose server joins the PostgreSQL GET
 * rounds as "baseline": a change is then measured before and after in one invocation.
 */
const BASELINE = process.env["BENCH_BASELINE"]
/** Node flags for the baseline's server instead of ours' (with BENCH_BASELINE=. the same checkout under other flags; empty: Node's defaults). */
const BASELINE_FLAGS = process.env["BENCH_BASELINE_FLAGS"]?.split(" ").filter((f) => f !== "")
/** Skips the POST runs, for quicker GET comparisons. */
const SKIP_POST = process.env["BENCH_SKIP_POST"] === "1"
/** Where the baseline's standard output goes, when it is to differ from the others' (BENCH_SERVER_STDOUT). */
const BASELINE_STDOUT = process.env["BENCH_BASELINE_STDOUT"] as "file" | "pipe" | undefined

/**
 * Where a server's standard output goes once it is ready. `file` (the default): a file, as a
 * log file or a collector that keeps up would take it. `pipe`: back to this process, which
 * also runs the load generator; a server that logs a line per request then spends the load
 * generator's CPU on splitting its lines, and blocks on a full pipe when this process is late
 * to read it, so latencies were measured with the harness as part of the server.
 */
const STDOUT = (process.env["BENCH_SERVER_STDOUT"] ?? "file") as "file" | "pipe"

/** Spawns `script` under the same loader and flags for every server, and waits for its ready line. */
export const spawnServer = <A>(
  script: string,
  env: Record<string, string>,
  flags: ReadonlyArray<string>,
  ready: (line: string) => A | undefined,
  cwd = process.cwd(),
  stdout: "file" | "pipe" = STDOUT
) =>
  new Promise<{ child: ChildProcess; value: A }>((resolve, reject) => {
    const dir = stdout === "file" ? mkdtempSync(join(tmpdir(), "bench-server-")) : undefined
    // BENCH_SERVER_OUTPUT=FILE: the server's output goes there and is kept.
    const file = dir === undefined ? undefined : process.env["BENCH_SERVER_OUTPUT"] ?? join(dir, "stdout")
    const fd = file === undefined ? undefined : openSync(file, "w")
    const child = spawn(process.execPath, [...flags, "--import", "tsx", script], {
      cwd,
      env: { ...process.env, ...env, NODE_ENV: "production" },
      stdio: ["ignore", fd ?? "pipe", "inherit"]
    })
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)))
    if (fd === undefined) {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const value = ready(line)
        if (value !== undefined) resolve({ child, value })
      })
      return
    }
    closeSync(fd)
    // On "close", not "exit": stop() takes the "exit" listeners off, and the file (a line per
    // request) would be left behind.
    child.once("close", () => rmSync(dir!, { recursive: true, force: true }))
    // The ready line is read from the file's start until it appears; the file is not read after.
    const poll = setInterval(() => {
      const lines = readFileSync(file!, "utf8").split("\n").slice(0, -1)
      for (const line of lines) {
        const value = ready(line)
        if (value !== undefined) {
          clearInterval(poll)
          resolve({ child, value })
          return
        }
      }
    }, 50)
    child.once("close", () => clearInterval(poll))
  })

/** Node flags for a server process, e.g. `--cpu-prof` (bench/profile.ts). */
export type Flags = ReadonlyArray<string>

/**
 * The Node (V8) flags our server runs with: those `inboxctl serve` starts with by default
 * (INBOX_NODE_FLAGS), so a benchmark measures the server as it is run; BENCH_OURS_NODE_FLAGS
 * replaces them (empty: Node's defaults). bench/server.ts is started by node directly, not by
 * `serve`, so without this it ran with a young generation four times as large, whose every
 * scavenge paused the server longer (bench/PROFILE.md, "The GET path's tail").
 */
export const OURS_NODE_FLAGS: Flags = (process.env["BENCH_OURS_NODE_FLAGS"] ?? settingDefault("INBOX_NODE_FLAGS"))
  .split(" ").filter((f) => f !== "")

export const startOurs = (
  env: Record<string, string>,
  port: number,
  flags: Flags = [],
  cwd?: string,
  stdout?: "file" | "pipe",
  nodeFlags: Flags = OURS_NODE_FLAGS
) =>
  spawnServer(
    "bench/server.ts",
    { INBOX_RATE_LIMITS: "off", ...env, INBOX_PORT: String(port) },
    [...nodeFlags, ...flags],
    (line) => line.startsWith("BENCH_KEYS ") ? (JSON.parse(line.slice(11)) as { keys: Array<string> }).keys : undefined,
    cwd,
    stdout
  )

export const startReference = (url: string, port: number, flags: Flags = [], env: Record<string, string> = {}) =>
  spawnServer("bench/reference.ts", { ...env, REF_DATABASE_URL: url, REF_PORT: String(port) }, flags, (line) =>
    line === "REFERENCE_READY" ? true : undefined)

export const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null) return
  child.removeAllListeners("exit")
  const exited = new Promise((r) => child.once("exit", r))
  child.kill("SIGTERM")
  await exited
}

export const waitHealthy = async (port: number) => {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("server did not become healthy")
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN

const round2 = (n: number) => Math.round(n * 100) / 100

/** CPU time (user + system) of a process so far, in ms, from /proc; undefined where there is none. */
export const cpuMs = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined
  try {
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (100 Hz).
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

/** One autocannon run; with `server`, also that process's CPU time per answered request. */
export const run = (options: autocannon.Options, duration = DURATION, server?: ChildProcess) =>
  new Promise<Run>((resolve, reject) => {
    const times: Array<number> = []
    const cpu0 = cpuMs(server?.pid)
    const instance = autocannon({ duration, connections: CONNECTIONS, ...options }, (err, r) => {
      if (err) return reject(err)
      const cpu1 = cpuMs(server?.pid)
      times.sort((a, b) => a - b)
      resolve({
        rps: Math.round(r.requests.average),
        p50: round2(percentile(times, 0.5)),
        p99: round2(percentile(times, 0.99)),
        errors: r.errors + r.non2xx,
        ...(cpu0 === undefined || cpu1 === undefined || r.requests.total === 0 ? {} : { cpuUs: Math.round(((cpu1 - cpu0) * 1000) / r.requests.total) })
      })
    })
    instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) times.push(ms)
    })
  })

export const postInboxes = (base: string, keys: ReadonlyArray<string>) => {
  let turn = 0
  return run({
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
}

export const someInbox = async (base: string, key: string) => {
  const created = await (await fetch(`${base}/v0/inboxes?limit=1`, { headers: { authorization: `Bearer ${key}` } })).json() as {
    inboxes: Array<{ inbox_id: string }>
  }
  const inboxId = created.inboxes[0]?.inbox_id
  if (inboxId === undefined) throw new Error("no inbox was created")
  return inboxId
}

/**
 * A fresh database made ready for measuring one GET: our server creates one tenant, its key and
 * one inbox, then stops, so another server (or ours under a tool) can be started on it.
 */
export const oneInbox = async (url: string, port: number): Promise<{ readonly key: string; readonly inboxId: string }> => {
  const setup = await startOurs({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "1" }, port)
  const key = setup.value[0]!
  try {
    await waitHealthy(port)
    const base = `http://127.0.0.1:${port}`
    await fetch(`${base}/v0/inboxes`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" })
    return { key, inboxId: await someInbox(base, key) }
  } finally {
    await stop(setup.child)
  }
}

/** Both servers must answer the route with the same body, or the comparison means nothing. */
const sameAnswer = async (a: string, b: string, key: string) => {
  const [x, y] = await Promise.all([a, b].map(async (url) => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
    return `${res.status} ${await res.text()}`
  }))
  if (x !== y) throw new Error(`the reference answers differently:\n  ours: ${x}\n  reference: ${y}`)
}

const measurePglite = async (dataDir: string, port: number): Promise<ReadonlyArray<HttpFigure>> => {
  const { child, value: keys } = await startOurs({ INBOX_DATA_DIR: dataDir }, port)
  try {
    await waitHealthy(port)
    const base = `http://127.0.0.1:${port}`
    const post = await postInboxes(base, keys)
    const inboxId = await someInbox(base, keys[0]!)
    const get = await run({ url: `${base}/v0/inboxes/${inboxId}`, headers: { authorization: `Bearer ${keys[0]}` } })
    return [
      { storage: "PGlite", route: "POST /v0/inboxes", ...post },
      { storage: "PGlite", route: "GET /v0/inboxes/:id", ...get }
    ]
  } finally {
    await stop(child)
  }
}

const measurePostgres = async (url: string, port: number): Promise<HttpResults> => {
  const { child, value: keys } = await startOurs({ INBOX_DATABASE_URL: url }, port)
  let reference: ChildProcess | undefined
  let uncached: ChildProcess | undefined
  let baseline: ChildProcess | undefined
  let limited: ChildProcess | undefined
  try {
    await waitHealthy(port)
    const base = `http://127.0.0.1:${port}`
    const post = SKIP_POST ? undefined : await postInboxes(base, keys)
    if (SKIP_POST) await fetch(`${base}/v0/inboxes`, { method: "POST", headers: { authorization: `Bearer ${keys[0]}` } })
    const inboxId = await someInbox(base, keys[0]!)
    reference = (await startReference(url, port + 1)).child
    uncached = (await startReference(url, port + 3, [], { REF_KEY_CACHE: "0" })).child
    const ours = { url: `${base}/v0/inboxes/${inboxId}`, headers: { authorization: `Bearer ${keys[0]}` } }
    const ref = { ...ours, url: `http://127.0.0.1:${port + 1}/v0/inboxes/${inboxId}` }
    const refUncached = { ...ours, url: `http://127.0.0.1:${port + 3}/v0/inboxes/${inboxId}` }
    await sameAnswer(ours.url, ref.url, keys[0]!)
    await sameAnswer(ours.url, refUncached.url, keys[0]!)
    // Our server again, serving the same tenants with the request limits on (issue 11): on
    // PostgreSQL the limiter's counters are shared by every process, so each request also
    // takes from its key's counter in the database. The limit is set out of reach.
    limited = (await startOurs({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "0", INBOX_RATE_LIMITS: "on", INBOX_REQUESTS_PER_MINUTE: "1000000000" }, port + 4)).child
    await waitHealthy(port + 4)
    const shared = { ...ours, url: `http://127.0.0.1:${port + 4}/v0/inboxes/${inboxId}` }
    await sameAnswer(ours.url, shared.url, keys[0]!)
    const old = { ...ours, url: `http://127.0.0.1:${port + 2}/v0/inboxes/${inboxId}` }
    if (BASELINE !== undefined) {
      // Another checkout's server on the same database, serving our tenants: it creates none.
      baseline = (await startOurs({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "0" }, port + 2, [], BASELINE, BASELINE_STDOUT, BASELINE_FLAGS)).child
      await waitHealthy(port + 2)
      await run(old, WARMUP)
    }
    await run(ours, WARMUP)
    await run(ref, WARMUP)
    await run(refUncached, WARMUP)
    await run(shared, WARMUP)
    const rounds: Array<Round> = []
    for (let i = 0; i < ROUNDS; i++) {
      // The baseline goes first in every other round, so neither checkout always follows the reference.
      const o1 = baseline !== undefined && i % 2 === 1 ? await run(old, DURATION, baseline) : undefined
      const a = await run(ours, DURATION, child)
      const o = o1 ?? (baseline === undefined ? undefined : await run(old, DURATION, baseline))
      const b = await run(ref, DURATION, reference)
      const u = await run(refUncached, DURATION, uncached)
      const l = await run(shared, DURATION, limited)
      rounds.push({ ours: a, reference: b, uncached: u, limited: l, ...(o === undefined ? {} : { baseline: o }) })
      const show = (r: Run) => `${r.rps} req/s p99 ${r.p99} ms ${r.cpuUs} us CPU/req`
      console.error(`round ${i + 1}/${ROUNDS}: ours ${show(a)}${o === undefined ? "" : `; baseline ${show(o)}`}; reference ${show(b)}; reference without key cache ${show(u)}; ours with shared limits ${show(l)}`)
    }
    const median = (f: (r: Run) => number) => round2(medianOf(rounds.map((r) => f(r.ours))))
    return {
      figures: [
        ...(post === undefined ? [] : [{ storage: "PostgreSQL", route: "POST /v0/inboxes", ...post }]),
        {
          storage: "PostgreSQL",
          route: "GET /v0/inboxes/:id",
          rps: median((r) => r.rps),
          p50: median((r) => r.p50),
          p99: median((r) => r.p99),
          errors: rounds.reduce((n, r) => n + r.ours.errors, 0)
        }
      ],
      rounds
    }
  } finally {
    if (baseline !== undefined) await stop(baseline)
    if (limited !== undefined) await stop(limited)
    if (reference !== undefined) await stop(reference)
    if (uncached !== undefined) await stop(uncached)
    await stop(child)
  }
}

export const medianOf = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export const benchHttp = async (): Promise<HttpResults> => {
  const figures: Array<HttpFigure> = []
  if (process.env["BENCH_SKIP_PGLITE"] !== "1") {
    const dir = mkdtempSync(join(tmpdir(), "inbox-bench-"))
    try {
      figures.push(...await measurePglite(join(dir, "data"), PORT))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
  const name = process.env["BENCH_DATABASE"] ?? "inbox_bench"
  try {
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
    await adminSql(server, `CREATE DATABASE ${name}`)
  } catch (error) {
    console.error(`PostgreSQL at ${server} is not reachable; skipping it (${String(error)})`)
    return { figures, rounds: [] }
  }
  const url = server.replace(/\/[^/]*$/, `/${name}`)
  try {
    const pg = await measurePostgres(url, PORT + 1)
    return { figures: [...figures, ...pg.figures], rounds: pg.rounds }
  } finally {
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  }
}

const n = (x: number) => x.toLocaleString("en-US")
const ratio = (x: number) => x.toFixed(2)

/**
 * Ours against the issue's first yardstick, the reference looking every key up (two
 * statements per request, where ours and the caching reference send one).
 */
const uncachedLines = (rounds: ReadonlyArray<Round>, span: (xs: ReadonlyArray<number>) => string): ReadonlyArray<string> => {
  const both = rounds.flatMap((r) => r.uncached === undefined ? [] : [{ ours: r.ours, uncached: r.uncached }])
  if (both.length === 0) return []
  const rps = both.map((r) => r.ours.rps / r.uncached.rps)
  const p99 = both.map((r) => r.ours.p99 / r.uncached.p99)
  return [
    "",
    `Against the reference without its key cache (REF_KEY_CACHE=0: two statements per request, the yardstick as issue 6 first set it), in the same rounds: req/s ratio ${span(rps)}, p99 ratio ${span(p99)}; that reference served ${both.map((r) => n(r.uncached.rps)).join(", ")} req/s with p99 ${both.map((r) => r.uncached.p99).join(", ")} ms.`
  ]
}

/** Ours with the shared request limits on against ours with them off, in the same rounds (issue 11). */
const limitedLines = (rounds: ReadonlyArray<Round>, span: (xs: ReadonlyArray<number>) => string): ReadonlyArray<string> => {
  const both = rounds.flatMap((r) => r.limited === undefined ? [] : [{ ...r, limited: r.limited }])
  if (both.length === 0) return []
  return [
    "",
    `With the request limits on (INBOX_RATE_LIMITS=on, shared by every process through PostgreSQL: one upsert into \`rate_counters\` reserves 1% of the limit; a second server of ours on the same database), in the same rounds: ${both.map((r) => n(r.limited.rps)).join(", ")} req/s with p99 ${both.map((r) => r.limited.p99).join(", ")} ms; req/s ratio to ours with limits off ${span(both.map((r) => r.limited.rps / r.ours.rps))}, to the reference ${span(both.map((r) => r.limited.rps / r.reference.rps))}.`
  ]
}

/** The BENCHMARKS.md section: the interleaved comparison first, then every route of ours. */
export const httpSection = ({ figures, rounds }: HttpResults): string => {
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}.`,
    `autocannon, ${CONNECTIONS} connections, ${DURATION} s per run, each server in its own process on the same machine (which also runs autocannon), its standard output to a file; ours with the Node flags \`inboxctl serve\` starts it with (${OURS_NODE_FLAGS.length === 0 ? "none" : OURS_NODE_FLAGS.join(" ")}), the reference with Node's defaults; creates spread over 40 tenants on the Scale plan. Latencies in ms.`,
    ""
  ]
  if (rounds.length > 0) {
    const rps = rounds.map((r) => r.ours.rps / r.reference.rps)
    const p99 = rounds.map((r) => r.ours.p99 / r.reference.p99)
    const span = (xs: ReadonlyArray<number>) => `${ratio(medianOf(xs))} (${ratio(Math.min(...xs))}-${ratio(Math.max(...xs))})`
    const cpu = rounds.flatMap((r) => r.ours.cpuUs === undefined || r.reference.cpuUs === undefined ? [] : [r.ours.cpuUs / r.reference.cpuUs])
    const withBaseline = rounds.flatMap((r) => r.baseline === undefined ? [] : [{ ...r, baseline: r.baseline }])
    if (withBaseline.length > 0) {
      const cpuB = withBaseline.flatMap((r) => r.ours.cpuUs === undefined || r.baseline.cpuUs === undefined ? [] : [r.ours.cpuUs / r.baseline.cpuUs])
      console.error(
        `against the baseline: req/s ratio ${span(withBaseline.map((r) => r.ours.rps / r.baseline.rps))}, ` +
          `p99 ratio ${span(withBaseline.map((r) => r.ours.p99 / r.baseline.p99))}` +
          (cpuB.length > 0 ? `, CPU/req ratio ${span(cpuB)}` : "") +
          `; baseline against the reference: req/s ${span(withBaseline.map((r) => r.baseline.rps / r.reference.rps))}, ` +
          `p99 ${span(withBaseline.map((r) => r.baseline.p99 / r.reference.p99))}`
      )
    }
    lines.push(
      "### GET /v0/inboxes/:id on PostgreSQL, ours against the bare reference",
      "",
      "The reference (`bench/reference.ts`) is node:http and the `pg` driver on the same database, sending the same statements (the key by the SHA-256 of its secret, then the inbox within the key's organization) and answering the same body with an `x-request-id`. Both cache a key after its first request (ours forgets it on revocation, the reference never does), so a request sends one statement on either. " +
        `After one ${WARMUP} s warm-up run each, ${rounds.length} rounds of ours then the reference; a ratio is taken within its round, because the machine's speed drifts between rounds.`,
      "Goal (issue 6): req/s ratio at least 0.80, p99 ratio at most 1.50.",
      "",
      `**req/s ratio ${span(rps)}, p99 ratio ${span(p99)}** (ours / reference, median of rounds, range in brackets)` +
        (cpu.length === rounds.length ? `; server CPU per request ratio ${span(cpu)}.` : "."),
      ...uncachedLines(rounds, span),
      ...limitedLines(rounds, span),
      "",
      "Server CPU is the server process's user + system time per request (from /proc): it drifts less with the machine's load than req/s does, and says where a difference comes from.",
      "",
      "| round | ours req/s | reference req/s | req/s ratio | ours p50 | reference p50 | ours p99 | reference p99 | p99 ratio | ours CPU µs/req | reference CPU µs/req | errors + non-2xx |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...rounds.map((r, i) =>
        `| ${i + 1} | ${n(r.ours.rps)} | ${n(r.reference.rps)} | ${ratio(rps[i]!)} | ${r.ours.p50} | ${r.reference.p50} | ${r.ours.p99} | ${r.reference.p99} | ${ratio(p99[i]!)} | ${r.ours.cpuUs ?? "-"} | ${r.reference.cpuUs ?? "-"} | ${r.ours.errors + r.reference.errors} |`
      ),
      "",
      "### Every route, ours alone",
      ""
    )
  }
  lines.push(
    "PGlite has no reference: the reference needs a PostgreSQL server, and PGlite lives inside our process. PostgreSQL GET is the median of the rounds above.",
    "Goal for GET on PostgreSQL in absolute figures: at least 5,000 req/s with p99 under 10 ms (on a machine to ourselves).",
    "",
    "| storage | route | req/s | p50 ms | p99 ms | errors + non-2xx |",
    "|---|---|---:|---:|---:|---:|",
    ...figures.map((f) => `| ${f.storage} | ${f.route} | ${n(f.rps)} | ${f.p50} | ${f.p99} | ${f.errors} |`)
  )
  return lines.join("\n")
}
