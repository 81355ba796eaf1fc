/**
 * The bare SMTP references of `pnpm bench smtp` (bench/smtp.ts): `smtp-server` answering
 * RCPT for any address, checking each message with `mailauth` (SPF, DKIM, DMARC, ARC)
 * against the same loopback DNS server with a 60 s cache as ours has, parsing it with bare
 * `simpleParser`. It answers `250` once that is done, so it measures what a receiver must
 * do before it may store anything.
 *
 * With REF_HTTP_PORT it also takes `POST /inbound/raw` (the raw message as the body, any
 * headers): parsed with bare `simpleParser` and stored as below, answered 200 with a small
 * JSON body. Ours takes that route's authentication verdicts from the forwarder's headers,
 * so this side checks none either.
 *
 * With REF_DATABASE_URL it also stores each message before answering, durably, as a bare
 * `pg` server would, with a group commit like ours (below) and one round trip a
 * transaction. Each delivery is the rows our server writes (bench/delivery-copy.ts:
 * thread, message with its triggers, raw bytes, event), copied from a delivery ours stored
 * (the `ref_*` tables) with new ids and this message's own bytes. It reads nothing first
 * (no inbox, lists, locks or thread lookup), so it is a floor for any server storing these
 * rows, not a copy of ours.
 *
 *   REF_SMTP_PORT=... REF_DNS_SERVER=host:port [REF_DATABASE_URL=...] [REF_HTTP_PORT=...] node --import tsx bench/reference-smtp.ts
 */
import { createHash } from "node:crypto"
import { Resolver } from "node:dns/promises"
import { createServer } from "node:http"
import pg from "pg"
import { copyDelivery } from "./delivery-copy.ts"
import { authenticate } from "mailauth"
import { simpleParser } from "mailparser"
import { SMTPServer } from "smtp-server"

const WRITERS = 2
const BATCH = 16

const resolver = new Resolver({ timeout: 2000, tries: 1 })
resolver.setServers([process.env["REF_DNS_SERVER"] ?? "127.0.0.1:53"])
const cache = new Map<string, { readonly at: number; readonly answer: Promise<unknown> }>()
const resolve = (name: string, type: string) => {
  const key = `${type} ${name}`
  const hit = cache.get(key)
  if (hit !== undefined && Date.now() - hit.at < 60_000) return hit.answer
  const answer = resolver.resolve(name, type)
  cache.set(key, { at: Date.now(), answer })
  return answer
}

const database = process.env["REF_DATABASE_URL"]
const pool = database === undefined ? undefined : new pg.Pool({ connectionString: database, max: WRITERS })
let stored = 0
const waiting: Array<{ readonly raw: Buffer; readonly done: (error?: Error) => void }> = []
let writing = 0
/**
 * A group commit as ours has (WRITERS transactions at once, each taking up to BATCH of the
 * messages waiting), each transaction one simple-protocol query: one round trip.
 */
const write = () => {
  if (pool === undefined || writing >= WRITERS || waiting.length === 0) return
  const batch = waiting.splice(0, BATCH)
  writing++
  const rows = batch.map(({ raw }) =>
    copyDelivery("ref", `'${process.pid}_${stored++}'`, `'${createHash("sha256").update(raw).digest("hex")}'`, "", `'\\x${raw.toString("hex")}'::bytea`))
  pool.connect().then(async (client) => {
    try {
      await client.query(`BEGIN;\n${rows.join("\n")}\nCOMMIT;`)
      batch.forEach((w) => w.done())
    } catch (e) {
      // A failed statement leaves the session in the aborted transaction: end it before the client goes back.
      await client.query("ROLLBACK").catch(() => undefined)
      batch.forEach((w) => w.done(e as Error))
    } finally {
      client.release()
    }
  }, (e: Error) => batch.forEach((w) => w.done(e))).finally(() => {
    writing--
    write()
  })
}
const store = (raw: Buffer) =>
  pool === undefined ? Promise.resolve() : new Promise<void>((resolve, reject) => {
    waiting.push({ raw, done: (e) => e === undefined ? resolve() : reject(e) })
    write()
  })

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["AUTH", "STARTTLS"],
  logger: false,
  size: 50 * 1024 * 1024,
  onData(stream, session, callback) {
    const chunks: Array<Buffer> = []
    stream.on("data", (c: Buffer) => chunks.push(c))
    stream.on("end", () => {
      const raw = Buffer.concat(chunks)
      authenticate(raw, {
        ip: session.remoteAddress,
        helo: session.hostNameAppearsAs,
        sender: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
        mta: "mx.reference.localhost",
        resolver: resolve as never,
        disableBimi: true
      })
        .then(() => simpleParser(raw))
        .then(() => store(raw))
        .then(() => callback(), (e: Error) => callback(e))
    })
  }
})

const httpPort = process.env["REF_HTTP_PORT"]
const http = httpPort === undefined ? undefined : createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const raw = Buffer.concat(chunks)
    simpleParser(raw)
      .then(() => store(raw))
      .then(() => {
        const body = JSON.stringify({ stored: true })
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
      }, (e: Error) => {
        console.error(e)
        res.writeHead(500).end()
      })
  })
})

server.listen(Number(process.env["REF_SMTP_PORT"] ?? "0"), "127.0.0.1", () => {
  if (http === undefined) return console.log("REFERENCE_READY")
  http.listen(Number(httpPort), "127.0.0.1", () => console.log("REFERENCE_READY"))
})

// Exit normally on the harness's SIGTERM, so that `--cpu-prof` (bench/profile-smtp.ts) writes its profile.
process.once("SIGTERM", () => process.exit(0))
