/**
 * A mailbox's sync after a change (mailboxes/Mailboxes.ts, migration 0053), through imapflow
 * on PGlite and PostgreSQL: once a mailbox has synced, the next sync looks only at the
 * messages stored or relabelled since (the log of changed messages), so what a client sees
 * must stay exactly what a whole-mailbox comparison gives: mail delivered, relabelled out
 * and back, deleted; a mailbox left far behind compares everything again; the log is
 * pruned once every mailbox of the inbox has synced past it.
 */
import { assert, layer } from "@effect/vitest"
import { ImapServer } from "@inbox/mailserver"
import { deliverMail, engineLayer, mailClientWorld, storages, TEST_INBOUND_SECRET, TestApp, type TestMail } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { ImapFlow } from "imapflow"
import { imapflowClient as client } from "./imap-clients.ts"

const setUp = Effect.gen(function*() {
  const { app, org, inbox, key } = yield* mailClientWorld
  const port = (yield* ImapServer).port
  const deliver = (mail: TestMail = {}) => deliverMail(inbox.email, mail)
  const messages = () =>
    Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages?limit=100`, { key: org.key }), (r) => r.body.messages as Array<{ message_id: string; subject: string; labels: Array<string> }>)
  const relabel = (id: string, add: ReadonlyArray<string>, remove: ReadonlyArray<string> = []) =>
    app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${id}`, { key: org.key, json: { add_labels: add, remove_labels: remove } })
  const remove = (id: string) => app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}/messages/${id}`, { key: org.key })
  return { app, org, inbox, key, port, deliver, messages, relabel, remove }
})

/** The mailbox as the client sees it: UID and subject of each message, in UID order. */
const seen = (c: ImapFlow, mailbox = "INBOX") =>
  Effect.promise(async () => {
    const lock = await c.getMailboxLock(mailbox)
    try {
      const out: Array<[number, string]> = []
      // UID FETCH: a FETCH by sequence numbers may not be told of expunges (RFC 3501 7.4.1).
      for await (const m of c.fetch("1:*", { uid: true, envelope: true }, { uid: true })) out.push([m.uid, m.envelope?.subject ?? ""])
      return out
    } catch (e) {
      // An empty mailbox has no 1:*.
      if (c.mailbox !== false && c.mailbox.exists === 0) return []
      throw e
    } finally {
      lock.release()
    }
  })

const logRows = (inboxId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM imap_changed WHERE inbox_id = ${inboxId}`).pipe(Effect.map((r) => r[0]!.n))

const syncedPoints = (inboxId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ name: string; synced: string | null }>`SELECT name, synced::text AS synced FROM imap_mailboxes WHERE inbox_id = ${inboxId} ORDER BY name`)

for (const storage of storages()) {
  const server = ImapServer.layer({ host: "127.0.0.1", port: 0, allowPlainLoopback: true, idlePollMs: 600_000 })
  layer(server.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))))), { timeout: "180 seconds" })(
    `IMAP mailbox sync after a change (${storage.name})`,
    (it) => {
      it.effect("after its first syncs, a mailbox follows delivered, relabelled, restored and deleted mail from the changed messages alone, as a new session comparing everything sees it", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          for (const subject of ["One", "Two", "Three"]) yield* w.deliver({ subject, text: subject })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const first = yield* seen(c)
          assert.deepStrictEqual(first.map(([, s]) => s).sort(), ["One", "Three", "Two"])

          // The first change after the inbox's first sync is compared in full once (the sync
          // made the inbox's change counter); from then on the mailbox has a point it synced to.
          yield* w.deliver({ subject: "Four", text: "four" })
          assert.isAbove(yield* logRows(w.inbox.inbox_id), 0, "the delivered message is logged for the next sync")
          const afterDelivery = yield* seen(c)
          assert.deepStrictEqual(afterDelivery.slice(0, 3), first)
          assert.deepStrictEqual(afterDelivery[3]![1], "Four")
          const points = yield* syncedPoints(w.inbox.inbox_id)
          assert.isTrue(points.some((p) => p.name === "INBOX" && p.synced !== null), `INBOX has a point it synced to: ${JSON.stringify(points)}`)
          yield* w.deliver({ subject: "Five", text: "five" })
          const afterFive = yield* seen(c)
          assert.deepStrictEqual(afterFive.slice(0, 4), afterDelivery)
          assert.deepStrictEqual(afterFive[4]![1], "Five")
          assert.isAbove(afterFive[4]![0], afterFive[3]![0], "the new message has the next UID")

          const byId = new Map((yield* w.messages()).map((m) => [m.subject, m.message_id]))
          // Out of INBOX (spam), and back: back with a new UID, as RFC 3501 asks of a message that left.
          const without = (xs: ReadonlyArray<[number, string]>, subject: string) => xs.filter(([, s]) => s !== subject)
          const two = afterFive.find(([, s]) => s === "Two")!
          yield* w.relabel(byId.get("Two")!, ["spam"])
          assert.deepStrictEqual(yield* seen(c), without(afterFive, "Two"))
          yield* w.relabel(byId.get("Two")!, [], ["spam"])
          const restored = yield* seen(c)
          assert.deepStrictEqual(restored.slice(0, 4), without(afterFive, "Two"))
          assert.strictEqual(restored[4]![1], "Two")
          assert.isAbove(restored[4]![0], afterFive[4]![0], `a new UID, not ${two[0]}`)
          // Read through the API: the flag follows (the UID row's copy of the labels).
          yield* w.relabel(byId.get("Three")!, [], ["unread"])
          const flags = yield* Effect.promise(async () => {
            const lock = await c.getMailboxLock("INBOX")
            try {
              const m = await c.fetchOne(String(restored.find(([, s]) => s === "Three")![0]), { flags: true }, { uid: true })
              return m === false ? [] : [...(m.flags ?? [])]
            } finally {
              lock.release()
            }
          })
          assert.include(flags, "\\Seen")
          // Deleted through the API.
          assert.strictEqual((yield* w.remove(byId.get("One")!)).status, 204)
          const now = yield* seen(c)
          assert.deepStrictEqual(now, without(restored, "One"))

          // A new session compares nothing more than this one was told: the same UIDs.
          const fresh = yield* client(w.port, w.inbox.email, w.key)
          assert.deepStrictEqual(yield* seen(fresh), now)
          yield* Effect.promise(() => fresh.logout())
          yield* Effect.promise(() => c.logout())
        }))

      it.effect("mailboxes.sync with known and changes_only answers only the messages changed since, with every UID of the mailbox", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          for (const subject of ["A", "B", "C"]) yield* w.deliver({ subject, text: subject })
          const path = `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/sync`
          const sync = (json: Record<string, unknown>) => Effect.map(w.app.request("POST", path, { key: w.org.key, json }), (r) => r.body as { fingerprint: string; unchanged: boolean; messages: Array<{ uid: number; message_id: string; flags: Array<string> }>; uids?: Array<number> })
          yield* sync({})
          const whole = yield* sync({})
          assert.strictEqual(whole.messages.length, 3)
          assert.isUndefined(whole.uids, "a whole answer lists its messages, no uids")
          assert.isTrue((yield* sync({ known: whole.fingerprint, changes_only: true })).unchanged)

          yield* w.deliver({ subject: "D", text: "d" })
          const b = whole.messages[1]!
          yield* w.relabel(b.message_id, [], ["unread"])
          const changes = yield* sync({ known: whole.fingerprint, changes_only: true })
          assert.isFalse(changes.unchanged)
          const d = (yield* w.messages()).find((m) => m.subject === "D")!
          assert.deepStrictEqual(changes.messages.map((m) => m.message_id).sort(), [b.message_id, d.message_id].sort())
          assert.include(changes.messages.find((m) => m.message_id === b.message_id)!.flags, "\\Seen")
          const now = yield* sync({})
          assert.deepStrictEqual(changes.uids, now.messages.map((m) => m.uid))
          assert.strictEqual(changes.uids!.length, 4)
        }))

      it.effect("the log of changed messages is pruned once every mailbox of the inbox has synced past it; a mailbox left far behind is set back to compare everything, and still shows its mail", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const sql = yield* SqlClient.SqlClient
          for (const subject of ["Kept", "Filed"]) yield* w.deliver({ subject, text: subject })
          const filed = (yield* w.messages()).find((m) => m.subject === "Filed")!
          yield* w.relabel(filed.message_id, ["receipts"])
          const c = yield* client(w.port, w.inbox.email, w.key)
          // Two syncs each: the first of the inbox makes its change counter, the second takes a point.
          for (let i = 0; i < 2; i++) {
            yield* seen(c)
            yield* seen(c, "receipts")
          }
          yield* w.deliver({ subject: "Later", text: "later" })
          yield* seen(c)
          yield* seen(c, "receipts")
          yield* seen(c)
          assert.strictEqual(yield* logRows(w.inbox.inbox_id), 0, "both mailboxes synced past every logged change")

          // receipts falls far behind (as if 20,000 changes had passed since it last synced):
          // INBOX's next sync prunes past it and sets it back.
          yield* sql`UPDATE imap_mailboxes SET synced = synced - 20000 WHERE inbox_id = ${w.inbox.inbox_id} AND name = 'receipts'`
          yield* w.relabel((yield* w.messages()).find((m) => m.subject === "Later")!.message_id, ["receipts"])
          yield* seen(c)
          const points = yield* syncedPoints(w.inbox.inbox_id)
          assert.strictEqual(points.find((p) => p.name === "receipts")?.synced, null, JSON.stringify(points))
          assert.strictEqual(yield* logRows(w.inbox.inbox_id), 0)
          // Set back, it compares every message: Later, labelled while it was behind, is there.
          assert.deepStrictEqual((yield* seen(c, "receipts")).map(([, s]) => s), ["Filed", "Later"])
          yield* Effect.promise(() => c.logout())
        }))
    }
  )
}
