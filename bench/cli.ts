/**
 * `pnpm bench cli`: how long inboxctl takes, as an operator runs it: the built CLI
 * (packages/cli/dist, built afresh first) in a new process each time, `--help`, and a
 * resource command (`inboxes list`) against a running embedded server, which answers it over
 * its local socket; the reference in the same rounds is a bare Node start (`node -e ""`).
 * Each round runs the three in turn; the figures are the medians. Goals: `--help` within
 * 0.3 s, the resource command within 0.6 s.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "@inbox/testkit"
import { machine } from "./report.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const CLI = join(ROOT, "packages/cli/dist/inboxctl.js")
const ROUNDS = Number(process.env["BENCH_CLI_ROUNDS"] ?? 21)

const load = () => (loadavg()[0] ?? 0).toFixed(2)

/** Seconds from spawning `node ARGS` to its exit (which must be 0). */
const timed = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("close", (code) => code === 0 ? resolve((performance.now() - started) / 1000) : reject(new Error(`node ${args.join(" ")} exited ${code}: ${stderr}`)))
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0

export const benchCli = async () => {
  const loadBefore = load()
  const built = spawnSync(process.execPath, ["--import", "tsx", "build.ts"], { cwd: join(ROOT, "packages/cli"), stdio: "inherit" })
  if (built.status !== 0) throw new Error("the CLI build failed")
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-cli-"))
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  Object.assign(env, { INBOX_DATA_DIR: join(dir, "data"), INBOX_RATE_LIMITS: "off" })
  const created = spawnSync(process.execPath, [CLI, "org", "create", "--owner-email", "bench@example.com", "--verified", "--json"], { env, encoding: "utf8" })
  if (created.status !== 0) throw new Error(created.stderr)
  const key = (JSON.parse(created.stdout) as { api_key: string }).api_key
  const port = await freePort()
  const server = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--log-level", "warning"], { env, stdio: ["ignore", "ignore", "inherit"] })
  try {
    for (;;) {
      if (server.exitCode !== null) throw new Error("the server exited before it was healthy")
      if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const cases = {
      node: ["-e", ""],
      help: [CLI, "--help"],
      list: [CLI, "inboxes", "list", "--api-key", key]
    }
    // One unmeasured run of each: files in the page cache, the server's first request served.
    for (const args of Object.values(cases)) await timed(args, env)
    const times = { node: [] as Array<number>, help: [] as Array<number>, list: [] as Array<number> }
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, args] of Object.entries(cases) as Array<[keyof typeof times, Array<string>]>) times[name].push(await timed(args, env))
    }
    return { rounds: ROUNDS, times, loadBefore, loadAfter: load() }
  } finally {
    server.kill("SIGTERM")
    await new Promise((r) => server.on("close", r))
    rmSync(dir, { recursive: true, force: true })
  }
}

export const cliSection = (result: Awaited<ReturnType<typeof benchCli>>) => {
  const s = (x: number) => x.toFixed(3)
  const row = (what: string, xs: ReadonlyArray<number>, goal: string) =>
    `| ${what} | ${s(median(xs))} | ${s(Math.min(...xs))}–${s(Math.max(...xs))} | ${(median(xs) / median(result.times.node)).toFixed(1)} | ${goal} |`
  return [
    `The built CLI (packages/cli/dist) started afresh each time, ${result.rounds} rounds of the three in turn; medians. \`inboxes list\` runs against a running embedded server (\`inboxctl serve\`), which answers it over its local socket: the command loads commander and the catalogue's manifest, never the engine. The reference is a bare Node start in the same rounds.`,
    "",
    "| command | median s | range s | × bare Node | goal |",
    "|---|---|---|---|---|",
    row("`node -e \"\"` (reference)", result.times.node, ""),
    row("`inboxctl --help`", result.times.help, "≤ 0.3 s"),
    row("`inboxctl inboxes list` (server running)", result.times.list, "≤ 0.6 s"),
    "",
    `${machine()}; load average (1 min) ${result.loadBefore} at the start, ${result.loadAfter} at the end; ${new Date().toISOString().slice(0, 10)}.`
  ].join("\n")
}
