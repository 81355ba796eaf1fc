/**
 * The bare reference's messaging routes (served by bench/reference.ts), each the work its
 * route cannot avoid, written the way a hand-written node:http + pg server would:
 *
 * - `GET /v0/inboxes/:id/messages` (`labels`, `from`, `limit`, `page_token`), `GET /v0/threads`
 *   and `GET /v0/threads/:id`: the key, the inbox (for messages), then word for word the
 *   engine's statements (Messages.list, Threads.list, Threads.get) and the same JSON body,
 *   so the benchmark checks both answer alike before timing them. Organization keys only,
 *   and no hidden-label requests: the benchmark sends neither.
 * - `POST /inbound/raw`: the secret compared, the body read and parsed once by mailparser's
 *   simpleParser, nothing stored (the yardstick for ingest).
 * - `POST /v0/inboxes/:id/messages/send`: the key, the inbox, the JSON body, then the
 *   message built and relayed by nodemailer to REF_SMTP_URL, nothing stored.
 */
import { timingSafeEqual } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { createRequire } from "node:module"
import nodemailer from "nodemailer"
import type pg from "pg"

const { simpleParser } = createRequire(import.meta.url)("mailparser") as { simpleParser: (raw: Buffer) => Promise<{ messageId?: string }> }

// An API key's row as the reference server reads it (reference.ts authenticates with it).
export interface KeyRow {
  id: string
  organization_id: string
  pod_id: string | null
  inbox_id: string | null
  permissions: ReadonlyArray<string> | null
  inbox_pod_id: string | null
}

export interface Context {
  readonly pool: pg.Pool
  readonly authenticate: (req: IncomingMessage, res: ServerResponse) => Promise<KeyRow | undefined>
  readonly send: (res: ServerResponse, status: number, body: unknown) => void
  readonly error: (res: ServerResponse, status: number, code: string) => void
}

// The engine's summary columns (messages/model.ts SUMMARY_COLUMNS), in its order.
const SUMMARY = `"id", "organization_id", "pod_id", "inbox_id", "thread_id", "direction", "state", "rfc_message_id", "in_reply_to", "references", "labels", "timestamp", "sender", "recipients", "cc", "bcc", "subject", "preview", "size", "created_at", "updated_at"`

type Row = Record<string, any>

const iso = (d: Date | null) => d === null ? undefined : d.toISOString()
const nonEmpty = <A>(list: ReadonlyArray<A> | null) => list === null || list.length === 0 ? undefined : list
const compact = (o: Record<string, unknown>) => {
  for (const k of Object.keys(o)) if (o[k] === undefined || o[k] === null) delete o[k]
  return o
}

const summary = (r: Row) =>
  compact({
    inbox_id: r.inbox_id,
    thread_id: r.thread_id,
    message_id: r.id,
    rfc_message_id: r.rfc_message_id,
    labels: r.labels,
    timestamp: iso(r.timestamp),
    from: r.sender,
    to: r.recipients,
    cc: nonEmpty(r.cc),
    bcc: nonEmpty(r.bcc),
    size: r.size,
    subject: r.subject,
    preview: r.preview,
    in_reply_to: r.in_reply_to,
    references: nonEmpty(r.references),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at)
  })

const attachment = (a: Row) =>
  compact({
    attachment_id: a.attachment_id,
    filename: a.filename,
    content_type: a.content_type,
    content_disposition: a.content_disposition,
    size: a.size,
    content_id: a.content_id
  })

const message = (r: Row) =>
  compact({
    ...summary(r),
    text: r.text,
    html: r.html,
    extracted_text: r.extracted_text_is_text === true ? r.text : r.extracted_text,
    extracted_html: r.extracted_html_is_html === true ? r.html : r.extracted_html,
    headers: r.headers,
    attachments: (r.attachments as Array<Row>).map(attachment)
  })

const threadSummary = (r: Row) =>
  compact({
    inbox_id: r.inbox_id,
    thread_id: r.id,
    labels: r.labels,
    timestamp: iso(r.last_at),
    senders: r.senders,
    recipients: r.recipients,
    last_message_id: r.last_message_id,
    message_count: r.message_count,
    size: Number(r.size),
    received_timestamp: iso(r.received_at),
    sent_timestamp: iso(r.sent_at),
    subject: r.subject,
    preview: r.preview,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at)
  })

/** The keyset page: the cursor condition from `page_token` (parameters from $start) and the page. */
const cursorOf = (token: string | null): [Date, string] | undefined => {
  if (token === null) return undefined
  const [at, id] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as [string, string]
  return [new Date(at), id]
}

const pageBody = (plural: string, rows: ReadonlyArray<Row>, limit: number, map: (r: Row) => unknown, key: (r: Row) => [Date, string]) => {
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return {
    count: page.length,
    limit,
    ...(rows.length > limit && last !== undefined
      ? { next_page_token: Buffer.from(JSON.stringify([key(last)[0].toISOString(), key(last)[1]])).toString("base64url") }
      : {}),
    [plural]: page.map(map)
  }
}

const readBody = async (req: IncomingMessage) => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const MESSAGES = /^\/v0\/inboxes\/([^/?]+)\/messages(?:\?|$)/
const SEND = /^\/v0\/inboxes\/([^/?]+)\/messages\/send$/
const THREADS = /^\/v0\/threads(?:\?|$)/
const THREAD = /^\/v0\/threads\/([^/?]+)$/

const inboundSecret = Buffer.from(process.env["REF_INBOUND_SECRET"] ?? "")
// Pooled, as the engine relays (a connection per message costs smtp-server's 100 ms greeting delay).
const relay = process.env["REF_SMTP_URL"] === undefined ? undefined : nodemailer.createTransport(`${process.env["REF_SMTP_URL"]}?pool=true`)

export const messagingRoute = async ({ pool, authenticate, send, error }: Context, req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? "/", "http://reference")
  const q = url.searchParams
  if (req.method === "POST" && url.pathname === "/inbound/raw") {
    const given = Buffer.from(String(req.headers["x-inbound-secret"] ?? ""))
    if (given.length !== inboundSecret.length || !timingSafeEqual(given, inboundSecret)) return error(res, 401, "unauthorized")
    const parsed = await simpleParser(await readBody(req))
    return send(res, 200, { delivered: (q.get("to") ?? "").split(",").map((address) => ({ address, message_id: parsed.messageId ?? "" })) })
  }
  const key = await authenticate(req, res)
  if (key === undefined) return
  let m: RegExpExecArray | null
  if (req.method === "GET" && (m = MESSAGES.exec(req.url ?? "")) !== null) {
    const inbox = (await pool.query("SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2", [decodeURIComponent(m[1]!), key.organization_id])).rows[0]
    if (inbox === undefined) return error(res, 404, "not_found")
    const limit = Number(q.get("limit") ?? "50")
    const params: Array<unknown> = [inbox.id]
    let where = ""
    const labels = q.get("labels")?.split(",")
    if (labels !== undefined) where += ` AND labels @> $${params.push(labels)}::text[]`
    const from = q.get("from")
    if (from !== null) where += ` AND sender_address = $${params.push(from.toLowerCase())}`
    const cursor = cursorOf(q.get("page_token"))
    if (cursor !== undefined) where += ` AND ("timestamp", "id") < ($${params.push(cursor[0])}, $${params.push(cursor[1])})`
    const rows = await pool.query(
      `SELECT ${SUMMARY} FROM messages WHERE inbox_id = $1 AND NOT hidden${where} ORDER BY "timestamp" DESC, "id" DESC LIMIT ${limit + 1}`,
      params
    )
    return send(res, 200, pageBody("messages", rows.rows, limit, summary, (r) => [r.timestamp, r.id]))
  }
  if (req.method === "GET" && THREADS.test(req.url ?? "")) {
    const limit = Number(q.get("limit") ?? "50")
    const params: Array<unknown> = [key.organization_id]
    const cursor = cursorOf(q.get("page_token"))
    const after = cursor === undefined ? "" : ` AND ("last_at", "id") < ($${params.push(cursor[0])}, $${params.push(cursor[1])})`
    const rows = await pool.query(
      `SELECT * FROM threads WHERE TRUE AND organization_id = $1 AND NOT hidden${after} ORDER BY "last_at" DESC, "id" DESC LIMIT ${limit + 1}`,
      params
    )
    return send(res, 200, pageBody("threads", rows.rows, limit, threadSummary, (r) => [r.last_at, r.id]))
  }
  if (req.method === "GET" && (m = THREAD.exec(url.pathname)) !== null) {
    const thread = (await pool.query("SELECT * FROM threads WHERE id = $1 AND TRUE AND organization_id = $2", [decodeURIComponent(m[1]!), key.organization_id])).rows[0]
    if (thread === undefined) return error(res, 404, "not_found")
    const messages = (await pool.query(`SELECT * FROM messages WHERE thread_id = $1 ORDER BY "timestamp", id`, [thread.id])).rows
    return send(res, 200, {
      ...threadSummary(thread),
      attachments: messages.flatMap((r) => (r.attachments as Array<Row>).map(attachment)),
      count: messages.length,
      limit: messages.length,
      messages: messages.map(message)
    })
  }
  if (req.method === "POST" && (m = SEND.exec(url.pathname)) !== null && relay !== undefined) {
    const inbox = (await pool.query("SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2", [decodeURIComponent(m[1]!), key.organization_id])).rows[0]
    if (inbox === undefined) return error(res, 404, "not_found")
    const body = JSON.parse((await readBody(req)).toString("utf8")) as { to: string | Array<string>; subject?: string; text?: string; html?: string }
    const info = await relay.sendMail({ from: inbox.email, to: body.to, subject: body.subject, text: body.text, html: body.html })
    return send(res, 200, { message_id: info.messageId })
  }
  return error(res, 404, "not_found")
}
