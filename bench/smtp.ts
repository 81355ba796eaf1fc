/**
 * SMTP and domain benchmarks (issue 10), each beside a bare reference in the same run:
 *
 * - smtp: the built-in SMTP receiver taking mail from 8 concurrent client connections
 *   (nodemailer, one persistent connection each), messages of 5 KB, 32 KB and 280 KB
 *   (bench/parse.ts's) signed with DKIM by a domain whose SPF, DKIM key and DMARC policy a
 *   DNS server on loopback publishes, so SPF, DKIM and DMARC are checked for real. Ours
 *   answers `250` after the message is stored, threaded and its event committed; the
 *   reference (bench/reference-smtp.ts) runs the same checks with mailauth and parses with
 *   bare simpleParser, storing nothing. Rounds of ours then the reference, on PostgreSQL
 *   and on PGlite.
 * - domains: 1,000 custom domains (20 organizations on the Scale plan, 50 each) whose
 *   records the loopback DNS server publishes, verified through `POST .../verify` with 8 at
 *   a time: the time it takes and the DNS queries it makes, against a bare Node resolver
 *   asking for the same records with the same concurrency.
 *
 * `pnpm bench smtp` / `pnpm bench domains`; BENCH_SMTP_SECONDS (5), BENCH_SMTP_ROUNDS (3),
 * BENCH_DOMAINS (1,000), BENCH_SKIP_PGLITE=1.
 */
import { generateKeyPairSync } from "node:crypto"
import { Resolver } from "node:dns/promises"
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { adminSql, loopbackDns, publishDomainRecords, type TestZone } from "@inbox/testkit"
import { Effect, Exit, Scope } from "effect"
import nodemailer from "nodemailer"
import { medianOf, spawnServer, stop, waitHealthy } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { machine } from "./report.ts"

const SECONDS = Number(process.env["BENCH_SMTP_SECONDS"] ?? "5")
const ROUNDS = Number(process.env["BENCH_SMTP_ROUNDS"] ?? "3")
const DOMAINS = Number(process.env["BENCH_DOMAINS"] ?? "1000")
const CLIENTS = 8
const HTTP_PORT = 29501
const SMTP_PORT = 29525
const REF_PORT = 29526
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SECRET_KEY = "7b1e0f3c2a5d4e6f8091a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3"
const SENDER_DOMAIN = "example.org"
const SELECTOR = "bench"

interface SmtpRun {
  readonly rate: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

interface SmtpCase {
  readonly name: string
  readonly rounds: ReadonlyArray<{ readonly ours: SmtpRun; readonly reference: SmtpRun }>
}

/** The loopback DNS server, open until the returned close is called. */
const openDns = async () => {
  const scope = Effect.runSync(Scope.make())
  const zone = await Effect.runPromise(Scope.provide(loopbackDns, scope))
  return { zone, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The sending domain's key pair, with its SPF, DKIM and DMARC records published. */
const publishSender = (zone: TestZone) => {
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
 * CLIENTS connections sending `raw` to `to` for `seconds`, each message with its own
 * Message-ID (else ours would answer a retry) and its own DKIM signature.
 */
const load = async (port: number, to: string, raw: Buffer, privateKey: string, seconds: number): Promise<SmtpRun> => {
  const text = raw.toString("latin1")
  const at = text.indexOf("<bench-1@example.org>")
  const head = text.slice(0, at)
  const tail = text.slice(at + "<bench-1@example.org>".length)
  const tag = `${process.pid}.${Date.now()}`
  let n = 0
  let errors = 0
  const times: Array<number> = []
  const end = Date.now() + seconds * 1000
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    const transport = nodemailer.createTransport({
      host: "127.0.0.1",
      port,
      secure: false,
      ignoreTLS: true,
      pool: true,
      maxConnections: 1,
      maxMessages: Infinity,
      dkim: { domainName: SENDER_DOMAIN, keySelector: SELECTOR, privateKey }
    })
    try {
      while (Date.now() < end) {
        const body = Buffer.from(`${head}<smtp-${tag}-${n++}@example.org>${tail}`, "latin1")
        const started = performance.now()
        try {
          await transport.sendMail({ envelope: { from: `ann@${SENDER_DOMAIN}`, to: [to] }, raw: body })
          times.push(performance.now() - started)
        } catch {
          errors++
        }
      }
    } finally {
      transport.close()
    }
  }))
  times.sort((a, b) => a - b)
  return { rate: Math.round(times.length / seconds), p50: round2(percentile(times, 0.5)), p99: round2(percentile(times, 0.99)), errors }
}

const startOursSmtp = async (env: Record<string, string>, dns: string) => {
  const { child, value } = await spawnServer(
    "bench/server.ts",
    {
      ...env,
      INBOX_PORT: String(HTTP_PORT),
      INBOX_RATE_LIMITS: "off",
      INBOX_SMTP_LISTEN: `127.0.0.1:${SMTP_PORT}`,
      INBOX_SMTP_MAX_CONNECTIONS: "1000",
      INBOX_SMTP_MESSAGES_PER_MINUTE: "100000000",
      INBOX_DNS_SERVERS: dns,
      INBOX_SECRET_KEY: SECRET_KEY,
      BENCH_TENANTS: env["BENCH_TENANTS"] ?? "1"
    },
    [],
    (line) => line.startsWith("BENCH_KEYS ") ? (JSON.parse(line.slice(11)) as { keys: Array<string> }).keys : undefined
  )
  await waitHealthy(HTTP_PORT)
  return { child, keys: value }
}

const api = async (method: string, path: string, key: string, body?: unknown) => {
  const res = await fetch(`http://127.0.0.1:${HTTP_PORT}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text) as Record<string, unknown>
}

const freshDatabase = async (name: string) => {
  await adminSql(SERVER, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(SERVER, `CREATE DATABASE ${name}`)
  return SERVER.replace(/\/[^/]*$/, `/${name}`)
}

export interface SmtpSection {
  readonly storage: string
  readonly cases: ReadonlyArray<SmtpCase>
  readonly stored: number
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
      const ours = await startOursSmtp(await env(), dns.zone.server)
      try {
        const inbox = await api("POST", "/v0/inboxes", ours.keys[0]!, {}) as { inbox_id: string; email: string }
        const cases: Array<SmtpCase> = []
        for (const [name, raw] of benchMessages) {
          await load(SMTP_PORT, inbox.email, raw, privateKey, 2)
          await load(REF_PORT, inbox.email, raw, privateKey, 2)
          const rounds: Array<{ ours: SmtpRun; reference: SmtpRun }> = []
          for (let i = 0; i < ROUNDS; i++) {
            const a = await load(SMTP_PORT, inbox.email, raw, privateKey, SECONDS)
            const b = await load(REF_PORT, inbox.email, raw, privateKey, SECONDS)
            console.error(`smtp ${storage} ${name}: round ${i + 1}: ours ${a.rate}/s p99 ${a.p99} ms, reference ${b.rate}/s p99 ${b.p99} ms`)
            rounds.push({ ours: a, reference: b })
          }
          cases.push({ name: `${name} (${raw.length.toLocaleString("en-US")} bytes)`, rounds })
        }
        // Every message answered 250 must be stored, and must have passed DMARC.
        const list = await api("GET", `/v0/inboxes/${inbox.inbox_id}/messages?limit=1&labels=unauthenticated`, ours.keys[0]!) as { count: number }
        if (list.count !== 0) throw new Error(`${list.count} messages were labelled unauthenticated: the DNS records are not right`)
        const inboxNow = await api("GET", `/v0/metrics/usage?usage_types=message_count`, ours.keys[0]!) as unknown
        sections.push({ storage, cases, stored: totalOf(inboxNow) })
      } finally {
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

const ratioCell = (rounds: ReadonlyArray<{ ours: SmtpRun; reference: SmtpRun }>) => {
  const ratios = rounds.map((r) => r.ours.rate / r.reference.rate).sort((a, b) => a - b)
  return `**${medianOf(ratios).toFixed(2)}** (${ratios[0]!.toFixed(2)}-${ratios[ratios.length - 1]!.toFixed(2)})`
}

const medianRound = (rounds: ReadonlyArray<{ ours: SmtpRun; reference: SmtpRun }>) => {
  const sorted = [...rounds].sort((a, b) => a.ours.rate / a.reference.rate - b.ours.rate / b.reference.rate)
  return sorted[Math.floor(sorted.length / 2)]!
}

export const smtpSection = (sections: ReadonlyArray<SmtpSection>, load0: number, load1: number) => [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; 1-minute load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end.`,
  `SMTP ingest (issue 10): ${CLIENTS} client connections (nodemailer, one persistent connection each, a new Message-ID and a DKIM signature per message) for ${SECONDS} s per run after a 2 s warm-up, ${ROUNDS} rounds of ours then the reference; the ratio is taken within each round, the row shows the median round. Sender domain, DKIM key, SPF and DMARC (p=reject) served by a DNS server on loopback, so every message is checked for real (all passed). Ours answers 250 after the message is stored, threaded and its event committed; the reference (bench/reference-smtp.ts) is smtp-server + mailauth with the same DNS cache + bare simpleParser, storing nothing. Goal on PostgreSQL: at least 800 messages/s of 5 KB. Latencies in ms, per message, at the client.`,
  ...sections.flatMap((s) => [
    "",
    `### ${s.storage}`,
    "",
    "| message | ours msg/s | reference msg/s | ratio (median, range) | ours p50 | ours p99 | reference p50 | reference p99 | errors ours / reference |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...s.cases.map((c) => {
      const m = medianRound(c.rounds)
      const errors = c.rounds.reduce((n, r) => n + r.ours.errors, 0)
      const refErrors = c.rounds.reduce((n, r) => n + r.reference.errors, 0)
      return `| ${c.name} | ${m.ours.rate.toLocaleString("en-US")} | ${m.reference.rate.toLocaleString("en-US")} | ${ratioCell(c.rounds)} | ${m.ours.p50} | ${m.ours.p99} | ${m.reference.p50} | ${m.reference.p99} | ${errors} / ${refErrors} |`
    }),
    "",
    `- Messages stored in the inbox after the runs (warm-ups included): ${s.stored.toLocaleString("en-US")}; none labelled unauthenticated.`
  ])
].join("\n")

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
