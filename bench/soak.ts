/**
 * `pnpm bench soak` (issue 29, memory under load): `inboxctl serve` (the compiled bundle, as an
 * operator runs it) on PostgreSQL receives 5 KB messages over `POST /inbound/raw` at a steady
 * rate (BENCH_SOAK_RATE, default 30/s) for BENCH_SOAK_MINUTES (default 20), each one firing a
 * signed `message.received` webhook to a receiver on loopback (node:http in this process,
 * answering 204). Its resident memory (VmRSS from /proc) is sampled every 10 s; the goal is the
 * most it held at most 2.5× the idle resident memory of the bare node:http + `pg` server
 * (bench/reference.ts, measured in the same run as "Memory" measures it), and a curve that
 * flattens (no leak): the last five minutes' mean against the five before them.
 * BENCH_POSTGRES_URL names the server (default the tests' one); BENCH_SOAK_NODE_ARGS adds Node
 * flags to the server's command line.
 */
import { adminSql } from "@inbox/testkit"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createServer } from "node:http"
import { loadavg } from "node:os"
import { promisify } from "node:util"
import { benchMessages } from "./parse.ts"
import { buildBundle, cleanEnv, healthy, referencePostgres, status } from "./memory.ts"
import { cpuMs } from "./http.ts"
import { machine } from "./report.ts"

const MINUTES = Number(process.env["BENCH_SOAK_MINUTES"] ?? 20)
const RATE = Number(process.env["BENCH_SOAK_RATE"] ?? 30)
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const DATABASE = "inbox_bench_soak"
const SECRET = "soak-inbound-secret-0123456789abcdef"
const SAMPLE_MS = 10_000
const GOAL = 2.5
// Node flags for the server alone, to look into its memory (`--trace-gc`, `--heapsnapshot-signal=SIGUSR2`).
const NODE_ARGS = (process.env["BENCH_SOAK_NODE_ARGS"] ?? "").split(" ").filter((a) => a !== "")

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface SoakResult {
  readonly minutes: number
  readonly rate: number
  /** MiB, one every SAMPLE_MS from the start of the load */
  readonly rss: ReadonlyArray<number>
  readonly bareIdle: ReadonlyArray<number>
  readonly posted: number
  readonly failed: number
  readonly delivered: number
  /** the server process's CPU µs per stored message over the load */
  readonly cpuPerMessage: number
  readonly loadBefore: number
  readonly loadAfter: number
}

export const benchSoak = async (): Promise<SoakResult> => {
  const bundle = await buildBundle()
  await adminSql(SERVER, `DROP DATABASE IF EXISTS ${DATABASE}`)
  await adminSql(SERVER, `CREATE DATABASE ${DATABASE}`)
  const url = new URL(SERVER)
  url.pathname = `/${DATABASE}`
  const env = { ...cleanEnv(), INBOX_DATABASE_URL: url.href, INBOX_INBOUND_SECRET: SECRET, INBOX_WEBHOOK_ALLOW_PRIVATE: "1", INBOX_RATE_LIMITS: "off" }
  let child: ChildProcess | undefined
  let delivered = 0
  const receiver = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      delivered++
      res.writeHead(204).end()
    })
  })
  try {
    // The bare server's idle figure, three times, on the same (migrated below) database.
    const bareIdle: Array<number> = []
    const { stdout } = await promisify(execFile)(process.execPath, [bundle, "org", "create", "--owner-email", "soak@example.com", "--verified", "--plan", "scale", "--json"], { env })
    const { api_key: key } = JSON.parse(stdout) as { api_key: string }
    for (let i = 0; i < 3; i++) bareIdle.push((await referencePostgres(url.href)).idle)

    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
    const hookPort = (receiver.address() as { port: number }).port
    const port = hookPort + 1
    child = spawn(process.execPath, [...NODE_ARGS, bundle, "serve", "--port", String(port), "--log-level", "warning"], { env, stdio: ["ignore", "pipe", "inherit"] })
    await healthy(port)(child)
    const base = `http://127.0.0.1:${port}`
    const call = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })
      if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
      return res.json() as Promise<Record<string, string>>
    }
    const inbox = await call("/v0/inboxes", {})
    await call("/v0/webhooks", { url: `http://127.0.0.1:${hookPort}/hook`, event_types: ["message.received"] })

    const raw = benchMessages[0]![1].toString("latin1")
    const loadBefore = loadavg()[0] ?? 0
    const rss: Array<number> = []
    let posted = 0
    let failed = 0
    const pending = new Set<Promise<void>>()
    const post = (n: number) => {
      const body = raw.replace("<bench-1@example.org>", `<soak-${process.pid}-${n}@example.org>`)
      const p = fetch(`${base}/inbound/raw?to=${encodeURIComponent(inbox["email"]!)}`, {
        method: "POST",
        headers: { "x-inbound-secret": SECRET, "content-type": "message/rfc822" },
        body
      }).then(async (res) => {
        await res.arrayBuffer()
        if (res.ok) posted++
        else failed++
      }, () => {
        failed++
      }).finally(() => pending.delete(p))
      pending.add(p)
    }
    const cpuBefore = cpuMs(child.pid)!
    const started = performance.now()
    const end = started + MINUTES * 60_000
    let next = started
    let nextSample = started + SAMPLE_MS
    let n = 0
    // Paced by the clock, so a slow answer does not lower the rate (the posts overlap).
    while (performance.now() < end) {
      post(n++)
      next += 1000 / RATE
      const now = performance.now()
      if (now >= nextSample) {
        rss.push(status(child.pid!).rss)
        nextSample += SAMPLE_MS
        console.error(`soak ${((now - started) / 60_000).toFixed(1)} min: RSS ${rss.at(-1)!.toFixed(0)} MiB, ${posted} stored, ${failed} failed, ${delivered} webhooks received`)
      }
      if (next > now) await sleep(next - now)
    }
    await Promise.all(pending)
    const cpuPerMessage = ((cpuMs(child.pid)! - cpuBefore) * 1000) / Math.max(1, posted)
    // Let the webhook deliveries catch up before counting them.
    for (let i = 0; i < 100 && delivered < posted; i++) await sleep(100)
    return { minutes: MINUTES, rate: RATE, rss, bareIdle, posted, failed, delivered, cpuPerMessage, loadBefore, loadAfter: loadavg()[0] ?? 0 }
  } finally {
    if (child !== undefined) {
      const exited = new Promise<void>((resolve) => child!.once("close", () => resolve()))
      child.kill("SIGTERM")
      await exited
    }
    receiver.close()
    await adminSql(SERVER, `DROP DATABASE IF EXISTS ${DATABASE}`)
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)

export const soakSection = (r: SoakResult) => {
  const bare = median(r.bareIdle)
  const peak = Math.max(...r.rss)
  const perMinute = Math.round(60_000 / SAMPLE_MS)
  const last5 = r.rss.slice(-5 * perMinute)
  const before5 = r.rss.slice(-10 * perMinute, -5 * perMinute)
  const rows = r.rss.filter((_, i) => (i + 1) % perMinute === 0).map((mib, i) => `| ${i + 1} | ${mib.toFixed(0)} |`)
  return [
    `\`inboxctl serve\` (the compiled bundle) on PostgreSQL receiving 5 KB messages over \`POST /inbound/raw\` at ${r.rate}/s for ${r.minutes} minutes, each firing a signed \`message.received\` webhook to a receiver on loopback; resident memory (VmRSS) sampled every ${SAMPLE_MS / 1000} s. Reference: the bare node:http + \`pg\` server's idle resident memory (bench/reference.ts, as in "Memory"), three starts in the same run. Goal (issue 29): at most ${GOAL}× the bare server.`,
    "",
    `Machine: ${machine()}; load average (1 min) ${r.loadBefore.toFixed(2)} at the start, ${r.loadAfter.toFixed(2)} at the end.`,
    "",
    `**Most resident ${peak.toFixed(0)} MiB against the bare server's ${bare.toFixed(0)} MiB idle (${r.bareIdle.map((x) => x.toFixed(0)).join(", ")}): ${(peak / bare).toFixed(2)}× (goal ${GOAL}×, ${peak / bare <= GOAL ? "met" : "not met"}).** Mean of the last five minutes ${mean(last5).toFixed(0)} MiB against ${before5.length > 0 ? `${mean(before5).toFixed(0)} MiB in the five before them` : "(run shorter than ten minutes)"}. ${r.posted.toLocaleString("en-US")} messages stored, ${r.failed} refused or failed, ${r.delivered.toLocaleString("en-US")} webhook deliveries received; the server spent ${Math.round(r.cpuPerMessage).toLocaleString("en-US")} µs of CPU per message${NODE_ARGS.length > 0 ? ` (Node flags: ${NODE_ARGS.join(" ")})` : ""}.`,
    "",
    "| minute | RSS MiB |",
    "|---:|---:|",
    ...rows
  ].join("\n")
}
