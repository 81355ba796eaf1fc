/**
 * Webhook delivery benchmark (issue 8), on PostgreSQL and PGlite, each round ours then the
 * bare reference (bench/reference-webhooks.ts) interleaved, to one receiver on loopback in
 * this process (node:http; it answers 204 and checks one delivery in 20 with the
 * `standardwebhooks` package):
 *
 * - backlog: the job worker stopped, N `message.received` events are recorded (as inbound
 *   mail writes them: the event, its delivery row and durable job, with inbound mail's group
 *   commit, so events made at once share a transaction), then the worker is started; deliveries/s is N over the
 *   time from the start to the last receipt. The reference signs and POSTs N envelopes
 *   made at once, with our per-endpoint concurrency (8).
 * - paced: the worker running, events recorded at a steady R a second; latency is the
 *   event's `created_at` (set before its transaction commits) to its receipt. The
 *   reference makes an envelope every 1/R s (its `created_at` then) and sends it.
 *
 * Env: BENCH_WEBHOOK_EVENTS (10,000 per backlog), BENCH_WEBHOOK_RATE (1,000/s),
 * BENCH_WEBHOOK_SECONDS (5, paced), BENCH_WEBHOOK_ROUNDS (3), BENCH_POSTGRES_URL,
 * BENCH_SKIP_PGLITE=1.
 *
 * The WebSocket fan-out (`pnpm bench websocket`, below): BENCH_WS_SUBSCRIBERS (1,000),
 * inbound posts at BENCH_WS_RATE (20/s) for BENCH_WS_SECONDS (10) a round, BENCH_WS_ROUNDS (3).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { Webhook } from "standardwebhooks"
import { adminSql } from "@inbox/testkit"
import { cpuMs, medianOf, stop, waitHealthy } from "./http.ts"
import { machine } from "./report.ts"

const EVENTS = Number(process.env["BENCH_WEBHOOK_EVENTS"] ?? "10000")
const RATE = Number(process.env["BENCH_WEBHOOK_RATE"] ?? "1000")
const SECONDS = Number(process.env["BENCH_WEBHOOK_SECONDS"] ?? "5")
const ROUNDS = Number(process.env["BENCH_WEBHOOK_ROUNDS"] ?? "3")
const PORT = Number(process.env["BENCH_WEBHOOK_PORT"] ?? "29401")
export const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
/** Our per-endpoint concurrency (webhooks/Delivery.ts ENDPOINT_CONCURRENCY), given to the reference. */
const CONCURRENCY = 8
const VERIFY_EVERY = 20

/** A child process driven by JSON lines on stdin, answering `WORD {json}` lines on stdout. */
export interface Child {
  readonly process: ChildProcess
  send(command: unknown): void
  /** The next line starting with `word`, its JSON part parsed. */
  next<A>(word: string): Promise<A>
}

export const spawnChild = (script: string, env: Record<string, string>, flags: ReadonlyArray<string> = []): Child => {
  const child = spawn(process.execPath, [...flags, "--import", "tsx", script], {
    env: { ...process.env, ...env, NODE_ENV: "production" },
    stdio: ["pipe", "pipe", "inherit"]
  })
  child.setMaxListeners(0)
  const waiting: Array<{ word: string; resolve: (a: any) => void }> = []
  const early: Array<string> = []
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const i = waiting.findIndex((w) => line.startsWith(w.word))
    if (i < 0) return void early.push(line)
    const [w] = waiting.splice(i, 1)
    const rest = line.slice(w!.word.length).trim()
    w!.resolve(rest === "" ? undefined : JSON.parse(rest))
  })
  return {
    process: child,
    send: (command) => child.stdin!.write(`${JSON.stringify(command)}\n`),
    next: (word) =>
      new Promise((resolve, reject) => {
        const j = early.findIndex((l) => l.startsWith(word))
        if (j >= 0) {
          const rest = early.splice(j, 1)[0]!.slice(word.length).trim()
          return resolve(rest === "" ? undefined : JSON.parse(rest))
        }
        waiting.push({ word, resolve })
        child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)))
      })
  }
}

export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN

/** The receiver: counts distinct `webhook-id`s, times each from the envelope's `created_at`, verifies a sample. */
const receiver = (port: number) => {
  let verifier: Webhook | undefined
  let ids = new Set<string>()
  let latencies: Array<number> = []
  let target = 0
  let last = 0
  let repeats = 0
  let verified = 0
  let badSignatures = 0
  let template: string | undefined
  let done: (() => void) | undefined
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const at = Date.now()
      const body = Buffer.concat(chunks).toString("utf8")
      const id = String(req.headers["webhook-id"])
      res.writeHead(204).end()
      if (ids.has(id)) return void repeats++
      ids.add(id)
      template ??= body
      if (verifier !== undefined && ids.size % VERIFY_EVERY === 1) {
        try {
          verifier.verify(body, req.headers as Record<string, string>)
          verified++
        } catch {
          badSignatures++
        }
      }
      // From the moment the event was made (the first `timestamp` in the envelope: its
      // thread's or its message's, made together), so the wait for its group commit counts too.
      // The durable reference sends jsonb's text, which writes a space after each colon.
      const created = /"timestamp": ?"([^"]+)"/.exec(body)?.[1]
      if (created !== undefined) latencies.push(at - Date.parse(created))
      last = at
      if (ids.size >= target && done !== undefined) {
        const d = done
        done = undefined
        d()
      }
    })
  })
  return {
    listen: () => new Promise<void>((r) => server.listen(port, "127.0.0.1", r)),
    close: () => new Promise<void>((r) => server.close(() => r())),
    setSecret: (secret: string) => void (verifier = new Webhook(secret)),
    template: () => template,
    /** Resets the counts and answers when `n` distinct deliveries have arrived. */
    expect: (n: number) => {
      ids = new Set()
      latencies = []
      target = n
      repeats = 0
      return new Promise<{ last: number; latencies: Array<number>; repeats: number }>((resolve) => {
        done = () => resolve({ last, latencies, repeats })
      })
    },
    checks: () => ({ verified, badSignatures })
  }
}

export interface Delivery {
  readonly perSecond: number
  /** CPU time (user + system) of the sending process per delivery, in microseconds. */
  readonly cpuUs?: number
  readonly p50?: number
  readonly p99?: number
}

interface WebhookRound {
  /** `durable`: the durable reference (bench/reference-webhooks-durable.ts), on PostgreSQL only. */
  readonly backlog: { readonly ours: Delivery; readonly reference: Delivery; readonly durable?: Delivery }
  readonly paced: { readonly ours: Delivery; readonly reference: Delivery; readonly durable?: Delivery }
  readonly load: number
}

export interface WebhookFigures {
  readonly storage: string
  readonly rounds: ReadonlyArray<WebhookRound>
  readonly verified: number
  readonly badSignatures: number
  readonly repeats: number
}

const round1 = (n: number) => Math.round(n * 10) / 10

const latency = (perSecond: number, xs: Array<number>): Delivery => {
  xs.sort((a, b) => a - b)
  return { perSecond: Math.round(perSecond), p50: percentile(xs, 0.5), p99: percentile(xs, 0.99) }
}

export const startEventsServer = async (env: Record<string, string>, port: number, flags: ReadonlyArray<string> = []) => {
  const child = spawnChild("bench/webhooks-server.ts", {
    INBOX_RATE_LIMITS: "off",
    INBOX_WEBHOOK_ALLOW_PRIVATE: "1",
    ...env,
    INBOX_PORT: String(port)
  }, flags)
  const { keys, organization } = await child.next<{ keys: Array<string>; organization: string }>("BENCH_KEYS")
  await waitHealthy(port)
  const base = `http://127.0.0.1:${port}`
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys[0]}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return await res.json() as Record<string, any>
  }
  const inbox = await post("/v0/inboxes", {})
  const target = { organization, pod: inbox["pod_id"] as string, inbox: inbox["inbox_id"] as string }
  return { child, key: keys[0]!, base, post, target }
}

const benchOne = async (storage: string, env: Record<string, string>): Promise<WebhookFigures> => {
  const hook = receiver(PORT + 1)
  await hook.listen()
  const ours = await startEventsServer(env, PORT, (process.env["BENCH_WEBHOOK_FLAGS"] ?? "").split(" ").filter((f) => f !== ""))
  let reference: Child | undefined
  let durable: Child | undefined
  try {
    const webhook = await ours.post("/v0/webhooks", { url: `http://127.0.0.1:${PORT + 1}/hook`, event_types: ["message.received"] })
    hook.setSecret(webhook["secret"] as string)
    reference = spawnChild("bench/reference-webhooks.ts", {
      REF_URL: `http://127.0.0.1:${PORT + 1}/hook`,
      REF_SECRET: webhook["secret"] as string,
      REF_CONCURRENCY: String(CONCURRENCY)
    })
    await reference.next("REFERENCE_READY")
    // The durable reference keeps its rows in our server's own PostgreSQL database.
    if (env["INBOX_DATABASE_URL"] !== undefined) {
      durable = spawnChild("bench/reference-webhooks-durable.ts", {
        REF_URL: `http://127.0.0.1:${PORT + 1}/hook`,
        REF_SECRET: webhook["secret"] as string,
        REF_CONCURRENCY: String(CONCURRENCY),
        REF_DATABASE_URL: env["INBOX_DATABASE_URL"]
      })
      await durable.next("REFERENCE_READY")
    }
    const record = async (n: number, rate: number) => {
      ours.child.send({ cmd: "record", n, rate, ...ours.target })
      return await ours.child.next<{ ms: number }>("RECORDED")
    }
    const worker = async (on: boolean) => {
      ours.child.send({ cmd: "worker", on })
      return (await ours.child.next<{ at: number }>("WORKER")).at
    }
    // Warm-up of both, unmeasured.
    const warm = hook.expect(500)
    await worker(true)
    await record(500, 0)
    await warm
    await worker(false)
    reference.send({ cmd: "template", body: hook.template() })
    await reference.next("TEMPLATE")
    const refWarm = hook.expect(500)
    reference.send({ cmd: "backlog", n: 500 })
    await reference.next("DONE")
    await refWarm
    if (durable !== undefined) {
      durable.send({ cmd: "template", body: hook.template() })
      await durable.next("TEMPLATE")
      const durableWarm = hook.expect(500)
      durable.send({ cmd: "backlog", n: 500 })
      await durable.next("DONE")
      await durableWarm
    }

    const rounds: Array<WebhookRound> = []
    let repeats = 0
    for (let r = 0; r < ROUNDS; r++) {
      const load = loadavg()[0]!
      // Backlog, ours: recorded with the worker stopped, then released.
      await record(EVENTS, 0)
      const oursBacklog = hook.expect(EVENTS)
      const cpu0 = cpuMs(ours.child.process.pid)!
      const released = await worker(true)
      const a = await oursBacklog
      const oursCpu = Math.round(((cpuMs(ours.child.process.pid)! - cpu0) * 1000) / EVENTS)
      repeats += a.repeats
      // Backlog, the reference.
      const refBacklog = hook.expect(EVENTS)
      const cpu1 = cpuMs(reference.process.pid)!
      reference.send({ cmd: "backlog", n: EVENTS })
      const refStart = (await reference.next<{ start: number }>("DONE")).start
      const b = await refBacklog
      const refCpu = Math.round(((cpuMs(reference.process.pid)! - cpu1) * 1000) / EVENTS)
      // Paced, ours (the worker still running), then the reference.
      const n = RATE * SECONDS
      const oursPaced = hook.expect(n)
      await record(n, RATE)
      const c = await oursPaced
      repeats += c.repeats
      await worker(false)
      const refPaced = hook.expect(n)
      reference.send({ cmd: "paced", n, rate: RATE })
      await reference.next("DONE")
      const d = await refPaced
      // The durable reference: its backlog, then paced, as ours.
      let durableRound: { backlog: Delivery; paced: Delivery } | undefined
      if (durable !== undefined) {
        const durBacklog = hook.expect(EVENTS)
        const cpu2 = cpuMs(durable.process.pid)!
        durable.send({ cmd: "backlog", n: EVENTS })
        const durStart = (await durable.next<{ start: number }>("DONE")).start
        const e = await durBacklog
        const durCpu = Math.round(((cpuMs(durable.process.pid)! - cpu2) * 1000) / EVENTS)
        const durPaced = hook.expect(n)
        durable.send({ cmd: "paced", n, rate: RATE })
        await durable.next("DONE")
        const f = await durPaced
        durableRound = { backlog: { perSecond: Math.round((EVENTS * 1000) / (e.last - durStart)), cpuUs: durCpu }, paced: latency(RATE, f.latencies) }
      }
      const round: WebhookRound = {
        backlog: {
          ours: { perSecond: Math.round((EVENTS * 1000) / (a.last - released)), cpuUs: oursCpu },
          reference: { perSecond: Math.round((EVENTS * 1000) / (b.last - refStart)), cpuUs: refCpu },
          ...(durableRound === undefined ? {} : { durable: durableRound.backlog })
        },
        paced: { ours: latency(RATE, c.latencies), reference: latency(RATE, d.latencies), ...(durableRound === undefined ? {} : { durable: durableRound.paced }) },
        load
      }
      console.error(`webhooks ${storage} round ${r + 1}: backlog ours ${round.backlog.ours.perSecond}/s (${round.backlog.ours.cpuUs} µs CPU each), reference ${round.backlog.reference.perSecond}/s (${round.backlog.reference.cpuUs} µs); paced ${RATE}/s ours p50 ${round.paced.ours.p50} p99 ${round.paced.ours.p99} ms, reference p50 ${round.paced.reference.p50} p99 ${round.paced.reference.p99} ms${
        round.paced.durable === undefined ? "" : `; durable reference backlog ${round.backlog.durable!.perSecond}/s, paced p50 ${round.paced.durable.p50} p99 ${round.paced.durable.p99} ms`
      }; load ${load.toFixed(2)}`)
      rounds.push(round)
    }
    return { storage, rounds, ...hook.checks(), repeats }
  } finally {
    if (reference !== undefined) await stop(reference.process)
    if (durable !== undefined) await stop(durable.process)
    await stop(ours.child.process)
    await hook.close()
  }
}

/** One benchmark on a fresh PostgreSQL database (`name`), then on PGlite in a temporary folder. */
const onBoth = async <A>(name: string, bench: (storage: string, env: Record<string, string>) => Promise<A>): Promise<ReadonlyArray<A>> => {
  const figures: Array<A> = []
  try {
    await adminSql(SERVER, `DROP DATABASE IF EXISTS ${name}`)
    await adminSql(SERVER, `CREATE DATABASE ${name}`)
    figures.push(await bench("PostgreSQL", { INBOX_DATABASE_URL: SERVER.replace(/\/[^/]*$/, `/${name}`) }))
  } catch (error) {
    console.error(`PostgreSQL run failed or unreachable at ${SERVER}: ${String(error)}`)
  }
  if (process.env["BENCH_SKIP_PGLITE"] !== "1") {
    const dir = mkdtempSync(join(tmpdir(), `${name}-`))
    try {
      figures.push(await bench("PGlite", { INBOX_DATA_DIR: join(dir, "data") }))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return figures
}

export const benchWebhooks = () => onBoth("inbox_bench_webhooks", benchOne)

const median = (xs: ReadonlyArray<number | undefined>) => medianOf(xs.filter((x): x is number => x !== undefined))
const ratio = (a: number, b: number) => (b === 0 ? NaN : Math.round((a / b) * 100) / 100)

export const webhooksSection = (figures: ReadonlyArray<WebhookFigures>): string => {
  const lines = [
    `Machine: ${machine()}; ${new Date().toISOString().slice(0, 10)}.`,
    "",
    `Signed webhook deliveries (issue 8) to one receiver on loopback (node:http in the benchmark's process, answering 204, checking one delivery in ${VERIFY_EVERY} with the \`standardwebhooks\` package). Events are \`message.received\` envelopes of about 2 KB recorded by the server's own Events as inbound mail writes them (the event, its delivery row and durable job, the signals), with inbound mail's group commit: events made while a transaction runs share the next one (32 at most). **Backlog**: ${EVENTS.toLocaleString("en-US")} events recorded with the job worker stopped, then the worker started; deliveries/s over the time from its start to the last receipt. **Paced**: the worker running, events recorded at ${RATE.toLocaleString("en-US")}/s for ${SECONDS} s; latency from the moment the event is made (its message's \`timestamp\`, before it waits for its transaction) to its receipt. The reference (bench/reference-webhooks.ts, its own process) signs the same envelopes (HMAC-SHA256, Standard Webhooks) and POSTs them over keep-alive connections, ${CONCURRENCY} at a time (our per-endpoint limit), storing nothing; its paced latency runs from the moment it makes an envelope. On PostgreSQL a durable reference runs too (bench/reference-webhooks-durable.ts): each event committed with its delivery row and a NOTIFY in one transaction, a worker claiming rows with \`FOR UPDATE SKIP LOCKED\`, signing, POSTing 8 at a time and marking each delivered, in the server's own database; its latency runs from the moment it makes an event, before its transaction. Rounds are ours, then the bare reference, then the durable one. CPU per delivery is the sending process's (ours: the server, which on PGlite includes the database; PostgreSQL's own processes are not counted). Goal: 2,000 deliveries/s with p99 under 100 ms.`,
    ""
  ]
  for (const f of figures) {
    lines.push(`### ${f.storage}`, "")
    const withDurable = f.rounds.some((r) => r.paced.durable !== undefined)
    const dur = (d: Delivery | undefined, pick: (d: Delivery) => string) => (d === undefined ? "—" : pick(d))
    lines.push(`| round | load (1 min) | backlog ours/s | backlog reference/s | ratio | CPU µs per delivery, ours / reference | paced ours p50 / p99 ms | paced reference p50 / p99 ms |${withDurable ? " durable reference backlog/s | durable reference paced p50 / p99 ms |" : ""}`)
    lines.push(`|---|---|---|---|---|---|---|---|${withDurable ? "---|---|" : ""}`)
    f.rounds.forEach((r, i) =>
      lines.push(`| ${i + 1} | ${r.load.toFixed(2)} | ${r.backlog.ours.perSecond.toLocaleString("en-US")} | ${r.backlog.reference.perSecond.toLocaleString("en-US")} | ${ratio(r.backlog.ours.perSecond, r.backlog.reference.perSecond)} | ${r.backlog.ours.cpuUs} / ${r.backlog.reference.cpuUs} | ${round1(r.paced.ours.p50!)} / ${round1(r.paced.ours.p99!)} | ${round1(r.paced.reference.p50!)} / ${round1(r.paced.reference.p99!)} |${
        withDurable ? ` ${dur(r.backlog.durable, (d) => d.perSecond.toLocaleString("en-US"))} | ${dur(r.paced.durable, (d) => `${round1(d.p50!)} / ${round1(d.p99!)}`)} |` : ""
      }`)
    )
    const oursRate = median(f.rounds.map((r) => r.backlog.ours.perSecond))
    const refRate = median(f.rounds.map((r) => r.backlog.reference.perSecond))
    const p99 = median(f.rounds.map((r) => r.paced.ours.p99))
    const refP99 = median(f.rounds.map((r) => r.paced.reference.p99))
    lines.push(
      "",
      `Median: **${oursRate.toLocaleString("en-US")} deliveries/s** (reference ${refRate.toLocaleString("en-US")}/s, ratio ${ratio(oursRate, refRate)}); at ${RATE.toLocaleString("en-US")} events/s **p50 ${round1(median(f.rounds.map((r) => r.paced.ours.p50)))} ms, p99 ${round1(p99)} ms** (reference ${round1(median(f.rounds.map((r) => r.paced.reference.p50)))} / ${round1(refP99)} ms). Signatures checked (one in ${VERIFY_EVERY}, ours and the reference's): ${f.verified}, bad: ${f.badSignatures}; repeated deliveries of ours: ${f.repeats}. Goal ${oursRate >= 2000 && p99 < 100 ? "met" : "not met"}.${
        withDurable
          ? ` Against the durable reference (p99 ${round1(median(f.rounds.map((r) => r.paced.durable?.p99)))} ms): p99 ratio ${ratio(p99, median(f.rounds.map((r) => r.paced.durable?.p99)))} (goal ≤ 1.5), and ${ratio(p99, refP99)} against the bare one (goal ≤ 10).`
          : ""
      }${median(f.rounds.map((r) => r.paced.ours.p50)) > 1000 ? ` A paced p50 of seconds means the server did not keep up with recording and delivering ${RATE.toLocaleString("en-US")} events/s on this machine at this load: the queue grew through the run, and the latency is mostly waiting in it.` : ""}`,
      ""
    )
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------
// WebSocket fan-out

const SUBSCRIBERS = Number(process.env["BENCH_WS_SUBSCRIBERS"] ?? "1000")
const WS_ROUNDS = Number(process.env["BENCH_WS_ROUNDS"] ?? "3")
const WS_RATE = Number(process.env["BENCH_WS_RATE"] ?? "20")
const WS_SECONDS = Number(process.env["BENCH_WS_SECONDS"] ?? "10")
const WS_SECRET = "bench-inbound-secret"

interface FanOut {
  /** Frames received, of events × subscribers. */
  readonly received: number
  readonly p50: number
  readonly p99: number
  /** Per event, the time until its last subscriber had it; p99 over events. */
  readonly allP99: number
}

export interface WebSocketFigures {
  readonly storage: string
  readonly subscribers: number
  readonly rounds: ReadonlyArray<{
    readonly ours: FanOut
    readonly reference: FanOut
    /** Inbound posts that made ours' events: sent, and refused or reset. */
    readonly posts: { readonly sent: number; readonly failed: number }
    readonly load: number
  }>
  /** Server RSS growth per connection, bytes (after a garbage collection); heap growth beside it. */
  readonly bytesPerConnection: { readonly ours: number; readonly reference: number; readonly oursHeap: number; readonly referenceHeap: number }
}

/** Asks the subscribers to collect `n` events each; the answer comes once they have them (or time is up). */
const collect = (clients: Child, n: number) => {
  clients.send({ cmd: "collect", n })
  return clients.next<{ received: number; latencies: Array<number>; lastByEvent: Array<number> }>("FRAMES").then(({ received, latencies, lastByEvent }): FanOut => {
    latencies.sort((a, b) => a - b)
    lastByEvent.sort((a, b) => a - b)
    return { received, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), allP99: percentile(lastByEvent, 0.99) }
  })
}

const memory = async (child: Child) => {
  child.send({ cmd: "memory" })
  return await child.next<{ rss: number; heapUsed: number }>("MEMORY")
}

/** A short inbound message with its own Message-ID: one `message.received` event each. */
const inboundMail = (to: string, i: number) =>
  [
    "From: Customer <customer@example.com>",
    `To: ${to}`,
    `Subject: Order #${10000 + i}: question about delivery`,
    `Message-ID: <ws-bench-${Date.now()}-${i}@example.com>`,
    `Date: ${new Date().toUTCString()}`,
    "Content-Type: text/plain; charset=utf-8",
    "",
    "Hello, I ordered last week and would like to know when the parcel will arrive. Thanks!",
    ""
  ].join("\r\n")

/**
 * `n` inbound posts to `/inbound/raw`, `rate` a second, each sent at its time whatever the
 * ones before it are doing. Counts the posts refused or reset: with subscribers holding as
 * many connections as HTTP's cap, none may be (the WebSockets have a cap of their own).
 */
const postInbound = async (base: string, to: string, n: number, rate: number) => {
  const start = Date.now()
  let failed = 0
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    const wait = start + (i * 1000) / rate - Date.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    try {
      const res = await fetch(`${base}/inbound/raw?to=${encodeURIComponent(to)}`, {
        method: "POST",
        headers: { "x-inbound-secret": WS_SECRET, "content-type": "message/rfc822" },
        body: inboundMail(to, i)
      })
      await res.arrayBuffer()
      if (!res.ok) failed++
    } catch {
      failed++
    }
  }))
  return { sent: n, failed }
}

const benchSockets = async (storage: string, env: Record<string, string>): Promise<WebSocketFigures> => {
  const port = PORT + 10
  // HTTP keeps its default cap (1,000 connections) while the subscribers hold as many of their own.
  const ours = await startEventsServer({
    ...env,
    INBOX_MAX_WEBSOCKETS: String(SUBSCRIBERS),
    INBOX_MAX_WEBSOCKETS_PER_KEY: String(SUBSCRIBERS),
    INBOX_INBOUND_SECRET: WS_SECRET
  }, port, ["--expose-gc"])
  const reference = spawnChild("bench/reference-ws.ts", { REF_PORT: String(port + 1) }, ["--expose-gc"])
  const children: Array<Child> = []
  try {
    await reference.next("REFERENCE_READY")
    const connect = async (url: string, subscribe?: string) => {
      const clients = spawnChild("bench/ws-clients.ts", { WS_URL: url, WS_COUNT: String(SUBSCRIBERS), ...(subscribe === undefined ? {} : { WS_SUBSCRIBE: subscribe }) })
      children.push(clients)
      const { connected } = await clients.next<{ connected: number }>("READY")
      if (connected !== SUBSCRIBERS) throw new Error(`only ${connected} subscribers connected`)
      return clients
    }
    const to = (await ours.post("/v0/inboxes", {}))["email"] as string
    const before = await memory(ours.child)
    const oursClients = await connect(`ws://127.0.0.1:${port}/v0/websocket?api_key=${ours.key}`, JSON.stringify({ type: "subscribe", event_types: ["message.received"] }))
    const after = await memory(ours.child)
    const refBefore = await memory(reference)
    const refClients = await connect(`ws://127.0.0.1:${port + 1}`, JSON.stringify({ type: "subscribe" }))
    const refAfter = await memory(reference)
    console.error(`websocket ${storage}: ${SUBSCRIBERS} subscribers each; RSS ours ${before.rss} -> ${after.rss}, reference ${refBefore.rss} -> ${refAfter.rss}`)
    // Warm-up, unmeasured: one event each; our first frame is the reference's template.
    const warm = collect(oursClients, 1)
    await postInbound(ours.base, to, 1, WS_RATE)
    await warm
    oursClients.send({ cmd: "sample" })
    const { text } = await oursClients.next<{ text: string }>("SAMPLE")
    const refWarm = collect(refClients, 1)
    reference.send({ cmd: "publish", body: text })
    await reference.next("PUBLISHED")
    await refWarm
    const n = WS_RATE * WS_SECONDS
    const rounds: Array<WebSocketFigures["rounds"][number]> = []
    for (let r = 0; r < WS_ROUNDS; r++) {
      const load = loadavg()[0]!
      const oursFrames = collect(oursClients, n)
      const posts = await postInbound(ours.base, to, n, WS_RATE)
      const a = await oursFrames
      const refFrames = collect(refClients, n)
      reference.send({ cmd: "paced", body: text, n, rate: WS_RATE })
      await reference.next("PUBLISHED")
      const b = await refFrames
      console.error(`websocket ${storage} round ${r + 1}: ${n} events at ${WS_RATE}/s; ours ${a.received} frames p50 ${a.p50} p99 ${a.p99} ms, all reached p99 ${a.allP99} ms (${posts.failed} of ${posts.sent} posts failed); reference ${b.received} frames p50 ${b.p50} p99 ${b.p99} ms, all reached p99 ${b.allP99} ms; load ${load.toFixed(2)}`)
      rounds.push({ ours: a, reference: b, posts, load })
    }
    return {
      storage,
      subscribers: SUBSCRIBERS,
      rounds,
      bytesPerConnection: {
        ours: Math.round((after.rss - before.rss) / SUBSCRIBERS),
        reference: Math.round((refAfter.rss - refBefore.rss) / SUBSCRIBERS),
        oursHeap: Math.round((after.heapUsed - before.heapUsed) / SUBSCRIBERS),
        referenceHeap: Math.round((refAfter.heapUsed - refBefore.heapUsed) / SUBSCRIBERS)
      }
    }
  } finally {
    for (const c of children) await stop(c.process)
    await stop(reference.process)
    await stop(ours.child.process)
  }
}

export const benchWebSocket = () => onBoth("inbox_bench_websocket", benchSockets)

const kib = (bytes: number) => (bytes / 1024).toFixed(1)

export const webSocketSection = (figures: ReadonlyArray<WebSocketFigures>): string => {
  const n = WS_RATE * WS_SECONDS
  const lines = [
    `Machine: ${machine()}; ${new Date().toISOString().slice(0, 10)}.`,
    "",
    `WebSocket fan-out (issue 29): ${SUBSCRIBERS.toLocaleString("en-US")} subscribers connected to \`/v0/websocket\` with the \`ws\` client from a separate process (bench/ws-clients.ts), each subscribed to \`message.received\`; ${n} inbound messages posted to \`/inbound/raw\` at ${WS_RATE} a second (each at its time, whatever the ones before are doing), each stored and its event sent to every subscriber. A frame is timed from its envelope's \`created_at\` (taken in the delivery's transaction, before it commits) to its arrival: p50/p99 over every frame, and per event the time until its last subscriber had it (p99 over events). The reference (bench/reference-ws.ts) is a bare \`ws\` server broadcasting the same envelope (serialised once, \`created_at\` stamped when it is sent) ${n} times at the same rate to the same number of clients of the same kind, interleaved round by round. The server keeps its default HTTP cap (INBOX_MAX_CONNECTIONS 1,000) with INBOX_MAX_WEBSOCKETS and _PER_KEY at the number of subscribers: a post refused or reset is counted. Memory per connection: the server's RSS after a garbage collection, before and after the subscribers connected, divided by their number (heap growth beside it). Goals: p99 at most 1.2× the reference's in the same run, memory per connection at most 2× the reference's, no post lost.`,
    ""
  ]
  for (const f of figures) {
    lines.push(`### ${f.storage}`, "")
    lines.push("| round | load (1 min) | ours frames | ours p50 / p99 ms | ours all reached p99 ms | reference frames | reference p50 / p99 ms | reference all reached p99 ms | p99 ratio | posts failed |", "|---|---|---|---|---|---|---|---|---|---|")
    f.rounds.forEach((r, i) =>
      lines.push(`| ${i + 1} | ${r.load.toFixed(2)} | ${r.ours.received.toLocaleString("en-US")} | ${r.ours.p50} / ${r.ours.p99} | ${r.ours.allP99} | ${r.reference.received.toLocaleString("en-US")} | ${r.reference.p50} / ${r.reference.p99} | ${r.reference.allP99} | ${ratio(r.ours.p99, r.reference.p99)} | ${r.posts.failed} of ${r.posts.sent} |`)
    )
    const p99 = median(f.rounds.map((r) => r.ours.p99))
    const refP99 = median(f.rounds.map((r) => r.reference.p99))
    const p99Ratio = median(f.rounds.map((r) => ratio(r.ours.p99, r.reference.p99)))
    const memRatio = ratio(f.bytesPerConnection.ours, f.bytesPerConnection.reference)
    const failed = f.rounds.reduce((sum, r) => sum + r.posts.failed, 0)
    lines.push(
      "",
      `Median: **p50 ${median(f.rounds.map((r) => r.ours.p50))} ms, p99 ${p99} ms** (reference ${median(f.rounds.map((r) => r.reference.p50))} / ${refP99} ms), **p99 ratio ${p99Ratio}** (median of the rounds' ratios); all subscribers reached p99 ${median(f.rounds.map((r) => r.ours.allP99))} ms (reference ${median(f.rounds.map((r) => r.reference.allP99))} ms). Memory: **${kib(f.bytesPerConnection.ours)} KiB per connection** (reference ${kib(f.bytesPerConnection.reference)} KiB, ratio ${memRatio}; heap ${kib(f.bytesPerConnection.oursHeap)} against ${kib(f.bytesPerConnection.referenceHeap)} KiB). Posts failed: ${failed}. Goal ${p99Ratio <= 1.2 && memRatio <= 2 && failed === 0 ? "met" : "not met"}.`,
      ""
    )
  }
  return lines.join("\n")
}
