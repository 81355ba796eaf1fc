/**
 * Memory (issue 29): the resident set of `inboxctl serve` (the compiled bundle, as an
 * operator runs it) idle after start, and its peak while starting, beside a bare process
 * doing the least the same storage needs, on each database:
 *
 * - PostgreSQL: ours against bench/reference.ts (node:http + `pg`, the HTTP benchmark's
 *   bare server), both on one fresh, migrated database. The reference runs as plain
 *   JavaScript with its types stripped here beforehand: a loader (tsx, or Node's own type
 *   stripping, a WebAssembly compiler) would add tens of MB to the bare side;
 * - embedded (PGlite, the default): ours against a bare node process that opens the same
 *   data folder with the extensions the migrations need and answers one query, then waits;
 *   once with PGlite's default settings (the goal's reference) and once with the start
 *   parameters the engine gives PGlite (its smaller shared buffers), which isolates what
 *   the engine itself adds. Then the same on a new folder each time: the first start of
 *   all, where PGlite runs initdb and ours the migrations too.
 *
 * Each process is started alone; once it is ready and has settled for
 * BENCH_MEMORY_SETTLE_S seconds (default 10), `/proc/PID/status` gives its VmRSS, the idle
 * figure, and its VmHWM, the most it was ever resident: the peak, which comes while it
 * starts. Rounds alternate ours and the bare processes (BENCH_MEMORY_ROUNDS, default 3);
 * each ratio is of medians.
 * BENCH_POSTGRES_URL names the server (default the tests' one); BENCH_SKIP_PGLITE=1 and
 * BENCH_SKIP_POSTGRES=1 leave a database out.
 */
import { Database } from "@inbox/core/internal"
import { adminSql } from "@inbox/testkit"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { stripTypeScriptTypes } from "node:module"
import { createServer } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { machine } from "./report.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const BUNDLE = join(ROOT, "packages/cli/dist/inboxctl.js")
const ROUNDS = Number(process.env["BENCH_MEMORY_ROUNDS"] ?? 3)
const SETTLE_MS = Number(process.env["BENCH_MEMORY_SETTLE_S"] ?? 10) * 1000
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const DATABASE = "inbox_bench_memory"

/** VmRSS and VmHWM of a live process, in MiB. */
export const status = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/status`, "utf8")
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN)
  return { rss: kib("VmRSS") / 1024, hwm: kib("VmHWM") / 1024 }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer()
    s.listen(0, "127.0.0.1", () => {
      const a = s.address()
      s.close(() => resolve(typeof a === "object" && a !== null ? a.port : 0))
    })
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const cleanEnv = () => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  return { ...env, NODE_ENV: "production" }
}

export interface Sample {
  /** MiB resident after start and the settle time */
  readonly idle: number
  /** MiB: the most it was resident, while starting or idle */
  readonly peak: number
  /** seconds from spawn to ready */
  readonly ready: number
}

/**
 * Starts a process, waits until `ready` says so, lets it settle, samples it and stops it
 * (SIGTERM, waiting for the exit: a PGlite folder has one user at a time).
 */
const measure = async (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  ready: (child: ChildProcess) => Promise<void>,
  cwd = ROOT
): Promise<Sample> => {
  const started = performance.now()
  const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "pipe", "inherit"] })
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()))
  try {
    await Promise.race([ready(child), exited.then(() => Promise.reject(new Error(`${args.join(" ")} exited before it was ready`)))])
    const seconds = (performance.now() - started) / 1000
    await sleep(SETTLE_MS)
    const { hwm, rss } = status(child.pid!)
    return { idle: rss, peak: hwm, ready: seconds }
  } finally {
    child.kill("SIGTERM")
    await exited
  }
}

export const healthy = (port: number) => async (child: ChildProcess) => {
  child.stdout!.resume()
  for (;;) {
    if (child.exitCode !== null) return
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return
    await sleep(20)
  }
}

const line = (word: string) => (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    const lines = createInterface({ input: child.stdout! })
    lines.on("line", (l) => {
      if (l.startsWith(word)) resolve()
    })
  })

const ours = async (env: Record<string, string>) => {
  const port = await freePort()
  return measure([BUNDLE, "serve", "--port", String(port), "--log-level", "warning"], { ...cleanEnv(), ...env }, healthy(port))
}

/**
 * bench/reference.ts and the module it imports as .mjs files, types stripped, in a folder
 * under bench/node_modules so that their imports (pg, nodemailer) resolve as from bench/.
 */
const referenceScript = () => {
  const dir = join(ROOT, "bench/node_modules/.cache/bench-memory")
  mkdirSync(dir, { recursive: true })
  for (const name of ["reference", "reference-messaging"]) {
    const source = readFileSync(join(ROOT, `bench/${name}.ts`), "utf8")
    writeFileSync(join(dir, `${name}.mjs`), stripTypeScriptTypes(source).replace("./reference-messaging.ts", "./reference-messaging.mjs"))
  }
  return join(dir, "reference.mjs")
}

export const referencePostgres = async (url: string) => {
  const port = await freePort()
  return measure([referenceScript()], { ...cleanEnv(), REF_DATABASE_URL: url, REF_PORT: String(port) }, async (child) => {
    await line("REFERENCE_READY")(child)
    // The pool opens its connection at the first query, as a server's does at its first request.
    await fetch(`http://127.0.0.1:${port}/v0/inboxes/x`, { headers: { authorization: "Bearer am_none" } })
  })
}

// The bare embedded process: PGlite opening the folder with the extensions the migrations
// need (db/Database.ts PGLITE_EXTENSIONS) and the start parameters given as JSON (none:
// PGlite's defaults), one query, then idle until stopped.
const BARE_PGLITE = `
import { PGlite } from "@electric-sql/pglite"
import { unaccent } from "@electric-sql/pglite/contrib/unaccent"
const startParams = JSON.parse(process.argv[2])
const db = await PGlite.create({ dataDir: process.argv[1], extensions: { unaccent }, ...(startParams === null ? {} : { startParams }) })
await db.query("SELECT count(*) FROM pg_class")
console.log("PGLITE_READY")
process.on("SIGTERM", () => db.close().then(() => process.exit(0)))
setInterval(() => {}, 1 << 30)
`

const referencePglite = (dir: string, startParams: ReadonlyArray<string> | null) =>
  measure(["--input-type=module", "-e", BARE_PGLITE, dir, JSON.stringify(startParams)], cleanEnv(), line("PGLITE_READY"), join(ROOT, "packages/core"))

export interface Pair {
  readonly database: string
  readonly ours: ReadonlyArray<Sample>
  readonly reference: ReadonlyArray<Sample>
  /** The bare process with our settings of the storage (PGlite's start parameters), when they differ from its defaults. */
  readonly sameSettings?: ReadonlyArray<Sample>
  readonly loads: ReadonlyArray<number>
}

const fmtSample = (s: Sample) => `idle ${s.idle.toFixed(0)} MiB peak ${s.peak.toFixed(0)} MiB`

const rounds = async (
  database: string,
  a: () => Promise<Sample>,
  b: () => Promise<Sample>,
  c?: () => Promise<Sample>
): Promise<Pair> => {
  // One unmeasured start of each: migrations applied, files in the page cache for all.
  await a()
  await b()
  const result = { database, ours: [] as Array<Sample>, reference: [] as Array<Sample>, sameSettings: [] as Array<Sample>, loads: [] as Array<number> }
  for (let i = 0; i < ROUNDS; i++) {
    result.loads.push(loadavg()[0] ?? 0)
    const x = await a()
    const y = await b()
    const z = c === undefined ? undefined : await c()
    result.ours.push(x)
    result.reference.push(y)
    if (z !== undefined) result.sameSettings.push(z)
    console.error(
      `${database} round ${i + 1}: ours ${fmtSample(x)}; bare ${fmtSample(y)}${z === undefined ? "" : `; bare with our settings ${fmtSample(z)}`}; load ${result.loads.at(-1)!.toFixed(1)}`
    )
  }
  return c === undefined ? { database, ours: result.ours, reference: result.reference, loads: result.loads } : result
}

/** scripts/inboxctl builds the bundle when a source is newer than it; the bundle's path. */
export const buildBundle = async () => {
  await new Promise<void>((resolve, reject) =>
    spawn(join(ROOT, "scripts/inboxctl"), ["--version"], { stdio: ["ignore", "ignore", "inherit"] })
      .on("close", (code) => (code === 0 && existsSync(BUNDLE) ? resolve() : reject(new Error("scripts/inboxctl --version failed"))))
  )
  return BUNDLE
}

export const benchMemory = async (): Promise<ReadonlyArray<Pair>> => {
  await buildBundle()
  const pairs: Array<Pair> = []
  if (process.env["BENCH_SKIP_POSTGRES"] !== "1") {
    await adminSql(SERVER, `DROP DATABASE IF EXISTS ${DATABASE}`)
    await adminSql(SERVER, `CREATE DATABASE ${DATABASE}`)
    const url = new URL(SERVER)
    url.pathname = `/${DATABASE}`
    try {
      pairs.push(await rounds("PostgreSQL", () => ours({ INBOX_DATABASE_URL: url.href }), () => referencePostgres(url.href)))
    } finally {
      await adminSql(SERVER, `DROP DATABASE IF EXISTS ${DATABASE}`)
    }
  }
  if (process.env["BENCH_SKIP_PGLITE"] !== "1") {
    const dir = mkdtempSync(join(tmpdir(), "inbox-bench-memory-"))
    try {
      pairs.push(await rounds(
        "embedded (PGlite)",
        () => ours({ INBOX_DATA_DIR: dir }),
        () => referencePglite(dir, null),
        () => referencePglite(dir, Database.pgliteStartParams())
      ))
      // The first start of all, on a folder that does not exist yet: PGlite runs initdb and
      // ours the migrations too. Each process gets a new folder, removed after it.
      const fresh = (run: (folder: string) => Promise<Sample>) => async () => {
        const folder = join(dir, "new")
        try {
          return await run(folder)
        } finally {
          rmSync(folder, { recursive: true, force: true })
        }
      }
      pairs.push(await rounds(
        "embedded, new folder",
        fresh((folder) => ours({ INBOX_DATA_DIR: folder })),
        fresh((folder) => referencePglite(folder, null)),
        fresh((folder) => referencePglite(folder, Database.pgliteStartParams()))
      ))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return pairs
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const range = (xs: ReadonlyArray<number>) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`

export const memorySection = (pairs: ReadonlyArray<Pair>) => {
  const cell = (xs: ReadonlyArray<number>) => `${median(xs).toFixed(0)} (${range(xs)})`
  const rows = pairs.flatMap((p) => {
    const idle = median(p.ours.map((s) => s.idle)) / median(p.reference.map((s) => s.idle))
    const peak = median(p.ours.map((s) => s.peak)) / median(p.reference.map((s) => s.peak))
    const row = (name: string, xs: ReadonlyArray<Sample>, ratios = "| | |") =>
      `| ${p.database}: ${name} | ${cell(xs.map((s) => s.idle))} | ${cell(xs.map((s) => s.peak))} ${ratios}`
    return [
      row("ours", p.ours, `| ${idle.toFixed(2)} | ${peak.toFixed(2)} |`),
      row(p.sameSettings === undefined ? "bare" : "bare, PGlite's defaults", p.reference),
      ...(p.sameSettings === undefined ? [] : [row("bare, our start parameters", p.sameSettings)])
    ]
  })
  const loads = pairs.flatMap((p) => p.loads)
  return [
    `Resident memory of \`inboxctl serve\` (the compiled bundle) idle ${SETTLE_MS / 1000} s after \`/health\` first answers, and its peak (VmHWM) from start to then, against a bare process on the same storage: on PostgreSQL the HTTP benchmark's bare server (node:http + \`pg\`, bench/reference.ts as plain JavaScript, after its first query); on the embedded default a bare node process that opens the same PGlite folder with the extensions the migrations need and answers one query (a reopened folder; then, "new folder", the first start of all, where PGlite runs initdb and ours the migrations too), once with PGlite's default settings (the reference of the goal) and once with the start parameters the engine gives PGlite (db/Database.ts \`pgliteStartParams\`: shared buffers of \`INBOX_EMBEDDED_SHARED_BUFFERS\`, 32 MB), which shows what the engine itself adds. ${ROUNDS} rounds, each process alone in turn; median (range), MiB; ratios of medians, ours to the first bare row. Goals (issue 29): on PostgreSQL idle at most 2× the bare server; embedded at most 1.1× the bare PGlite process, idle and peak.`,
    "",
    "| process | idle MiB | peak MiB | idle ratio | peak ratio |",
    "|---|---:|---:|---:|---:|",
    ...rows,
    "",
    `${machine()}; load average (1 min) ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} at the rounds' starts; ${new Date().toISOString().slice(0, 10)}.`
  ].join("\n")
}
