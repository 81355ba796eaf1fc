/**
 * Keeping data safe, through the real inboxctl in child processes: a seeded embedded
 * installation (two inboxes, a thread of a message and its reply, an attachment, the same
 * message delivered to both inboxes, a webhook whose secret is sealed under the folder's
 * generated secret.key) is backed up, restored into a new folder and, with
 * INBOX_TEST_DATABASE_URL, moved to a fresh PostgreSQL database. Each copy must hold the
 * same rows (messages and threads compared row by row) and every blob whole; the moved
 * installation then serves the messages, the thread and the attachment bytes over REST, and
 * delivers to the webhook, signed with its secret. The move refuses to start without the
 * folder's key in INBOX_SECRET_KEY, or with another key.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { BlobStore, BlobStores, Database, Engine, Inbound, InboxOperations, Organizations, type Principal, WebhookOperations } from "@inbox/core/internal"
import { adminSql, buildMail, type ReceivedRequest, signedWith } from "@inbox/testkit"
import { ConfigProvider, Context, Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, freePort, runProcess, startProcess, waitFor } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const MAIN = ["--import", "tsx", "packages/cli/src/main.ts"]
const ATTACHMENT = randomBytes(200_000)
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const inboxctl = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runProcess(process.execPath, [...MAIN, ...args], { cwd: ROOT, env: childEnv(env) })

/**
 * Two inboxes, a message with an attachment to both, a reply that joins its thread, and a
 * webhook to `hookUrl` for message.received. The engine is configured as `inboxctl serve`
 * configures it, so the folder gets its generated secret.key and the webhook's secret is
 * sealed under it.
 */
const seed = (dataDir: string, hookUrl: string) =>
  Effect.gen(function*() {
    const { organization } = yield* (yield* Organizations).create({ ownerEmail: "ops@example.com", verified: true })
    const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }
    yield* Engine.use((engine) => engine.call("inboxes.create", { username: "support" }, { kind: "principal", principal: owner }))
    yield* Engine.use((engine) => engine.call("inboxes.create", { username: "sales" }, { kind: "principal", principal: owner }))
    const first = yield* Effect.promise(() => buildMail({
      to: ["support@inbox.localhost", "sales@inbox.localhost"],
      subject: "Invoice",
      messageId: "<invoice-1@example.org>",
      attachments: [{ filename: "invoice.bin", content: ATTACHMENT, contentType: "application/octet-stream" }]
    }))
    yield* Inbound.use((i) => i.deliver({ raw: first, to: ["support@inbox.localhost", "sales@inbox.localhost"] }))
    const reply = yield* Effect.promise(() => buildMail({
      to: "support@inbox.localhost",
      subject: "Re: Invoice",
      messageId: "<invoice-2@example.org>",
      inReplyTo: "<invoice-1@example.org>"
    }))
    yield* Inbound.use((i) => i.deliver({ raw: reply, to: ["support@inbox.localhost"] }))
    const hook = yield* Engine.use((engine) => engine.call("webhooks.create", { url: hookUrl, event_types: ["message.received"] }, { kind: "principal", principal: owner }))
    return { organizationId: organization.id, webhookSecret: hook.secret ?? "" }
  }).pipe(
    Effect.provide(Engine.layerConfig),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { INBOX_DATA_DIR: dataDir, INBOX_WEBHOOK_ALLOW_PRIVATE: "1" } })),
    Effect.runPromise
  )

/** A webhook endpoint on loopback that keeps what it receives and answers 200. */
const hookReceiver = () =>
  new Promise<{ url: string; received: Array<ReceivedRequest>; close: () => void }>((resolve) => {
    const received: Array<ReceivedRequest> = []
    const server = createServer((req, res) => {
      let body = ""
      req.on("data", (d: Buffer) => (body += d.toString("utf8")))
      req.on("end", () => {
        received.push({ headers: req.headers, body })
        res.end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, close: () => server.close() }))
  })

/**
 * What must survive a copy: messages and threads row by row, row counts of every table,
 * and each referenced blob (its bytes read from the store hash to its name).
 */
const fingerprint = <E>(storage: Layer.Layer<SqlClient.SqlClient, E>, blobs: (db: Context.Context<SqlClient.SqlClient>) => Layer.Layer<BlobStore, E>) =>
  Effect.gen(function*() {
    const db = yield* Layer.build(storage)
    const sql = Context.get(db, SqlClient.SqlClient)
    const store = Context.get(yield* Layer.build(blobs(db)), BlobStore)
    const rows = (table: string) => sql.unsafe<{ r: unknown }>(`SELECT row_to_json(t) AS r FROM ${table} t ORDER BY id`).pipe(Effect.map((rs) => rs.map((x) => x.r)))
    const counts: Record<string, number> = {}
    for (const table of ["organizations", "pods", "inboxes", "api_keys", "threads", "messages", "events", "blobs"]) {
      counts[table] = (yield* sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]?.n ?? 0
    }
    const shas = (yield* sql<{ sha256: string }>`SELECT sha256 FROM blobs WHERE refs > 0 ORDER BY sha256`).map((r) => r.sha256)
    const whole: Array<boolean> = []
    for (const sha of shas) whole.push(sha256(Buffer.concat(yield* Stream.runCollect(store.get(sha)))) === sha)
    return { messages: yield* rows("messages"), threads: yield* rows("threads"), counts, shas, whole }
  }).pipe(Effect.scoped, Effect.orDie, Effect.runPromise)

const embedded = (dataDir: string) => fingerprint(Database.layerPglite({ dataDir }), () => BlobStores.layerFiles(dataDir))

describe("backup, restore and move-to-postgres", { timeout: 600_000 }, () => {
  let dir = ""
  let source = ""
  let before: Awaited<ReturnType<typeof embedded>>
  let hooks: Awaited<ReturnType<typeof hookReceiver>>
  let webhookSecret = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-operating-"))
    source = join(dir, "source")
    hooks = await hookReceiver()
    webhookSecret = (await seed(source, hooks.url)).webhookSecret
    before = await embedded(source)
  }, 300_000)
  afterAll(() => {
    hooks.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("the seeded installation has a thread of two messages, a message in two inboxes and its attachment kept inside its raw message", () => {
    assert.strictEqual(before.counts["messages"], 3)
    assert.strictEqual(before.counts["threads"], 2)
    // two raw messages; the attachment's bytes are only inside the first
    assert.strictEqual(before.shas.length, 2)
    assert.notInclude(before.shas, sha256(ATTACHMENT))
    assert.deepStrictEqual(before.whole, before.shas.map(() => true))
  })

  it("backup FILE then restore FILE into a new folder gives the same rows and every blob whole", async () => {
    const file = join(dir, "inbox.backup")
    const backedUp = await inboxctl(["backup", file], { INBOX_DATA_DIR: source })
    assert.strictEqual(backedUp.code, 0, backedUp.stderr)
    assert.match(backedUp.stdout, /^backed up .+: \d+ rows, \d+ blobs\n$/)
    assert.match(backedUp.stderr, /backup: done/)

    const restored = join(dir, "restored")
    const run = await inboxctl(["restore", file], { INBOX_DATA_DIR: restored })
    assert.strictEqual(run.code, 0, run.stderr)
    assert.deepStrictEqual(await embedded(restored), before)

    const again = await inboxctl(["restore", file], { INBOX_DATA_DIR: restored })
    assert.strictEqual(again.code, 1)
    assert.match(again.stderr, /^error: data_folder_not_empty: /)
  })

  it("restore refuses a damaged backup with backup_corrupt", async () => {
    const file = join(dir, "inbox.backup")
    const { readFileSync, writeFileSync } = await import("node:fs")
    const bytes = readFileSync(file)
    // Flip one byte inside the raw message's blob entry (in its attachment's base64): its checksum no longer matches.
    const at = bytes.indexOf(Buffer.from(ATTACHMENT.subarray(0, 30)).toString("base64"))
    assert.isAbove(at, 0)
    bytes[at] = (bytes[at] ?? 0) ^ 0xff
    const damaged = join(dir, "damaged.backup")
    writeFileSync(damaged, bytes)
    const run = await inboxctl(["restore", damaged], { INBOX_DATA_DIR: join(dir, "from-damaged") })
    assert.strictEqual(run.code, 1)
    assert.match(run.stderr, /^error: backup_corrupt: the backup is damaged: blob [0-9a-f]{64} does not match its checksum/)
  })

  it("move-to-postgres refuses to start without the folder's key in INBOX_SECRET_KEY (secret_key_required) or with another key (secret_key_mismatch)", async () => {
    // Refused before the target is opened: nothing listens at this address.
    const nowhere = "postgres://postgres@127.0.0.1:1/nowhere"
    const without = await inboxctl(["move-to-postgres", "--database-url", nowhere], { INBOX_DATA_DIR: source })
    assert.strictEqual(without.code, 1)
    assert.match(without.stderr, /^error: secret_key_required: .*INBOX_SECRET_KEY="\$\(cat .*secret\.key\)"/)
    const wrong = await inboxctl(["move-to-postgres", "--database-url", nowhere], { INBOX_DATA_DIR: source, INBOX_SECRET_KEY: "not-the-key" })
    assert.strictEqual(wrong.code, 1)
    assert.match(wrong.stderr, /^error: secret_key_mismatch: (\d+) of the \1 sealed secrets .* do not open with INBOX_SECRET_KEY \(webhook of wh_/)
  })

  const url = process.env["INBOX_TEST_DATABASE_URL"]
  if (url !== undefined && url !== "") {
    it("move-to-postgres copies rows and blobs to an empty PostgreSQL database, verifies them, and the moved installation serves them and delivers to the webhook, signed", async () => {
      const database = `inbox_move_${randomBytes(6).toString("hex")}`
      await adminSql(url, `CREATE DATABASE ${database}`)
      const target = new URL(url)
      target.pathname = `/${database}`
      const secretKey = readFileSync(join(source, "secret.key"), "utf8").trim()
      try {
        const run = await inboxctl(["move-to-postgres", "--database-url", target.toString()], { INBOX_DATA_DIR: source, INBOX_SECRET_KEY: secretKey })
        assert.strictEqual(run.code, 0, run.stderr)
        assert.match(run.stdout, /counts and checksums match\.\nNext: start every server with\n {2}INBOX_DATABASE_URL=postgres:/)
        assert.match(run.stdout, /\n {2}INBOX_SECRET_KEY set to the same key as for this move/)
        assert.notInclude(run.stdout + run.stderr, secretKey, "the key is never printed")
        const moved = await fingerprint(
          Database.layerPostgres({ url: target.toString(), maxConnections: 2 }),
          (db) => BlobStores.layerPostgres.pipe(Layer.provide(Layer.succeedContext(db)))
        )
        assert.deepStrictEqual(moved, before)

        const again = await inboxctl(["move-to-postgres", "--database-url", target.toString()], { INBOX_DATA_DIR: source, INBOX_SECRET_KEY: secretKey })
        assert.strictEqual(again.code, 1)
        assert.match(again.stderr, /^error: target_not_empty: /)

        // The acceptance-style walk on the new store: a key, the inbox's messages, the thread, the attachment's bytes.
        const org = (before.messages[0] as { organization_id: string }).organization_id
        const keyRun = await inboxctl(["org", "key", org, "--json"], { INBOX_DATABASE_URL: target.toString() })
        assert.strictEqual(keyRun.code, 0, keyRun.stderr)
        const auth = { authorization: `Bearer ${(JSON.parse(keyRun.stdout) as { api_key: string }).api_key}` }
        const port = await freePort()
        const server = startProcess(process.execPath, [...MAIN, "serve", "--port", String(port)], {
          cwd: ROOT,
          env: childEnv({ INBOX_DATABASE_URL: target.toString(), INBOX_SECRET_KEY: secretKey, INBOX_WEBHOOK_ALLOW_PRIVATE: "1", INBOX_INBOUND_SECRET: "move-inbound" })
        })
        const base = `http://127.0.0.1:${port}`
        try {
          await waitFor(`${base}/health`, server)
          const list = (await (await fetch(`${base}/v0/inboxes/support@inbox.localhost/messages`, { headers: auth })).json()) as {
            messages: ReadonlyArray<{ message_id: string; thread_id: string; subject: string }>
          }
          assert.deepStrictEqual(list.messages.map((m) => m.subject), ["Re: Invoice", "Invoice"])
          const thread = (await (await fetch(`${base}/v0/inboxes/support@inbox.localhost/threads/${list.messages[0]?.thread_id}`, { headers: auth })).json()) as {
            message_count: number
            attachments: ReadonlyArray<{ attachment_id: string }>
          }
          assert.strictEqual(thread.message_count, 2)
          const invoice = list.messages[1]?.message_id ?? ""
          const attachment = thread.attachments[0]?.attachment_id ?? ""
          const bytes = await fetch(`${base}/v0/inboxes/support@inbox.localhost/messages/${invoice}/attachments/${attachment}/download`, { headers: auth })
          assert.strictEqual(bytes.status, 200)
          assert.strictEqual(sha256(new Uint8Array(await bytes.arrayBuffer())), sha256(ATTACHMENT))

          // The webhook made before the move: its sealed secret opens on the new servers, so a delivery goes out, signed.
          const delivered = await fetch(`${base}/inbound/raw?to=support@inbox.localhost`, {
            method: "POST",
            headers: { "x-inbound-secret": "move-inbound" },
            body: Buffer.from(await buildMail({ to: "support@inbox.localhost", subject: "After the move", messageId: "<after-move@example.org>" }))
          })
          assert.strictEqual(delivered.status, 200, await delivered.text())
          for (let i = 0; i < 100 && hooks.received.length === 0; i++) await new Promise((r) => setTimeout(r, 100))
          assert.lengthOf(hooks.received, 1)
          const hook = hooks.received[0]!
          assert.isTrue(signedWith(webhookSecret, hook), "signed with the webhook's secret")
          assert.strictEqual((JSON.parse(hook.body) as { event_type: string }).event_type, "message.received")
        } finally {
          server.kill("SIGTERM")
          await server.output
        }
      } finally {
        await adminSql(url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      }
    })
  }
})
