/**
 * `pnpm crash`: kill -9 of a server in the middle of a burst of inbound deliveries and
 * sends, on PGlite (a data folder, files blob store) and on PostgreSQL (a fresh database,
 * PostgreSQL blob store). Then a restart, a count, and the clients' retries:
 *
 * 1. a real `inboxctl serve` takes deliveries to one inbox (8 at a time; every third one a
 *    reply to an earlier one) and sends with an Idempotency-Key each (2 at a time) relayed
 *    to an SMTP sink on loopback; after CRASH_AFTER acknowledged deliveries it gets SIGKILL;
 * 2. restarted on the same storage, every delivery that got a 2xx must be there once, with
 *    its raw bytes exactly as sent (downloaded through the API), in a thread; then the
 *    server is stopped and the database read: no message without its event or with two,
 *    every thread equal to its messages, no sent message left `sending` once retried;
 * 3. the clients retry what got no answer (the forwarder the same bytes, the sender the same
 *    Idempotency-Key): every retry is 2xx, nothing stored twice.
 *
 * Sends: the rule (sending/Idempotency.ts) is at least once toward the relay, exactly once
 * in our store. A send in flight at the kill may reach the relay again on its retry; the
 * count of such repeats is printed, and must not exceed the sends in flight.
 *
 * The counts go to BENCHMARKS.md ("Crash: kill -9 mid-burst"). CRASH_MESSAGES (300),
 * CRASH_SENDS (40), CRASH_AFTER (120); BENCH_POSTGRES_URL as for pnpm bench.
 */
import { PGlite } from "@electric-sql/pglite"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SMTPServer } from "smtp-server"
import {
  buildMail,
  createOrganization,
  freshDatabase,
  queryRows,
  serverEnv,
  type ServerProcess,
  startServer,
  THREAD_INCONSISTENCIES
} from "@inbox/testkit"
import { machine, writeSection } from "./report.ts"

const MESSAGES = Number(process.env["CRASH_MESSAGES"] ?? "300")
const SENDS = Number(process.env["CRASH_SENDS"] ?? "40")
const CRASH_AFTER = Number(process.env["CRASH_AFTER"] ?? "120")
const SECRET = "crash-inbound-secret"
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

interface Storage {
  readonly name: string
  readonly env: Record<string, string>
  /** Rows of a statement, read while no server runs (PGlite has one process). */
  readonly query: <A extends object>(statement: string) => Promise<ReadonlyArray<A>>
  readonly done: () => Promise<void>
}

const pgliteStorage = async (): Promise<Storage> => {
  const dir = mkdtempSync(join(tmpdir(), "inbox-crash-"))
  const dataDir = join(dir, "data")
  return {
    name: "PGlite",
    env: { INBOX_DATA_DIR: dataDir },
    query: async <A extends object>(statement: string) => {
      const db = await PGlite.create(dataDir)
      try {
        return (await db.query<A>(statement)).rows
      } finally {
        await db.close()
      }
    },
    done: async () => rmSync(dir, { recursive: true, force: true })
  }
}

const postgresStorage = async (): Promise<Storage> => {
  const db = await freshDatabase(SERVER, "crash")
  return { name: "PostgreSQL", env: { INBOX_DATABASE_URL: db.url }, query: (statement) => queryRows(db.url, statement), done: db.drop }
}

/** An SMTP server on loopback that counts what it receives by Message-ID. */
const smtpSink = async () => {
  const received = new Map<string, number>()
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      let head = ""
      stream.on("data", (c: Buffer) => {
        if (head.length < 4096) head += c.toString("latin1")
      })
      stream.on("end", () => {
        const id = /^Message-ID:\s*(\S+)/im.exec(head)?.[1] ?? "?"
        received.set(id, (received.get(id) ?? 0) + 1)
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}

type Outcome = "ok" | "failed"

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** Runs `tasks` with `width` at a time, each to its outcome (a dead server is "failed"). */
const pool = async (width: number, tasks: ReadonlyArray<() => Promise<Outcome>>) => {
  const outcomes: Array<Outcome> = new Array(tasks.length)
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < tasks.length) {
      const i = next++
      outcomes[i] = await tasks[i]!().catch(() => "failed" as const)
    }
  }))
  return outcomes
}

const crashOnce = async (storage: Storage) => {
  const sink = await smtpSink()
  const env = serverEnv({ ...storage.env, INBOX_INBOUND_SECRET: SECRET, INBOX_SMTP_URL: sink.url })
  const { api_key: key } = await createOrganization(env)
  let server: ServerProcess = await startServer(env)
  const port = Number(new URL(server.url).port)
  const json = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  const inbox = await (await json("POST", "/v0/inboxes", { username: "crash" })).json() as { inbox_id: string; email: string }

  const mails = await Promise.all(Array.from({ length: MESSAGES }, (_, i) =>
    buildMail({
      to: inbox.email,
      messageId: `<crash-${i}@example.org>`,
      subject: `Crash ${i - (i % 3)}`,
      text: `Message ${i} of the burst.\n`.repeat(20),
      ...(i % 3 === 0 ? {} : { inReplyTo: `<crash-${i - (i % 3)}@example.org>`, references: [`<crash-${i - (i % 3)}@example.org>`] })
    })
  ))
  const deliver = (i: number) => async (): Promise<Outcome> => {
    const res = await fetch(`${server.url}/inbound/raw?to=${encodeURIComponent(inbox.email)}`, {
      method: "POST",
      headers: { "x-inbound-secret": SECRET, "content-type": "message/rfc822" },
      body: Buffer.from(mails[i]!)
    })
    await res.arrayBuffer()
    return res.ok ? "ok" : "failed"
  }
  const send = (i: number) => async (): Promise<Outcome> => {
    const res = await json("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { to: `customer${i}@example.net`, subject: `Order ${i}`, text: "Shipped." }, {
      "idempotency-key": `crash-send-${i}`
    })
    await res.arrayBuffer()
    return res.ok ? "ok" : "failed"
  }

  // The burst, and the kill once CRASH_AFTER deliveries were acknowledged.
  let acknowledged = 0
  const killed = (async () => {
    while (acknowledged < CRASH_AFTER) await new Promise((r) => setTimeout(r, 5))
    await server.kill9()
  })()
  const [delivered, sent] = await Promise.all([
    pool(8, mails.map((_, i) => async () => {
      const outcome = await deliver(i)()
      if (outcome === "ok") acknowledged++
      return outcome
    })),
    pool(2, Array.from({ length: SENDS }, (_, i) => send(i)))
  ])
  await killed
  const ackedMessages = delivered.flatMap((o, i) => o === "ok" ? [i] : [])
  const ackedSends = sent.flatMap((o, i) => o === "ok" ? [i] : [])
  const relayedBeforeKill = [...sink.received.values()].reduce((a, b) => a + b, 0)

  // Restart on the same storage and port, then check what was acknowledged.
  server = await startServer(env, port)
  const stored = new Map<string, string>()
  for (let token: string | undefined = undefined, first = true; first || token !== undefined; first = false) {
    const page = await (await json("GET", `/v0/inboxes/${inbox.inbox_id}/messages?limit=100${token === undefined ? "" : `&page_token=${token}`}`)).json() as {
      messages: Array<{ message_id: string; rfc_message_id: string }>
      next_page_token?: string
    }
    for (const m of page.messages) stored.set(m.rfc_message_id, m.message_id)
    token = page.next_page_token
  }
  const missing: Array<number> = []
  const damaged: Array<number> = []
  for (const i of ackedMessages) {
    const id = stored.get(`<crash-${i}@example.org>`)
    if (id === undefined) {
      missing.push(i)
      continue
    }
    const raw = await json("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${id}/raw/download`)
    const bytes = new Uint8Array(await raw.arrayBuffer())
    if (!raw.ok || sha(bytes) !== sha(mails[i]!)) damaged.push(i)
  }

  // The clients retry what got no answer: the forwarder the same bytes, the sender the same key.
  const retriedMessages = delivered.flatMap((o, i) => o === "ok" ? [] : [i])
  const retriedSends = sent.flatMap((o, i) => o === "ok" ? [] : [i])
  const retried = await pool(8, [...retriedMessages.map(deliver), ...retriedSends.map(send)])
  await server.stop()

  const one = async (statement: string) => Number((await storage.query<{ n: number }>(statement))[0]!.n)
  const counts = {
    stored: await one(`SELECT count(*)::int AS n FROM messages WHERE direction = 'received'`),
    storedTwice: await one(`SELECT count(*)::int AS n FROM (SELECT 1 FROM messages GROUP BY inbox_id, direction, rfc_message_id HAVING count(*) > 1) d`),
    withoutEvent: await one(`SELECT count(*)::int AS n FROM messages m WHERE direction = 'received' AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_type = 'message.received' AND e.payload->'message'->>'message_id' = m.id)`),
    eventsTwice: await one(`SELECT count(*)::int AS n FROM (SELECT 1 FROM events WHERE event_type IN ('message.received', 'message.sent') GROUP BY event_type, coalesce(payload->'message'->>'message_id', payload->'send'->>'message_id') HAVING count(*) > 1) d`),
    threadsInconsistent: (await storage.query(THREAD_INCONSISTENCIES)).length,
    sentStored: await one(`SELECT count(*)::int AS n FROM messages WHERE direction = 'sent' AND state = 'sent'`),
    sentLeftSending: await one(`SELECT count(*)::int AS n FROM messages WHERE direction = 'sent' AND state <> 'sent'`),
    sentEvents: await one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'message.sent'`)
  }
  const relayed = [...sink.received.values()]
  await sink.close()
  return {
    storage: storage.name,
    deliveries: MESSAGES,
    ackedBeforeKill: ackedMessages.length,
    missing: missing.length,
    damaged: damaged.length,
    retried: retriedMessages.length + retriedSends.length,
    retriesFailed: retried.filter((o) => o !== "ok").length,
    sends: SENDS,
    sendsAckedBeforeKill: ackedSends.length,
    relayedBeforeKill,
    relayedTwice: relayed.filter((n) => n > 1).length,
    relayedMessages: relayed.length,
    ...counts
  }
}

const main = async () => {
  const results: Array<Awaited<ReturnType<typeof crashOnce>>> = []
  for (const make of [pgliteStorage, postgresStorage]) {
    const storage = await make()
    try {
      const r = await crashOnce(storage)
      console.error(JSON.stringify(r))
      results.push(r)
    } finally {
      await storage.done()
    }
  }
  const bad = results.filter((r) =>
    r.missing + r.damaged + r.retriesFailed + r.storedTwice + r.withoutEvent + r.eventsTwice + r.threadsInconsistent + r.sentLeftSending > 0 ||
    r.stored !== r.deliveries || r.sentStored !== r.sends || r.sentEvents !== r.sends || r.relayedMessages !== r.sends
  )
  const rows = (f: (r: (typeof results)[number]) => string | number) => results.map((r) => ` ${f(r)} |`).join("")
  const body = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}. \`pnpm crash\` (bench/crash.ts): a burst of ${MESSAGES} inbound deliveries (8 at a time, two thirds of them replies) and ${SENDS} sends with an Idempotency-Key each (2 at a time), \`kill -9\` of the server after ${CRASH_AFTER} deliveries were acknowledged, a restart on the same storage, a check of every acknowledged delivery through the API (there once, its raw bytes identical), the clients' retries of everything unanswered, then the database read directly.`,
    "",
    `| | ${results.map((r) => r.storage).join(" | ")} |`,
    `|---|${results.map(() => "---:").join("|")}|`,
    `| deliveries acknowledged (2xx) before the kill |${rows((r) => r.ackedBeforeKill)}`,
    `| of those, missing after the restart |${rows((r) => r.missing)}`,
    `| of those, raw bytes not identical |${rows((r) => r.damaged)}`,
    `| requests retried after the restart (deliveries + sends) |${rows((r) => r.retried)}`,
    `| retries not answered 2xx |${rows((r) => r.retriesFailed)}`,
    `| received messages stored in the end (of ${MESSAGES}) |${rows((r) => r.stored)}`,
    `| messages stored twice |${rows((r) => r.storedTwice)}`,
    `| received messages without their event |${rows((r) => r.withoutEvent)}`,
    `| events written twice for one message |${rows((r) => r.eventsTwice)}`,
    `| threads not equal to their messages |${rows((r) => r.threadsInconsistent)}`,
    `| sends acknowledged before the kill (of ${SENDS}) |${rows((r) => r.sendsAckedBeforeKill)}`,
    `| sent messages stored in the end / message.sent events |${rows((r) => `${r.sentStored} / ${r.sentEvents}`)}`,
    `| sent messages left \`sending\` |${rows((r) => r.sentLeftSending)}`,
    `| distinct messages the relay received / received twice (a send in flight at the kill, resent by its retry: at least once) |${rows((r) => `${r.relayedMessages} / ${r.relayedTwice}`)}`,
    "",
    bad.length === 0 ? "Nothing acknowledged was lost, nothing was half-stored or stored twice." : `**Failed on ${bad.map((r) => r.storage).join(", ")}.**`
  ].join("\n")
  console.log(body)
  writeSection("Crash: kill -9 mid-burst", body)
  if (bad.length > 0) process.exit(1)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
