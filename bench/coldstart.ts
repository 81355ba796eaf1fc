/**
 * Embedded cold start (issue 13): how long `inboxctl serve` takes from the process starting
 * to `/health` answering 200, on a PGlite data folder holding 100,000 messages (the listing
 * seed, bench/seed.ts), against PGlite's own reopen of the same folder: a bare node process
 * that runs `PGlite.create(folder)` and one query. Both are whole processes started by the
 * bench and timed from spawn to ready, in alternating rounds on the same folder (each stops
 * before the other starts: the folder has one user). Our server is the packed CLI's
 * compiled bundle (packages/cli/dist, built when missing), as an operator runs it. Goal:
 * under 1.5 s. The folder is seeded once and kept in the system's temp folder.
 */
import { Engine } from "@inbox/core/internal"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { seed } from "./seed.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const MESSAGES = Number(process.env["BENCH_COLDSTART_MESSAGES"] ?? 100_000)
const ROUNDS = Number(process.env["BENCH_COLDSTART_ROUNDS"] ?? 5)
const BUNDLE = join(ROOT, "packages/cli/dist/inboxctl.js")

const run = (args: ReadonlyArray<string>, cwd = ROOT) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: "inherit" })
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited ${code}`))))
  })

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer()
    s.listen(0, "127.0.0.1", () => {
      const a = s.address()
      s.close(() => resolve(typeof a === "object" && a !== null ? a.port : 0))
    })
  })

/** Seconds from spawning `inboxctl serve` to /health answering 200; the server is then stopped. */
const ours = async (dir: string): Promise<number> => {
  const port = await freePort()
  const started = performance.now()
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  const child = spawn(process.execPath, [BUNDLE, "serve", "--port", String(port), "--log-level", "warning"], {
    cwd: ROOT,
    env: { ...env, INBOX_DATA_DIR: dir },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()))
  for (;;) {
    if (child.exitCode !== null) throw new Error("the server exited before it was healthy")
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
    if (ok) break
    await new Promise((r) => setTimeout(r, 10))
  }
  const seconds = (performance.now() - started) / 1000
  child.kill("SIGTERM")
  await exited
  return seconds
}

const REFERENCE = `
import { PGlite } from "@electric-sql/pglite"
const db = await PGlite.create(process.argv[1])
await db.query("SELECT count(*) FROM messages")
await db.close()
`

/** Seconds from spawning a bare node process to PGlite having reopened the folder and answered one query. */
const reference = async (dir: string): Promise<number> => {
  const started = performance.now()
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", REFERENCE, dir], { cwd: join(ROOT, "packages/core"), stdio: "inherit" })
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`the reference exited ${code}`))))
  })
  return (performance.now() - started) / 1000
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
const fmt = (s: number) => s.toFixed(2)

export const benchColdstart = async () => {
  const dir = join(tmpdir(), `inbox-bench-coldstart-${MESSAGES}`)
  if (!existsSync(join(dir, "PG_VERSION")) || !existsSync(join(dir, ".seeded"))) {
    console.error(`seeding ${MESSAGES} messages into ${dir} ...`)
    await Effect.runPromise(seed(MESSAGES).pipe(Effect.provide(Engine.layerEmbedded({ dataDir: dir }))))
    await import("node:fs").then((fs) => fs.writeFileSync(join(dir, ".seeded"), `${MESSAGES}\n`))
  }
  if (!existsSync(BUNDLE)) await run(["--import", "tsx", "build.ts"], join(ROOT, "packages/cli"))
  // One unmeasured start of each: the folder's files in the page cache for both.
  await ours(dir)
  await reference(dir)
  const rounds: Array<{ ours: number; reference: number; load: number }> = []
  for (let i = 0; i < ROUNDS; i++) {
    const load = loadavg()[0] ?? 0
    const a = await ours(dir)
    const b = await reference(dir)
    rounds.push({ ours: a, reference: b, load })
    console.error(`round ${i + 1}: ours ${fmt(a)} s, PGlite reopen ${fmt(b)} s, load ${load.toFixed(1)}`)
  }
  return { messages: MESSAGES, rounds }
}

export const coldstartSection = (result: Awaited<ReturnType<typeof benchColdstart>>) => {
  const o = result.rounds.map((r) => r.ours)
  const p = result.rounds.map((r) => r.reference)
  const loads = result.rounds.map((r) => r.load)
  return [
    `Restart to healthy on the embedded database with ${result.messages.toLocaleString("en")} messages stored: \`inboxctl serve\` (the compiled bundle) from process start to \`/health\` 200, after a clean stop, against PGlite's own reopen of the same folder (a bare node process: \`PGlite.create\` + one query), alternating, ${result.rounds.length} rounds. Goal: under 1.5 s.`,
    "",
    "| | median s | range s |",
    "|---|---|---|",
    `| ours (serve to healthy) | ${fmt(median(o))} | ${fmt(Math.min(...o))}–${fmt(Math.max(...o))} |`,
    `| PGlite reopen + one query | ${fmt(median(p))} | ${fmt(Math.min(...p))}–${fmt(Math.max(...p))} |`,
    "",
    `Ratio of medians ${(median(o) / median(p)).toFixed(2)}; load average (1 min) ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} during the rounds; ${new Date().toISOString().slice(0, 10)}.`
  ].join("\n")
}
