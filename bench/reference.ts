/**
 * The bare reference for the HTTP benchmark: `GET /v0/inboxes/:id` with nothing but
 * node:http and the `pg` driver, on the same database as the real server. It does the
 * work the route cannot avoid, the way a hand-written server would: the key looked up by
 * the SHA-256 of the bearer secret (revoked keys refused), the `inbox_read` permission
 * checked, the inbox read within the key's organization and scope, the same JSON body and
 * an `x-request-id`. Two indexed queries for a key's first request, one after (the key is
 * cached, as ours caches it). It is a yardstick, not a product: no limits, and only the
 * routes the benchmarks drive.
 *
 * The messaging benchmark (bench/messaging.ts) adds the routes in reference-messaging.ts:
 * message and thread lists and a thread detail with the engine's statements, an inbound
 * route that parses and stores nothing, and a send route that relays and stores nothing.
 *
 * REF_DATABASE_URL, REF_PORT, REF_INBOUND_SECRET, REF_SMTP_URL; prints `REFERENCE_READY`
 * once listening.
 */
import { createHash, randomFillSync } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import pg from "pg"
import { type KeyRow, messagingRoute } from "./reference-messaging.ts"

const pool = new pg.Pool({ connectionString: process.env["REF_DATABASE_URL"], max: 10 })

interface InboxRow {
  id: string
  pod_id: string
  email: string
  display_name: string | null
  client_id: string | null
  status: string
  metadata: Record<string, string> | null
  created_at: Date
  updated_at: Date
}

// Word for word the statements the engine sends (ApiKeys.authenticate, Inboxes.find), so
// the database does the same work for both servers.
const KEY_SQL = `SELECT k.id, k.organization_id, k.pod_id, k.inbox_id, k.permissions, i.pod_id AS inbox_pod_id
          FROM api_keys k LEFT JOIN inboxes i ON i.id = k.inbox_id
          WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`
const INBOX_SQL = {
  organization: "SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2",
  pod: "SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2 AND pod_id = $3",
  inbox: "SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2 AND id = $3"
}

// Request ids as the engine makes them (platform/Ids.ts): 96 bits cut from a block of random
// bytes, so neither server pays a randomBytes call per request.
const block = Buffer.alloc(12 * 512)
let used = block.length
const requestId = () => {
  if (used + 12 > block.length) {
    randomFillSync(block)
    used = 0
  }
  used += 12
  return `req_${block.toString("hex", used - 12, used)}`
}

const send = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": requestId()
  })
  res.end(text)
}

const error = (res: ServerResponse, status: number, code: string) => send(res, status, { name: code, code, message: code })

const inbox = (row: InboxRow) => {
  const body: Record<string, unknown> = { pod_id: row.pod_id, inbox_id: row.id, email: row.email }
  if (row.display_name !== null) body["display_name"] = row.display_name
  if (row.client_id !== null) body["client_id"] = row.client_id
  body["status"] = row.status
  if (row.metadata !== null) body["metadata"] = row.metadata
  body["created_at"] = row.created_at.toISOString()
  body["updated_at"] = row.updated_at.toISOString()
  return body
}

const PATH = /^\/v0\/inboxes\/([^/?]+)(?:\?.*)?$/
const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * Keys already seen, by the hash of their secret, as our server caches them (KeyCache):
 * the reference keeps them forever and never hears of a revocation, which is cheaper than
 * ours, never dearer. REF_KEY_CACHE=0 looks every key up, as the first version did.
 */
const keyCache = process.env["REF_KEY_CACHE"] === "0" ? undefined : new Map<string, KeyRow>()

/** The key of the bearer secret, or undefined after answering 401. */
const authenticate = async (req: IncomingMessage, res: ServerResponse): Promise<KeyRow | undefined> => {
  const secret = BEARER.exec(req.headers.authorization ?? "")?.[1]
  if (secret === undefined || !secret.startsWith("am_")) return void error(res, 401, "unauthorized")
  const hash = createHash("sha256").update(secret).digest("hex")
  const cached = keyCache?.get(hash)
  if (cached !== undefined) return cached
  const keys = await pool.query<KeyRow>(KEY_SQL, [hash])
  const key = keys.rows[0]
  if (key === undefined) return void error(res, 401, "unauthorized")
  keyCache?.set(hash, key)
  return key
}

const server = createServer(async (req, res) => {
  try {
    const path = req.method === "GET" ? PATH.exec(req.url ?? "") : null
    if (path === null) return await messagingRoute({ pool, authenticate, send, error }, req, res)
    const key = await authenticate(req, res)
    if (key === undefined) return
    if (key.permissions !== null && !key.permissions.includes("inbox_read")) return error(res, 403, "missing_permission")
    const id = decodeURIComponent(path[1] ?? "")
    const rows = key.inbox_id !== null
      ? await pool.query<InboxRow>(INBOX_SQL.inbox, [id, key.organization_id, key.inbox_id])
      : key.pod_id !== null
      ? await pool.query<InboxRow>(INBOX_SQL.pod, [id, key.organization_id, key.pod_id])
      : await pool.query<InboxRow>(INBOX_SQL.organization, [id, key.organization_id])
    const row = rows.rows[0]
    if (row === undefined) return error(res, 404, "not_found")
    send(res, 200, inbox(row))
  } catch (cause) {
    console.error(cause)
    if (!res.headersSent) error(res, 500, "internal_error")
  }
})

server.listen(Number(process.env["REF_PORT"] ?? "29200"), "127.0.0.1", () => process.stdout.write("REFERENCE_READY\n"))

process.on("SIGTERM", () => process.exit(0))
process.on("SIGINT", () => process.exit(0))
