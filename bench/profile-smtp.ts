/**
 * `node --import tsx bench/profile-smtp.ts [seconds] [ours|reference] [size]`: drives the SMTP
 * load of `pnpm bench smtp` (8 connections, PostgreSQL; size 0, 1 or 2: the 5 KB, 32 KB or
 * 280 KB message, 5 KB by default) against one server and prints
 * the CPU each process spent per message (the server, PostgreSQL, the load generator). With
 * BENCH_CPU_PROF=1 it also profiles the server during the load and prints
 * where the time went, by kind of work, by place and by function, for the main thread and each
 * parsing worker (the reference too: its one thread). BENCH_SERVER_CWD=DIR
 * runs the server of another checkout (a worktree of an earlier commit, its dependencies
 * installed) under this harness, to compare code with code. BENCH_NODE_FLAGS adds Node flags to
 * the server's when it is not profiled (`--trace-gc`, with BENCH_SERVER_OUTPUT=FILE to keep them).
 * BENCH_VIA=http posts the messages to ours' `POST /inbound/raw` instead (bench/smtp.ts, loadInbound).
 */
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { summarise, table } from "./cpuprofile.ts"
import { spawnServer, stop } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { api, freshDatabase, load, loadInbound, openDns, publishSender, startOursBuilt } from "./smtp.ts"

const seconds = Number(process.argv[2] ?? "10")
const which = process.argv[3] ?? "ours"
const profileDir = process.env["BENCH_CPU_PROF"] === "1" ? mkdtempSync(join(tmpdir(), "inbox-profile-smtp-")) : undefined
const flags = profileDir === undefined ? (process.env["BENCH_NODE_FLAGS"] ?? "").split(" ").filter((f) => f !== "") : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--cpu-prof-interval=500"]

/** The groups of the inclusive table. The built server's code is its bundle's chunks: BENCH_OURS_SOURCE=1 names core's folders. */
const PLACES: Parameters<typeof summarise>[2] = {
  "smtp-server (protocol, replies)": (f) => f.url.includes("/smtp-server/"),
  "mailauth (SPF, DKIM, DMARC, ARC)": (f) => f.url.includes("/mailauth/"),
  "mailparser, mailsplit, libmime": (f) => /\/(mailparser|mailsplit|libmime|libbase64|libqp)\//.test(f.url),
  "@effect/sql-pg (driver)": (f) => f.url.includes("/@effect/sql-pg/"),
  "core/src/smtp": (f) => f.url.includes("/packages/core/src/smtp/"),
  "core/src/inbound": (f) => f.url.includes("/packages/core/src/inbound/"),
  "core/src/messages": (f) => f.url.includes("/packages/core/src/messages/"),
  "core/src/events": (f) => f.url.includes("/packages/core/src/events/"),
  "core/src/mail": (f) => f.url.includes("/packages/core/src/mail/")
}

/** The thread id in a profile's name (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`). */
const threadOf = (file: string) => Number(file.split(".").at(-3))

const via = process.env["BENCH_VIA"] === "http" && which === "ours" ? loadInbound : load

const main = async () => {
  const dns = await openDns()
  const privateKey = publishSender(dns.zone)
  const raw = benchMessages[Number(process.argv[4] ?? "0")]![1]
  const server = which === "reference"
    ? { ...(await spawnServer("bench/reference-smtp.ts", { REF_SMTP_PORT: "29526", REF_DNS_SERVER: dns.zone.server }, flags, (l) => l === "REFERENCE_READY" ? true : undefined)), port: 29526, to: "someone@inbox.localhost" }
    : await (async () => {
      const ours = await startOursBuilt({ INBOX_DATABASE_URL: await freshDatabase("inbox_bench_profile_smtp") }, dns.zone.server, process.env["BENCH_SERVER_CWD"], flags)
      return { ...ours, port: via === loadInbound ? 29501 : 29525, to: ((await api("POST", "/v0/inboxes", ours.keys[0]!, {})) as { email: string }).email }
    })()
  try {
    await via(server.port, server.to, raw, privateKey, 2)
    const q0 = dns.zone.queries()
    const w0 = Number(process.hrtime.bigint() / 1000n)
    const run = await via(server.port, server.to, raw, privateKey, seconds, server.child.pid)
    const w1 = Number(process.hrtime.bigint() / 1000n)
    console.log(`${which}: ${run.rate} msg/s, p50 ${run.p50} ms, p99 ${run.p99} ms, errors ${run.errors}; machine busy ${(run.busy * 100).toFixed(0)}%`)
    console.log(`  CPU µs per message: server ${run.cpu.server}, PostgreSQL ${run.cpu.postgres}, load generator ${run.cpu.client}`)
    console.log(`  bytes the server wrote per message (sockets and files): ${run.written ?? "-"}`)
    console.log(`  DNS queries per message: ${((dns.zone.queries() - q0) / (run.rate * seconds)).toFixed(2)}`)
    await stop(server.child)
    if (profileDir !== undefined) {
      // One profile per thread: the main thread's first, then the parsing workers' (their
      // thread ids are larger), each summarised over the same window.
      const files = readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile")).sort((a, b) => threadOf(a) - threadOf(b)).map((f) => join(profileDir, f))
      const n = run.rate * seconds
      for (const [i, file] of files.entries()) {
        const summary = summarise(file, [w0, w1], PLACES, 45)
        console.log(`\n## ${i === 0 ? "main thread" : `worker thread ${threadOf(file)}`}: ${(summary.ms * 1000 / n).toFixed(0)} µs per message\n`)
        console.log(table("inclusive (the fiber loop blurs these)", summary.inclusive, n))
        console.log(table("by kind of work", summary.byBucket, n))
        console.log(table("by place", summary.byPlace, n))
        console.log(table("by function (self)", summary.byFunction, n))
      }
    }
  } finally {
    await stop(server.child)
    await dns.close()
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
