/**
 * Reading and organising mail (spec: Message, Attachment, Thread, Messages, Threads;
 * docs/messages.md and "Threads"): lists and their filters, hidden labels, label changes,
 * batches, deletes, the raw message and attachments, threads at three levels.
 */
import { assert, it, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { createHash } from "node:crypto"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization({ plan: "scale" })
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `rd${Math.random().toString(16).slice(2, 10)}` } })).body as {
    inbox_id: string
    email: string
    pod_id: string
  }
  const deliver = (mail: Parameters<typeof deliverMail>[1] = {}, headers: Record<string, string> = {}) =>
    Effect.map(deliverMail(inbox.email, mail, headers), (res) => {
      if (res.status !== 200) throw new Error(`delivery: ${res.status} ${res.text}`)
      return res.body.delivered[0] as { message_id: string; thread_id: string }
    })
  const get = (path: string, key = org.key) => app.request("GET", `/v0/inboxes/${inbox.inbox_id}${path}`, { key })
  const ids = (res: { body: { messages: ReadonlyArray<{ message_id: string }> } }) => res.body.messages.map((m) => m.message_id)
  return { app, key: org.key, organizationId: org.organizationId, inbox, deliver, get, ids }
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "180 seconds" })(
    `messages and threads (${storage.name})`,
    (it) => {
      it.effect("lists are newest first (ascending: oldest first), paged by token without repeats", () =>
        Effect.gen(function*() {
          const { deliver, get, ids } = yield* setUp
          const made: Array<string> = []
          for (let i = 0; i < 5; i++) {
            made.push((yield* deliver({ subject: `m${i}` })).message_id)
            yield* TestClock.adjust("1 second")
          }
          assert.deepStrictEqual(ids(yield* get("/messages")), [...made].reverse())
          assert.deepStrictEqual(ids(yield* get("/messages?ascending=true")), made)
          const first = yield* get("/messages?limit=2")
          const second = yield* get(`/messages?limit=2&page_token=${first.body.next_page_token}`)
          const third = yield* get(`/messages?limit=2&page_token=${second.body.next_page_token}`)
          assert.deepStrictEqual([...ids(first), ...ids(second), ...ids(third)], [...made].reverse())
          assert.isUndefined(third.body.next_page_token)
        }))

      it.effect("filters combine: labels (all must match), from, to, subject, before and after", () =>
        Effect.gen(function*() {
          const { deliver, get, ids, app, key, inbox } = yield* setUp
          const a = yield* deliver({ from: "Ann <ann@example.org>", subject: "Invoice 7", to: [inbox.email, "cc-me@example.net"] })
          yield* TestClock.adjust("1 minute")
          const b = yield* deliver({ from: "bob@other.example", subject: "Lunch?" })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${b.message_id}`, { key, json: { add_labels: ["vip"] } })
          assert.deepStrictEqual(ids(yield* get("/messages?from=ann@example.org")), [a.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?from=@other.example")), [b.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?to=cc-me@example.net")), [a.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?subject=invoice")), [a.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?labels=vip,unread")), [b.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?labels=vip,sent")), [])
          assert.deepStrictEqual(ids(yield* get("/messages?before=1970-01-01T00:00:30.000Z")), [a.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?after=1970-01-01T00:00:30.000Z")), [b.message_id])
          const bad = yield* get("/messages?before=yesterday")
          assert.strictEqual(bad.body.code, "validation_error")
          assert.deepStrictEqual(bad.body.errors[0].path, ["before"])
        }))

      it.effect("labels, from, to and subject also take a JSON array of strings, all of which must match (the agentmail SDK's form)", () =>
        Effect.gen(function*() {
          const { deliver, get, ids, app, key, inbox } = yield* setUp
          const a = yield* deliver({ from: "Ann <ann@example.org>", subject: "Invoice 7 overdue", to: [inbox.email, "cc-me@example.net"] })
          const b = yield* deliver({ from: "bob@other.example", subject: "Invoice 8" })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${b.message_id}`, { key, json: { add_labels: ["vip"] } })
          const json = (name: string, values: ReadonlyArray<string>) => `${name}=${encodeURIComponent(JSON.stringify(values))}`
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("labels", ["vip", "unread"])}`)), [b.message_id])
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("labels", ["vip", "sent"])}`)), [])
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("from", ["ann@example.org"])}`)), [a.message_id])
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("from", ["@other.example"])}`)), [b.message_id])
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("to", [inbox.email, "cc-me@example.net"])}`)), [a.message_id])
          assert.deepStrictEqual(ids(yield* get(`/messages?${json("subject", ["invoice", "overdue"])}`)), [a.message_id])
          assert.sameMembers([...ids(yield* get(`/messages?${json("subject", ["invoice"])}`))], [a.message_id, b.message_id])
          // Anything else is taken as written: a comma list for labels, one value for the others.
          assert.deepStrictEqual(ids(yield* get("/messages?labels=vip,unread")), [b.message_id])
          assert.deepStrictEqual(ids(yield* get(`/messages?subject=${encodeURIComponent("[invoice")}`)), [])
          const threads = yield* get(`/threads?${json("labels", ["vip"])}`)
          assert.deepStrictEqual(threads.body.threads.map((t: { thread_id: string }) => t.thread_id), [b.thread_id])
        }))

      it.effect("messages labelled spam, blocked, unauthenticated or trash appear only when that label is requested", () =>
        Effect.gen(function*() {
          const { deliver, get, ids, app, key, inbox } = yield* setUp
          const normal = yield* deliver({ subject: "fine" })
          const spam = yield* deliver({ subject: "spam" }, { "x-spam-verdict": "spam" })
          const flagged = yield* deliver({ subject: "flagged", headers: { "X-Spam-Flag": "YES" } })
          const forged = yield* deliver({ subject: "forged" }, { "x-auth-dmarc": "fail" })
          const trashed = yield* deliver({ subject: "old" })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${trashed.message_id}`, { key, json: { add_labels: ["trash"] } })
          assert.deepStrictEqual(ids(yield* get("/messages")), [normal.message_id])
          assert.sameMembers([...ids(yield* get("/messages?labels=spam"))], [spam.message_id, flagged.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?labels=unauthenticated")), [forged.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?labels=trash")), [trashed.message_id])
          // Threads of only hidden messages are left out of thread lists too.
          const threads = yield* get("/threads")
          assert.deepStrictEqual(threads.body.threads.map((t: { thread_id: string }) => t.thread_id), [normal.thread_id])
        }))

      it.effect("a sender the inbox's receive lists block is stored labelled blocked and emits message.received.blocked", () =>
        Effect.gen(function*() {
          const { deliver, get, ids, app, key, inbox, organizationId } = yield* setUp
          yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/lists/receive/block`, { key, json: { entry: "pest.example" } })
          const pest = yield* deliver({ from: "Pest <p@pest.example>" })
          const fine = yield* deliver({ from: "friend@ok.example" })
          assert.deepStrictEqual(ids(yield* get("/messages")), [fine.message_id])
          assert.deepStrictEqual(ids(yield* get("/messages?labels=blocked")), [pest.message_id])
          const sql = yield* SqlClient.SqlClient
          const types = yield* sql<{ event_type: string }>`SELECT event_type FROM events WHERE organization_id = ${organizationId} ORDER BY created_at, id`
          assert.sameMembers(types.map((t) => t.event_type), ["message.received.blocked", "message.received"])
        }))

      it.effect("a key with a permission list needs label_spam_read to request spam: 403 missing_permission", () =>
        Effect.gen(function*() {
          const { app, key, get } = yield* setUp
          const limited = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "reader", permissions: ["message_read"] } })).body.api_key
          const refused = yield* get("/messages?labels=spam", limited)
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "missing_permission")
          assert.include(refused.body.message, "label_spam_read")
          const allowed = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "spam reader", permissions: ["message_read", "label_spam_read"] } })).body.api_key
          assert.strictEqual((yield* get("/messages?labels=spam", allowed)).status, 200)
        }))

      it.effect("DMARC fail, or SPF and DKIM both failing without a DMARC verdict, labels a message unauthenticated; its event is the opt-in message.received.unauthenticated", () =>
        Effect.gen(function*() {
          const { deliver, get, organizationId } = yield* setUp
          const cases: ReadonlyArray<readonly [Record<string, string>, boolean]> = [
            [{ "x-auth-dmarc": "fail" }, true],
            [{ "x-auth-dmarc": "pass", "x-auth-spf": "fail", "x-auth-dkim": "fail" }, false],
            [{ "x-auth-spf": "softfail", "x-auth-dkim": "fail" }, true],
            [{ "x-auth-dmarc": "none", "x-auth-spf": "Fail", "x-auth-dkim": "PermError" }, true],
            [{ "x-auth-spf": "fail", "x-auth-dkim": "pass" }, false],
            [{ "x-auth-spf": "fail" }, false]
          ]
          for (const [headers, expected] of cases) {
            const d = yield* deliver({}, headers)
            const got = yield* get(`/messages/${d.message_id}`)
            assert.strictEqual(got.body.labels.includes("unauthenticated"), expected, JSON.stringify(headers))
          }
          const sql = yield* SqlClient.SqlClient
          const types = yield* sql<{ event_type: string; n: number }>`SELECT event_type, count(*)::int AS n FROM events
            WHERE organization_id = ${organizationId} GROUP BY event_type ORDER BY event_type`
          assert.deepStrictEqual(types.map((t) => [t.event_type, t.n]), [["message.received", 3], ["message.received.unauthenticated", 3]])
          const bad = yield* deliverMail("x@inbox.localhost", {}, { "x-auth-spf": "maybe" })
          assert.strictEqual(bad.body.code, "validation_error")
        }))

      it.effect("labels: add and remove; system labels cannot be changed (400); the thread's labels are the union of its messages'", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox, get } = yield* setUp
          const d = yield* deliver({ messageId: "<l1@example.org>" })
          const reply = yield* deliver({ messageId: "<l2@example.org>", inReplyTo: "<l1@example.org>" })
          const res = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${d.message_id}`, { key, json: { add_labels: ["todo"], remove_labels: ["unread"] } })
          assert.deepStrictEqual(res.body.labels, ["received", "todo"])
          const system = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${d.message_id}`, { key, json: { remove_labels: ["received"] } })
          assert.strictEqual(system.status, 400)
          const thread = yield* get(`/threads/${d.thread_id}`)
          assert.deepStrictEqual(thread.body.labels, ["received", "todo", "unread"])
          const patched = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/threads/${reply.thread_id}`, { key, json: { remove_labels: ["unread", "todo"] } })
          assert.deepStrictEqual(patched.body.labels, ["received"])
        }))

      it.effect("labels: at most 100 a request and 64 characters each, in changes and in list filters; more is 400 validation_error naming the field", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox, get } = yield* setUp
          const d = yield* deliver()
          const many = Array.from({ length: 101 }, (_, i) => `l${i}`)
          const long = "x".repeat(65)
          const refused = (res: { status: number; body: any }, path: ReadonlyArray<string>) => {
            assert.strictEqual(res.status, 400)
            assert.strictEqual(res.body.code, "validation_error")
            assert.deepStrictEqual(res.body.errors[0].path, path)
          }
          const message = `/v0/inboxes/${inbox.inbox_id}/messages/${d.message_id}`
          refused(yield* app.request("PATCH", message, { key, json: { add_labels: many } }), ["add_labels"])
          refused(yield* app.request("PATCH", message, { key, json: { remove_labels: many } }), ["remove_labels"])
          refused(yield* app.request("PATCH", message, { key, json: { add_labels: [long] } }), ["add_labels", "0"])
          refused(yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-update`, { key, json: { message_ids: [d.message_id], add_labels: many } }), ["add_labels"])
          refused(yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/threads/${d.thread_id}`, { key, json: { add_labels: many } }), ["add_labels"])
          for (const list of ["/messages", "/threads"]) {
            refused(yield* get(`${list}?labels=${many.join(",")}`), ["labels"])
            refused(yield* get(`${list}?labels=${encodeURIComponent(JSON.stringify(many))}`), ["labels"])
            refused(yield* get(`${list}?labels=vip,${long}`), ["labels"])
            assert.strictEqual((yield* get(`${list}?labels=${many.slice(0, 100).join(",")}`)).status, 200)
          }
          assert.strictEqual((yield* get(`/threads?labels=${encodeURIComponent(JSON.stringify(many))}`)).status, 400)
        }))

      it.effect("a message holds at most 100 labels, its own included: an addition that goes over is 400 validation_error and changes nothing, on message, batch and thread updates", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox } = yield* setUp
          const full = yield* deliver({ messageId: "<full@example.org>" })
          const other = yield* deliver({ messageId: "<other@example.org>" })
          const message = `/v0/inboxes/${inbox.inbox_id}/messages/${full.message_id}`
          // received and unread, plus 88: 90 labels, then 20 more go over.
          const first = Array.from({ length: 88 }, (_, i) => `a${i}`)
          const twenty = Array.from({ length: 20 }, (_, i) => `b${i}`)
          assert.strictEqual((yield* app.request("PATCH", message, { key, json: { add_labels: first } })).body.labels.length, 90)
          const over = yield* app.request("PATCH", message, { key, json: { add_labels: twenty } })
          assert.strictEqual(over.status, 400)
          assert.strictEqual(over.body.code, "validation_error")
          assert.deepStrictEqual(over.body.errors[0].path, ["add_labels"])
          assert.include(over.body.errors[0].message, full.message_id)
          const batch = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-update`, {
            key,
            json: { message_ids: [other.message_id, full.message_id], add_labels: twenty }
          })
          assert.strictEqual(batch.status, 400)
          const thread = yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/threads/${full.thread_id}`, { key, json: { add_labels: twenty } })
          assert.strictEqual(thread.status, 400)
          // Nothing of the refused changes stayed, on either message.
          assert.strictEqual((yield* app.request("GET", message, { key })).body.labels.length, 90)
          assert.deepStrictEqual((yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${other.message_id}`, { key })).body.labels, ["received", "unread"])
          // Up to 100 is fine; labels already there do not count twice; removing is always allowed.
          const ten = twenty.slice(0, 10)
          assert.strictEqual((yield* app.request("PATCH", message, { key, json: { add_labels: [...ten, "a0"] } })).body.labels.length, 100)
          assert.strictEqual((yield* app.request("PATCH", message, { key, json: { add_labels: ["b20"], remove_labels: ["b0"] } })).body.labels.length, 100)
          assert.strictEqual((yield* app.request("PATCH", message, { key, json: { remove_labels: ["a1"] } })).body.labels.length, 99)
        }))

      it.effect("batch-get and batch-update take 1 to 100 ids and answer { count, messages }", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox } = yield* setUp
          const a = yield* deliver()
          const b = yield* deliver()
          const got = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-get`, { key, json: { message_ids: [b.message_id, "msg_absent", a.message_id] } })
          assert.strictEqual(got.body.count, 2)
          assert.deepStrictEqual(got.body.messages.map((m: { message_id: string }) => m.message_id), [b.message_id, a.message_id])
          const updated = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-update`, { key, json: { message_ids: [a.message_id, b.message_id], remove_labels: ["unread"] } })
          assert.deepStrictEqual(updated.body.messages.map((m: { labels: ReadonlyArray<string> }) => m.labels), [["received"], ["received"]])
          // The agentmail SDK's fields beside: the batch limit, and each update's id and labels.
          assert.strictEqual(got.body.limit, 100)
          assert.strictEqual(updated.body.limit, 100)
          assert.deepStrictEqual(updated.body.updates, [{ message_id: a.message_id, labels: ["received"] }, { message_id: b.message_id, labels: ["received"] }])
          const empty = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-get`, { key, json: { message_ids: [] } })
          assert.strictEqual(empty.status, 400)
          const tooMany = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/batch-get`, { key, json: { message_ids: Array.from({ length: 101 }, (_, i) => `msg_${i}`) } })
          assert.strictEqual(tooMany.status, 400)
        }))

      it.effect("raw and attachments: metadata with a download_url that works without the key; bytes with Content-Disposition attachment, nosniff and sandbox", () =>
        Effect.gen(function*() {
          const { deliver, get, app } = yield* setUp
          const d = yield* deliver({ attachments: [{ filename: "report ü.pdf", content: "%PDF-1.4 not really", contentType: "application/pdf" }] })
          const raw = yield* get(`/messages/${d.message_id}/raw`)
          assert.strictEqual(raw.status, 200)
          assert.deepStrictEqual(Object.keys(raw.body).sort(), ["download_url", "expires_at", "message_id", "size"])
          const rawBytes = yield* get(`/messages/${d.message_id}/raw/download`)
          assert.strictEqual(rawBytes.status, 200)
          assert.strictEqual(Buffer.byteLength(rawBytes.text, "latin1"), raw.body.size)
          assert.match(rawBytes.text, /Subject: Hello/)
          const message = yield* get(`/messages/${d.message_id}`)
          const attachment = message.body.attachments[0]
          assert.strictEqual(attachment.filename, "report ü.pdf")
          const meta = yield* get(`/messages/${d.message_id}/attachments/${attachment.attachment_id}`)
          assert.isString(meta.body.download_url)
          assert.isString(meta.body.expires_at)
          for (const suffix of ["raw", "download"]) {
            const bytes = yield* get(`/messages/${d.message_id}/attachments/${attachment.attachment_id}/${suffix}`)
            assert.strictEqual(bytes.text, "%PDF-1.4 not really")
            assert.match(bytes.headers.get("content-disposition") ?? "", /^attachment; /)
            assert.strictEqual(bytes.headers.get("x-content-type-options"), "nosniff")
            assert.strictEqual(bytes.headers.get("content-security-policy"), "sandbox")
            assert.strictEqual(bytes.headers.get("content-type"), "application/pdf")
          }
          const url = new URL(meta.body.download_url)
          const anonymous = yield* app.request("GET", `${url.pathname}${url.search}`)
          assert.strictEqual(anonymous.status, 200)
          assert.strictEqual(anonymous.text, "%PDF-1.4 not really")
          assert.strictEqual((yield* get(`/messages/${d.message_id}/attachments/att_nope`)).status, 404)
        }))

      it.effect("an attachment that arrives in a message is kept only inside the raw message: no blob of its own, its bytes answered identical with their size, and deleting the message releases the raw alone", () =>
        Effect.gen(function*() {
          const { deliver, get, app, key } = yield* setUp
          // 200 KB without line breaks: base64 in the raw message, decoded on download
          const content = Array.from({ length: 200_000 }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 94))).join("")
          const d = yield* deliver({ attachments: [{ filename: "big.bin", content, contentType: "application/octet-stream" }, { filename: "small.txt", content: "second part", contentType: "text/plain" }] })
          const sql = yield* SqlClient.SqlClient
          const [row] = yield* sql<{ raw_sha256: string; attachments: ReadonlyArray<{ sha256: string; size: number; part?: number }> }>`SELECT raw_sha256, attachments FROM messages WHERE id = ${d.message_id}`
          const stored = row!.attachments
          assert.deepStrictEqual(stored.map((a) => [a.part, a.size, a.sha256]), [
            [0, 200_000, createHash("sha256").update(content).digest("hex")],
            [1, 11, createHash("sha256").update("second part").digest("hex")]
          ])
          const blobRows = yield* sql<{ sha256: string; refs: number }>`SELECT sha256, refs FROM blobs WHERE sha256 IN ${sql.in([row!.raw_sha256, ...stored.map((a) => a.sha256)])}`
          assert.deepStrictEqual(blobRows.map((r) => [r.sha256, r.refs]), [[row!.raw_sha256, 1]])
          const message = yield* get(`/messages/${d.message_id}`)
          const [big, small] = message.body.attachments
          assert.strictEqual(big.size, 200_000)
          for (const [a, expected] of [[big, content], [small, "second part"]] as const) {
            const bytes = yield* get(`/messages/${d.message_id}/attachments/${a.attachment_id}/download`)
            assert.strictEqual(bytes.status, 200)
            assert.strictEqual(bytes.headers.get("content-length"), String(Buffer.byteLength(expected)))
            assert.strictEqual(bytes.text, expected)
            const url = new URL((yield* get(`/messages/${d.message_id}/attachments/${a.attachment_id}`)).body.download_url)
            const anonymous = yield* app.request("GET", `${url.pathname}${url.search}`)
            assert.strictEqual(anonymous.status, 200)
            assert.strictEqual(anonymous.text, expected)
          }
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${message.body.inbox_id}/messages/${d.message_id}`, { key })).status, 204)
          const after = yield* sql<{ sha256: string; refs: number }>`SELECT sha256, refs FROM blobs WHERE sha256 IN ${sql.in([row!.raw_sha256, ...stored.map((a) => a.sha256)])}`
          assert.deepStrictEqual(after.map((r) => [r.sha256, r.refs]), [[row!.raw_sha256, 0]])
        }))

      it.effect("one message addressed to several inboxes stores its bytes once; deleting every copy releases them", () =>
        Effect.gen(function*() {
          const { app, key } = yield* setUp
          const emails = yield* Effect.forEach([1, 2, 3], () =>
            Effect.map(app.request("POST", "/v0/inboxes", { key, json: {} }), (r) => r.body as { inbox_id: string; email: string }))
          const res = yield* deliverMail(emails.map((e) => e.email), { messageId: "<shared@example.org>", text: "shared bytes" })
          assert.strictEqual(res.body.delivered.length, 3)
          const sql = yield* SqlClient.SqlClient
          const sha = (yield* sql<{ raw_sha256: string }>`SELECT raw_sha256 FROM messages WHERE id = ${res.body.delivered[0].message_id}`)[0]?.raw_sha256
          const refs = yield* sql<{ refs: number }>`SELECT refs FROM blobs WHERE sha256 = ${sha}`
          assert.deepStrictEqual(refs.map((r) => r.refs), [3])
          for (const d of res.body.delivered) {
            assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${d.inbox_id}/messages/${d.message_id}`, { key })).status, 204)
          }
          const after = yield* sql<{ refs: number }>`SELECT refs FROM blobs WHERE sha256 = ${sha}`
          assert.deepStrictEqual(after.map((r) => r.refs), [0])
          // The thread of a deleted message's only message is gone too.
          assert.strictEqual((yield* app.request("GET", `/v0/threads/${res.body.delivered[0].thread_id}`, { key })).status, 404)
        }))

      it.effect("threads list at organization, pod and inbox level, newest activity first; get at organization and inbox level; delete removes the messages", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox } = yield* setUp
          const older = yield* deliver({ messageId: "<t1@example.org>" })
          yield* TestClock.adjust("1 minute")
          const newer = yield* deliver({ messageId: "<t2@example.org>" })
          yield* TestClock.adjust("1 minute")
          yield* deliver({ messageId: "<t3@example.org>", inReplyTo: "<t1@example.org>" })
          for (const path of ["/v0/threads", `/v0/pods/${inbox.pod_id}/threads`, `/v0/inboxes/${inbox.inbox_id}/threads`]) {
            const list = yield* app.request("GET", path, { key })
            assert.deepStrictEqual(list.body.threads.map((t: { thread_id: string }) => t.thread_id), [older.thread_id, newer.thread_id], path)
          }
          const detail = yield* app.request("GET", `/v0/threads/${older.thread_id}`, { key })
          assert.strictEqual(detail.body.messages.length, detail.body.message_count)
          assert.strictEqual(detail.body.count, 2)
          assert.deepStrictEqual(detail.body.senders, ["Ann Sender <ann@example.org>"])
          assert.strictEqual((yield* app.request("DELETE", `/v0/inboxes/${inbox.inbox_id}/threads/${older.thread_id}`, { key })).status, 204)
          const left = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key })
          assert.strictEqual(left.body.count, 1)
        }))

      it.effect("threads list exclude_labels leaves out the threads with any of those labels, at every level, with labels and paging", () =>
        Effect.gen(function*() {
          const { deliver, app, key, inbox } = yield* setUp
          const kept = yield* deliver({ messageId: "<x1@example.org>" })
          yield* TestClock.adjust("1 minute")
          const archived = yield* deliver({ messageId: "<x2@example.org>" })
          yield* TestClock.adjust("1 minute")
          const other = yield* deliver({ messageId: "<x3@example.org>" })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/threads/${archived.thread_id}`, { key, json: { add_labels: ["archived"] } })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/threads/${other.thread_id}`, { key, json: { add_labels: ["later"] } })
          for (const path of ["/v0/threads", `/v0/pods/${inbox.pod_id}/threads`, `/v0/inboxes/${inbox.inbox_id}/threads`]) {
            const list = yield* app.request("GET", `${path}?exclude_labels=archived`, { key })
            assert.strictEqual(list.status, 200, list.text)
            assert.deepStrictEqual(list.body.threads.map((t: { thread_id: string }) => t.thread_id), [other.thread_id, kept.thread_id], path)
          }
          const both = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads?exclude_labels=archived,later`, { key })
          assert.deepStrictEqual(both.body.threads.map((t: { thread_id: string }) => t.thread_id), [kept.thread_id])
          const first = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads?exclude_labels=archived&limit=1`, { key })
          assert.deepStrictEqual(first.body.threads.map((t: { thread_id: string }) => t.thread_id), [other.thread_id])
          const second = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads?exclude_labels=archived&limit=1&page_token=${first.body.next_page_token}`, { key })
          assert.deepStrictEqual(second.body.threads.map((t: { thread_id: string }) => t.thread_id), [kept.thread_id])
          const only = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads?labels=archived`, { key })
          assert.deepStrictEqual(only.body.threads.map((t: { thread_id: string }) => t.thread_id), [archived.thread_id])
        }))

      it.effect("a parent that arrives after its reply joins the reply's thread", () =>
        Effect.gen(function*() {
          const { deliver } = yield* setUp
          const reply = yield* deliver({ messageId: "<late-child@example.org>", inReplyTo: "<late-parent@example.org>", references: ["<late-parent@example.org>"] })
          const parent = yield* deliver({ messageId: "<late-parent@example.org>" })
          assert.strictEqual(parent.thread_id, reply.thread_id)
        }))

      it.effect("a message without a Message-ID delivered twice is recognised by its bytes", () =>
        Effect.gen(function*() {
          const { inbox, get } = yield* setUp
          const raw = "From: a@example.org\r\nTo: " + inbox.email + "\r\nSubject: no id\r\n\r\nbody\r\n"
          const app = yield* TestApp
          const send = app.request("POST", `/inbound/raw?to=${inbox.email}`, { body: raw, headers: { "x-inbound-secret": TEST_INBOUND_SECRET } })
          const first = yield* send
          const second = yield* send
          assert.isTrue(second.body.delivered[0].duplicate)
          assert.strictEqual(first.body.delivered[0].message_id, second.body.delivered[0].message_id)
          assert.strictEqual((yield* get("/messages")).body.count, 1)
        }))
    }
  )
}
