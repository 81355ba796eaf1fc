/**
 * Inbound mail's group commit (inbound/Inbound.ts, MessageStore.insertMany), on PGlite and
 * PostgreSQL: a batch of messages written in one transaction ends exactly as the same
 * messages written one after another (threads, duplicates, summaries, order), a late
 * parent that ties threads together still merges them, and one delivery that fails inside
 * a shared transaction fails alone.
 */
import { assert, layer } from "@effect/vitest"
import { Engine, FullMessageRow, Inbound, InboxOperations, MessageStore, type NewMessage, Organizations, sha256Of, type Principal, type Stored, toMessage } from "@inbox/core/internal"
import { buildMail, engineLayer, storages } from "@inbox/testkit"
import { Effect, Exit, Schema } from "effect"
import { SqlClient } from "effect/sql"

interface Spec {
  readonly rfc: string
  readonly inReplyTo?: string
  readonly references?: ReadonlyArray<string>
  readonly subject?: string
  readonly from?: string
  readonly labels?: ReadonlyArray<string>
}

const newMessage = (inbox: { readonly id: string; readonly organization_id: string; readonly pod_id: string }, s: Spec): NewMessage => ({
  inbox,
  direction: "received",
  state: "stored",
  rfc_message_id: s.rfc,
  ...(s.inReplyTo === undefined ? {} : { in_reply_to: s.inReplyTo }),
  ...(s.references === undefined ? {} : { references: s.references }),
  from: s.from ?? "Ann <ann@example.org>",
  from_address: "ann@example.org",
  to: ["box@inbox.localhost"],
  recipient_addresses: ["box@inbox.localhost"],
  subject: s.subject ?? "Plans",
  preview: `about ${s.rfc}`,
  size: 100,
  text: `about ${s.rfc}`,
  headers: {},
  attachments: [],
  raw: { sha256: sha256Of(new TextEncoder().encode(s.rfc)), bytes: new TextEncoder().encode(s.rfc) },
  labels: s.labels ?? ["received", "unread"]
})

/**
 * Replies before and after their parents, a reply to a reply, a message twice in the batch,
 * a message already stored, a forward, a second inbox that has none of the parents, and a
 * hidden label: everything a batch's planner decides on its own.
 */
const scenario = (a: string, b: string): ReadonlyArray<readonly [string, Spec]> => [
  [a, { rfc: "<child@x>", references: ["<late@x>"], subject: "Re: Late" }],
  [a, { rfc: "<p@x>", subject: "Plans" }],
  [a, { rfc: "<r1@x>", inReplyTo: "<p@x>", references: ["<p@x>"], subject: "Re: Plans", from: "Bob <bob@example.org>" }],
  [a, { rfc: "<r2@x>", inReplyTo: "<r1@x>", references: ["<p@x>", "<r1@x>"], subject: "Re: Plans", labels: ["received", "unread", "spam"] }],
  [a, { rfc: "<r1@x>", inReplyTo: "<p@x>", references: ["<p@x>"], subject: "Re: Plans" }],
  [a, { rfc: "<stored@x>" }],
  [a, { rfc: "<late@x>", subject: "Late" }],
  [a, { rfc: "<fwd@x>", inReplyTo: "<p@x>", subject: "Fwd: Plans" }],
  [b, { rfc: "<r1@x>", inReplyTo: "<p@x>", references: ["<p@x>"], subject: "Re: Plans" }],
  [a, { rfc: "<alone@x>", subject: "Other" }]
]

/** What a result says, without ids: its thread named by the first Message-ID stored in it. */
const shapeOf = (stored: ReadonlyArray<Stored>) => {
  const firstOf = new Map<string, string>()
  for (const s of stored) if (!firstOf.has(s.message.thread_id)) firstOf.set(s.message.thread_id, `${s.message.inbox_id === stored[0]!.message.inbox_id ? "a" : "b"} ${s.message.rfc_message_id}`)
  return stored.map((s) => ({
    rfc: s.message.rfc_message_id,
    duplicate: s.duplicate,
    thread: firstOf.get(s.message.thread_id),
    count: s.thread.message_count,
    senders: s.thread.senders,
    labels: s.thread.labels,
    hidden: s.thread.hidden
  }))
}

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "120 seconds", excludeTestServices: true })(`group commit on ${storage.name}`, (it) => {
    const inboxesOf = (name: string) =>
      Effect.gen(function*() {
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: `${name}@example.com`, verified: true })
        const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }
        const a = yield* Engine.use((engine) => engine.call("inboxes.create", { username: `${name}-a` }, { kind: "principal", principal: owner }))
        const b = yield* Engine.use((engine) => engine.call("inboxes.create", { username: `${name}-b` }, { kind: "principal", principal: owner }))
        const ref = (i: typeof a) => ({ id: i.inbox_id, organization_id: organization.id, pod_id: i.pod_id })
        return { a: ref(a), b: ref(b) }
      })

    it.effect("a batch of messages is stored as if they arrived one after another: threads, duplicates, summaries, order", () =>
      Effect.gen(function*() {
        const store = yield* MessageStore
        const sql = yield* SqlClient.SqlClient
        const one = yield* inboxesOf("sequential")
        const many = yield* inboxesOf("batched")
        yield* sql.withTransaction(store.insert(newMessage(one.a, { rfc: "<stored@x>" })))
        yield* sql.withTransaction(store.insert(newMessage(many.a, { rfc: "<stored@x>" })))

        const place = (inboxes: typeof one) => (to: string) => to === "a" ? inboxes.a : inboxes.b
        const sequential: Array<Stored> = []
        for (const [to, spec] of scenario("a", "b")) {
          sequential.push(yield* sql.withTransaction(store.insert(newMessage(place(one)(to), spec))))
        }
        const batched = yield* sql.withTransaction(store.insertMany(scenario("a", "b").map(([to, spec]) => newMessage(place(many)(to), spec))))

        assert.deepStrictEqual(shapeOf(batched), shapeOf(sequential))
        // Spelled out, so a planner and a sequence that were both wrong cannot agree unseen.
        const shape = shapeOf(batched)
        assert.deepStrictEqual(shape.map((s) => s.duplicate), [false, false, false, false, true, true, false, false, false, false])
        assert.strictEqual(shape[6]!.thread, "a <child@x>", "the late parent joins the thread of the reply that named it")
        assert.deepStrictEqual(shape.slice(1, 5).map((s) => s.thread), ["a <p@x>", "a <p@x>", "a <p@x>", "a <p@x>"])
        assert.strictEqual(shape[3]!.count, 3)
        assert.strictEqual(shape[7]!.thread, "a <fwd@x>", "a forward starts its own thread")
        assert.strictEqual(shape[8]!.thread, "b <r1@x>", "another inbox's reply has no parent there")

        // The stored threads agree with their messages, and a thread's messages are in order.
        for (const inbox of [many.a.id, many.b.id]) {
          const threads = yield* sql<{ id: string; message_count: number; last_message_id: string; last_at: Date }>`SELECT id, message_count, last_message_id, last_at FROM threads WHERE inbox_id = ${inbox}`
          for (const t of threads) {
            const messages = yield* sql<{ id: string; timestamp: Date }>`SELECT id, "timestamp" FROM messages WHERE thread_id = ${t.id} ORDER BY "timestamp", id`
            assert.strictEqual(messages.length, t.message_count)
            assert.strictEqual(messages[messages.length - 1]!.id, t.last_message_id)
            assert.strictEqual(new Set(messages.map((m) => new Date(m.timestamp).getTime())).size, messages.length, "no two messages of a thread share a time")
          }
        }
        const counted = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE inbox_id = ANY(${[many.a.id, many.b.id]}::text[])`
        assert.strictEqual(counted[0]!.n, 9, "eight written by the batch and the one stored before")
      }))

    it.effect("a batch answers each message it stored with the row as it reads back: bodies, headers, attachments, addresses, times", () =>
      Effect.gen(function*() {
        const store = yield* MessageStore
        const sql = yield* SqlClient.SqlClient
        const { a } = yield* inboxesOf("written")
        const full = (s: Spec, extra: Partial<NewMessage>): NewMessage => ({ ...newMessage(a, s), ...extra })
        const stored = yield* sql.withTransaction(store.insertMany([
          full({ rfc: "<w1@x>", subject: "Zürich, 東京 ✓" }, {
            text: "Grüße aus Zürich\r\n> quoted\r\n",
            html: "<p>Grüße <b>aus</b> Zürich</p>",
            extracted_text: "Grüße aus Zürich",
            extracted_html: "<p>Grüße</p>",
            cc: ["Cleo <cleo@example.org>"],
            bcc: ["dan@example.org"],
            headers: { "x-long-header-name": "1", subject: "Zürich", "message-id": "<w1@x>", to: "box@inbox.localhost" },
            attachments: [{
              meta: { filename: "plan.pdf", content_type: "application/pdf", content_disposition: "attachment", size: 3, content_id: "c1" },
              sha256: sha256Of(new Uint8Array([1, 2, 3])),
              bytes: new Uint8Array([1, 2, 3])
            }]
          }),
          full({ rfc: "<w2@x>", inReplyTo: "<w1@x>", references: ["<w1@x>"], subject: "Re: Zürich" }, {}),
          full({ rfc: "<w1@x>" }, {})
        ]))
        assert.deepStrictEqual(stored.map((s) => s.duplicate), [false, false, true])
        const read = yield* sql`SELECT * FROM messages WHERE id = ANY(${stored.map((s) => s.message.id)}::text[])`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(FullMessageRow)))
        )
        for (const s of stored) assert.deepStrictEqual(s.message, read.find((r) => r.id === s.message.id))
        assert.strictEqual(stored[0]!.message.attachments.length, 1)
        assert.strictEqual(stored[1]!.message.thread_id, stored[0]!.message.thread_id)
      }))

    it.effect("an extract that is the whole body is stored once and reads back as the body; an extract that cut quoted history keeps its own copy", () =>
      Effect.gen(function*() {
        const store = yield* MessageStore
        const sql = yield* SqlClient.SqlClient
        const { a } = yield* inboxesOf("extracts")
        const text = "Grüße aus Zürich, 東京 ✓"
        const html = "<p>Grüße aus Zürich</p>"
        const { text: _none, ...bare } = newMessage(a, { rfc: "<bare@x>" })
        const stored = yield* sql.withTransaction(store.insertMany([
          { ...newMessage(a, { rfc: "<whole@x>" }), text, html, extracted_text: text, extracted_html: html },
          { ...newMessage(a, { rfc: "<quoting@x>" }), text: `${text}\r\n> earlier`, html: `${html}<blockquote>earlier</blockquote>`, extracted_text: text, extracted_html: html },
          { ...newMessage(a, { rfc: "<text-only@x>" }), text, extracted_text: text },
          bare
        ]))
        const columns = yield* sql<{ rfc_message_id: string; extracted_text: string | null; extracted_html: string | null; extracted_text_is_text: boolean; extracted_html_is_html: boolean }>`
          SELECT rfc_message_id, extracted_text, extracted_html, extracted_text_is_text, extracted_html_is_html FROM messages
          WHERE inbox_id = ${a.id} ORDER BY rfc_message_id`
        assert.deepStrictEqual(columns.map((c) => ({ ...c })), [
          { rfc_message_id: "<bare@x>", extracted_text: null, extracted_html: null, extracted_text_is_text: false, extracted_html_is_html: false },
          { rfc_message_id: "<quoting@x>", extracted_text: text, extracted_html: html, extracted_text_is_text: false, extracted_html_is_html: false },
          { rfc_message_id: "<text-only@x>", extracted_text: null, extracted_html: null, extracted_text_is_text: true, extracted_html_is_html: false },
          { rfc_message_id: "<whole@x>", extracted_text: null, extracted_html: null, extracted_text_is_text: true, extracted_html_is_html: true }
        ])
        const read = yield* sql`SELECT * FROM messages WHERE inbox_id = ${a.id}`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(FullMessageRow))))
        const message = (rfc: string) => toMessage(read.find((r) => r.rfc_message_id === rfc)!)
        assert.deepInclude(message("<whole@x>"), { text, html, extracted_text: text, extracted_html: html })
        assert.deepInclude(message("<quoting@x>"), { text: `${text}\r\n> earlier`, extracted_text: text, extracted_html: html })
        assert.deepInclude(message("<text-only@x>"), { text, extracted_text: text })
        assert.notProperty(message("<text-only@x>"), "extracted_html")
        assert.notProperty(message("<bare@x>"), "extracted_text")
        // The batch's own answer is the row as stored, and reads back the same.
        for (const s of stored) assert.deepStrictEqual(toMessage(s.message), message(s.message.rfc_message_id))
      }))

    it.effect("a late parent that ties two threads together in a batch merges them into one", () =>
      Effect.gen(function*() {
        const store = yield* MessageStore
        const sql = yield* SqlClient.SqlClient
        const { a } = yield* inboxesOf("merge")
        const stored = yield* sql.withTransaction(store.insertMany([
          newMessage(a, { rfc: "<m1@x>", references: ["<root@x>"], subject: "Re: Root" }),
          newMessage(a, { rfc: "<m2@x>", references: ["<root@x>"], subject: "Re: Root" }),
          newMessage(a, { rfc: "<root@x>", subject: "Root" })
        ]))
        assert.notStrictEqual(stored[0]!.message.thread_id, stored[1]!.message.thread_id, "siblings without their parent are apart")
        const threads = yield* sql<{ thread_id: string }>`SELECT DISTINCT thread_id FROM messages WHERE inbox_id = ${a.id}`
        assert.strictEqual(threads.length, 1)
        assert.strictEqual(stored[2]!.thread.message_count, 3)
      }))

    it.effect("many deliveries at once are each answered and stored once; one that fails inside a shared transaction fails alone", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const inbound = yield* Inbound
        const { a } = yield* inboxesOf("crowd")
        const email = (yield* sql<{ email: string }>`SELECT email FROM inboxes WHERE id = ${a.id}`)[0]!.email
        // A message the database refuses: its failure must not take the batch's others with it.
        yield* sql.unsafe(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.subject = 'poison' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`)
        yield* sql.unsafe(`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_poison()`)
        // Two webhooks: one wants every message.received of the organization, one only another inbox's.
        const hook = (id: string, inboxIds: ReadonlyArray<string>) =>
          sql`INSERT INTO webhooks (id, organization_id, url, secret, enabled, event_types, inbox_ids, pod_ids, created_at, updated_at)
            VALUES (${id}, ${a.organization_id}, 'https://hooks.example.com/x', 'whsec_x', true, ARRAY['message.received']::text[],
              ${inboxIds}::text[], ARRAY[]::text[], now(), now())`
        yield* hook(`wh_all_${storage.name}`, [])
        yield* hook(`wh_other_${storage.name}`, ["inb_elsewhere"])
        const raws = yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) =>
          Effect.promise(() =>
            buildMail({
              to: email,
              messageId: `<crowd-${i % 30}@x>`,
              subject: i === 17 ? "poison" : `crowd ${i % 30}`,
              ...(i % 30 > 0 && i % 3 === 0 ? { inReplyTo: `<crowd-${i % 30 - 1}@x>` } : {})
            })
          ))
        const outcomes = yield* Effect.forEach(raws, (raw) => Effect.exit(inbound.deliver({ raw, to: [email] })), { concurrency: "unbounded" })
        yield* sql.unsafe(`DROP TRIGGER refuse_poison ON messages`)
        assert.isTrue(Exit.isFailure(outcomes[17]!), "the refused message fails")
        assert.strictEqual(outcomes.filter(Exit.isFailure).length, 1, "and nothing else does")
        const stored = yield* sql<{ rfc_message_id: string }>`SELECT rfc_message_id FROM messages WHERE inbox_id = ${a.id}`
        assert.strictEqual(stored.length, 29, "thirty Message-IDs, each once, but the refused one")
        assert.strictEqual(new Set(stored.map((s) => s.rfc_message_id)).size, 29)
        const events = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE inbox_id = ${a.id} AND event_type = 'message.received'`
        assert.strictEqual(events[0]!.n, 29, "one event per stored message")
        // Each event's deliveries were written with it: one to the webhook that wants it, a job each.
        const deliveries = yield* sql<{ webhook_id: string; n: number; jobs: number }>`SELECT d.webhook_id, count(*)::int AS n,
            count(j.id)::int AS jobs FROM webhook_deliveries d LEFT JOIN jobs j ON j.key = d.id AND j.kind = 'webhook.delivery'
          WHERE d.organization_id = ${a.organization_id} GROUP BY d.webhook_id`
        assert.deepStrictEqual(deliveries.map((d) => ({ ...d })), [{ webhook_id: `wh_all_${storage.name}`, n: 29, jobs: 29 }])
        const answered = outcomes.flatMap((o) => Exit.isSuccess(o) ? o.value.delivered : [])
        assert.strictEqual(answered.filter((d) => !d.duplicate).length, 29)
        const threads = yield* sql<{ id: string; message_count: number }>`SELECT id, message_count FROM threads WHERE inbox_id = ${a.id}`
        for (const t of threads) {
          const n = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE thread_id = ${t.id}`
          assert.strictEqual(n[0]!.n, t.message_count)
        }
      }))

    it.effect("RCPT lookups made at once (sharing statements) each answer their own address: hosted, not hosted, in any case, asked twice", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const inbound = yield* Inbound
        const { a, b } = yield* inboxesOf("rcpt")
        const emails = yield* sql<{ id: string; email: string }>`SELECT id, email FROM inboxes WHERE id = ANY(${[a.id, b.id]}::text[])`
        const emailOf = (id: string) => emails.find((e) => e.id === id)!.email
        const asked = [emailOf(a.id), "nobody@inbox.localhost", emailOf(b.id).toUpperCase(), "not an address", ` ${emailOf(a.id)} `, emailOf(b.id), "nobody@inbox.localhost"]
        const expected = [a.id, undefined, b.id, undefined, a.id, b.id, undefined]
        for (let round = 0; round < 3; round++) {
          const answers = yield* Effect.forEach(asked, (address) => inbound.recipient(address), { concurrency: "unbounded" })
          assert.deepStrictEqual(answers.map((i) => i?.id), expected)
          for (const i of answers) if (i !== undefined) assert.strictEqual(i.email, emailOf(i.id))
        }
      }))

    it.effect("an inbox deleted after it was looked up: the message is stored in the other inboxes and the deleted one is named as skipped; with none left it is 404 not_found", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const inbound = yield* Inbound
        const { a, b } = yield* inboxesOf("vanishing")
        const targets = yield* sql<{ id: string; organization_id: string; pod_id: string; email: string }>`SELECT id, organization_id, pod_id, email FROM inboxes WHERE id = ANY(${[a.id, b.id]}::text[]) ORDER BY id`
        const gone = targets.find((t) => t.id === b.id)!
        const kept = targets.find((t) => t.id === a.id)!
        // Looked up (as the SMTP receiver's RCPT does), then deleted before the message is written.
        yield* sql`DELETE FROM inboxes WHERE id = ${gone.id}`
        const raw = yield* Effect.promise(() => buildMail({ to: [kept.email, gone.email], messageId: "<vanishing@x>", subject: "Still here?" }))
        const result = yield* inbound.deliver({ raw, to: [kept.email, gone.email], inboxes: targets })
        assert.deepStrictEqual(result.delivered.map((d) => d.inbox_id), [kept.id])
        assert.deepStrictEqual(result.skipped, [gone.email])
        const stored = yield* sql<{ inbox_id: string }>`SELECT inbox_id FROM messages WHERE rfc_message_id = '<vanishing@x>'`
        assert.deepStrictEqual(stored.map((r) => r.inbox_id), [kept.id])

        const again = yield* Effect.promise(() => buildMail({ to: gone.email, messageId: "<vanished@x>" }))
        const refused = yield* Effect.flip(inbound.deliver({ raw: again, to: [gone.email], inboxes: [gone] }))
        assert.strictEqual(refused._tag, "NotFound")
        const none = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE rfc_message_id = '<vanished@x>'`
        assert.strictEqual(none[0]!.n, 0)
      }))
  })
}
