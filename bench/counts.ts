/**
 * Load-independent counts of the HTTP benchmark's GET (`GET /v0/inboxes/:id` on PostgreSQL),
 * for a machine too busy for timings to mean anything:
 *
 *   node --import tsx bench/counts.ts [ours|reference] [instructions|allocation] [requests]
 *
 * - `instructions`: the server runs under `valgrind --tool=callgrind`, uninstrumented until
 *   the warm-up is over; then its counts start from zero for exactly `requests` requests (20
 *   connections, as `pnpm bench http`) and the instructions the process executed are divided
 *   by them: the main thread and the garbage collector's helpers, not V8's optimising
 *   compilers' threads (printed apart: their share moved from run to run).
 * - `allocation`: the server runs with bench/heap-sampler.mjs preloaded; V8's sampling heap
 *   profiler, keeping objects already collected, records the bytes allocated over `requests`
 *   requests after a warm-up. Prints bytes per request and the largest allocation sites.
 *
 * Both sides run on the same fresh database that our server set up (its keys, one inbox);
 * BENCH_SERVER_CWD measures another checkout's server (its own node_modules) as "ours".
 */
import { type ChildProcess, execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"
import autocannon from "autocannon"
import { adminSql } from "@inbox/testkit"
import { spawnCounted } from "./counted.ts"
import { oneInbox, stop } from "./http.ts"

const which = process.argv[2] ?? "ours"
const mode = process.argv[3] ?? "instructions"
const requests = Number(process.argv[4] ?? "2000")
const warmup = Number(process.env["BENCH_WARMUP_REQUESTS"] ?? String(Math.max(requests, 10_000)))
const server = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const name = process.env["BENCH_DATABASE"] ?? "inbox_counts"
const port = Number(process.env["BENCH_PORT"] ?? "29141")
const url = server.replace(/\/[^/]*$/, `/${name}`)
const cwd = process.env["BENCH_SERVER_CWD"] === undefined ? process.cwd() : resolve(process.env["BENCH_SERVER_CWD"])
const dir = mkdtempSync(join(tmpdir(), "inbox-counts-"))

/** Starts `script` (from `cwd`) under the mode's wrapper; resolves on the line `ready` accepts. */
const start = (script: string, env: Record<string, string>, ready: (line: string) => boolean, from: string) =>
  new Promise<{ child: ChildProcess; lines: AsyncIterator<string> }>((done, fail) => {
    const child = spawnCounted(script, env, from, dir, mode as "instructions" | "allocation")
    child.once("exit", (code) => fail(new Error(`${script} exited with ${code}`)))
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    const wait = async () => {
      for (;;) {
        const next = await lines.next()
        if (next.done === true) return fail(new Error(`${script} closed its output`))
        if (ready(next.value)) return done({ child, lines })
      }
    }
    void wait()
  })

const drive = (target: string, key: string, amount: number) =>
  new Promise<number>((done, fail) => {
    autocannon({ url: target, headers: { authorization: `Bearer ${key}` }, connections: 20, amount, timeout: 120 }, (err, r) =>
      err ? fail(err) : done(r.non2xx + r.errors))
  })

const untilLine = async (lines: AsyncIterator<string>, wanted: string) => {
  for (;;) {
    const next = await lines.next()
    if (next.done === true) throw new Error(`no ${wanted}`)
    if (next.value === wanted) return
  }
}

const callgrind = (pid: number, ...args: Array<string>) => execFileSync("callgrind_control", [...args, String(pid)], { stdio: "pipe" }).toString()

const main = async () => {
  await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(server, `CREATE DATABASE ${name}`)
  let measured: ChildProcess | undefined
  try {
    // Our server (plain) creates the tenant, its key and one inbox, then steps aside.
    const { key, inboxId } = await oneInbox(url, port)
    const started = which === "reference"
      ? await start("bench/reference.ts", { REF_DATABASE_URL: url, REF_PORT: String(port) }, (l) => l === "REFERENCE_READY", process.cwd())
      : await start("bench/server.ts", { INBOX_DATABASE_URL: url, INBOX_PORT: String(port), INBOX_RATE_LIMITS: "off", BENCH_TENANTS: "0" }, (l) => l.startsWith("BENCH_KEYS "), cwd)
    measured = started.child
    const pid = measured.pid!
    const target = `http://127.0.0.1:${port}/v0/inboxes/${inboxId}`
    const warmFailures = await drive(target, key, warmup)
    if (mode === "instructions") {
      callgrind(pid, "--instr=on")
      callgrind(pid, "--zero")
      const failures = await drive(target, key, requests)
      callgrind(pid, "--dump")
      callgrind(pid, "--instr=off")
      await new Promise((r) => setTimeout(r, 1000))
      const files = readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${pid}`))
      let total = 0
      let file = ""
      for (const f of files) {
        const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, f), "utf8"))
        if (Number(m?.[1] ?? 0) > total) [total, file] = [Number(m?.[1] ?? 0), f]
      }
      // V8's optimising compilers run on their own threads, and under valgrind they were still
      // at work after any warm-up tried (half the window's instructions, varying from run to
      // run): the figure to compare leaves them out and keeps the main thread and the GC's.
      const annotated = execFileSync("callgrind_annotate", ["--inclusive=yes", join(dir, file)], { maxBuffer: 1 << 28 }).toString()
      const inclusive = (name: string) => Number(new RegExp(`^\\s*([\\d,]+) \\([^)]*\\)\\s+\\?\\?\\?:${name}`, "m").exec(annotated)?.[1]?.replaceAll(",", "") ?? 0)
      const compilers = inclusive("v8::internal::OptimizingCompileTaskExecutor::CompileTask::Run") +
        inclusive("v8::internal::maglev::MaglevConcurrentDispatcher::JobTask::Run")
      console.log(JSON.stringify({
        which,
        mode,
        requests,
        warmFailures,
        failures,
        instructions: total,
        compilerThreads: compilers,
        perRequest: Math.round((total - compilers) / requests),
        perRequestWithCompilers: Math.round(total / requests)
      }))
    } else {
      process.kill(pid, "SIGUSR2")
      await untilLine(started.lines, "HEAP_SAMPLE_STARTED")
      const failures = await drive(target, key, requests)
      process.kill(pid, "SIGUSR2")
      await untilLine(started.lines, "HEAP_SAMPLE_WRITTEN")
      const profile = JSON.parse(readFileSync(join(dir, "heap.json"), "utf8")) as { head: HeapNode }
      const sites = new Map<string, number>()
      let total = 0
      const walk = (node: HeapNode, path: string) => {
        const f = node.callFrame
        const here = `${f.functionName || "(anonymous)"} ${f.url.replace(/.*node_modules\//, "").replace(/.*packages\//, "")}:${f.lineNumber + 1}`
        total += node.selfSize
        if (node.selfSize > 0) sites.set(here, (sites.get(here) ?? 0) + node.selfSize)
        for (const c of node.children) walk(c, path)
      }
      walk(profile.head, "")
      const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env["BENCH_TOP"] ?? "40"))
      for (const [site, bytes] of top) console.log(`${String(Math.round(bytes / requests)).padStart(7)} B/req  ${site}`)
      console.log(JSON.stringify({ which, mode, requests, warmFailures, failures, bytes: total, perRequest: Math.round(total / requests) }))
    }
  } finally {
    if (measured !== undefined) await stop(measured)
    await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
  }
}

interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
