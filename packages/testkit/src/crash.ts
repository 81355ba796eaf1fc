/**
 * A crash under load, for `pnpm crash` (bench/crash.ts) and the crash test: a real server
 * takes a burst of inbound deliveries and sends, with a webhook subscribed to every
 * received message whose endpoint fails one first attempt in five, gets SIGKILL once enough
 * deliveries were acknowledged, is restarted on the same storage, and everything is counted
 * (see `crashOnce`): every received message's event must reach the endpoint (retries
 * included), duplicates only under the same `webhook-id`, every signature valid. PGlite (a
 * data folder, files blob store) and PostgreSQL (a fresh database, PostgreSQL blob store).
 */
import { PGlite } from "@electric-sql/pglite"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createServer, type IncomingHttpHeaders } from "node:http"
import nodemailer from "nodemailer"
import { SMTPServer } from "smtp-server"
import { Webhook } from "standardwebhooks"
import { buildMail } from "./mail-builder.ts"
import { createOrganization, freePort, freshDatabase, queryRows, serverEnv, type ServerProcess, startServer, THREAD_INCONSISTENCIES } from "./processes.ts"

const SECRET = "crash-inbound-secret"

export interface CrashOptions {
  readonly messages: number
  readonly sends: number
  /** The kill comes once this many deliveries were acknowledged. */
  readonly crashAfter: number
  /**
   * How deliveries arrive: the forwarder's `POST /inbound/raw` (default), or SMTP
   * conversations with the built-in receiver (`250` is the acknowledgement).
   */
  readonly via?: "http" | "smtp"
}

export interface CrashStorage {
  readonly name: string
  readonly env: Record<string, string>
  /** Rows of a statement, read while no server runs (PGlite has one process). */
  readonly query: <A extends object>(statement: string) => Promise<ReadonlyArray<A>>
  readonly done: () => Promise<void>
}

export const pgliteStorage = async (): Promise<CrashStorage> => {
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

export const postgresStorage = async (server: string): Promise<CrashStorage> => {
  const db = await freshDatabase(server, "crash")
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

/**
 * A webhook endpoint on loopback that fails (503) the first attempt of one event in five,
 * so deliveries are retried across the kill, and keeps every request it answered 2xx.
 */
const webhookEndpoint = async () => {
  const accepted: Array<{ readonly id: string; readonly body: string; readonly headers: IncomingHttpHeaders }> = []
  const seen = new Set<string>()
  let injected = 0
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const id = String(req.headers["webhook-id"] ?? "")
      const first = !seen.has(id)
      seen.add(id)
      if (first && createHash("sha256").update(id).digest()[0]! % 5 === 0) {
        injected++
        res.writeHead(503).end()
        return
      }
      accepted.push({ id, body: Buffer.concat(chunks).toString("utf8"), headers: req.headers })
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    accepted,
    injected: () => injected,
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

export const crashOnce = async (storage: CrashStorage, options: CrashOptions) => {
  const sink = await smtpSink()
  const endpoint = await webhookEndpoint()
  const smtpPort = options.via === "smtp" ? await freePort() : undefined
  const env = serverEnv({
    ...storage.env,
    INBOX_INBOUND_SECRET: SECRET,
    INBOX_SMTP_URL: sink.url,
    INBOX_WEBHOOK_ALLOW_PRIVATE: "1",
    // SPF/DKIM/DMARC lookups go to a loopback port nobody serves: refused at once, never the internet.
    ...(smtpPort === undefined ? {} : { INBOX_SMTP_LISTEN: `127.0.0.1:${smtpPort}`, INBOX_DNS_SERVERS: "127.0.0.1:9" })
  })
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
  const hook = await (await json("POST", "/v0/webhooks", { url: endpoint.url, event_types: ["message.received"] })).json() as { secret: string }

  const mails = await Promise.all(Array.from({ length: options.messages }, (_, i) =>
    buildMail({
      to: inbox.email,
      messageId: `<crash-${i}@example.org>`,
      subject: `Crash ${i - (i % 3)}`,
      text: `Message ${i} of the burst.\n`.repeat(20),
      ...(i % 3 === 0 ? {} : { inReplyTo: `<crash-${i - (i % 3)}@example.org>`, references: [`<crash-${i - (i % 3)}@example.org>`] })
    })
  ))
  const deliverSmtp = (i: number) => async (): Promise<Outcome> => {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true })
    try {
      const info = await transport.sendMail({ envelope: { from: "sender@example.org", to: [inbox.email] }, raw: Buffer.from(mails[i]!) })
      return /^250 /.test(info.response) ? "ok" : "failed"
    } finally {
      transport.close()
    }
  }
  const deliver = (i: number) => smtpPort !== undefined ? deliverSmtp(i) : async (): Promise<Outcome> => {
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

  // The burst, and the kill once `crashAfter` deliveries were acknowledged.
  let acknowledged = 0
  const killed = (async () => {
    while (acknowledged < options.crashAfter) await new Promise((r) => setTimeout(r, 5))
    await server.kill9()
  })()
  const [delivered, sent] = await Promise.all([
    pool(8, mails.map((_, i) => async () => {
      const outcome = await deliver(i)()
      if (outcome === "ok") acknowledged++
      return outcome
    })),
    pool(2, Array.from({ length: options.sends }, (_, i) => send(i)))
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
    // By SMTP the receiver prepends its Received-SPF and Authentication-Results headers, and
    // SMTP carries lines ending CRLF: the rest is the sender's message, line for line.
    const lines = (b: Uint8Array) => Buffer.from(b).toString("latin1").replace(/\r\n/g, "\n")
    const same = smtpPort === undefined ? sha(bytes) === sha(mails[i]!) : lines(bytes).endsWith(lines(mails[i]!))
    if (!raw.ok || !same) damaged.push(i)
  }

  // The clients retry what got no answer: the forwarder the same bytes, the sender the same key.
  const retriedMessages = delivered.flatMap((o, i) => o === "ok" ? [] : [i])
  const retriedSends = sent.flatMap((o, i) => o === "ok" ? [] : [i])
  const retried = await pool(8, [...retriedMessages.map(deliver), ...retriedSends.map(send)])
  // Every received message's event reaches the endpoint, the failed first attempts after
  // their retry (5 s later, RETRY_POLICIES.webhook), those cut by the kill after the restart.
  const hooked = () => new Set(endpoint.accepted.map((r) => r.id)).size
  for (let waited = 0; hooked() < options.messages && waited < 90_000; waited += 200) await new Promise((r) => setTimeout(r, 200))
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
  await endpoint.close()
  const eventIds = (await storage.query<{ id: string }>(`SELECT id FROM events WHERE event_type = 'message.received'`)).map((r) => r.id)
  const acceptedIds = new Set(endpoint.accepted.map((r) => r.id))
  const verifier = new Webhook(hook.secret)
  const badSignatures = endpoint.accepted.filter((r) => {
    try {
      verifier.verify(r.body, r.headers as Record<string, string>)
      return (JSON.parse(r.body) as { event_id?: string }).event_id !== r.id
    } catch {
      return true
    }
  }).length
  return {
    storage: storage.name,
    via: options.via ?? "http",
    deliveries: options.messages,
    ackedBeforeKill: ackedMessages.length,
    missing: missing.length,
    damaged: damaged.length,
    retried: retriedMessages.length + retriedSends.length,
    retriesFailed: retried.filter((o) => o !== "ok").length,
    sends: options.sends,
    sendsAckedBeforeKill: ackedSends.length,
    relayedBeforeKill,
    relayedTwice: relayed.filter((n) => n > 1).length,
    relayedMessages: relayed.length,
    webhookEvents: eventIds.length,
    webhookFailuresInjected: endpoint.injected(),
    webhookNotDelivered: eventIds.filter((id) => !acceptedIds.has(id)).length,
    webhookRepeats: endpoint.accepted.length - acceptedIds.size,
    webhookUnknownIds: [...acceptedIds].filter((id) => !eventIds.includes(id)).length,
    webhookBadSignatures: badSignatures,
    ...counts
  }
}

export type CrashResult = Awaited<ReturnType<typeof crashOnce>>

/** What went wrong, in words; empty when nothing acknowledged was lost, half-stored or doubled. */
export const crashFailures = (r: CrashResult): ReadonlyArray<string> => [
  ...(r.missing > 0 ? [`${r.missing} acknowledged deliveries missing`] : []),
  ...(r.damaged > 0 ? [`${r.damaged} stored with other bytes`] : []),
  ...(r.retriesFailed > 0 ? [`${r.retriesFailed} retries not answered 2xx`] : []),
  ...(r.storedTwice > 0 ? [`${r.storedTwice} messages stored twice`] : []),
  ...(r.withoutEvent > 0 ? [`${r.withoutEvent} messages without their event`] : []),
  ...(r.eventsTwice > 0 ? [`${r.eventsTwice} events written twice`] : []),
  ...(r.threadsInconsistent > 0 ? [`${r.threadsInconsistent} threads not equal to their messages`] : []),
  ...(r.sentLeftSending > 0 ? [`${r.sentLeftSending} sent messages left sending`] : []),
  ...(r.stored !== r.deliveries ? [`${r.stored} of ${r.deliveries} deliveries stored`] : []),
  ...(r.sentStored !== r.sends || r.sentEvents !== r.sends ? [`${r.sentStored} sent messages and ${r.sentEvents} message.sent events for ${r.sends} sends`] : []),
  ...(r.relayedMessages !== r.sends ? [`the relay received ${r.relayedMessages} distinct messages for ${r.sends} sends`] : []),
  ...(r.webhookNotDelivered > 0 ? [`${r.webhookNotDelivered} of ${r.webhookEvents} events never reached the webhook`] : []),
  ...(r.webhookUnknownIds > 0 ? [`the webhook received ${r.webhookUnknownIds} ids that are no event`] : []),
  ...(r.webhookBadSignatures > 0 ? [`${r.webhookBadSignatures} webhook requests with a bad signature or a webhook-id other than the event id`] : [])
]
