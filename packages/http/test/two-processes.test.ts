/**
 * Two server processes on one PostgreSQL (issue 7, Proof): two real `inboxctl serve`
 * processes share a fresh database and take inbound mail and sends at the same moment,
 * a forwarder's retry of each message landing on the other process, a reply arriving at
 * one while its parent arrives at the other, sends with one Idempotency-Key sent to both,
 * and mail between two inboxes of the server. Then the database is read from outside: no
 * message stored twice, every thread's summary equal to its messages, every event written
 * once, every relayed message relayed once. And a WebSocket client of one process hears the
 * events written by the other, a webhook's receiver gets each event's delivery once
 * (issue 8, Proof), and scheduled drafts due at one moment are each sent once (issue 9).
 * PostgreSQL only (PGlite is one process).
 */
import { assert, layer } from "@effect/vitest"
import {
  buildMail,
  createOrganization,
  freshDatabase,
  POSTGRES_ENV,
  queryRows,
  serverEnv,
  SmtpSink,
  startServer,
  TEST_INBOUND_SECRET,
  THREAD_INCONSISTENCIES
} from "@inbox/testkit"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const url = process.env[POSTGRES_ENV]

interface Answer {
  readonly status: number
  readonly body: any
}

const call = async (base: string, method: string, path: string, init: { key?: string; json?: unknown; raw?: Uint8Array; headers?: Record<string, string> } = {}): Promise<Answer> => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(init.key === undefined ? {} : { authorization: `Bearer ${init.key}` }),
      ...(init.json === undefined ? {} : { "content-type": "application/json" }),
      ...(init.raw === undefined ? {} : { "content-type": "message/rfc822", "x-inbound-secret": TEST_INBOUND_SECRET }),
      ...init.headers
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    ...(init.raw === undefined ? {} : { body: Buffer.from(init.raw) })
  })
  const text = await res.text()
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
}

const deliver = (base: string, to: string, raw: Uint8Array) => call(base, "POST", `/inbound/raw?to=${encodeURIComponent(to)}`, { raw })

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

if (url !== undefined && url !== "") {
  layer(SmtpSink.layer(), { timeout: "300 seconds" })("two server processes on one PostgreSQL", (it) => {
    it.effect("receiving and sending at once on two processes: no message stored twice, every thread consistent, every event written once", () =>
      Effect.gen(function*() {
        const sink = yield* SmtpSink
        yield* Effect.promise(async () => {
          const db = await freshDatabase(url, "twoproc")
          try {
            const env = serverEnv({ INBOX_DATABASE_URL: db.url, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET, INBOX_SMTP_URL: sink.url })
            const { api_key: key } = await createOrganization(env)
            const [a, b] = await Promise.all([startServer(env), startServer(env)])
            try {
              const alice = (await call(a.url, "POST", "/v0/inboxes", { key, json: { username: "alice" } })).body as { inbox_id: string; email: string }
              const bob = (await call(b.url, "POST", "/v0/inboxes", { key, json: { username: "bob" } })).body as { inbox_id: string; email: string }

              // Mail prepared beforehand, so the requests below leave together.
              const twice = await Promise.all(range(20).map((i) => buildMail({ to: alice.email, messageId: `<twice-${i}@example.org>`, subject: `Twice ${i}` })))
              const parents = await Promise.all(range(15).map((i) => buildMail({ to: alice.email, messageId: `<parent-${i}@example.org>`, subject: `Topic ${i}` })))
              const replies = await Promise.all(range(15).map((i) =>
                buildMail({ to: alice.email, messageId: `<reply-${i}@example.org>`, subject: `Re: Topic ${i}`, inReplyTo: `<parent-${i}@example.org>`, references: [`<parent-${i}@example.org>`] })
              ))
              const send = (base: string, i: number, to: string, idempotencyKey?: string) =>
                call(base, "POST", `/v0/inboxes/${alice.inbox_id}/messages/send`, {
                  key,
                  json: { to, subject: `Send ${i}`, text: `Message ${i}` },
                  ...(idempotencyKey === undefined ? {} : { headers: { "idempotency-key": idempotencyKey } })
                })

              const [twiceAnswers, conversationAnswers, sends, keyed, local] = await Promise.all([
                Promise.all(twice.map((raw) => Promise.all([deliver(a.url, alice.email, raw), deliver(b.url, alice.email, raw)]))),
                Promise.all(range(15).map((i) => Promise.all([deliver(a.url, alice.email, parents[i]!), deliver(b.url, alice.email, replies[i]!)]))),
                Promise.all(range(20).map((i) => send(i % 2 === 0 ? a.url : b.url, i, `customer${i}@example.net`))),
                Promise.all(range(8).map((i) => Promise.all([send(a.url, 100 + i, `keyed${i}@example.net`, `key-${i}`), send(b.url, 100 + i, `keyed${i}@example.net`, `key-${i}`)]))),
                Promise.all(range(10).map((i) => send(i % 2 === 0 ? a.url : b.url, 200 + i, bob.email)))
              ])

              // Each message delivered to both processes: both answer 2xx, one stored it and the other saw a duplicate.
              for (const [x, y] of twiceAnswers) {
                assert.deepStrictEqual([x.status, y.status], [200, 200], `${a.stderr()}${b.stderr()}`)
                assert.deepStrictEqual([x.body.delivered[0].duplicate, y.body.delivered[0].duplicate].sort(), [false, true])
                assert.strictEqual(x.body.delivered[0].message_id, y.body.delivered[0].message_id)
              }
              // A reply and its parent arriving at once on two processes end in one thread.
              for (const [parent, reply] of conversationAnswers) {
                assert.deepStrictEqual([parent.status, reply.status], [200, 200])
                assert.strictEqual(parent.body.delivered[0].thread_id, reply.body.delivered[0].thread_id)
              }
              for (const s of [...sends, ...local]) assert.strictEqual(s.status, 200, JSON.stringify(s.body))
              // One Idempotency-Key on both processes at once: one message, the same answer.
              for (const [x, y] of keyed) {
                assert.deepStrictEqual([x.status, y.status], [200, 200], JSON.stringify([x.body, y.body]))
                assert.deepStrictEqual(x.body, y.body)
              }

              const one = async (statement: string) => (await queryRows<{ n: number }>(db.url, statement))[0]!.n
              assert.strictEqual(
                await one(`SELECT count(*)::int AS n FROM (SELECT 1 FROM messages GROUP BY inbox_id, direction, rfc_message_id HAVING count(*) > 1) d`),
                0,
                "a message stored twice"
              )
              // alice: 20 + 15 + 15 received from outside, 20 + 8 + 10 sent; bob: the 10 sent to him, received locally.
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM messages WHERE inbox_id = '${alice.inbox_id}' AND direction = 'received'`), 50)
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM messages WHERE inbox_id = '${alice.inbox_id}' AND direction = 'sent' AND state = 'sent'`), 38)
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM messages WHERE inbox_id = '${bob.inbox_id}' AND direction = 'received'`), 10)
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM messages`), 98)

              // Every thread equals its messages: count, newest message, same inbox; no empty thread.
              const inconsistent = await queryRows(db.url, THREAD_INCONSISTENCIES)
              assert.deepStrictEqual(inconsistent, [])
              assert.strictEqual(
                await one(`SELECT count(DISTINCT thread_id)::int AS n FROM messages WHERE rfc_message_id LIKE '<twice-%' OR rfc_message_id LIKE '<parent-%' OR rfc_message_id LIKE '<reply-%'`),
                20 + 15
              )

              // Events: one per stored message, never two for one message.
              assert.strictEqual(
                await one(`SELECT count(*)::int AS n FROM (SELECT payload->'message'->>'message_id' FROM events WHERE event_type = 'message.received' GROUP BY 1 HAVING count(*) > 1) d`),
                0
              )
              assert.strictEqual(
                await one(`SELECT count(*)::int AS n FROM (SELECT payload->'send'->>'message_id' FROM events WHERE event_type = 'message.sent' GROUP BY 1 HAVING count(*) > 1) d`),
                0
              )
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'message.received'`), 60)
              assert.strictEqual(await one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'message.sent'`), 38)

              // The relay got each outside send once: the 20, and each keyed pair once; local mail never reaches it.
              const relayed = sink.received().flatMap((m) => m.to)
              assert.strictEqual(relayed.length, 28)
              assert.strictEqual(new Set(relayed).size, 28)
              assert.isFalse(relayed.includes(bob.email))
            } finally {
              await Promise.all([a.stop(), b.stop()])
            }
          } finally {
            await db.drop()
          }
        })
      }), 600_000)

    it.effect("scheduled drafts fire exactly once with two processes on one PostgreSQL: each relayed once, each draft consumed", () =>
      Effect.gen(function*() {
        const sink = yield* SmtpSink
        yield* Effect.promise(async () => {
          const db = await freshDatabase(url, "twodrafts")
          try {
            const env = serverEnv({ INBOX_DATABASE_URL: db.url, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET, INBOX_SMTP_URL: sink.url })
            const { api_key: key } = await createOrganization(env)
            const [a, b] = await Promise.all([startServer(env), startServer(env)])
            try {
              const inbox = (await call(a.url, "POST", "/v0/inboxes", { key, json: { username: "scheduler" } })).body as { inbox_id: string }
              // Every draft due at the same moment, made half on each process: both job workers race for each.
              const sendAt = new Date(Date.now() + 3_000).toISOString()
              const n = 12
              const made = await Promise.all(range(n).map((i) =>
                call(i % 2 === 0 ? a.url : b.url, "POST", `/v0/inboxes/${inbox.inbox_id}/drafts`, {
                  key,
                  json: { to: [`scheduled-${i}@remote.example`], subject: `Scheduled ${i}`, text: "x", send_at: sendAt }
                })))
              for (const m of made) assert.strictEqual(m.status, 200)
              const relayed = () => sink.received().flatMap((m) => m.to).filter((to) => to.startsWith("scheduled-"))
              for (let i = 0; i < 500 && relayed().length < n; i++) await new Promise((r) => setTimeout(r, 20))
              // A moment more, for any second send to show itself.
              await new Promise((r) => setTimeout(r, 1_500))
              assert.strictEqual(relayed().length, n)
              assert.strictEqual(new Set(relayed()).size, n)
              assert.strictEqual((await call(b.url, "GET", `/v0/inboxes/${inbox.inbox_id}/drafts`, { key })).body.count, 0)
              const sent = await queryRows<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM messages WHERE direction = 'sent'")
              assert.strictEqual(sent[0]?.n, n)
            } finally {
              await Promise.all([a.stop(), b.stop()])
            }
          } finally {
            await db.drop()
          }
        })
      }), 300_000)

    it.effect("an event reaches WebSocket clients connected to the other process, filtered by their subscriptions (LISTEN/NOTIFY carries the id)", () =>
      Effect.promise(async () => {
        const db = await freshDatabase(url, "twows")
        try {
          const env = serverEnv({ INBOX_DATABASE_URL: db.url, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET })
          const { api_key: key } = await createOrganization(env)
          const [a, b] = await Promise.all([startServer(env), startServer(env)])
          const sockets: Array<WebSocket> = []
          try {
            const alice = (await call(a.url, "POST", "/v0/inboxes", { key, json: { username: "alice" } })).body as { inbox_id: string; email: string }
            const bob = (await call(a.url, "POST", "/v0/inboxes", { key, json: { username: "bob" } })).body as { inbox_id: string; email: string }
            /** A client of server A subscribed to `inboxIds`; resolves once subscribed, collects event frames. */
            const follow = (inboxIds: ReadonlyArray<string>) =>
              new Promise<{ events: Array<any> }>((resolve, reject) => {
                const ws = new WebSocket(`${a.url.replace(/^http/, "ws")}/v0/websocket?api_key=${key}`)
                sockets.push(ws)
                const events: Array<any> = []
                ws.addEventListener("open", () => ws.send(JSON.stringify({ type: "subscribe", event_types: ["message.received"], inbox_ids: inboxIds })))
                ws.addEventListener("message", (m) => {
                  const frame = JSON.parse(String(m.data))
                  if (frame.type === "subscribed") resolve({ events })
                  if (frame.type === "event") events.push(frame)
                })
                ws.addEventListener("error", () => reject(new Error("WebSocket failed")))
              })
            const [forAlice, forBob] = await Promise.all([follow([alice.inbox_id]), follow([bob.inbox_id])])
            const delivered = await deliver(b.url, alice.email, await buildMail({ to: alice.email, messageId: "<across@example.org>", subject: "Across" }))
            assert.strictEqual(delivered.status, 200)
            const messageId = delivered.body.delivered[0].message_id as string
            for (let i = 0; i < 250 && forAlice.events.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
            assert.deepStrictEqual(forAlice.events.map((e) => [e.event_type, e.inbox_id, e.message?.message_id]), [["message.received", alice.inbox_id, messageId]])
            // Bob's subscriber, on the same process, heard nothing of Alice's mail.
            await new Promise((r) => setTimeout(r, 200))
            assert.lengthOf(forBob.events, 0)
          } finally {
            for (const ws of sockets) ws.close()
            await Promise.all([a.stop(), b.stop()])
          }
        } finally {
          await db.drop()
        }
      }), 300_000)

    it.effect("every webhook attempt is made exactly once across the two processes, counted at the receiver", () =>
      Effect.promise(async () => {
        const db = await freshDatabase(url, "twohooks")
        const seen = new Map<string, number>()
        const receiver = createServer((req, res) => {
          req.resume()
          req.on("end", () => {
            const id = String(req.headers["webhook-id"])
            seen.set(id, (seen.get(id) ?? 0) + 1)
            res.writeHead(204).end()
          })
        })
        await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", () => resolve()))
        try {
          const env = serverEnv({ INBOX_DATABASE_URL: db.url, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET, INBOX_WEBHOOK_ALLOW_PRIVATE: "1" })
          const { api_key: key } = await createOrganization(env)
          const [a, b] = await Promise.all([startServer(env), startServer(env)])
          try {
            const inbox = (await call(a.url, "POST", "/v0/inboxes", { key, json: { username: "hooked" } })).body as { inbox_id: string; email: string }
            const port = (receiver.address() as AddressInfo).port
            const hook = await call(b.url, "POST", "/v0/webhooks", { key, json: { url: `http://127.0.0.1:${port}/hook`, event_types: ["message.received"] } })
            assert.strictEqual(hook.status, 200)
            // Events recorded by both processes, their deliveries claimed by either.
            const n = 60
            await Promise.all(range(n).map(async (i) => {
              const to = i % 2 === 0 ? a.url : b.url
              const res = await deliver(to, inbox.email, await buildMail({ to: inbox.email, messageId: `<hook-${i}@example.org>`, subject: `n${i}` }))
              assert.strictEqual(res.status, 200)
            }))
            for (let i = 0; i < 500 && seen.size < n; i++) await new Promise((r) => setTimeout(r, 20))
            // A moment more, for any second attempt to show itself.
            await new Promise((r) => setTimeout(r, 500))
            assert.strictEqual(seen.size, n)
            assert.deepStrictEqual([...new Set(seen.values())], [1], "each event's delivery attempted once")
            const delivered = await queryRows<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'delivered' AND attempts = 1")
            assert.strictEqual(delivered[0]?.n, n)
          } finally {
            await Promise.all([a.stop(), b.stop()])
          }
        } finally {
          await new Promise<void>((resolve) => receiver.close(() => resolve()))
          await db.drop()
        }
      }), 300_000)
  })
}
