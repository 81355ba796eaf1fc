/**
 * Messaging benchmarks (issue 7), each against the bare reference (bench/reference.ts and
 * reference-messaging.ts) interleaved in rounds on PostgreSQL, and ours alone on PGlite:
 *
 * - listing: 1,000,000 seeded messages in one organization (bench/seed.ts; the seed stays in
 *   its database, BENCH_LISTING_DATABASE, and is reused by later runs), then the newest page
 *   of an inbox's messages, a filtered page (`labels` and `from`), a page 25,000 messages
 *   deep by `page_token`, the organization's newest threads and a thread's detail. Both
 *   servers must give the same answer before they are timed, and the EXPLAIN of each of
 *   our statements is checked for the index it must use. On PGlite: 100,000 messages.
 * - ingest: `POST /inbound/raw` from 8 concurrent clients, each message with its own
 *   Message-ID, of 5 KB, 32 KB and 280 KB (bench/parse.ts's messages); ours stores,
 *   threads and commits before answering, the reference only parses.
 * - send: `POST /v0/inboxes/:id/messages/send` from 8 clients, relayed to an SMTP sink on
 *   loopback; ours checks, records and relays (the whole send path), the reference relays.
 *
 * `pnpm bench listing|ingest|send` runs one; BENCH_MSG_SECONDS (5), BENCH_MSG_ROUNDS (3),
 * BENCH_LISTING_MESSAGES (1,000,000), BENCH_PGLITE_MESSAGES (100,000; 0 skips PGlite).
 */
import type { ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { isDeepStrictEqual } from "node:util"
import { SMTPServer } from "smtp-server"
import pg from "pg"
import { adminSql } from "@inbox/testkit"
import { medianOf, type Run, run, spawnServer, startReference, stop, waitHealthy } from "./http.ts"
import { benchMessages } from "./parse.ts"
import { machine } from "./report.ts"
import { contact, INBOXES, type Seeded } from "./seed.ts"

const SECONDS = Number(process.env["BENCH_MSG_SECONDS"] ?? "5")
const ROUNDS = Number(process.env["BENCH_MSG_ROUNDS"] ?? "3")
const CLIENTS = 8
const LISTING_MESSAGES = Number(process.env["BENCH_LISTING_MESSAGES"] ?? "1000000")
const PGLITE_MESSAGES = Number(process.env["BENCH_PGLITE_MESSAGES"] ?? "100000")
/** How deep the deep page is: 25,000 messages, or half an inbox of a smaller seed. */
const DEPTH = Math.min(25_000, Math.floor(LISTING_MESSAGES / INBOXES / 2))
const PORT = Number(process.env["BENCH_MSG_PORT"] ?? "29301")
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SECRET = "bench-inbound-secret"
const dbUrl = (name: string) => SERVER.replace(/\/[^/]*$/, `/${name}`)

export interface Case {
  readonly name: string
  readonly ours: Run
  readonly reference?: Run
  /** Every round's pair, when a reference ran. */
  readonly rounds: ReadonlyArray<{ readonly ours: Run; readonly reference: Run }>
}

export interface Section {
  readonly storage: string
  readonly cases: ReadonlyArray<Case>
  readonly notes: ReadonlyArray<string>
}

interface OurServer {
  readonly child: ChildProcess
  readonly keys: ReadonlyArray<string>
  readonly seeded?: Seeded
}

/** bench/server.ts with the inbound secret; `flags` for node (e.g. --cpu-prof). */
export const startServer = async (env: Record<string, string>, port: number, flags: ReadonlyArray<string> = []): Promise<OurServer> => {
  const { child, value } = await spawnServer(
    "bench/server.ts",
    { INBOX_RATE_LIMITS: "off", INBOX_INBOUND_SECRET: SECRET, ...env, INBOX_PORT: String(port) },
    flags,
    (line) => line.startsWith("BENCH_KEYS ") ? JSON.parse(line.slice(11)) as { keys: Array<string>; seeded?: Seeded } : undefined
  )
  await waitHealthy(port)
  return { child, keys: value.keys, ...(value.seeded === undefined ? {} : { seeded: value.seeded }) }
}

export const freshDatabase = async (name: string) => {
  await adminSql(SERVER, `DROP DATABASE IF EXISTS ${name}`)
  await adminSql(SERVER, `CREATE DATABASE ${name}`)
  return dbUrl(name)
}

const getJson = async (url: string, key: string) => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
  return { status: res.status, body: await res.json() as unknown }
}

/**
 * Interleaved rounds of one case: ours then the reference, after a warm-up each. With no
 * reference, ours alone for the same number of rounds; the figure is the median round.
 */
const measure = async (
  name: string,
  ours: { options: Parameters<typeof run>[0]; server: ChildProcess },
  reference?: { options: Parameters<typeof run>[0]; server: ChildProcess }
): Promise<Case> => {
  await run({ ...ours.options, connections: CLIENTS }, 2)
  if (reference !== undefined) await run({ ...reference.options, connections: CLIENTS }, 2)
  const rounds: Array<{ ours: Run; reference: Run }> = []
  const alone: Array<Run> = []
  for (let i = 0; i < ROUNDS; i++) {
    const a = await run({ ...ours.options, connections: CLIENTS }, SECONDS, ours.server)
    if (reference === undefined) {
      alone.push(a)
      console.error(`${name}: round ${i + 1}: ours ${a.rps}/s p99 ${a.p99} ms`)
      continue
    }
    const b = await run({ ...reference.options, connections: CLIENTS }, SECONDS, reference.server)
    rounds.push({ ours: a, reference: b })
    console.error(`${name}: round ${i + 1}: ours ${a.rps}/s p99 ${a.p99} ms; reference ${b.rps}/s p99 ${b.p99} ms`)
  }
  const median = (runs: ReadonlyArray<Run>): Run => ({
    rps: medianOf(runs.map((r) => r.rps)),
    p50: medianOf(runs.map((r) => r.p50)),
    p99: medianOf(runs.map((r) => r.p99)),
    errors: runs.reduce((n, r) => n + r.errors, 0)
  })
  return reference === undefined
    ? { name, ours: median(alone), rounds }
    : { name, ours: median(rounds.map((r) => r.ours)), reference: median(rounds.map((r) => r.reference)), rounds }
}

// ---------------------------------------------------------------------------------------
// Listing

interface ListingCase {
  readonly name: string
  readonly path: string
  /** Our statement for this page (as Messages.list / Threads sends it), for EXPLAIN. */
  readonly statement: string
  readonly params: ReadonlyArray<unknown>
  /** An index the plan must use. */
  readonly index: string
}

const SUMMARY = `"id", "organization_id", "pod_id", "inbox_id", "thread_id", "direction", "state", "rfc_message_id", "in_reply_to", "references", "labels", "timestamp", "sender", "recipients", "cc", "bcc", "subject", "preview", "size", "created_at", "updated_at"`

/** The cases, with their tokens and ids read from the seeded data. */
const listingCases = async (pool: pg.Pool, seeded: Seeded): Promise<ReadonlyArray<ListingCase>> => {
  const inbox = seeded.inboxIds[0]!
  const deep = (await pool.query<{ timestamp: Date; id: string }>(
    `SELECT "timestamp", id FROM messages WHERE inbox_id = $1 AND NOT hidden ORDER BY "timestamp" DESC, id DESC OFFSET ${DEPTH} LIMIT 1`,
    [inbox]
  )).rows[0]!
  const token = Buffer.from(JSON.stringify([deep.timestamp.toISOString(), deep.id])).toString("base64url")
  const thread = (await pool.query<{ id: string }>(
    `SELECT id FROM threads WHERE organization_id = $1 AND message_count = 5 AND NOT hidden LIMIT 1`,
    [seeded.organizationId]
  )).rows[0]!.id
  const frequent = contact(0)
  const list = (extra: string) => `SELECT ${SUMMARY} FROM messages WHERE inbox_id = $1 AND NOT hidden ${extra} ORDER BY "timestamp" DESC, "id" DESC LIMIT 51`
  return [
    { name: "messages: newest page", path: `/v0/inboxes/${inbox}/messages`, statement: list(""), params: [inbox], index: "messages_list" },
    {
      name: "messages: labels=unread&from=<frequent sender>",
      path: `/v0/inboxes/${inbox}/messages?labels=unread&from=${encodeURIComponent(frequent)}`,
      statement: list(`AND labels @> $2::text[] AND sender_address = $3`),
      params: [inbox, ["unread"], frequent],
      index: "messages_from"
    },
    {
      name: "messages: labels=invoices",
      path: `/v0/inboxes/${inbox}/messages?labels=invoices`,
      statement: list(`AND labels @> $2::text[]`),
      params: [inbox, ["invoices"]],
      index: "messages_list"
    },
    {
      name: `messages: page ${DEPTH.toLocaleString("en-US")} deep by page_token`,
      path: `/v0/inboxes/${inbox}/messages?page_token=${token}`,
      statement: list(`AND ("timestamp", "id") < ($2, $3)`),
      params: [inbox, deep.timestamp, deep.id],
      index: "messages_list"
    },
    {
      name: "threads: organization, newest page",
      path: `/v0/threads`,
      statement: `SELECT * FROM threads WHERE TRUE AND organization_id = $1 AND NOT hidden ORDER BY "last_at" DESC, "id" DESC LIMIT 51`,
      params: [seeded.organizationId],
      index: "threads_org"
    },
    {
      name: "threads: detail of a 5-message thread",
      path: `/v0/threads/${thread}`,
      statement: `SELECT * FROM messages WHERE thread_id = $1 ORDER BY "timestamp", id`,
      params: [thread],
      index: "messages_thread"
    }
  ]
}

/** EXPLAIN ANALYZE of a statement: the plan's lines, and whether it uses the index. */
const explain = async (pool: pg.Pool, c: ListingCase) => {
  const rows = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING ON, SUMMARY ON) ${c.statement}`, [...c.params])
  const plan = rows.rows.map((r) => r["QUERY PLAN"])
  return { plan, usesIndex: plan.some((l) => l.includes(` ${c.index} `) || l.endsWith(` ${c.index}`)), seqScan: plan.some((l) => l.includes("Seq Scan")) }
}

export const benchListing = async (): Promise<ReadonlyArray<Section>> => {
  const sections: Array<Section> = []
  if (PGLITE_MESSAGES > 0) {
    // The PGlite data dir is kept between runs, like the PostgreSQL seed.
    const dir = join(tmpdir(), `inbox-bench-pglite-${PGLITE_MESSAGES}`)
    mkdirSync(dir, { recursive: true })
    const ours = await startServer({ INBOX_DATA_DIR: dir, BENCH_TENANTS: "0", BENCH_SEED: String(PGLITE_MESSAGES) }, PORT)
    try {
      const seeded = ours.seeded!
      const base = `http://127.0.0.1:${PORT}`
      const inbox = seeded.inboxIds[0]!
      const first = await getJson(`${base}/v0/inboxes/${inbox}/messages?limit=100`, seeded.key)
      const threads = await getJson(`${base}/v0/threads`, seeded.key) as { body: { threads: Array<{ thread_id: string }> } }
      const paths = [
        ["messages: newest page", `/v0/inboxes/${inbox}/messages`],
        ["messages: labels=unread&from=<frequent sender>", `/v0/inboxes/${inbox}/messages?labels=unread&from=${encodeURIComponent(contact(0))}`],
        ["messages: labels=invoices", `/v0/inboxes/${inbox}/messages?labels=invoices`],
        ["messages: next page by page_token", `/v0/inboxes/${inbox}/messages?page_token=${(first.body as { next_page_token: string }).next_page_token}`],
        ["threads: organization, newest page", `/v0/threads`],
        ["threads: detail", `/v0/threads/${threads.body.threads[0]!.thread_id}`]
      ] as const
      const cases: Array<Case> = []
      for (const [name, path] of paths) {
        cases.push(await measure(name, { options: { url: `${base}${path}`, headers: { authorization: `Bearer ${seeded.key}` } }, server: ours.child }))
      }
      sections.push({ storage: `PGlite, ${PGLITE_MESSAGES.toLocaleString("en-US")} messages`, cases, notes: [seeded.seconds > 0 ? `Seeded in ${seeded.seconds} s.` : "Seed reused."] })
    } finally {
      await stop(ours.child)
    }
  }

  const name = process.env["BENCH_LISTING_DATABASE"] ?? "inbox_msgbench"
  try {
    await adminSql(SERVER, `CREATE DATABASE ${name}`)
  } catch { /* kept from an earlier run: its seed is reused */ }
  const url = dbUrl(name)
  const ours = await startServer({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "0", BENCH_SEED: String(LISTING_MESSAGES) }, PORT + 1)
  const reference = await startReference(url, PORT + 2)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  try {
    const seeded = ours.seeded!
    const cases: Array<Case> = []
    const notes: Array<string> = [seeded.seconds > 0 ? `Seeded in ${seeded.seconds} s.` : "Seed reused from an earlier run."]
    for (const c of await listingCases(pool, seeded)) {
      const o = `http://127.0.0.1:${PORT + 1}${c.path}`
      const r = `http://127.0.0.1:${PORT + 2}${c.path}`
      const [a, b] = await Promise.all([getJson(o, seeded.key), getJson(r, seeded.key)])
      if (a.status !== 200 || !isDeepStrictEqual(a, b)) {
        throw new Error(`${c.name}: the reference answers differently\n  ours: ${JSON.stringify(a).slice(0, 2000)}\n  reference: ${JSON.stringify(b).slice(0, 2000)}`)
      }
      const plan = await explain(pool, c)
      const top = plan.plan.filter((l) => /Scan|Sort|Execution Time/.test(l)).map((l) => l.trim()).join("; ")
      notes.push(`${c.name}: ${plan.usesIndex && !plan.seqScan ? "uses" : "**does not use**"} ${c.index} (${top})`)
      if (!plan.usesIndex || plan.seqScan) console.error(`${c.name}: plan\n${plan.plan.join("\n")}`)
      const headers = { authorization: `Bearer ${seeded.key}` }
      cases.push(await measure(c.name, { options: { url: o, headers }, server: ours.child }, { options: { url: r, headers }, server: reference.child }))
    }
    sections.unshift({ storage: `PostgreSQL, ${LISTING_MESSAGES.toLocaleString("en-US")} messages`, cases, notes })
  } finally {
    await pool.end()
    await stop(reference.child)
    await stop(ours.child)
  }
  return sections
}

// ---------------------------------------------------------------------------------------
// Ingest and send

/** A server's tenant with inboxes made through the API: their ids and addresses. */
export const inboxesOf = async (base: string, key: string, count: number) => {
  const made: Array<{ inbox_id: string; email: string }> = []
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${base}/v0/inboxes`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" })
    if (!res.ok) throw new Error(`creating an inbox: ${res.status} ${await res.text()}`)
    made.push(await res.json() as { inbox_id: string; email: string })
  }
  return made
}

/** Requests that deliver `raw` with a new Message-ID each time (else the second is a retry). */
const inboundOptions = (base: string, to: string, raw: Buffer): Parameters<typeof run>[0] => {
  const text = raw.toString("latin1")
  const at = text.indexOf("<bench-1@example.org>")
  const head = Buffer.from(text.slice(0, at), "latin1")
  const tail = Buffer.from(text.slice(at + "<bench-1@example.org>".length), "latin1")
  let n = 0
  const tag = `${process.pid}.${Date.now()}`
  return {
    url: `${base}/inbound/raw?to=${encodeURIComponent(to)}`,
    method: "POST",
    headers: { "x-inbound-secret": SECRET, "content-type": "message/rfc822" },
    requests: [{
      setupRequest: (req) => ({ ...req, body: Buffer.concat([head, Buffer.from(`<ingest-${tag}-${n++}@example.org>`), tail]) })
    }]
  }
}

/** The 5 KB ingest load of benchIngest on a new inbox of the key's organization (bench/profile-ingest.ts). */
export const ingestLoad = async (base: string, key: string) => {
  const [inbox] = await inboxesOf(base, key, 1)
  return inboundOptions(base, inbox!.email, benchMessages[0]![1])
}

export const benchIngest = async (): Promise<ReadonlyArray<Section>> => {
  const sections: Array<Section> = []
  const measureAll = async (base: string, key: string, server: ChildProcess, ref?: { base: string; server: ChildProcess }) => {
    const [inbox] = await inboxesOf(base, key, 1)
    const cases: Array<Case> = []
    for (const [name, raw] of benchMessages) {
      cases.push(await measure(
        `${name} (${raw.length.toLocaleString("en-US")} bytes)`,
        { options: inboundOptions(base, inbox!.email, raw), server },
        ref === undefined ? undefined : { options: inboundOptions(ref.base, inbox!.email, raw), server: ref.server }
      ))
    }
    return cases
  }
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-ingest-"))
  try {
    if (process.env["BENCH_SKIP_PGLITE"] !== "1") {
      const ours = await startServer({ INBOX_DATA_DIR: join(dir, "data"), BENCH_TENANTS: "1" }, PORT)
      try {
        sections.push({ storage: "PGlite", cases: await measureAll(`http://127.0.0.1:${PORT}`, ours.keys[0]!, ours.child), notes: [] })
      } finally {
        await stop(ours.child)
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const url = await freshDatabase("inbox_bench_ingest")
  const ours = await startServer({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "1" }, PORT + 1)
  const reference = await startReference(url, PORT + 2, [], { REF_INBOUND_SECRET: SECRET })
  try {
    const cases = await measureAll(`http://127.0.0.1:${PORT + 1}`, ours.keys[0]!, ours.child, { base: `http://127.0.0.1:${PORT + 2}`, server: reference.child })
    const pool = new pg.Pool({ connectionString: url, max: 1 })
    const counts = (await pool.query<{ messages: string; events: string; threads: string }>(
      `SELECT (SELECT count(*) FROM messages) AS messages, (SELECT count(*) FROM events WHERE event_type = 'message.received') AS events, (SELECT count(*) FROM threads) AS threads`
    )).rows[0]!
    await pool.end()
    sections.unshift({
      storage: "PostgreSQL",
      cases,
      notes: [`After the runs: ${Number(counts.messages).toLocaleString("en-US")} messages stored, ${Number(counts.events).toLocaleString("en-US")} message.received events, ${Number(counts.threads).toLocaleString("en-US")} threads (each delivery is a new conversation).`]
    })
  } finally {
    await stop(reference.child)
    await stop(ours.child)
    await adminSql(SERVER, "DROP DATABASE IF EXISTS inbox_bench_ingest")
  }
  return sections
}

/** An SMTP server on loopback that takes every message and keeps only a count. */
export const smtpSink = async () => {
  let received = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      stream.on("data", () => {})
      stream.on("end", () => {
        received++
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.server.address() as { port: number }).port
  return { url: `smtp://127.0.0.1:${port}`, received: () => received, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** Sends spread over the inboxes in turn: each inbox may send 100 in 24 hours. */
const sendOptions = (base: string, key: string, inboxIds: ReadonlyArray<string>): Parameters<typeof run>[0] => {
  let n = 0
  return {
    url: base,
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    requests: [{
      setupRequest: (req) => ({
        ...req,
        path: `/v0/inboxes/${inboxIds[n++ % inboxIds.length]}/messages/send`,
        body: JSON.stringify({ to: `customer${n % 50}@example.net`, subject: `Order ${n}`, text: "Your order has shipped. It should arrive within three days." })
      })
    }]
  }
}

export const benchSend = async (): Promise<ReadonlyArray<Section>> => {
  const sink = await smtpSink()
  const url = await freshDatabase("inbox_bench_send")
  const ours = await startServer({ INBOX_DATABASE_URL: url, BENCH_TENANTS: "1", INBOX_SMTP_URL: sink.url }, PORT + 1)
  const reference = await startReference(url, PORT + 2, [], { REF_SMTP_URL: sink.url })
  try {
    const key = ours.keys[0]!
    // Enough inboxes for every send of the runs under the per-inbox cap of 100 a day.
    const boxes = await inboxesOf(`http://127.0.0.1:${PORT + 1}`, key, 45)
    const ids = boxes.map((b) => b.inbox_id)
    const before = sink.received()
    const c = await measure(
      "send (text, one recipient)",
      { options: sendOptions(`http://127.0.0.1:${PORT + 1}`, key, ids), server: ours.child },
      { options: sendOptions(`http://127.0.0.1:${PORT + 2}`, key, ids), server: reference.child }
    )
    const pool = new pg.Pool({ connectionString: url, max: 1 })
    const counts = (await pool.query<{ sent: string; events: string }>(
      `SELECT (SELECT count(*) FROM messages WHERE direction = 'sent' AND state = 'sent') AS sent, (SELECT count(*) FROM events WHERE event_type = 'message.sent') AS events`
    )).rows[0]!
    await pool.end()
    return [{
      storage: "PostgreSQL",
      cases: [c],
      notes: [`The sink took ${(sink.received() - before).toLocaleString("en-US")} messages from both servers; ours stored ${Number(counts.sent).toLocaleString("en-US")} sent messages and wrote ${Number(counts.events).toLocaleString("en-US")} message.sent events. ${c.ours.errors} errors + non-2xx for ours (a 429 would mean an inbox reached its cap of 100 a day).`]
    }]
  } finally {
    await stop(reference.child)
    await stop(ours.child)
    await sink.close()
    await adminSql(SERVER, "DROP DATABASE IF EXISTS inbox_bench_send")
  }
}

// ---------------------------------------------------------------------------------------
// BENCHMARKS.md

const n = (x: number) => Math.round(x).toLocaleString("en-US")
const r2 = (x: number) => x.toFixed(2)

/** The machine's 15-minute load average when the benchmark started: how shared the 2 cores were. */
const loadAtStart = loadavg()[2]!.toFixed(1)

export const messagingSection = (intro: string, sections: ReadonlyArray<Section>, unit: string) => {
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; load average over the 15 minutes before the run ${loadAtStart}.`,
    `autocannon, ${CLIENTS} concurrent clients, ${SECONDS} s per run after a 2 s warm-up, ${ROUNDS} rounds of ours then the bare reference (bench/reference.ts); a ratio is taken within its round, the figure is the median round. Latencies in ms; the machine is shared with other work, so absolute figures move between runs and the ratios say more.`,
    "",
    intro,
    ""
  ]
  for (const s of sections) {
    lines.push(`### ${s.storage}`, "")
    const withRef = s.cases.some((c) => c.reference !== undefined)
    if (withRef) {
      lines.push(
        `| case | ours ${unit} | reference ${unit} | ratio (median, range) | ours p50 | ours p99 | reference p50 | reference p99 | errors + non-2xx |`,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
      )
      for (const c of s.cases) {
        const ratios = c.rounds.map((r) => r.ours.rps / r.reference.rps)
        lines.push(
          `| ${c.name} | ${n(c.ours.rps)} | ${n(c.reference!.rps)} | ${r2(medianOf(ratios))} (${r2(Math.min(...ratios))}-${r2(Math.max(...ratios))}) | ${c.ours.p50} | ${c.ours.p99} | ${c.reference!.p50} | ${c.reference!.p99} | ${c.ours.errors + c.reference!.errors} |`
        )
      }
    } else {
      lines.push(`| case | ours ${unit} | ours p50 | ours p99 | errors + non-2xx |`, "|---|---:|---:|---:|---:|")
      for (const c of s.cases) lines.push(`| ${c.name} | ${n(c.ours.rps)} | ${c.ours.p50} | ${c.ours.p99} | ${c.ours.errors} |`)
    }
    if (s.notes.length > 0) lines.push("", ...s.notes.map((note) => `- ${note}`))
    lines.push("")
  }
  return lines.join("\n")
}
