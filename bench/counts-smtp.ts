/**
 * Load-independent counts of SMTP ingest on PostgreSQL (issue 29), as bench/counts.ts has for
 * the GET, for a machine too busy for CPU times to mean anything:
 *
 *   node --import tsx bench/counts-smtp.ts [ours|reference] [instructions|allocation|survivors] [messages] [sizes]
 *
 * `sizes`: indexes into bench/parse.ts's benchMessages, comma-separated (default 0,1,2: the
 * 5 KB, 32 KB and 280 KB messages). For each size, `messages` messages (default 200; the
 * 280 KB message a quarter of them) are sent over SMTP by 8 connections, as `pnpm bench smtp`
 * does (DKIM-signed once, SPF, DKIM and DMARC checked against a DNS server on loopback), after
 * a warm-up of BENCH_WARMUP_MESSAGES (default twice `messages`) the server runs uncounted.
 *
 * - `instructions`: the server runs under `valgrind --tool=callgrind --instr-atstart=no`;
 *   instrumentation is switched on and the counts zeroed after the warm-up, and dumped after
 *   the counted messages. Per message: the instructions of the main thread, the parsing
 *   workers and the garbage collector's helpers (`perMessage`); V8's optimising compilers'
 *   threads are printed apart (their share moves from run to run, as in counts.ts), and so
 *   is the garbage collector's (`gcPerMessage`: concurrent marking, sweeping, collections
 *   on the main thread, scavenges included, incremental marking steps): whether one or two major
 *   collections of the whole heap fall inside a window of a few hundred messages moved the
 *   total by a quarter or more from run to run, so code is compared on
 *   `perMessageWithoutGc` (and on bytes allocated, which drive the collector) first.
 * - `allocation`: the server runs with bench/heap-sampler.mjs preloaded: bytes allocated per
 *   message on the main thread (the sampling heap profiler sees the main isolate only, not
 *   the workers'), and the largest allocation sites.
 * - `survivors`: the server runs with `--trace-gc-nvp`: per message, the bytes its scavenges
 *   promoted to the old generation, on the main thread and in the parsing workers apart (each
 *   isolate's lines are told apart by their prefix; the main isolate is the first to collect),
 *   and the full collections in the window, as bench/survivors.ts counts for the GET. What a
 *   scavenge promotes, the next full collection marks; promoted bytes that no live object
 *   needs are kept by dead old objects (bench/PROFILE.md, "What the scavenges keep"). The
 *   reference then runs with ours' young generation.
 *
 * `ours` is our server (bench/server.ts, BENCH_SERVER_CWD for another checkout's) with the Node
 * flags `inboxctl serve` runs with (OURS_NODE_FLAGS, bench/http.ts; BENCH_OURS_NODE_FLAGS="" for
 * Node's defaults, as bench/PROFILE.md's first SMTP counts were taken); `reference`
 * is the storing reference (bench/reference-smtp.ts with REF_DATABASE_URL), writing into the
 * same database the rows of a delivery ours stored of the same size (bench/delivery-copy.ts);
 * our server then runs beside it, uncounted, only to store those template deliveries.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, renameSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"
import nodemailer from "nodemailer"
import pg from "pg"
import { spawnCounted } from "./counted.ts"
import { templateTables } from "./delivery-copy.ts"
import { type Flags, OURS_NODE_FLAGS, stop, waitHealthy } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { freshDatabase, openDns, publishSender, signedOnce } from "./smtp.ts"

const which = process.argv[2] ?? "ours"
const mode = process.argv[3] ?? "instructions"
const messages = Number(process.argv[4] ?? "200")
const sizes = (process.argv[5] ?? "0,1,2").split(",").map(Number)
const warmupOf = (n: number) => Number(process.env["BENCH_WARMUP_MESSAGES"] ?? String(2 * n))
const name = process.env["BENCH_DATABASE"] ?? "inbox_counts_smtp"
const httpPort = Number(process.env["BENCH_PORT"] ?? "29151")
const smtpPort = httpPort + 1
const refPort = httpPort + 2
const cwd = process.env["BENCH_SERVER_CWD"] === undefined ? process.cwd() : resolve(process.env["BENCH_SERVER_CWD"])
const dir = mkdtempSync(join(tmpdir(), "inbox-counts-smtp-"))
const CLIENTS = 8

/**
 * Starts `script` (from `from`), under valgrind or the heap sampler when `measured`; resolves
 * on the line `ready` accepts. Its output is read to the end (a pipe left full would stall
 * the server): `seen` waits for a line; BENCH_ECHO=1 echoes every line to stderr (with
 * BENCH_NODE_FLAGS=--trace-gc, say: node flags for the servers).
 */
const start = (script: string, env: Record<string, string>, ready: (line: string) => boolean, from: string, measured: boolean, nodeFlags: Flags = []) =>
  new Promise<{ child: ChildProcess; seen: (line: string) => Promise<void>; first: string }>((done, fail) => {
    const flags = [...nodeFlags, ...(measured && mode === "survivors" ? ["--trace-gc-nvp"] : []), ...(process.env["BENCH_NODE_FLAGS"] ?? "").split(" ").filter((f) => f !== "")]
    const child = spawnCounted(script, env, from, dir, measured && mode !== "survivors" ? mode as "instructions" | "allocation" : "plain", flags)
    child.once("exit", (code) => fail(new Error(`${script} exited with ${code}`)))
    const waiters = new Map<string, () => void>()
    const seen = (line: string) => new Promise<void>((r) => void waiters.set(line, r))
    let started = false
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.includes(" gc=")) {
        firstIsolate ??= isolate(line)
        return void collections.push(line)
      }
      if (process.env["BENCH_ECHO"] === "1") process.stderr.write(`${line}\n`)
      waiters.get(line)?.()
      waiters.delete(line)
      if (!started && ready(line)) {
        started = true
        done({ child, seen, first: line })
      }
    })
  })

/** `count` messages to `to` over CLIENTS connections, each with its own Message-ID; answers the failures. */
const send = async (port: number, to: string, signed: { head: Buffer; tail: Buffer }, count: number) => {
  let next = 0
  let failures = 0
  const tag = `${process.pid}.${Date.now()}`
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true, pool: true, maxConnections: 1, maxMessages: Infinity, socketTimeout: 600_000 })
    try {
      while (next < count) {
        next++
        const body = Buffer.concat([signed.head, Buffer.from(`<counts-${tag}-${next}@example.org>`, "latin1"), signed.tail])
        await transport.sendMail({ envelope: { from: "ann@example.org", to: [to] }, raw: body }).catch(() => failures++)
      }
    } finally {
      transport.close()
    }
  }))
  return failures
}

/** `--trace-gc-nvp`'s lines of the measured server, `[pid:isolate:n] ms: pause=… gc=s …`. */
const collections: Array<string> = []
const isolate = (line: string) => /^\[\d+:(0x[0-9a-f]+)/.exec(line)?.[1] ?? "?"
/** The main isolate collects first, while the server loads its modules. */
let firstIsolate: string | undefined
const nvp = (line: string, key: string) => Number(new RegExp(` ${key}=([0-9.]+)`).exec(line)?.[1] ?? NaN)

/** Ours' young generation, which the reference is given when scavenges are counted, so that both collect alike. */
const semiSpace = OURS_NODE_FLAGS.filter((f) => f.startsWith("--max-semi-space-size"))

const callgrind = (pid: number, ...args: Array<string>) => execFileSync("callgrind_control", [...args, String(pid)], { stdio: "pipe" }).toString()

const oursEnv = (url: string, dns: string) => ({
  INBOX_DATABASE_URL: url,
  INBOX_PORT: String(httpPort),
  INBOX_RATE_LIMITS: "off",
  INBOX_SMTP_LISTEN: `127.0.0.1:${smtpPort}`,
  INBOX_SMTP_MAX_CONNECTIONS: "1000",
  INBOX_SMTP_MESSAGES_PER_MINUTE: "100000000",
  INBOX_DNS_SERVERS: dns,
  INBOX_SECRET_KEY: "7b1e0f3c2a5d4e6f8091a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3",
  BENCH_TENANTS: "1"
})

interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

const main = async () => {
  const dns = await openDns()
  const privateKey = publishSender(dns.zone)
  const url = await freshDatabase(name)
  const children: Array<ChildProcess> = []
  try {
    const ours = await start("bench/server.ts", oursEnv(url, dns.zone.server), (l) => l.startsWith("BENCH_KEYS "), cwd, which === "ours", OURS_NODE_FLAGS)
    children.push(ours.child)
    await waitHealthy(httpPort)
    const key = (JSON.parse(ours.first.slice(11)) as { keys: Array<string> }).keys[0]!
    const inbox = await (await fetch(`http://127.0.0.1:${httpPort}/v0/inboxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}"
    })).json() as { email: string }
    const measured = which === "reference"
      ? await start("bench/reference-smtp.ts", { REF_SMTP_PORT: String(refPort), REF_DNS_SERVER: dns.zone.server, REF_DATABASE_URL: url }, (l) => l === "REFERENCE_READY", process.cwd(), true, mode === "survivors" ? semiSpace : [])
      : ours
    if (measured !== ours) children.push(measured.child)
    const port = which === "reference" ? refPort : smtpPort
    const pid = measured.child.pid!
    const results: Array<Record<string, unknown>> = []
    for (const index of sizes) {
      const [label, raw] = benchMessages[index]!
      const n = index === 2 ? Math.max(10, Math.round(messages / 4)) : messages
      const signed = await signedOnce(raw, privateKey)
      if (which === "reference") {
        // The template rows: a delivery of this size that ours stored.
        await send(smtpPort, inbox.email, signed, 1)
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        await client.query(templateTables("ref")).finally(() => client.end())
      }
      const warmFailures = await send(port, inbox.email, signed, index === 2 ? Math.max(10, Math.round(warmupOf(messages) / 4)) : warmupOf(messages))
      const head = { which, mode, message: label, bytes: raw.length, messages: n, warmFailures }
      if (mode === "instructions") {
        callgrind(pid, "--instr=on")
        callgrind(pid, "--zero")
        const failures = await send(port, inbox.email, signed, n)
        callgrind(pid, "--dump")
        callgrind(pid, "--instr=off")
        await new Promise((r) => setTimeout(r, 1000))
        // One file per dump (callgrind.out.PID.N); the newest is this size's.
        const files = readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${pid}.`))
          .sort((a, b) => Number(a.split(".").pop()) - Number(b.split(".").pop()))
        const file = join(dir, files[files.length - 1]!)
        const total = Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(file, "utf8"))?.[1] ?? 0)
        const annotated = execFileSync("callgrind_annotate", ["--inclusive=yes", file], { maxBuffer: 1 << 28 }).toString()
        const inclusive = (fn: string) => Number(new RegExp(`^\\s*([\\d,]+) \\([^)]*\\)\\s+\\?\\?\\?:${fn}`, "m").exec(annotated)?.[1]?.replaceAll(",", "") ?? 0)
        const compilers = inclusive("v8::internal::OptimizingCompileTaskExecutor::CompileTask::Run") +
          inclusive("v8::internal::maglev::MaglevConcurrentDispatcher::JobTask::Run")
        const gc = inclusive("v8::internal::ConcurrentMarking::JobTaskMajor::Run") + inclusive("v8::internal::Sweeper::MajorSweeperJob::Run") +
          inclusive("v8::internal::Heap::CollectGarbage\\(") + inclusive("v8::internal::IncrementalMarking::Step\\(")
        const line = {
          ...head,
          failures,
          instructions: total,
          compilerThreads: compilers,
          perMessage: Math.round((total - compilers) / n),
          gcPerMessage: Math.round(gc / n),
          perMessageWithoutGc: Math.round((total - compilers - gc) / n),
          perMessageWithCompilers: Math.round(total / n),
          file
        }
        console.log(JSON.stringify(line))
        results.push(line)
      } else if (mode === "syscalls") {
        const out = join(dir, `strace-${index}.txt`)
        const tracer = spawn("strace", ["-c", "-f", "-o", out, "-p", String(pid)], { stdio: "ignore" })
        await new Promise((r) => setTimeout(r, 1000))
        const failures = await send(port, inbox.email, signed, n)
        tracer.kill("SIGINT")
        await new Promise((r) => tracer.once("exit", r))
        const table = readFileSync(out, "utf8")
        const calls = table.split("\n").flatMap((l) => {
          const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(l)
          return m === null || m[2] === "total" ? [] : [[m[2]!, Number(m[1])] as const]
        })
        const total = calls.reduce((s, [, c]) => s + c, 0)
        const line = {
          ...head,
          failures,
          perMessage: Number((total / n).toFixed(1)),
          top: Object.fromEntries(calls.sort((a, b) => b[1] - a[1]).slice(0, 10).map(([k, c]) => [k, Number((c / n).toFixed(2))]))
        }
        console.log(JSON.stringify(line))
        results.push(line)
      } else if (mode === "survivors") {
        collections.length = 0
        const failures = await send(port, inbox.email, signed, n)
        await new Promise((r) => setTimeout(r, 200))
        const main = firstIsolate
        const sum = (lines: Array<string>, key: string) => lines.reduce((s, l) => s + nvp(l, key), 0)
        const scavenges = collections.filter((l) => l.includes(" gc=s "))
        const ofMain = scavenges.filter((l) => isolate(l) === main)
        const ofWorkers = scavenges.filter((l) => isolate(l) !== main)
        const full = collections.filter((l) => l.includes(" gc=mc ") && isolate(l) === main)
        const line = {
          ...head,
          failures,
          perMessage: Math.round(sum(ofMain, "promoted") / n),
          workersPerMessage: Math.round(sum(ofWorkers, "promoted") / n),
          scavenges: ofMain.length,
          meanScavengeMs: ofMain.length === 0 ? 0 : Number((sum(ofMain, "pause") / ofMain.length).toFixed(2)),
          fullCollections: full.length,
          fullCollectionMs: Number(sum(full, "pause").toFixed(1))
        }
        console.log(JSON.stringify(line))
        results.push(line)
      } else {
        const sampling = measured.seen("HEAP_SAMPLE_STARTED")
        process.kill(pid, "SIGUSR2")
        await sampling
        const failures = await send(port, inbox.email, signed, n)
        const written = measured.seen("HEAP_SAMPLE_WRITTEN")
        process.kill(pid, "SIGUSR2")
        await written
        const heapFile = join(dir, `heap-${index}.json`)
        renameSync(join(dir, "heap.json"), heapFile)
        const profile = JSON.parse(readFileSync(heapFile, "utf8")) as { head: HeapNode }
        const sites = new Map<string, number>()
        let total = 0
        const walk = (node: HeapNode) => {
          const f = node.callFrame
          const here = `${f.functionName || "(anonymous)"} ${f.url.replace(/.*node_modules\//, "").replace(/.*packages\//, "")}:${f.lineNumber + 1}`
          total += node.selfSize
          if (node.selfSize > 0) sites.set(here, (sites.get(here) ?? 0) + node.selfSize)
          for (const c of node.children) walk(c)
        }
        walk(profile.head)
        const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env["BENCH_TOP"] ?? "25"))
        console.log(`${label}:`)
        for (const [site, bytes] of top) console.log(`${String(Math.round(bytes / n)).padStart(9)} B/msg  ${site}`)
        const line = { ...head, failures, allocated: total, perMessage: Math.round(total / n) }
        console.log(JSON.stringify(line))
        results.push(line)
      }
    }
    const cell = (v: unknown) => v === undefined ? "-" : Number(v).toLocaleString("en-US")
    if (mode === "survivors") {
      console.log(`\n| message | ${which}: bytes promoted per message, main thread | in the parsing workers | scavenges, mean pause ms | full collections, ms |\n|---|---:|---:|---:|---:|`)
      for (const r of results) console.log(`| ${r["message"]} | ${cell(r["perMessage"])} | ${cell(r["workersPerMessage"])} | ${r["scavenges"]}, ${r["meanScavengeMs"]} | ${r["fullCollections"]}, ${r["fullCollectionMs"]} |`)
    } else {
      console.log(`\n| message | ${which} ${mode} per message | without the GC | the GC |\n|---|---:|---:|---:|`)
      for (const r of results) console.log(`| ${r["message"]} | ${cell(r["perMessage"])} | ${cell(r["perMessageWithoutGc"])} | ${cell(r["gcPerMessage"])} |`)
    }
  } finally {
    for (const c of children.reverse()) await stop(c)
    await dns.close()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
