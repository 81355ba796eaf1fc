/**
 * Sending (spec: Messages `/send`, `/reply`, `/reply-all`, `/forward`, Send rules, Errors,
 * Limits; docs/sending.md, "Sending mail"), over REST with the captured outbox as the relay.
 */
import { assert, it, layer } from "@effect/vitest"
import { CapturedMail, deliverMail as inbound, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Suppressions } from "@inbox/core/internal"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const setUp = (options: { readonly plan?: "free" | "pro" | "scale"; readonly verified?: boolean } = {}) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const org = yield* newOrganization({ plan: options.plan ?? "scale", ...(options.verified === undefined ? {} : { verified: options.verified }) })
    const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `out${Math.random().toString(16).slice(2, 10)}`, display_name: "Support" } })).body
    const send = (json: unknown, headers: Record<string, string> = {}) =>
      app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json, headers })
    return { app, key: org.key, organizationId: org.organizationId, inbox: inbox as { inbox_id: string; email: string }, send }
  })

const relayed = CapturedMail.use((c) => c.all)

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }, {
    "https://files.example.com/small.txt": { body: "small bytes", content_type: "text/plain" },
    "https://files.example.com/huge.bin": { body: new Uint8Array(10 * 1024 * 1024 + 1) }
  }))), { timeout: "180 seconds" })(
    `sending mail (${storage.name})`,
    (it) => {
      it.effect("send answers message_id and thread_id; the message is stored with label sent and relayed once", () =>
        Effect.gen(function*() {
          const { app, key, inbox, send } = yield* setUp()
          const before = (yield* relayed).length
          const res = yield* send({ to: "bob@example.net", subject: "Hello", text: "Hi Bob" })
          assert.strictEqual(res.status, 200, res.text)
          assert.match(res.body.message_id, /^msg_[0-9a-f]+$/)
          assert.match(res.body.thread_id, /^thr_[0-9a-f]+$/)
          const all = yield* relayed
          assert.strictEqual(all.length, before + 1)
          assert.deepStrictEqual(all.at(-1)?.envelope, { from: inbox.email, to: ["bob@example.net"] })
          const got = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${res.body.message_id}`, { key })
          assert.deepStrictEqual(got.body.labels, ["sent"])
          assert.deepStrictEqual(got.body.to, ["bob@example.net"])
          assert.strictEqual(got.body.from, `Support <${inbox.email}>`)
          assert.strictEqual(got.body.text.trim(), "Hi Bob")
          const thread = yield* app.request("GET", `/v0/threads/${res.body.thread_id}`, { key })
          assert.isDefined(thread.body.sent_timestamp)
          assert.isUndefined(thread.body.received_timestamp)
        }))

      it.effect("to, cc and bcc: none is 400 validation_error; more than 50 unique is 422 too_many_recipients; bcc is only in the envelope", () =>
        Effect.gen(function*() {
          const { send } = yield* setUp()
          const none = yield* send({ subject: "x", text: "y" })
          assert.strictEqual(none.status, 400)
          assert.strictEqual(none.body.code, "validation_error")
          const many = yield* send({ to: Array.from({ length: 51 }, (_, i) => `r${i}@example.net`), text: "y" })
          assert.strictEqual(many.status, 422)
          assert.strictEqual(many.body.code, "too_many_recipients")
          const ok = yield* send({ to: ["a@example.net"], cc: "b@example.net", bcc: ["c@example.net"], text: "y" })
          assert.strictEqual(ok.status, 200, ok.text)
          const mail = (yield* relayed).at(-1)
          assert.deepStrictEqual(mail?.envelope.to, ["a@example.net", "b@example.net", "c@example.net"])
          assert.notInclude(Buffer.from(mail?.raw ?? []).toString(), "c@example.net")
        }))

      it.effect("track_opens without html is 422 html_required", () =>
        Effect.gen(function*() {
          const { send } = yield* setUp()
          const res = yield* send({ to: "a@example.net", text: "x", track_opens: true })
          assert.strictEqual(res.status, 422)
          assert.strictEqual(res.body.code, "html_required")
        }))

      it.effect("a paused inbox is 403 inbox_paused; an unverified owner is 403 email_unverified", () =>
        Effect.gen(function*() {
          const { app, key, inbox, send } = yield* setUp()
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}`, { key, json: { status: "paused" } })
          const paused = yield* send({ to: "a@example.net", text: "x" })
          assert.strictEqual(paused.body.code, "inbox_paused")
          const unverified = yield* setUp({ verified: false })
          const refused = yield* unverified.send({ to: "a@example.net", text: "x" })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "email_unverified")
        }))

      it.effect("the relay refusing a recipient is 403 message_rejected (MessageRejectedError); nothing is stored and message.rejected is recorded", () =>
        Effect.gen(function*() {
          const { app, key, inbox, send, organizationId } = yield* setUp()
          yield* (yield* CapturedMail).reject("gone@example.net")
          const res = yield* send({ to: "gone@example.net", text: "x" })
          assert.strictEqual(res.status, 403)
          assert.strictEqual(res.body.code, "message_rejected")
          assert.strictEqual(res.body.name, "MessageRejectedError")
          const list = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages?labels=sent`, { key })
          assert.strictEqual(list.body.count, 0)
          const sql = yield* SqlClient.SqlClient
          const events = yield* sql<{ event_type: string }>`SELECT event_type FROM events WHERE organization_id = ${organizationId} ORDER BY created_at`
          assert.deepStrictEqual(events.map((e) => e.event_type), ["message.rejected"])
        }))

      it.effect("message.sent carries send: { inbox_id, thread_id, message_id, timestamp, recipients } once the transport accepted it", () =>
        Effect.gen(function*() {
          const { send, organizationId, inbox } = yield* setUp()
          const res = yield* send({ to: "a@example.net", cc: "b@example.net", text: "x" })
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ payload: { send: Record<string, unknown> } }>`SELECT payload FROM events
            WHERE organization_id = ${organizationId} AND event_type = 'message.sent'`
          assert.strictEqual(rows.length, 1)
          const payload = typeof rows[0]?.payload === "string" ? JSON.parse(rows[0]?.payload as unknown as string) : rows[0]?.payload
          assert.deepStrictEqual(Object.keys(payload.send).sort(), ["inbox_id", "message_id", "recipients", "thread_id", "timestamp"])
          assert.strictEqual(payload.send.message_id, res.body.message_id)
          assert.strictEqual(payload.send.inbox_id, inbox.inbox_id)
          assert.deepStrictEqual(payload.send.recipients, ["a@example.net", "b@example.net"])
        }))

      it.effect("a reply goes to the sender in the same thread with In-Reply-To and References; a forward starts a new thread and carries the attachments", () =>
        Effect.gen(function*() {
          const { app, key, inbox } = yield* setUp()
          const arrived = yield* inbound(inbox.email, {
            messageId: "<ask@example.org>",
            subject: "Question",
            text: "Can you help?",
            attachments: [{ filename: "notes.txt", content: "some notes", contentType: "text/plain" }]
          })
          const parent = arrived.body.delivered[0]
          const reply = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${parent.message_id}/reply`, { key, json: { text: "Sure." } })
          assert.strictEqual(reply.status, 200, reply.text)
          assert.strictEqual(reply.body.thread_id, parent.thread_id)
          const sentReply = (yield* relayed).at(-1)
          assert.deepStrictEqual(sentReply?.envelope.to, ["ann@example.org"])
          const text = Buffer.from(sentReply?.raw ?? []).toString()
          assert.match(text, /In-Reply-To: <ask@example.org>/)
          assert.match(text, /Subject: Re: Question/)
          const fwd = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${parent.message_id}/forward`, { key, json: { to: "boss@example.net", text: "FYI" } })
          assert.strictEqual(fwd.status, 200, fwd.text)
          assert.notStrictEqual(fwd.body.thread_id, parent.thread_id)
          const forwarded = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${fwd.body.message_id}`, { key })
          assert.deepStrictEqual(forwarded.body.attachments.map((a: { filename: string }) => a.filename), ["notes.txt"])
          const thread = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads/${parent.thread_id}`, { key })
          assert.strictEqual(thread.body.message_count, 2)
          assert.deepStrictEqual(thread.body.messages.map((m: { labels: ReadonlyArray<string> }) => m.labels[0]), ["received", "sent"])
        }))

      it.effect("mail to another inbox of this server is delivered locally, with the same labels and events as mail from outside", () =>
        Effect.gen(function*() {
          const a = yield* setUp()
          const b = yield* setUp()
          const before = (yield* relayed).length
          const res = yield* a.send({ to: b.inbox.email, subject: "Neighbour", text: "hello next door" })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual((yield* relayed).length, before)
          const list = yield* b.app.request("GET", `/v0/inboxes/${b.inbox.inbox_id}/messages`, { key: b.key })
          assert.strictEqual(list.body.count, 1)
          assert.deepStrictEqual(list.body.messages[0].labels, ["received", "unread"])
          assert.strictEqual(list.body.messages[0].subject, "Neighbour")
        }))

      it.effect("Idempotency-Key: the same key and body answers the first answer and sends nothing; another route is 409 idempotency_key_reuse", () =>
        Effect.gen(function*() {
          const { app, key, inbox, send } = yield* setUp()
          const before = (yield* relayed).length
          const body = { to: "a@example.net", text: "once" }
          const first = yield* send(body, { "idempotency-key": "k-1" })
          const again = yield* send(body, { "idempotency-key": "k-1" })
          assert.deepStrictEqual(again.body, first.body)
          assert.strictEqual((yield* relayed).length, before + 1)
          const otherBody = yield* send({ to: "a@example.net", text: "twice" }, { "idempotency-key": "k-1" })
          assert.strictEqual(otherBody.status, 409)
          assert.strictEqual(otherBody.body.code, "idempotency_key_reuse")
          const otherRoute = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${first.body.message_id}/reply`, {
            key, json: body, headers: { "idempotency-key": "k-1" }
          })
          assert.strictEqual(otherRoute.status, 409)
          assert.strictEqual(otherRoute.body.code, "idempotency_key_reuse")
        }))

      it.effect("Idempotency-Key: a key older than 24 hours is a new key; the same request sends again and a new body is no reuse", () =>
        Effect.gen(function*() {
          const { send } = yield* setUp()
          const before = (yield* relayed).length
          const first = yield* send({ to: "a@example.net", text: "monday" }, { "idempotency-key": "k-day" })
          yield* TestClock.adjust("25 hours")
          const later = yield* send({ to: "a@example.net", text: "tuesday" }, { "idempotency-key": "k-day" })
          assert.strictEqual(later.status, 200, later.text)
          assert.notStrictEqual(later.body.message_id, first.body.message_id)
          const again = yield* send({ to: "a@example.net", text: "tuesday" }, { "idempotency-key": "k-day" })
          assert.deepStrictEqual(again.body, later.body)
          assert.strictEqual((yield* relayed).length, before + 2)
        }))

      it.effect("reply-all goes to the sender and everyone on To and Cc except this inbox, once each", () =>
        Effect.gen(function*() {
          const { app, key, inbox } = yield* setUp()
          const arrived = yield* inbound([inbox.email], {
            from: "Ann <ann@example.org>",
            to: [inbox.email, "Bea <bea@example.org>"],
            cc: ["carl@example.org", "ANN@example.org"],
            messageId: "<all@example.org>"
          })
          const d = arrived.body.delivered[0]
          const res = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${d.message_id}/reply-all`, { key, json: { text: "Noted." } })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.body.thread_id, d.thread_id)
          assert.deepStrictEqual((yield* relayed).at(-1)?.envelope.to, ["ann@example.org", "bea@example.org", "carl@example.org"])
        }))

      it.effect("attachments by url are fetched; inline content over 6 MB combined, or a url over 10 MB, is 413 payload_too_large", () =>
        Effect.gen(function*() {
          const { send, app, key, inbox } = yield* setUp()
          const ok = yield* send({
            to: "a@example.net",
            text: "see attached",
            attachments: [{ url: "https://files.example.com/small.txt", filename: "small.txt" }, { content: Buffer.from("inline bytes").toString("base64"), filename: "inline.txt" }]
          })
          assert.strictEqual(ok.status, 200, ok.text)
          const got = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${ok.body.message_id}`, { key })
          assert.deepStrictEqual(got.body.attachments.map((a: { filename: string; size: number }) => [a.filename, a.size]), [["small.txt", 11], ["inline.txt", 12]])
          const big = Buffer.alloc(6 * 1024 * 1024 + 1, 97).toString("base64")
          const inlineOver = yield* send({ to: "a@example.net", text: "x", attachments: [{ content: big, filename: "big.bin" }] })
          assert.strictEqual(inlineOver.status, 413)
          assert.strictEqual(inlineOver.body.code, "payload_too_large")
          const urlOver = yield* send({ to: "a@example.net", text: "x", attachments: [{ url: "https://files.example.com/huge.bin" }] })
          assert.strictEqual(urlOver.status, 413)
          const unreachable = yield* send({ to: "a@example.net", text: "x", attachments: [{ url: "https://files.example.com/missing" }] })
          assert.strictEqual(unreachable.status, 400)
          assert.deepStrictEqual(unreachable.body.errors[0].path, ["attachments", "0", "url"])
        }))

      it.effect("recipient_blocked: send lists for new messages, reply lists for replies, inbox then pod then organization; recipient_suppressed after a suppression", () =>
        Effect.gen(function*() {
          const { app, key, inbox, send, organizationId } = yield* setUp()
          yield* app.request("POST", "/v0/lists/send/block", { key, json: { entry: "blocked.example" } })
          const blocked = yield* send({ to: "x@sub.blocked.example", text: "x" })
          assert.strictEqual(blocked.status, 403)
          assert.strictEqual(blocked.body.code, "recipient_blocked")
          // The inbox's allow entry decides before the organization's block.
          yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/lists/send/allow`, { key, json: { entry: "ok@blocked.example" } })
          assert.strictEqual((yield* send({ to: "ok@blocked.example", text: "x" })).status, 200)
          // A non-empty allow list without a match blocks.
          assert.strictEqual((yield* send({ to: "someone@elsewhere.example", text: "x" })).body.code, "recipient_blocked")
          // Replies answer to the reply lists, not the send lists.
          const arrived = yield* inbound(inbox.email, { from: "someone@elsewhere.example", messageId: "<lists@example.org>" })
          const reply = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${arrived.body.delivered[0].message_id}/reply`, { key, json: { text: "hi" } })
          assert.strictEqual(reply.status, 200, reply.text)
          yield* app.request("POST", "/v0/lists/reply/block", { key, json: { entry: "someone@elsewhere.example" } })
          const refusedReply = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/${arrived.body.delivered[0].message_id}/reply`, { key, json: { text: "hi" } })
          assert.strictEqual(refusedReply.body.code, "recipient_blocked")
          yield* (yield* Suppressions).add(organizationId, { address: "ok@blocked.example", reason: "bounce" })
          const suppressed = yield* send({ to: "OK@blocked.example", text: "x" })
          assert.strictEqual(suppressed.status, 422)
          assert.strictEqual(suppressed.body.code, "recipient_suppressed")
        }))

      it.effect("the per-inbox cap of 100 sends per rolling 24 hours is 429 rate_limited with Retry-After; deleting sent messages gives no send back", () =>
        Effect.gen(function*() {
          const { send, app, key, inbox } = yield* setUp()
          const sent: Array<string> = []
          for (let i = 0; i < 100; i++) {
            const res = yield* send({ to: "a@example.net", text: `n${i}` })
            assert.strictEqual(res.status, 200)
            sent.push(res.body.message_id)
          }
          const over = yield* send({ to: "a@example.net", text: "one too many" })
          assert.strictEqual(over.status, 429)
          assert.strictEqual(over.body.code, "rate_limited")
          assert.isAbove(Number(over.headers.get("retry-after")), 0)
          for (const id of sent.slice(0, 3)) {
            assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}/messages/${id}`, { key })).status, 204)
          }
          assert.strictEqual((yield* send({ to: "a@example.net", text: "after deleting" })).status, 429)
          yield* TestClock.adjust("25 hours")
          assert.strictEqual((yield* send({ to: "a@example.net", text: "later" })).status, 200)
        }))

      it.effect("the Free plan's daily sends are 402 plan_limit_exceeded with errors[0]", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization({ plan: "free" })
          const inboxes = yield* Effect.forEach([1, 2], (n) =>
            Effect.map(app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `free${n}${Math.random().toString(16).slice(2, 8)}` } }), (r) => r.body.inbox_id as string))
          for (let i = 0; i < 100; i++) {
            const res = yield* app.request("POST", `/v0/inboxes/${inboxes[i % 2]}/messages/send`, { key: org.key, json: { to: "a@example.net", text: `n${i}` } })
            assert.strictEqual(res.status, 200, res.text)
          }
          const over = yield* app.request("POST", `/v0/inboxes/${inboxes[0]}/messages/send`, { key: org.key, json: { to: "a@example.net", text: "over" } })
          assert.strictEqual(over.status, 402)
          assert.deepStrictEqual(over.body.errors[0], { limit: "sends_per_day", current: 100, max: 100, plan: "free", upgrade_to: "pro" })
        }))

      it.effect("the plan's monthly sends are 402 plan_limit_exceeded with errors[0], also on a new day", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization({ plan: "free" })
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body.inbox_id as string
          const send = (text: string) => app.request("POST", `/v0/inboxes/${inbox}/messages/send`, { key: org.key, json: { to: "a@example.net", text } })
          // The Free plan's 300 a month, at its 100 a day, on three days of one month.
          for (let day = 0; day < 3; day++) {
            for (let i = 0; i < 100; i++) assert.strictEqual((yield* send(`d${day} n${i}`)).status, 200)
            yield* TestClock.adjust("25 hours")
          }
          const over = yield* send("over")
          assert.strictEqual(over.status, 402, over.text)
          assert.deepStrictEqual(over.body.errors[0], { limit: "sends_per_month", current: 300, max: 300, plan: "free", upgrade_to: "pro" })
        }))
    }
  )
}
