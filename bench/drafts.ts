/**
 * `pnpm bench drafts`: scheduled send at scale (issue 9). 10,000 drafts (BENCH_DRAFTS) in
 * 100 inboxes are created over the API, all with the same `send_at`; the figure is how long
 * after that instant the last one reached the SMTP sink on loopback, and whether each was
 * sent exactly once (the sink reads every message's Subject, one per draft).
 *
 * PostgreSQL: two server processes of ours on one database (both run the job worker), in
 * rounds alternating with the bare reference (bench/reference-drafts.ts: two processes of
 * node + pg + nodemailer taking due rows with SKIP LOCKED, relaying, recording). PGlite:
 * one server process, ours alone. BENCH_DRAFTS_ROUNDS (2), BENCH_SKIP_PGLITE=1.
 */
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { SMTPServer } from "smtp-server"
import pg from "pg"
import { adminSql } from "@inbox/testkit"
import { spawnServer, stop } from "./http.ts"
import { freshDatabase, inboxesOf, startServer } from "./messaging.ts"
import { machine } from "./report.ts"

const DRAFTS = Number(process.env["BENCH_DRAFTS"] ?? "10000")
const ROUNDS = Number(process.env["BENCH_DRAFTS_ROUNDS"] ?? "2")
/** Each inbox may send 100 a day: enough inboxes for every draft under that cap. */
const INBOX_COUNT = Math.ceil(DRAFTS / 100)
const PORT = Number(process.env["BENCH_DRAFTS_PORT"] ?? "29351")
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
/** Concurrent API clients creating the drafts. */
const CREATORS = 16

/** An SMTP server on loopback keeping each message's arrival time and Subject. */
const sink = async () => {
  const arrivals: Array<{ at: number; subject: string }> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    disableReverseLookup: true,
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (c: Buffer) => chunks.push(c))
      stream.on("end", () => {
        const head = Buffer.concat(chunks).toString("latin1")
        arrivals.push({ at: Date.now(), subject: /^Subject: (.*)$/m.exec(head)?.[1]?.trim() ?? "" })
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.server.address() as { port: number }).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    take: () => arrivals.splice(0, arrivals.length),
    count: () => arrivals.length,
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}
type Sink = Awaited<ReturnType<typeof sink>>

export interface DraftRun {
  readonly side: "ours" | "reference"
  readonly storage: string
  /** Seconds from the common send_at to the last message at the sink. */
  readonly allSentS: number
  readonly p50S: number
  readonly p99S: number
  readonly received: number
  readonly distinct: number
  readonly createRate: number
  readonly note: string
}

const pct = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN

/** Waits until the sink has `n` messages (or `limitS` passed), then a moment more to catch a duplicate. */
const collect = async (s: Sink, n: number, sendAt: number, limitS = 1_200) => {
  const deadline = Date.now() + limitS * 1_000
  let last = -1
  while (s.count() < n && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
    if (Math.floor(s.count() / 1_000) !== last) {
      last = Math.floor(s.count() / 1_000)
      console.error(`  ${s.count().toLocaleString("en-US")} / ${n.toLocaleString("en-US")} at the sink, ${((Date.now() - sendAt) / 1_000).toFixed(1)} s after send_at`)
    }
  }
  await new Promise((r) => setTimeout(r, 3_000))
  const arrivals = s.take()
  const late = arrivals.map((a) => (a.at - sendAt) / 1_000).sort((a, b) => a - b)
  return {
    allSentS: late.at(-1) ?? NaN,
    p50S: pct(late, 0.5),
    p99S: pct(late, 0.99),
    received: arrivals.length,
    distinct: new Set(arrivals.map((a) => a.subject)).size
  }
}

/** Creates the drafts over the API from CREATORS clients; answers drafts per second. */
const createDrafts = async (base: string, key: string, inboxIds: ReadonlyArray<string>, sendAt: Date) => {
  const started = Date.now()
  let next = 0
  const worker = async () => {
    for (let i = next++; i < DRAFTS; i = next++) {
      const res = await fetch(`${base}/v0/inboxes/${inboxIds[i % inboxIds.length]}/drafts`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          to: [`customer${i % 50}@example.net`],
          subject: `Draft ${i}`,
          text: "Your order has shipped. It should arrive within three days.",
          send_at: sendAt.toISOString()
        })
      })
      if (res.status !== 200 && res.status !== 201) throw new Error(`creating a draft: ${res.status} ${await res.text()}`)
      await res.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: CREATORS }, worker))
  return DRAFTS / ((Date.now() - started) / 1_000)
}

/** How far ahead send_at is set: creating 10,000 drafts must end before it comes. */
const leadMs = () => Number(process.env["BENCH_DRAFTS_LEAD_S"] ?? "90") * 1_000

const oursRound = async (s: Sink, storage: "PostgreSQL" | "PGlite"): Promise<DraftRun> => {
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-drafts-"))
  const url = storage === "PostgreSQL" ? await freshDatabase("inbox_bench_drafts") : undefined
  const env = url === undefined ? { INBOX_DATA_DIR: join(dir, "data") } : { INBOX_DATABASE_URL: url }
  const servers: Array<ChildProcess> = []
  try {
    const first = await startServer({ ...env, BENCH_TENANTS: "1", INBOX_SMTP_URL: s.url }, PORT)
    servers.push(first.child)
    if (url !== undefined) servers.push((await startServer({ ...env, BENCH_TENANTS: "0", INBOX_SMTP_URL: s.url }, PORT + 1)).child)
    const base = `http://127.0.0.1:${PORT}`
    const inboxes = await inboxesOf(base, first.keys[0]!, INBOX_COUNT)
    const sendAt = new Date(Date.now() + leadMs())
    const createRate = await createDrafts(base, first.keys[0]!, inboxes.map((i) => i.inbox_id), sendAt)
    if (Date.now() > sendAt.getTime()) throw new Error("creating the drafts took longer than BENCH_DRAFTS_LEAD_S: raise it")
    console.error(`ours (${storage}): ${DRAFTS} drafts created at ${Math.round(createRate)}/s; waiting for send_at`)
    const got = await collect(s, DRAFTS, sendAt.getTime())
    let note = ""
    if (url !== undefined) {
      const pool = new pg.Pool({ connectionString: url, max: 1 })
      const c = (await pool.query(`SELECT (SELECT count(*)::int FROM messages WHERE direction = 'sent' AND state = 'sent') AS sent,
          (SELECT count(*)::int FROM events WHERE event_type = 'message.sent') AS events,
          (SELECT count(*)::int FROM drafts) AS drafts_left,
          (SELECT count(*)::int FROM jobs WHERE kind = 'draft.send' AND state = 'failed') AS failed`)).rows[0]
      await pool.end()
      note = `stored ${c.sent} sent messages and ${c.events} message.sent events; ${c.drafts_left} drafts left, ${c.failed} draft jobs failed`
    } else {
      const res = await fetch(`${base}/v0/drafts?limit=1`, { headers: { authorization: `Bearer ${first.keys[0]}` } })
      const left = ((await res.json()) as { count?: number; drafts?: Array<unknown> }).drafts?.length ?? -1
      note = left === 0 ? "no draft left" : `drafts left (first page): ${left}`
    }
    return { side: "ours", storage, ...got, createRate, note }
  } finally {
    for (const child of servers) await stop(child)
    rmSync(dir, { recursive: true, force: true })
    if (url !== undefined) await adminSql(SERVER, "DROP DATABASE IF EXISTS inbox_bench_drafts")
  }
}

const referenceRound = async (s: Sink): Promise<DraftRun> => {
  const url = await freshDatabase("inbox_bench_drafts_ref")
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const workers: Array<ChildProcess> = []
  try {
    await pool.query(`CREATE TABLE ref_drafts (id text PRIMARY KEY, sender text NOT NULL, recipient text NOT NULL,
      subject text NOT NULL, body text NOT NULL, send_at timestamptz NOT NULL);
      CREATE INDEX ref_drafts_due ON ref_drafts (send_at);
      CREATE TABLE ref_sent (draft_id text PRIMARY KEY, sent_at timestamptz NOT NULL)`)
    const started = Date.now()
    const sendAt = new Date(Date.now() + leadMs())
    for (let i = 0; i < DRAFTS; i += 1_000) {
      const ids = Array.from({ length: Math.min(1_000, DRAFTS - i) }, (_, k) => i + k)
      await pool.query(
        `INSERT INTO ref_drafts SELECT 'd' || n, 'u' || (n % ${INBOX_COUNT}) || '@bench.example', 'customer' || (n % 50) || '@example.net',
          'Draft ' || n, 'Your order has shipped. It should arrive within three days.', $2 FROM unnest($1::int[]) AS n`,
        [ids, sendAt]
      )
    }
    const createRate = DRAFTS / ((Date.now() - started) / 1_000)
    for (let i = 0; i < 2; i++) {
      workers.push((await spawnServer("bench/reference-drafts.ts", { REF_DATABASE_URL: url, REF_SMTP_URL: s.url }, [], (line) =>
        line === "REF_DRAFTS_READY" ? true : undefined)).child)
    }
    console.error(`reference: ${DRAFTS} rows written; waiting for send_at`)
    const got = await collect(s, DRAFTS, sendAt.getTime())
    const c = (await pool.query(`SELECT (SELECT count(*)::int FROM ref_sent) AS sent, (SELECT count(*)::int FROM ref_drafts) AS left`)).rows[0]
    return { side: "reference", storage: "PostgreSQL", ...got, createRate, note: `recorded ${c.sent} sends; ${c.left} rows left` }
  } finally {
    for (const child of workers) await stop(child)
    await pool.end()
    await adminSql(SERVER, "DROP DATABASE IF EXISTS inbox_bench_drafts_ref")
  }
}

export const benchDrafts = async (): Promise<ReadonlyArray<DraftRun>> => {
  const s = await sink()
  const runs: Array<DraftRun> = []
  try {
    for (let i = 0; i < ROUNDS; i++) {
      // The order alternates, so neither side always runs on a warmer machine.
      const pair = i % 2 === 0 ? [() => oursRound(s, "PostgreSQL"), () => referenceRound(s)] : [() => referenceRound(s), () => oursRound(s, "PostgreSQL")]
      for (const side of pair) {
        const r = await side()
        console.error(`round ${i + 1}: ${r.side} ${r.storage}: all sent ${r.allSentS.toFixed(1)} s after send_at (p50 ${r.p50S.toFixed(1)}, p99 ${r.p99S.toFixed(1)}); ${r.received} at the sink, ${r.distinct} distinct`)
        runs.push(r)
      }
    }
    if (process.env["BENCH_SKIP_PGLITE"] !== "1") runs.push(await oursRound(s, "PGlite"))
  } finally {
    await s.close()
  }
  return runs
}

const f1 = (x: number) => x.toFixed(1)

export const draftsSection = (runs: ReadonlyArray<DraftRun>, loadBefore: string) => {
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; load average (1, 5, 15 min) before the run ${loadBefore}, after ${loadavg().map((x) => x.toFixed(1)).join(" ")}.`,
    "",
    `${DRAFTS.toLocaleString("en-US")} drafts in ${INBOX_COUNT} inboxes, all with the same \`send_at\`, created over the API before that instant (bench/drafts.ts). "All sent" is the time from \`send_at\` to the last message at the SMTP sink on loopback; p50 and p99 are of each message's arrival after \`send_at\`. Exactly once: the sink reads every message's Subject (one per draft), so a duplicate shows as more messages than distinct subjects. PostgreSQL: two server processes of ours on one database, rounds alternating with the bare reference (two processes of node + pg + nodemailer taking due rows with SKIP LOCKED, 8 at a time each, as ours runs 8 draft jobs per process). PGlite: one server process.`,
    "",
    "| round | side | storage | all sent (s) | p50 (s) | p99 (s) | at the sink | distinct | drafts created/s (reference: rows inserted) | checks |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---|"
  ]
  runs.forEach((r, i) => {
    const round = r.storage === "PGlite" ? "-" : String(Math.floor(i / 2) + 1)
    lines.push(`| ${round} | ${r.side} | ${r.storage} | **${f1(r.allSentS)}** | ${f1(r.p50S)} | ${f1(r.p99S)} | ${r.received.toLocaleString("en-US")} | ${r.distinct.toLocaleString("en-US")} | ${Math.round(r.createRate).toLocaleString("en-US")} | ${r.note} |`)
  })
  return lines.join("\n")
}
