/**
 * SMTP and domain benchmarks (issue 10), each beside a bare reference in the same run:
 *
 * - smtp: the built-in SMTP receiver taking mail from 8 concurrent client connections
 *   (nodemailer, one persistent connection each), messages of 5 KB, 32 KB and 280 KB
 *   (bench/parse.ts's) signed with DKIM by a domain whose SPF, DKIM key and DMARC policy a
 *   DNS server on loopback publishes, so SPF, DKIM and DMARC are checked for real. Ours
 *   answers `250` after the message is stored, threaded and its event committed; the
 *   reference (bench/reference-smtp.ts) runs the same checks with mailauth and parses with
 *   bare simpleParser, storing nothing, and on PostgreSQL a second copy of it also stores
 *   the rows of a delivery (the storing reference). Rounds of ours then the references, on
 *   PostgreSQL and on PGlite, each counting the CPU the server, PostgreSQL and the load
 *   generator spend per message; the section ends with the goal's CPU budget. On
 *   PostgreSQL the same messages are then posted to `POST /inbound/raw` (8 keep-alive
 *   clients), to ours and to the storing reference's HTTP listener, in rounds of the two:
 *   issue 29 compares CPU per stored message on both ways in.
 * - domains: 1,000 custom domains (20 organizations on the Scale plan, 50 each) whose
 *   records the loopback DNS server publishes, verified through `POST .../verify` with 8 at
 *   a time: the time it takes and the DNS queries it makes, against a bare Node resolver
 *   asking for the same records with the same concurrency.
 *
 * `pnpm bench smtp` / `pnpm bench domains`; BENCH_SMTP_SECONDS (5), BENCH_SMTP_ROUNDS (3),
 * BENCH_DOMAINS (1,000), BENCH_SKIP_PGLITE=1, BENCH_OURS_SOURCE=1 (ours from source: startOursBuilt),
 * BENCH_SERVER_CWD=DIR (ours from another checkout, its dependencies installed: an earlier
 * engine under the same harness).
 */
import { execFileSync, spawn } from "node:child_process"
import { generateKeyPairSync } from "node:crypto"
import { Resolver } from "node:dns/promises"
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { adminSql, loopbackDns, publishDomainRecords, type TestZone } from "@inbox/testkit"
import { Effect, Exit, Scope } from "effect"
import nodemailer from "nodemailer"
import pg from "pg"
import { medianOf, OURS_NODE_FLAGS, spawnServer, stop, waitHealthy } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { templateTables } from "./delivery-copy.ts"
import { machine } from "./report.ts"

const SECONDS = Number(process.env["BENCH_SMTP_SECONDS"] ?? "5")
const ROUNDS = Number(process.env["BENCH_SMTP_ROUNDS"] ?? "3")
const DOMAINS = Number(process.env["BENCH_DOMAINS"] ?? "1000")
const CLIENTS = 8
// BENCH_SMTP_PORT_OFFSET moves every port, so two sessions on one machine do not meet.
const PORT_OFFSET = Number(process.env["BENCH_SMTP_PORT_OFFSET"] ?? "0")
const HTTP_PORT = 29501 + PORT_OFFSET
export const SMTP_PORT = 29525 + PORT_OFFSET
const REF_PORT = 29526 + PORT_OFFSET
export const STORING_PORT = 29527 + PORT_OFFSET
const STORING_HTTP_PORT = 29528 + PORT_OFFSET
const INBOUND_SECRET = "bench-inbound-secret"
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SECRET_KEY = "7b1e0f3c2a5d4e6f8091a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3"
const SENDER_DOMAIN = "example.org"
const SELECTOR = "bench"

interface SmtpRun {
  readonly rate: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** CPU time per message answered, µs: the server's process (all its threads), PostgreSQL's processes, the load generator (this process). */
  readonly cpu: { readonly server: number; readonly postgres: number; readonly client: number }
  /** Share of the machine's CPU time busy during the run, of all its cores (1 = every core all the time). */
  readonly busy: number
  /** Bytes the server's process wrote (sockets and files, /proc/PID/io wchar) per message answered: a count, not a time, so it holds on a busy machine. */
  readonly written?: number
}

/** A process's /proc stat fields after its name: [state, ppid, ...]; undefined once it is gone. */
const statOf = (pid: number | string): ReadonlyArray<string> | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/**
 * CPU time of a process, all its threads, in clock ticks (USER_HZ, 100 on Linux); with
 * `reaped`, also that of its children that have ended (the kernel adds them to the parent).
 */
const ticksOf = (pid: number | string, reaped = false): number => {
  const f = statOf(pid)
  if (f === undefined) return 0
  return Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)
}
const TICK_US = 10_000

/** Bytes a process has written through system calls (sockets included), or 0 once it is gone. */
const writtenOf = (pid: number): number => {
  try {
    return Number(/wchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1] ?? 0)
  } catch {
    return 0
  }
}

/**
 * CPU time of the PostgreSQL server the benchmark writes to: its postmaster, every live
 * backend and worker, and those that have ended meanwhile (counted in the postmaster's
 * children's time), so a backend or autovacuum worker that exits during a run does not
 * take its time out of the sum.
 */
const postgresTicks = () => {
  const postgres = new Map<string, string>()
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") postgres.set(pid, statOf(pid)?.[1] ?? "")
    } catch {
      // gone meanwhile
    }
  }
  let sum = 0
  for (const [pid, parent] of postgres) sum += postgres.has(parent) ? ticksOf(pid) : ticksOf(pid, true)
  return sum
}

const machineTicks = () => {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  return { busy: cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]! + cpu[7]!, all: cpu.slice(0, 8).reduce((a, b) => a + b, 0) }
}

interface SmtpRound {
  readonly ours: SmtpRun
  /** the bare reference, storing nothing */
  readonly reference: SmtpRun
  /** the bare reference storing the rows of a delivery in PostgreSQL (PostgreSQL rounds only) */
  readonly storing?: SmtpRun
}

interface SmtpCase {
  readonly name: string
  readonly rounds: ReadonlyArray<SmtpRound>
}

/** One message size over `POST /inbound/raw`: rounds of ours and the storing reference. */
interface InboundCase {
  readonly name: string
  readonly rounds: ReadonlyArray<{ readonly ours: SmtpRun; readonly storing: SmtpRun }>
}

/** A client of the load: sends one message, answers when the server has. */
interface LoadClient {
  send(body: Buffer): Promise<void>
  close(): void
}

/** The loopback DNS server, open until the returned close is called. */
export const openDns = async () => {
  const scope = Effect.runSync(Scope.make())
  const zone = await Effect.runPromise(Scope.provide(loopbackDns, scope))
  return { zone, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The sending domain's key pair, with its SPF, DKIM and DMARC records published. */
export const publishSender = (zone: TestZone) => {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const p = publicKey.export({ type: "spki", format: "der" }).toString("base64")
  zone.set(SENDER_DOMAIN, "TXT", ["v=spf1 ip4:127.0.0.1 -all"])
  zone.set(`${SELECTOR}._domainkey.${SENDER_DOMAIN}`, "TXT", [`v=DKIM1; k=rsa; p=${p}`])
  zone.set(`_dmarc.${SENDER_DOMAIN}`, "TXT", ["v=DMARC1; p=reject; adkim=r; aspf=r"])
  return privateKey.export({ type: "pkcs8", format: "pem" }).toString()
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN
const round2 = (n: number) => Math.round(n * 100) / 100

/**
 * `raw` DKIM-signed once by the sending domain, with its Message-ID left out of the signed
 * headers (`skipFields`), so each message can get its own id without a signature of its
 * own: the receiver verifies the same signature over the same body for every message,
 * while the load generator, which shares the two cores with the servers, no longer spends
 * an RSA-2048 signature (about 1 ms of CPU) on each. Answered as the bytes before and
 * after the Message-ID's value.
 */
export const signedOnce = async (raw: Buffer, privateKey: string) => {
  const signer = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    dkim: { domainName: SENDER_DOMAIN, keySelector: SELECTOR, privateKey, skipFields: "message-id" }
  })
  const info = await signer.sendMail({ envelope: { from: `ann@${SENDER_DOMAIN}`, to: ["x@example.com"] }, raw })
  const signed = info.message as Buffer
  const at = signed.indexOf("<bench-1@example.org>")
  if (at < 0) throw new Error("the benchmark message has no Message-ID to vary")
  return { head: signed.subarray(0, at), tail: signed.subarray(at + "<bench-1@example.org>".length) }
}

/**
 * CLIENTS connections sending `raw` to `to` for `seconds`, each message with its own
 * Message-ID (else ours would answer a retry), DKIM-signed by the sending domain.
 */
export const load = (port: number, to: string, raw: Buffer, privateKey: string, seconds: number, serverPid?: number): Promise<SmtpRun> =>
  measured(raw, privateKey, seconds, serverPid, () => {
    const transport = nodemailer.createTransport({
      host: "127.0.0.1",
      port,
      secure: false,
      ignoreTLS: true,
      pool: true,
      maxConnections: 1,
      maxMessages: Infinity
    })
    return {
      send: (body) => transport.sendMail({ envelope: { from: `ann@${SENDER_DOMAIN}`, to: [to] }, raw: body }).then(() => undefined),
      close: () => transport.close()
    }
  })

/** The same load over `POST /inbound/raw?to=`, one keep-alive connection a client; anything but a 200 is an error. */
export const loadInbound = (port: number, to: string, raw: Buffer, privateKey: string, seconds: number, serverPid?: number): Promise<SmtpRun> =>
  measured(raw, privateKey, seconds, serverPid, () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const path = `/inbound/raw?to=${encodeURIComponent(to)}`
    return {
      send: (body) =>
        new Promise<void>((resolve, reject) => {
          const req = request({
            host: "127.0.0.1",
            port,
            path,
            method: "POST",
            agent,
            headers: { "content-type": "message/rfc822", "content-length": body.length, "x-inbound-secret": INBOUND_SECRET }
          }, (res) => {
            res.resume()
            res.on("end", () => res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)))
          })
          req.on("error", reject)
          req.end(body)
        }),
      close: () => agent.destroy()
    }
  })

/**
 * CLIENTS clients each sending the message (its own Message-ID each time) one after another
 * for `seconds`: the rate, the latencies, and the CPU the server (`serverPid`), PostgreSQL
 * and this process spent per message answered.
 */
const measured = async (raw: Buffer, privateKey: string, seconds: number, serverPid: number | undefined, connect: () => LoadClient): Promise<SmtpRun> => {
  const { head, tail } = await signedOnce(raw, privateKey)
  const s0 = serverPid === undefined ? 0 : ticksOf(serverPid)
  const w0 = serverPid === undefined ? 0 : writtenOf(serverPid)
  const p0 = postgresTicks()
  const c0 = process.cpuUsage()
  const m0 = machineTicks()
  const tag = `${process.pid}.${Date.now()}`
  let n = 0
  let errors = 0
  const times: Array<number> = []
  const end = Date.now() + seconds * 1000
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    const client = connect()
    try {
      while (Date.now() < end) {
        const body = Buffer.concat([head, Buffer.from(`<smtp-${tag}-${n++}@example.org>`, "latin1"), tail])
        const started = performance.now()
        try {
          await client.send(body)
          times.push(performance.now() - started)
        } catch {
          errors++
        }
      }
    } finally {
      client.close()
    }
  }))
  const s1 = serverPid === undefined ? 0 : ticksOf(serverPid)
  const w1 = serverPid === undefined ? 0 : writtenOf(serverPid)
  const p1 = postgresTicks()
  const c1 = process.cpuUsage(c0)
  const m1 = machineTicks()
  times.sort((a, b) => a - b)
  const per = (us: number) => times.length === 0 ? NaN : Math.round(us / times.length)
  return {
    rate: Math.round(times.length / seconds),
    p50: round2(percentile(times, 0.5)),
    p99: round2(percentile(times, 0.99)),
    errors,
    cpu: { server: per((s1 - s0) * TICK_US), postgres: per((p1 - p0) * TICK_US), client: per(c1.user + c1.system) },
    busy: round2((m1.busy - m0.busy) / Math.max(1, m1.all - m0.all)),
    ...(serverPid === undefined ? {} : { written: per(w1 - w0) })
  }
}

/** Ours' settings for the SMTP benchmarks: its ports, no request or SMTP limits, the loopback DNS. */
const oursSettings = (dns: string) => ({
  INBOX_PORT: String(HTTP_PORT),
  INBOX_RATE_LIMITS: "off",
  INBOX_SMTP_LISTEN: `127.0.0.1:${SMTP_PORT}`,
  INBOX_SMTP_MAX_CONNECTIONS: "1000",
  INBOX_SMTP_MESSAGES_PER_MINUTE: "100000000",
  INBOX_DNS_SERVERS: dns,
  INBOX_SECRET_KEY: SECRET_KEY,
  INBOX_INBOUND_SECRET: INBOUND_SECRET
})

/** Our server with the SMTP receiver on; `cwd` another checkout's, to time that code with this harness. */
export const startOursSmtp = async (env: Record<string, string>, dns: string, flags: ReadonlyArray<string> = [], cwd?: string) => {
  const { child, value } = await spawnServer(
    "bench/server.ts",
    { ...env, ...oursSettings(dns), BENCH_TENANTS: env["BENCH_TENANTS"] ?? "1" },
    [...OURS_NODE_FLAGS, ...flags],
    (line) => line.startsWith("BENCH_KEYS ") ? (JSON.parse(line.slice(11)) as { keys: Array<string> }).keys : undefined,
    cwd
  )
  await waitHealthy(HTTP_PORT)
  return { child, keys: value }
}

/**
 * Ours as users run it: `inboxctl serve` from the built CLI (packages/cli/dist, built first
 * when a source is newer, as scripts/inboxctl does; serve applies its own Node flags,
 * INBOX_NODE_FLAGS from BENCH_OURS_NODE_FLAGS), its tenant made by `inboxctl org create`
 * before the server starts (PGlite allows one process at a time), as the Postfix + Dovecot
 * script does. Run from source under tsx, the same server holds about three times the live
 * heap (tsx's loader and the transformed sources), which every full collection marks:
 * `BENCH_OURS_SOURCE=1` runs bench/server.ts that way (startOursSmtp), as runs before
 * 2026-12-07 16:00 did. `flags` are Node flags added to serve's (a profiler's).
 */
export const startOursBuilt = async (env: Record<string, string>, dns: string, cwd = process.cwd(), flags: ReadonlyArray<string> = []) => {
  if (process.env["BENCH_OURS_SOURCE"] === "1") return startOursSmtp(env, dns, flags, cwd)
  execFileSync("bash", ["scripts/inboxctl", "--help"], { cwd, stdio: ["ignore", "ignore", "inherit"] })
  const settings = { ...process.env, ...env, ...oursSettings(dns), NODE_ENV: "production", INBOX_NODE_FLAGS: [...OURS_NODE_FLAGS, ...flags].join(" ") }
  const cli = join(cwd, "packages", "cli", "dist", "inboxctl.js")
  const org = JSON.parse(execFileSync(process.execPath, [cli, "org", "create", "--owner-email", "bench0@example.com", "--verified", "--plan", "scale", "--json"], {
    cwd,
    env: settings,
    stdio: ["ignore", "pipe", "inherit"]
  }).toString()) as { api_key: string }
  // BENCH_SERVER_OUTPUT=FILE keeps the server's output (a `--trace-gc` in `flags`, say).
  const output = process.env["BENCH_SERVER_OUTPUT"]
  const child = spawn(process.execPath, [cli, "serve"], { cwd, env: settings, stdio: ["ignore", output === undefined ? "ignore" : openSync(output, "w"), "inherit"] })
  const exited = new Promise<never>((_, reject) => child.once("exit", (code) => reject(new Error(`inboxctl serve exited with ${code}`))))
  await Promise.race([waitHealthy(HTTP_PORT), exited])
  exited.catch(() => undefined)
  return { child, keys: [org.api_key] }
}

export const api = async (method: string, path: string, key: string, body?: unknown) => {
  const res = await fetch(`http://127.0.0.1:${HTTP_PORT}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text) as Record<string, unknown>
}

export const freshDatabase = async (name: string) => {
  await adminSql(SERVER, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(SERVER, `CREATE DATABASE ${name}`)
  return SERVER.replace(/\/[^/]*$/, `/${name}`)
}

export interface SmtpSection {
  readonly storage: string
  readonly cases: ReadonlyArray<SmtpCase>
  /** The same messages over `POST /inbound/raw` (PostgreSQL only). */
  readonly inbound: ReadonlyArray<InboundCase>
  readonly stored: number
}

/**
 * Sends the 5 KB message to ours until its maintenance has analyzed `messages` (at most 30 s).
 * Where autovacuum is off (this machine), a server just started on a fresh database plans its
 * statements by an empty table's statistics until its first maintenance pass, and its
 * duplicate check then read the whole inbox (bench/PROFILE.md, "What one SMTP delivery asks
 * of PostgreSQL"): the rounds measure a server that has run for a while, as a served one has.
 */
const warmUntilAnalyzed = async (database: string, to: string, privateKey: string) => {
  const client = new pg.Client({ connectionString: database })
  await client.connect()
  try {
    for (let i = 0; i < 15; i++) {
      const analyzed = await client.query(`SELECT 1 FROM pg_stat_user_tables WHERE relname = 'messages' AND coalesce(last_analyze, last_autoanalyze) IS NOT NULL`)
      if (analyzed.rowCount! > 0) return
      await load(SMTP_PORT, to, benchMessages[0]![1], privateKey, 2)
    }
    throw new Error("the server did not analyze messages within 30 s of load")
  } finally {
    await client.end()
  }
}

export const benchSmtp = async () => {
  const dns = await openDns()
  const privateKey = publishSender(dns.zone)
  const reference = await spawnServer("bench/reference-smtp.ts", { REF_SMTP_PORT: String(REF_PORT), REF_DNS_SERVER: dns.zone.server }, [], (line) =>
    line === "REFERENCE_READY" ? true : undefined)
  const sections: Array<SmtpSection> = []
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-smtp-"))
  const storages: Array<readonly [string, () => Promise<Record<string, string>>]> = [
    ["PostgreSQL", async () => ({ INBOX_DATABASE_URL: await freshDatabase("inbox_bench_smtp") })],
    ...(process.env["BENCH_SKIP_PGLITE"] === "1" ? [] : [["PGlite", async () => ({ INBOX_DATA_DIR: join(dir, "data") })] as const])
  ]
  try {
    for (const [storage, env] of storages) {
      const settings = await env()
      const database = settings["INBOX_DATABASE_URL"]
      const ours = await startOursBuilt(settings, dns.zone.server, process.env["BENCH_SERVER_CWD"])
      // On PostgreSQL, the storing reference writes into ours' database, copying the
      // delivery ours stored last (bench/delivery-copy.ts), so its rows are the real ones.
      const storing = database === undefined ? undefined : await spawnServer(
        "bench/reference-smtp.ts",
        { REF_SMTP_PORT: String(STORING_PORT), REF_HTTP_PORT: String(STORING_HTTP_PORT), REF_DNS_SERVER: dns.zone.server, REF_DATABASE_URL: database },
        [],
        (line) => line === "REFERENCE_READY" ? true : undefined
      )
      try {
        const inbox = await api("POST", "/v0/inboxes", ours.keys[0]!, {}) as { inbox_id: string; email: string }
        if (database !== undefined) await warmUntilAnalyzed(database, inbox.email, privateKey)
        const cases: Array<SmtpCase> = []
        for (const [name, raw] of benchMessages) {
          await load(SMTP_PORT, inbox.email, raw, privateKey, 2)
          await load(REF_PORT, inbox.email, raw, privateKey, 2)
          if (storing !== undefined) {
            const client = new pg.Client({ connectionString: database })
            await client.connect()
            await client.query(templateTables("ref")).finally(() => client.end())
            await load(STORING_PORT, inbox.email, raw, privateKey, 2)
          }
          const rounds: Array<SmtpRound> = []
          for (let i = 0; i < ROUNDS; i++) {
            const a = await load(SMTP_PORT, inbox.email, raw, privateKey, SECONDS, ours.child.pid)
            const b = await load(REF_PORT, inbox.email, raw, privateKey, SECONDS, reference.child.pid)
            const c = storing === undefined ? undefined : await load(STORING_PORT, inbox.email, raw, privateKey, SECONDS, storing.child.pid)
            console.error(`smtp ${storage} ${name}: round ${i + 1}: ours ${a.rate}/s p99 ${a.p99} ms, reference ${b.rate}/s p99 ${b.p99} ms${c === undefined ? "" : `, storing reference ${c.rate}/s p99 ${c.p99} ms`}`)
            rounds.push({ ours: a, reference: b, ...(c === undefined ? {} : { storing: c }) })
          }
          cases.push({ name: `${name} (${raw.length.toLocaleString("en-US")} bytes)`, rounds })
        }
        const inbound: Array<InboundCase> = []
        for (const [name, raw] of storing === undefined ? [] : benchMessages) {
          await loadInbound(HTTP_PORT, inbox.email, raw, privateKey, 2)
          const client = new pg.Client({ connectionString: database })
          await client.connect()
          await client.query(templateTables("ref")).finally(() => client.end())
          await loadInbound(STORING_HTTP_PORT, inbox.email, raw, privateKey, 2)
          const rounds: Array<InboundCase["rounds"][number]> = []
          for (let i = 0; i < ROUNDS; i++) {
            const a = await loadInbound(HTTP_PORT, inbox.email, raw, privateKey, SECONDS, ours.child.pid)
            const c = await loadInbound(STORING_HTTP_PORT, inbox.email, raw, privateKey, SECONDS, storing!.child.pid)
            console.error(`inbound/raw ${storage} ${name}: round ${i + 1}: ours ${a.rate}/s p99 ${a.p99} ms, storing reference ${c.rate}/s p99 ${c.p99} ms`)
            rounds.push({ ours: a, storing: c })
          }
          inbound.push({ name: `${name} (${raw.length.toLocaleString("en-US")} bytes)`, rounds })
        }
        // Every message answered 250 must be stored, and must have passed DMARC.
        const list = await api("GET", `/v0/inboxes/${inbox.inbox_id}/messages?limit=1&labels=unauthenticated`, ours.keys[0]!) as { count: number }
        if (list.count !== 0) throw new Error(`${list.count} messages were labelled unauthenticated: the DNS records are not right`)
        const inboxNow = await api("GET", `/v0/metrics/usage?usage_types=message_count`, ours.keys[0]!) as unknown
        sections.push({ storage, cases, inbound, stored: totalOf(inboxNow) })
      } finally {
        if (storing !== undefined) await stop(storing.child)
        await stop(ours.child)
      }
    }
  } finally {
    await stop(reference.child)
    await dns.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return sections
}

/** The latest message_count of a usage answer (the running total). */
const totalOf = (usage: unknown): number => {
  const points = (usage as { message_count?: ReadonlyArray<{ value: number }> }).message_count ?? []
  return points.length === 0 ? NaN : points[points.length - 1]!.value
}

const ratioCell = (rounds: ReadonlyArray<SmtpRound>, against: (r: SmtpRound) => SmtpRun | undefined = (r) => r.reference) => {
  const ratios = rounds.flatMap((r) => {
    const other = against(r)
    return other === undefined ? [] : [r.ours.rate / other.rate]
  }).sort((a, b) => a - b)
  return ratios.length === 0 ? "-" : `**${medianOf(ratios).toFixed(2)}** (${ratios[0]!.toFixed(2)}-${ratios[ratios.length - 1]!.toFixed(2)})`
}

const medianRound = (rounds: ReadonlyArray<SmtpRound>) => {
  const sorted = [...rounds].sort((a, b) => a.ours.rate / a.reference.rate - b.ours.rate / b.reference.rate)
  return sorted[Math.floor(sorted.length / 2)]!
}

const median = (xs: ReadonlyArray<number>) => Math.round(medianOf([...xs]))
const count = (n: number) => n.toLocaleString("en-US")

/** Median CPU per message of one server's runs: `server / PostgreSQL / load generator`, µs. */
const cpuCell = (runs: ReadonlyArray<SmtpRun>) =>
  `${count(median(runs.map((r) => r.cpu.server)))} / ${count(median(runs.map((r) => r.cpu.postgres)))} / ${count(median(runs.map((r) => r.cpu.client)))}`

/** What a message costs the server and its database, µs: what issue 29 compares. */
const stored = (r: SmtpRun) => r.cpu.server + r.cpu.postgres

/** Ours' CPU per stored message over the storing reference's, each round's own: the median and the range. */
const cpuRatioCell = (rounds: ReadonlyArray<{ readonly ours: SmtpRun; readonly storing: SmtpRun }>) => {
  const ratios = rounds.map((r) => stored(r.ours) / stored(r.storing)).sort((a, b) => a - b)
  return `**${medianOf(ratios).toFixed(2)}x** (${ratios[0]!.toFixed(2)}-${ratios[ratios.length - 1]!.toFixed(2)})`
}

/** What all three processes spend on one message, µs: the machine's CPU a message costs. */
const totalOf3 = (r: SmtpRun) => r.cpu.server + r.cpu.postgres + r.cpu.client

/**
 * The machine's cores shared out: µs of CPU a message at `x` messages a second, or the
 * messages a second that `x` µs of CPU a message allow (the same division).
 */
const onCores = (x: number) => Math.round((availableParallelism() * 1_000_000) / x)

export const smtpSection = (sections: ReadonlyArray<SmtpSection>, load0: number, load1: number) => {
  const goal = 800
  const pg5 = sections.find((s) => s.storage === "PostgreSQL")?.cases[0]
  const budget = pg5 === undefined ? [] : (() => {
    const ours = median(pg5.rounds.map((r) => totalOf3(r.ours)))
    const bare = median(pg5.rounds.map((r) => totalOf3(r.reference)))
    const storing = pg5.rounds.every((r) => r.storing !== undefined) ? median(pg5.rounds.map((r) => totalOf3(r.storing!))) : undefined
    const busy = (f: (r: SmtpRound) => SmtpRun | undefined) => medianOf(pg5.rounds.flatMap((r) => { const x = f(r); return x === undefined ? [] : [x.busy] }))
    const row = (name: string, cpu: number, f: (r: SmtpRound) => SmtpRun | undefined) =>
      `| ${name} | ${count(cpu)} | ${count(onCores(cpu))}/s | ${(busy(f) * 100).toFixed(0)}% |`
    return [
      "",
      `### The CPU budget of the goal (PostgreSQL, ${pg5.name})`,
      "",
      `Server, PostgreSQL and load generator share this machine's ${availableParallelism()} cores, so ${goal} messages/s leaves at most **${count(onCores(goal))} µs of CPU per message** for the three together. Each run above counted the CPU time of the server's process (every thread), of every PostgreSQL process and of the load generator, over the messages answered (medians of the rounds):`,
      "",
      "| server | CPU µs per message, all three | rate it allows on the whole machine | machine busy during the runs |",
      "|---|---:|---:|---:|",
      row("ours (stores, threads, indexes, events)", ours, (r) => r.ours),
      ...(storing === undefined ? [] : [row("storing reference (group commit of a delivery's rows, no reads)", storing, (r) => r.storing)]),
      row("bare reference (stores nothing)", bare, (r) => r.reference),
      "",
      `A server whose CPU per message, with its database's and the load generator's, is above ${count(onCores(goal))} µs cannot take ${goal} messages/s here however its work is spread over threads or processes.`
    ]
  })()
  return [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; 1-minute load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end.`,
    `SMTP ingest (issue 10): ${CLIENTS} client connections (nodemailer, one persistent connection each) for ${SECONDS} s per run after a 2 s warm-up, ${ROUNDS} rounds of ours, then the bare reference, then (on PostgreSQL) the storing reference; ratios are taken within each round, the row shows the median round. Sender domain, DKIM key, SPF and DMARC (p=reject) served by a DNS server on loopback, so every message is checked for real (all passed). Each message has its own Message-ID and carries a DKIM signature made once per message size with the Message-ID left out of the signed headers, so the load generator does not spend an RSA signature per message on the servers' two cores; the receivers verify the same signature over the same body for every message. Ours answers 250 after the message is stored, threaded and its event committed; ${process.env["BENCH_OURS_SOURCE"] === "1" ? "it runs from source under tsx (BENCH_OURS_SOURCE=1)" : "it runs as users run it, \`inboxctl serve\` from the built CLI (packages/cli/dist)"}, with the Node flags serve starts it with (${OURS_NODE_FLAGS.join(" ") || "none"}), and on PostgreSQL it is warmed until its maintenance has analyzed its tables. The bare reference (bench/reference-smtp.ts) is smtp-server + mailauth with the same DNS cache + bare simpleParser, storing nothing; the storing reference is the same plus a group commit through \`pg\` (up to 16 deliveries a transaction, two transactions at once, one round trip each) of the rows ours writes for a delivery (thread, message with its search, blob and metric triggers, raw bytes, event; bench/delivery-copy.ts), reading nothing first. Goal on PostgreSQL: at least ${goal} messages/s of 5 KB. Latencies in ms, per message, at the client; CPU in µs per message answered, as server / PostgreSQL / load generator.`,
    ...sections.flatMap((s) => [
      "",
      `### ${s.storage}`,
      "",
      "| message | ours msg/s | reference msg/s | ratio (median, range) | storing reference msg/s | ratio to it | ours p50 / p99 | reference p50 / p99 | ours CPU µs | reference CPU µs | storing reference CPU µs | errors ours / reference |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...s.cases.map((c) => {
        const m = medianRound(c.rounds)
        const errors = c.rounds.reduce((n, r) => n + r.ours.errors, 0)
        const refErrors = c.rounds.reduce((n, r) => n + r.reference.errors + (r.storing?.errors ?? 0), 0)
        const storingRuns = c.rounds.flatMap((r) => r.storing === undefined ? [] : [r.storing])
        return `| ${c.name} | ${count(m.ours.rate)} | ${count(m.reference.rate)} | ${ratioCell(c.rounds)} | ${m.storing === undefined ? "-" : count(m.storing.rate)} | ${ratioCell(c.rounds, (r) => r.storing)} | ${m.ours.p50} / ${m.ours.p99} | ${m.reference.p50} / ${m.reference.p99} | ${cpuCell(c.rounds.map((r) => r.ours))} | ${cpuCell(c.rounds.map((r) => r.reference))} | ${storingRuns.length === 0 ? "-" : cpuCell(storingRuns)} | ${errors} / ${refErrors} |`
      }),
      "",
      ...(s.cases.every((c) => c.rounds.every((r) => r.storing !== undefined))
        ? [
          "CPU per stored message (server + PostgreSQL) against the storing reference's, each round's own, median and range (issue 29's goal: at most 1.25): " +
          s.cases.map((c) => `${c.name.split(" (")[0]} ${cpuRatioCell(c.rounds.map((r) => ({ ours: r.ours, storing: r.storing! })))}`).join("; ") + ".",
          ""
        ]
        : []),
      `- Messages stored in the inbox after the runs (warm-ups included): ${count(s.stored)}; none labelled unauthenticated.`,
      ...(s.inbound.length === 0 ? [] : [
        "",
        `#### ${s.storage}: \`POST /inbound/raw\` against the storing reference`,
        "",
        `The same messages posted to \`POST /inbound/raw\` by ${CLIENTS} clients (node:http, one keep-alive connection each), ${SECONDS} s a run after a 2 s warm-up, ${ROUNDS} rounds of ours then the storing reference's HTTP listener (bare node:http, simpleParser, the same group commit of the same rows). Neither checks SPF, DKIM or DMARC on this route (ours takes the forwarder's verdicts from its headers). Ours answers 200 once the message is stored, threaded and its event committed.`,
        "",
        "| message | ours msg/s | storing reference msg/s | ours p50 / p99 | storing reference p50 / p99 | ours CPU µs | storing reference CPU µs | CPU per stored message, ours / storing reference (median, range) | errors ours / reference |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ...s.inbound.map((c) => {
          const ours = c.rounds.map((r) => r.ours)
          const storing = c.rounds.map((r) => r.storing)
          const m = [...c.rounds].sort((a, b) => stored(a.ours) / stored(a.storing) - stored(b.ours) / stored(b.storing))[Math.floor(c.rounds.length / 2)]!
          return `| ${c.name} | ${count(m.ours.rate)} | ${count(m.storing.rate)} | ${m.ours.p50} / ${m.ours.p99} | ${m.storing.p50} / ${m.storing.p99} | ${cpuCell(ours)} | ${cpuCell(storing)} | ${cpuRatioCell(c.rounds)} | ${ours.reduce((n, r) => n + r.errors, 0)} / ${storing.reduce((n, r) => n + r.errors, 0)} |`
        })
      ])
    ]),
    ...budget
  ].join("\n")
}

export interface DomainsFigure {
  readonly domains: number
  readonly rounds: ReadonlyArray<{ readonly ours: { readonly ms: number; readonly queries: number }; readonly reference: { readonly ms: number; readonly queries: number } }>
  readonly createMs: number
  readonly verified: number
}

/** `items` with `concurrency` at a time. */
const pool = async <A>(items: ReadonlyArray<A>, concurrency: number, each: (item: A, i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++
      await each(items[i]!, i)
    }
  }))
}

export const benchDomains = async (): Promise<DomainsFigure> => {
  const dns = await openDns()
  const tenants = Math.ceil(DOMAINS / 50)
  const ours = await startOursSmtp({ INBOX_DATABASE_URL: await freshDatabase("inbox_bench_domains"), BENCH_TENANTS: String(tenants) }, dns.zone.server)
  try {
    const created: Array<{ readonly key: string; readonly id: string; readonly records: ReadonlyArray<{ type: string; name: string; value: string }> }> = []
    const t0 = performance.now()
    await pool(Array.from({ length: DOMAINS }, (_, i) => i), 4, async (i) => {
      const key = ours.keys[Math.floor(i / 50)]!
      const domain = await api("POST", "/v0/domains", key, { domain: `d${i}.verify-bench.example.com` }) as {
        domain_id: string
        records: ReadonlyArray<{ type: string; name: string; value: string; priority?: number }>
      }
      publishDomainRecords(dns.zone, domain)
      created.push({ key, id: domain.domain_id, records: domain.records })
      if ((i + 1) % 100 === 0) console.error(`domains: ${i + 1} of ${DOMAINS} created`)
    })
    const createMs = performance.now() - t0
    // The same lookups ours makes, by a bare resolver: each record's name and type.
    const resolver = new Resolver({ timeout: 2000, tries: 1 })
    resolver.setServers([dns.zone.server])
    const bareVerify = async () => {
      await pool(created, CLIENTS, async (d) => {
        await Promise.all(d.records.map((r) => (r.type === "MX" ? resolver.resolveMx(r.name) : resolver.resolveTxt(r.name)).catch(() => undefined)))
      })
    }
    const ourVerify = () => pool(created, CLIENTS, async (d) => void await api("POST", `/v0/domains/${d.id}/verify`, d.key))
    const timed = async (f: () => Promise<void>) => {
      const q0 = dns.zone.queries()
      const started = performance.now()
      await f()
      return { ms: Math.round(performance.now() - started), queries: dns.zone.queries() - q0 }
    }
    const rounds: Array<DomainsFigure["rounds"][number]> = []
    for (let i = 0; i < ROUNDS; i++) {
      const a = await timed(ourVerify)
      const b = await timed(bareVerify)
      console.error(`domains: round ${i + 1}: ours ${a.ms} ms (${a.queries} queries), bare resolver ${b.ms} ms (${b.queries} queries)`)
      rounds.push({ ours: a, reference: b })
    }
    let verified = 0
    await pool(created, CLIENTS, async (d) => {
      const got = await api("GET", `/v0/domains/${d.id}`, d.key) as { status: string }
      if (got.status === "VERIFIED") verified++
    })
    return { domains: DOMAINS, rounds, createMs, verified }
  } finally {
    await stop(ours.child)
    await dns.close()
  }
}

export const domainsSection = (f: DomainsFigure, load0: number, load1: number) => {
  const ratios = f.rounds.map((r) => r.ours.ms / r.reference.ms).sort((a, b) => a - b)
  return [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; 1-minute load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end.`,
    `Verification of ${f.domains.toLocaleString("en-US")} custom domains (issue 10) on PostgreSQL, every record published by a DNS server on loopback: \`POST /v0/domains/:id/verify\` for each, ${CLIENTS} at a time (each check asks DNS afresh and writes the domain's state), against a bare Node resolver asking for the same records with the same concurrency and writing nothing; ${ROUNDS} rounds, ours first. Creating the domains (an RSA-2048 DKIM key each, 4 at a time) took ${(f.createMs / 1000).toFixed(1)} s. After the runs ${f.verified.toLocaleString("en-US")} of ${f.domains.toLocaleString("en-US")} were VERIFIED.`,
    "",
    "| round | ours s | ours DNS queries | ours queries per domain | bare resolver s | bare queries | time ratio ours / bare |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    ...f.rounds.map((r, i) =>
      `| ${i + 1} | ${(r.ours.ms / 1000).toFixed(2)} | ${r.ours.queries.toLocaleString("en-US")} | ${(r.ours.queries / f.domains).toFixed(1)} | ${(r.reference.ms / 1000).toFixed(2)} | ${r.reference.queries.toLocaleString("en-US")} | ${(r.ours.ms / r.reference.ms).toFixed(2)} |`),
    "",
    `Median time ratio ours / bare: **${medianOf(ratios).toFixed(2)}** (${ratios[0]!.toFixed(2)}-${ratios[ratios.length - 1]!.toFixed(2)}).`
  ].join("\n")
}

export const measuredLoad = () => loadavg()[0] ?? 0
