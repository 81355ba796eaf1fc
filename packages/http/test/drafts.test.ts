/**
 * Drafts (spec: Draft, Drafts, States and transitions; docs/sending.md, "Drafts"): fields, labels
 * and send_status, updates with null, sending now (the draft is consumed), scheduled sends
 * fired by the durable job runner on a TestClock, failures kept on the draft, draft_sending;
 * attachments in the blob store, by id with a download URL.
 */
import { assert, it, layer } from "@effect/vitest"
import { CapturedMail, deliverMail, engineLayer, newOrganization, postgresSchema, POSTGRES_ENV, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Database, Jobs } from "@inbox/core/internal"
import { Clock, Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization({ plan: "scale" })
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `dr${Math.random().toString(16).slice(2, 10)}` } })).body as {
    inbox_id: string
    email: string
  }
  const base = `/v0/inboxes/${inbox.inbox_id}/drafts`
  const create = (json: unknown) => app.request("POST", base, { key: org.key, json })
  const patch = (id: string, json: unknown) => app.request("PATCH", `${base}/${id}`, { key: org.key, json })
  const get = (id: string) => app.request("GET", `${base}/${id}`, { key: org.key })
  const send = (id: string) => app.request("POST", `${base}/${id}/send`, { key: org.key, json: {} })
  return { app, key: org.key, inbox, base, create, patch, get, send }
})

const relayed = CapturedMail.use((c) => c.all)
const runJobs = Jobs.use((j) => j.runDue({ wait: true }))

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `drafts (${storage.name})`,
    (it) => {
      it.effect("a draft shows only the fields ever set, with label draft and a preview; it is listed at both levels with inbox_id", () =>
        Effect.gen(function*() {
          const { app, key, inbox, base, create, get } = yield* setUp
          const made = yield* create({ to: "bob@example.net", subject: "Plan", text: "First line\n\nof the plan" })
          assert.strictEqual(made.status, 200, made.text)
          assert.match(made.body.draft_id, /^draft_[0-9a-f]+$/)
          assert.strictEqual(made.body.inbox_id, inbox.inbox_id)
          assert.deepStrictEqual(made.body.labels, ["draft"])
          assert.deepStrictEqual(made.body.to, ["bob@example.net"])
          assert.strictEqual(made.body.preview, "First line of the plan")
          for (const absent of ["cc", "bcc", "html", "send_at", "send_status", "attachments", "reply_to_message_id", "failure"]) {
            assert.notProperty(made.body, absent)
          }
          yield* TestClock.adjust("1 second")
          const empty = yield* create({})
          assert.deepStrictEqual(Object.keys(empty.body).sort(), ["created_at", "draft_id", "inbox_id", "labels", "preview", "updated_at"])
          assert.deepStrictEqual((yield* get(made.body.draft_id)).body, made.body)
          assert.deepStrictEqual((yield* app.request("GET", `/v0/drafts/${made.body.draft_id}`, { key })).body, made.body)
          const inInbox = yield* app.request("GET", base, { key })
          assert.deepStrictEqual(inInbox.body.drafts.map((d: { draft_id: string }) => d.draft_id), [empty.body.draft_id, made.body.draft_id])
          const all = yield* app.request("GET", "/v0/drafts?limit=1", { key })
          assert.strictEqual(all.body.count, 1)
          assert.strictEqual(all.body.drafts[0].inbox_id, inbox.inbox_id)
          assert.isString(all.body.next_page_token)
        }))

      it.effect("PATCH sets any field, null clears a nullable field, send_at schedules (labels draft and scheduled) and send_at null unschedules", () =>
        Effect.gen(function*() {
          const { create, patch } = yield* setUp
          const made = (yield* create({ to: ["a@example.net"], subject: "S", text: "T" })).body
          const changed = yield* patch(made.draft_id, { subject: null, cc: "c@example.net", send_at: "1970-01-02T00:00:00.000Z" })
          assert.strictEqual(changed.status, 200, changed.text)
          assert.notProperty(changed.body, "subject")
          assert.deepStrictEqual(changed.body.cc, ["c@example.net"])
          assert.strictEqual(changed.body.text, "T")
          assert.deepStrictEqual(changed.body.labels, ["draft", "scheduled"])
          assert.strictEqual(changed.body.send_status, "scheduled")
          assert.strictEqual(changed.body.send_at, "1970-01-02T00:00:00.000Z")
          const unscheduled = yield* patch(made.draft_id, { send_at: null })
          assert.deepStrictEqual(unscheduled.body.labels, ["draft"])
          assert.notProperty(unscheduled.body, "send_status")
          assert.notProperty(unscheduled.body, "send_at")
          const bad = yield* patch(made.draft_id, { send_at: "tomorrow" })
          assert.strictEqual(bad.status, 400)
          assert.strictEqual(bad.body.code, "validation_error")
          assert.deepStrictEqual(bad.body.errors[0].path, ["send_at"])
        }))

      it.effect("POST send answers message_id and thread_id, relays the message once, and consumes the draft (a later GET is 404)", () =>
        Effect.gen(function*() {
          const { app, key, inbox, create, get, send } = yield* setUp
          const made = (yield* create({ to: "bob@example.net", subject: "Now", text: "Sent from a draft" })).body
          const before = (yield* relayed).length
          const sent = yield* send(made.draft_id)
          assert.strictEqual(sent.status, 200, sent.text)
          assert.match(sent.body.message_id, /^msg_/)
          assert.match(sent.body.thread_id, /^thr_/)
          assert.strictEqual((yield* relayed).length, before + 1)
          const message = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${sent.body.message_id}`, { key })
          assert.deepStrictEqual(message.body.labels, ["sent"])
          assert.strictEqual(message.body.subject, "Now")
          const gone = yield* get(made.draft_id)
          assert.strictEqual(gone.status, 404)
          assert.strictEqual(gone.body.code, "not_found")
          assert.strictEqual((yield* send(made.draft_id)).status, 404)
        }))

      it.effect("a send refused by a send rule answers the rule's error and leaves the draft as it was", () =>
        Effect.gen(function*() {
          const { create, get, send } = yield* setUp
          const made = (yield* create({ subject: "No one to send to" })).body
          const refused = yield* send(made.draft_id)
          assert.strictEqual(refused.status, 400)
          assert.strictEqual(refused.body.code, "validation_error")
          const after = yield* get(made.draft_id)
          assert.strictEqual(after.status, 200, after.text)
          assert.deepStrictEqual(after.body, made)
        }))

      it.effect("a draft with a reply context is sent as a reply in the message's thread", () =>
        Effect.gen(function*() {
          const { app, key, inbox, create, send } = yield* setUp
          const received = (yield* deliverMail(inbox.email, { from: "ann@example.org", subject: "Question" })).body.delivered[0] as { message_id: string; thread_id: string }
          const missing = yield* create({ text: "x", reply_to_message_id: "msg_0000" })
          assert.strictEqual(missing.status, 400)
          assert.deepStrictEqual(missing.body.errors[0].path, ["reply_to_message_id"])
          const made = (yield* create({ text: "Answer", reply_to_message_id: received.message_id })).body
          assert.strictEqual(made.reply_to_message_id, received.message_id)
          const sent = (yield* send(made.draft_id)).body
          assert.strictEqual(sent.thread_id, received.thread_id)
          const reply = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${sent.message_id}`, { key })).body
          assert.deepStrictEqual(reply.to, ["ann@example.org"])
          assert.strictEqual(reply.subject, "Re: Question")
        }))

      it.effect("a scheduled draft is sent when time reaches send_at, once, and is consumed", () =>
        Effect.gen(function*() {
          const { app, key, create, get } = yield* setUp
          const at = new Date((yield* Clock.currentTimeMillis) + 3_600_000).toISOString()
          const made = (yield* create({ to: "later@example.net", subject: "Later", text: "x", send_at: at })).body
          const before = (yield* relayed).length
          yield* runJobs
          yield* TestClock.adjust("59 minutes")
          yield* runJobs
          assert.strictEqual((yield* relayed).length, before)
          assert.strictEqual((yield* get(made.draft_id)).body.send_status, "scheduled")
          yield* TestClock.adjust("1 minute")
          yield* runJobs
          yield* runJobs
          const mail = (yield* relayed).slice(before)
          assert.strictEqual(mail.length, 1)
          assert.deepStrictEqual(mail[0]?.envelope.to, ["later@example.net"])
          assert.strictEqual((yield* get(made.draft_id)).status, 404)
          const listed = yield* app.request("GET", "/v0/drafts", { key })
          assert.notInclude(listed.body.drafts.map((d: { draft_id: string }) => d.draft_id), made.draft_id)
        }))

      it.effect("rescheduling moves the send; the old time sends nothing; unscheduling keeps the draft unsent", () =>
        Effect.gen(function*() {
          const { create, patch, get } = yield* setUp
          const t0 = yield* Clock.currentTimeMillis
          const iso = (ms: number) => new Date(t0 + ms).toISOString()
          const moved = (yield* create({ to: "m@example.net", text: "x", send_at: iso(60_000) })).body
          const kept = (yield* create({ to: "k@example.net", text: "x", send_at: iso(60_000) })).body
          yield* patch(moved.draft_id, { send_at: iso(120_000) })
          yield* patch(kept.draft_id, { send_at: null })
          const before = (yield* relayed).length
          yield* TestClock.adjust("1 minute")
          yield* runJobs
          assert.strictEqual((yield* relayed).length, before)
          assert.strictEqual((yield* get(kept.draft_id)).status, 200)
          yield* TestClock.adjust("1 minute")
          yield* runJobs
          assert.deepStrictEqual((yield* relayed).slice(before).map((m) => m.envelope.to), [["m@example.net"]])
          assert.strictEqual((yield* get(moved.draft_id)).status, 404)
        }))

      it.effect("an old schedule's job finding the draft held by a sender whose lease ran out does nothing and leaves no job behind", () =>
        Effect.gen(function*() {
          const { create, patch } = yield* setUp
          const t0 = yield* Clock.currentTimeMillis
          const made = (yield* create({ to: "o@example.net", text: "x", send_at: new Date(t0 + 60_000).toISOString() })).body
          const sql = yield* SqlClient.SqlClient
          const old = (yield* sql<{ token: string }>`SELECT schedule_token AS token FROM drafts WHERE id = ${made.draft_id}`)[0]!.token
          yield* patch(made.draft_id, { send_at: new Date(t0 + 3_600_000).toISOString() })
          // The old schedule's job, as one left queued by a race with the PATCH would be.
          yield* Jobs.use((j) => j.enqueue({ kind: "draft.send", payload: { draft_id: made.draft_id, token: old }, key: `${made.draft_id}:${old}:left`, runAt: new Date(t0 + 60_000) }))
          // A sender of the new schedule took it and died: its lease ended before the old time.
          yield* sql`UPDATE drafts SET send_status = 'sending', sending_claim = 'dead', sending_until = ${new Date(t0 + 30_000)}
            WHERE id = ${made.draft_id}`
          const before = (yield* relayed).length
          yield* TestClock.adjust("1 minute")
          yield* runJobs
          yield* runJobs
          assert.strictEqual((yield* relayed).length, before)
          const due = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM jobs
            WHERE kind = 'draft.send' AND key LIKE ${`${made.draft_id}:%`} AND state = 'queued' AND run_at <= ${new Date(t0 + 60_000)}`
          assert.strictEqual(due[0]?.n, 0, "no job of the old schedule looks again")
          // Out of the way of the tests after this one (the new schedule's job would take it over).
          yield* sql`DELETE FROM jobs WHERE kind = 'draft.send' AND key LIKE ${`${made.draft_id}:%`}`
          yield* sql`DELETE FROM drafts WHERE id = ${made.draft_id}`
        }))

      it.effect("a scheduled draft of a paused inbox fails with inbox_paused at send_at, kept on the draft, and is not retried", () =>
        Effect.gen(function*() {
          const { app, key, inbox, create, get } = yield* setUp
          const at = new Date((yield* Clock.currentTimeMillis) + 60_000).toISOString()
          const made = (yield* create({ to: "p@example.net", text: "x", send_at: at })).body
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "paused" } })
          const before = (yield* relayed).length
          yield* TestClock.adjust("1 minute")
          yield* runJobs
          const failed = (yield* get(made.draft_id)).body
          assert.strictEqual(failed.send_status, "failed")
          assert.deepStrictEqual(failed.labels, ["draft"])
          assert.strictEqual(failed.failure.code, "inbox_paused")
          assert.isString(failed.failure.message)
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "active" } })
          yield* TestClock.adjust("1 hour")
          yield* runJobs
          assert.strictEqual((yield* relayed).length, before)
          assert.strictEqual((yield* get(made.draft_id)).body.send_status, "failed")
        }))

      it.effect("any send error at send_at marks the draft failed with the error's code and message", () =>
        Effect.gen(function*() {
          const { create, get } = yield* setUp
          const at = new Date((yield* Clock.currentTimeMillis) + 1_000).toISOString()
          const made = (yield* create({ to: "x@example.net", text: "x", track_opens: true, send_at: at })).body
          yield* TestClock.adjust("1 second")
          yield* runJobs
          const failed = (yield* get(made.draft_id)).body
          assert.strictEqual(failed.send_status, "failed")
          assert.strictEqual(failed.failure.code, "html_required")
        }))

      it.effect("editing, deleting or sending a draft while it is being sent is 409 draft_sending", () =>
        Effect.gen(function*() {
          const { create, patch, send, app, key, base } = yield* setUp
          const made = (yield* create({ to: "s@example.net", text: "x" })).body
          const sql = yield* SqlClient.SqlClient
          // As a sender holds it between its claim and the relay's answer.
          yield* sql`UPDATE drafts SET send_status = 'sending', sending_claim = 'other', sending_until = ${new Date((yield* Clock.currentTimeMillis) + 60_000)}
            WHERE id = ${made.draft_id}`
          for (const res of [yield* patch(made.draft_id, { text: "y" }), yield* app.request("DELETE", `${base}/${made.draft_id}`, { key }), yield* send(made.draft_id)]) {
            assert.strictEqual(res.status, 409, res.text)
            assert.strictEqual(res.body.code, "draft_sending")
          }
        }))

      it.effect("a sender that died no longer holds the draft: once its claim's lease ran out, PATCH and DELETE work again", () =>
        Effect.gen(function*() {
          const { create, patch, get, app, key, base } = yield* setUp
          const at = new Date((yield* Clock.currentTimeMillis) + 3_600_000).toISOString()
          const made = (yield* create({ to: "s@example.net", text: "x", send_at: at })).body
          const sql = yield* SqlClient.SqlClient
          // A claim taken by a process that crashed before the relay answered, its lease over.
          yield* sql`UPDATE drafts SET send_status = 'sending', status_before = 'scheduled', sending_claim = 'dead',
              sending_until = ${new Date((yield* Clock.currentTimeMillis) - 1_000)}
            WHERE id = ${made.draft_id}`
          const edited = yield* patch(made.draft_id, { text: "y" })
          assert.strictEqual(edited.status, 200, edited.text)
          assert.strictEqual(edited.body.send_status, "scheduled")
          assert.strictEqual(edited.body.text, "y")
          assert.strictEqual((yield* app.request("DELETE", `${base}/${made.draft_id}`, { key })).status, 204)
          assert.strictEqual((yield* get(made.draft_id)).status, 404)
        }))

      it.effect("a draft's attachments have attachment_id and size; by id at organization, pod and inbox level each answers a download_url that fetches its bytes", () =>
        Effect.gen(function*() {
          const { app, key, inbox, base, create, get } = yield* setUp
          const bytes = "quarterly numbers, attached to a draft"
          const made = yield* create({
            to: "bob@example.net",
            text: "See attached",
            attachments: [
              { filename: "notes.txt", content_type: "text/plain", content: Buffer.from(bytes).toString("base64") },
              { filename: "remote.pdf", url: "https://files.example.org/remote.pdf" }
            ]
          })
          assert.strictEqual(made.status, 200, made.text)
          const [stored, remote] = made.body.attachments
          assert.match(stored.attachment_id, /^att_[0-9a-f]+$/)
          assert.strictEqual(stored.size, Buffer.byteLength(bytes))
          assert.notProperty(stored, "content")
          assert.notProperty(stored, "sha256")
          assert.match(remote.attachment_id, /^att_[0-9a-f]+$/)
          assert.strictEqual(remote.url, "https://files.example.org/remote.pdf")
          assert.deepStrictEqual((yield* get(made.body.draft_id)).body.attachments, made.body.attachments)
          const pod = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}`, { key })).body.pod_id
          for (const path of [`/v0/drafts`, `/v0/pods/${pod}/drafts`, base]) {
            const meta = yield* app.request("GET", `${path}/${made.body.draft_id}/attachments/${stored.attachment_id}`, { key })
            assert.strictEqual(meta.status, 200, meta.text)
            assert.strictEqual(meta.body.attachment_id, stored.attachment_id)
            assert.strictEqual(meta.body.filename, "notes.txt")
            assert.strictEqual(meta.body.content_type, "text/plain")
            assert.strictEqual(meta.body.content_disposition, "attachment")
            assert.strictEqual(meta.body.size, Buffer.byteLength(bytes))
            assert.isString(meta.body.expires_at)
            const url = new URL(meta.body.download_url)
            const anonymous = yield* app.request("GET", `${url.pathname}${url.search}`)
            assert.strictEqual(anonymous.status, 200)
            assert.strictEqual(anonymous.text, bytes)
          }
          const byUrl = yield* app.request("GET", `${base}/${made.body.draft_id}/attachments/${remote.attachment_id}`, { key })
          assert.strictEqual(byUrl.body.download_url, "https://files.example.org/remote.pdf")
          assert.strictEqual(byUrl.body.content_type, "application/pdf")
          const missing = yield* app.request("GET", `${base}/${made.body.draft_id}/attachments/att_0`, { key })
          assert.strictEqual(missing.status, 404)
          assert.strictEqual(missing.body.code, "not_found")
          const otherPod = (yield* app.request("POST", "/v0/pods", { key, json: { name: "elsewhere" } })).body.pod_id
          assert.strictEqual((yield* app.request("GET", `/v0/pods/${otherPod}/drafts/${made.body.draft_id}/attachments/${stored.attachment_id}`, { key })).status, 404)
        }))

      it.effect("a draft's attachment bytes are in the blob store: a send carries them, and sending, replacing or deleting releases them", () =>
        Effect.gen(function*() {
          const { app, key, base, create, patch, send } = yield* setUp
          const sql = yield* SqlClient.SqlClient
          const refsOf = (text: string) =>
            Effect.map(
              sql<{ refs: number }>`SELECT refs FROM blobs WHERE sha256 = ${createHash("sha256").update(text).digest("hex")}`,
              (rows) => rows[0]?.refs ?? 0
            )
          const b64 = (text: string) => Buffer.from(text).toString("base64")
          const first = `draft bytes one ${Math.random()}`
          const second = `draft bytes two ${Math.random()}`
          const made = (yield* create({ to: "bob@example.net", subject: "With file", text: "x", attachments: [{ filename: "a.txt", content: b64(first) }] })).body
          assert.strictEqual(yield* refsOf(first), 1)
          // Replacing the attachments releases the old bytes and holds the new.
          const changed = yield* patch(made.draft_id, { attachments: [{ filename: "b.txt", content: b64(second) }] })
          assert.strictEqual(changed.status, 200, changed.text)
          assert.strictEqual(yield* refsOf(first), 0)
          assert.strictEqual(yield* refsOf(second), 1)
          const before = (yield* relayed).length
          const sent = yield* send(made.draft_id)
          assert.strictEqual(sent.status, 200, sent.text)
          const mail = (yield* relayed).slice(before)
          assert.strictEqual(mail.length, 1)
          assert.include(Buffer.from(mail[0]!.raw).toString("utf8"), b64(second))
          // The sent message holds the bytes now; the consumed draft no longer does.
          assert.strictEqual(yield* refsOf(second), 1)
          const message = yield* app.request("GET", `${base.replace("/drafts", "")}/messages/${sent.body.message_id}`, { key })
          assert.strictEqual(message.body.attachments[0].filename, "b.txt")
          assert.strictEqual(message.body.attachments[0].size, Buffer.byteLength(second))
          const third = `draft bytes three ${Math.random()}`
          const gone = (yield* create({ text: "bin", attachments: [{ filename: "c.txt", content: b64(third) }] })).body
          assert.strictEqual(yield* refsOf(third), 1)
          assert.strictEqual((yield* app.request("DELETE", `${base}/${gone.draft_id}`, { key })).status, 204)
          assert.strictEqual(yield* refsOf(third), 0)
        }))

      it.effect("a draft written with its attachment bytes inline (before migration 0046) is read as it was and converted when its attachment is asked for by id", () =>
        Effect.gen(function*() {
          const { app, key, base, create, get, send } = yield* setUp
          const sql = yield* SqlClient.SqlClient
          const made = (yield* create({ to: "bob@example.net", text: "old" })).body
          const old = `legacy inline bytes ${Math.random()}`
          const sha = createHash("sha256").update(old).digest("hex")
          yield* sql`UPDATE drafts SET content = jsonb_set(content, '{attachments}', ${JSON.stringify([{ filename: "old.txt", content: Buffer.from(old).toString("base64") }])}::jsonb)
            WHERE id = ${made.draft_id}`
          const shown = (yield* get(made.draft_id)).body.attachments
          assert.strictEqual(shown[0].size, Buffer.byteLength(old))
          const id = shown[0].attachment_id
          const meta = yield* app.request("GET", `${base}/${made.draft_id}/attachments/${id}`, { key })
          assert.strictEqual(meta.status, 200, meta.text)
          const url = new URL(meta.body.download_url)
          assert.strictEqual((yield* app.request("GET", `${url.pathname}${url.search}`)).text, old)
          // Converted: the same id, the bytes in the blob store, held once.
          const after = (yield* get(made.draft_id)).body.attachments
          assert.strictEqual(after[0].attachment_id, id)
          assert.notProperty(after[0], "content")
          assert.deepStrictEqual((yield* sql<{ refs: number }>`SELECT refs FROM blobs WHERE sha256 = ${sha}`).map((r) => r.refs), [1])
          assert.strictEqual((yield* send(made.draft_id)).status, 200)
        }))

      it.effect("DELETE removes the draft and its schedule", () =>
        Effect.gen(function*() {
          const { create, get, app, key, base } = yield* setUp
          const at = new Date((yield* Clock.currentTimeMillis) + 1_000).toISOString()
          const made = (yield* create({ to: "d@example.net", text: "x", send_at: at })).body
          const deleted = yield* app.request("DELETE", `${base}/${made.draft_id}`, { key })
          assert.strictEqual(deleted.status, 204)
          const before = (yield* relayed).length
          yield* TestClock.adjust("1 second")
          yield* runJobs
          assert.strictEqual((yield* relayed).length, before)
          assert.strictEqual((yield* get(made.draft_id)).status, 404)
        }))
    }
  )
}

const url = process.env[POSTGRES_ENV]
if (url !== undefined && url !== "") {
  // PGlite is one connection, which serialises everything: these races need PostgreSQL.
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(postgresSchema(url), { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "300 seconds" })(
    "draft races on PostgreSQL",
    (it) => {
      it.effect("two sends of one draft at once make one message: one answers it, the other 409 draft_sending or 404", () =>
        Effect.gen(function*() {
          const { app, key, inbox, create, send } = yield* setUp
          for (let round = 0; round < 10; round++) {
            const made = (yield* create({ to: `race${round}@example.net`, text: "once" })).body
            const answers = yield* Effect.all([send(made.draft_id), send(made.draft_id)], { concurrency: "unbounded" })
            const ok = answers.filter((r) => r.status === 200)
            assert.strictEqual(ok.length, 1, answers.map((r) => r.text).join(" | "))
            for (const other of answers.filter((r) => r.status !== 200)) assert.include(["draft_sending", "not_found"], other.body.code)
          }
          const sent = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages?labels=sent&limit=100`, { key })
          assert.strictEqual(sent.body.count, 10)
        }))

      it.effect("scheduled drafts due together are each sent exactly once by two servers' job runners on one database", () =>
        Effect.gen(function*() {
          const { app, key, inbox, create } = yield* setUp
          const sql = yield* SqlClient.SqlClient
          const schema = (yield* sql<{ s: string }>`SELECT current_schema() AS s`)[0]?.s ?? ""
          const other = yield* Layer.build(engineLayer(Database.layerPostgres({ url, searchPath: schema, maxConnections: 4 })))
          const first = yield* Jobs
          const second = Context.get(other, Jobs)
          const before = (yield* relayed).length
          const at = new Date((yield* Clock.currentTimeMillis) + 60_000).toISOString()
          for (let n = 0; n < 40; n++) yield* create({ to: `due${n}@example.net`, text: `n${n}`, send_at: at })
          yield* TestClock.adjust("1 minute")
          for (let round = 0; round < 8; round++) {
            yield* Effect.all([first.runDue({ wait: true }), second.runDue({ wait: true })], { concurrency: 2 })
          }
          const sent = yield* sql<{ n: number; recipients: number }>`SELECT count(*)::int AS n, count(DISTINCT recipient_addresses[1])::int AS recipients
            FROM messages WHERE inbox_id = ${inbox.inbox_id} AND direction = 'sent'`
          assert.deepStrictEqual(sent[0], { n: 40, recipients: 40 })
          // The captured outbox is one per test process, shared by both engines: each recipient got one message.
          const mail = (yield* relayed).slice(before)
          assert.strictEqual(mail.length, 40)
          assert.strictEqual(new Set(mail.map((m) => m.envelope.to[0])).size, 40)
          assert.strictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/drafts`, { key })).body.count, 0)
        }).pipe(Effect.scoped))
    }
  )
}
