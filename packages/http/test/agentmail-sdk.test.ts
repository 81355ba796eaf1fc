/**
 * Compatibility with clients people already have: the official `agentmail` npm SDK, pointed
 * at our server on a loopback port with `baseUrl` and an API key, creates inboxes, sends
 * (to an outside address and to another inbox of ours), replies, lists and gets messages
 * and threads, and reads an attachment that arrived through /inbound/raw.
 *
 * The SDK parses answers without validating them (`skipValidation: true`), so a wrong type
 * would pass unnoticed; every answer is therefore also checked against the SDK's own schema
 * for it with validation on (`conforms`): field names, required fields and declared types.
 * A recording fetch keeps what went over the wire, so the request forms are checked too.
 * docs/api.md, "Compatibility with the agentmail SDK", lists what differs and why.
 */
import { assert, layer } from "@effect/vitest"
import { CapturedMail, deliverMailOverHttp, type Exchange, LoopbackServer, loopbackServer, newOrganization, recordingFetch, storages, TEST_INBOUND_SECRET } from "@inbox/testkit"
import { AgentMail, AgentMailClient, AgentMailError, serialization } from "agentmail"
import { Effect } from "effect"


/** The SDK's schemas, validating (the SDK itself parses with validation skipped). */
interface SdkSchema {
  parse(raw: unknown, options?: Record<string, unknown>): { ok: true } | { ok: false; errors: ReadonlyArray<{ path: ReadonlyArray<string>; message: string }> }
}

const conforms = (schema: SdkSchema, raw: unknown, what: string) => {
  const result = schema.parse(raw, {
    unrecognizedObjectKeys: "passthrough",
    allowUnrecognizedUnionMembers: false,
    allowUnrecognizedEnumValues: false,
    skipValidation: false,
    breadcrumbsPrefix: [what]
  })
  assert.isTrue(result.ok, result.ok ? what : `${what}: ${result.errors.map((e) => `${e.path.join(".")}: ${e.message}`).join("; ")}`)
}

/** A client on our server, and what it exchanged. */
const sdkClient = Effect.gen(function*() {
  const { url } = yield* LoopbackServer
  const org = yield* newOrganization({ plan: "scale" })
  const { fetch: recording, exchanges } = recordingFetch()
  const client = new AgentMailClient({ baseUrl: url, apiKey: org.key, fetch: recording, maxRetries: 0 })
  /** The last exchange, which must be `method path`; its JSON body. */
  const last = (method: string, path: string) => {
    const exchange = exchanges.at(-1)
    assert.isDefined(exchange)
    assert.strictEqual(`${exchange?.method} ${exchange?.url.pathname}`, `${method} ${path}`)
    return exchange as Exchange
  }
  return { client, url, key: org.key, exchanges, last }
})

const call = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Rejections as values: the SDK's error class and its parsed body. */
const refused = (f: () => Promise<unknown>) =>
  Effect.promise(async () => {
    try {
      await f()
    } catch (error) {
      return error as AgentMailError
    }
    throw new Error("expected the SDK to throw")
  })

const isIso = (d: unknown) => d instanceof Date && !Number.isNaN(d.getTime())

const unique = () => Math.random().toString(16).slice(2, 10)

/** Binary attachment bytes (every byte value occurs), so nothing is read as text on the way. */
const SCAN = Uint8Array.from({ length: 600 }, (_, i) => (i * 37 + 11) % 256)

/** A new inbox (made with the SDK) receives a message with SCAN attached, through POST /inbound/raw over TCP. */
const receiveScan = (client: AgentMailClient) =>
  Effect.gen(function*() {
    const { url } = yield* LoopbackServer
    const inbox = yield* call(() => client.inboxes.create({ username: `files${unique()}` }))
    const delivered = yield* deliverMailOverHttp(url, inbox.email, {
      from: "Ann Sender <ann@example.org>",
      subject: "The scan",
      text: "Scan attached.",
      attachments: [{ filename: "scan.bin", content: SCAN, contentType: "application/octet-stream" }]
    })
    assert.strictEqual(delivered.status, 200, delivered.text)
    const { message_id: messageId, thread_id: threadId } = delivered.body.delivered[0] as { message_id: string; thread_id: string }

    const listed = yield* call(() => client.inboxes.messages.list(inbox.inboxId, { labels: ["received", "unread"] }))
    assert.deepStrictEqual(listed.messages.map((m) => m.messageId), [messageId])
    assert.strictEqual(listed.messages[0]?.from, "Ann Sender <ann@example.org>")
    assert.strictEqual(listed.messages[0]?.subject, "The scan")

    const message = yield* call(() => client.inboxes.messages.get(inbox.inboxId, messageId))
    assert.strictEqual(message.text?.trim(), "Scan attached.")
    assert.strictEqual(message.attachments?.length, 1)
    const attachment = message.attachments?.[0]
    assert.strictEqual(attachment?.filename, "scan.bin")
    assert.strictEqual(attachment?.size, SCAN.length)
    assert.strictEqual(attachment?.contentType, "application/octet-stream")
    assert.match(attachment?.attachmentId ?? "", /^att_[0-9a-f]+$/)
    return { inbox, messageId, threadId, attachmentId: attachment!.attachmentId }
  })

/** Whether the catalogue serves the signed download URLs (GET /downloads/:token). */

for (const storage of storages()) {
  // The real clock, not the test clock: the SDK is a client living in real time (expires_at).
  layer(loopbackServer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }), { timeout: "180 seconds", excludeTestServices: true })(
    `the agentmail SDK against our server (${storage.name})`,
    (it) => {
      it.effect("inboxes: create, get and list, with the fields the SDK declares", () =>
        Effect.gen(function*() {
          const { client, last } = yield* sdkClient
          const username = `support${unique()}`
          const inbox = yield* call(() => client.inboxes.create({ username, displayName: "Support Desk", clientId: `c-${username}`, metadata: { team: "care" } }))
          conforms(serialization.inboxes.Inbox, last("POST", "/v0/inboxes").body, "create")
          assert.strictEqual(inbox.email, `${username}@inbox.localhost`)
          assert.match(inbox.inboxId, /^inbox_[0-9a-f]+$/)
          assert.match(inbox.podId, /^pod_[0-9a-f]+$/)
          assert.strictEqual(inbox.displayName, "Support Desk")
          assert.strictEqual(inbox.clientId, `c-${username}`)
          assert.deepStrictEqual(inbox.metadata, { team: "care" })
          assert.isTrue(isIso(inbox.createdAt) && isIso(inbox.updatedAt))

          // Every inbox route takes the address in place of the id.
          const byEmail = yield* call(() => client.inboxes.get(inbox.email))
          conforms(serialization.inboxes.Inbox, last("GET", `/v0/inboxes/${encodeURIComponent(inbox.email)}`).body, "get")
          assert.strictEqual(byEmail.inboxId, inbox.inboxId)

          const listed = yield* call(() => client.inboxes.list({ limit: 10 }))
          conforms(serialization.inboxes.ListInboxesResponse, last("GET", "/v0/inboxes").body, "list")
          assert.strictEqual(listed.count, 1)
          assert.strictEqual(listed.limit, 10)
          assert.deepStrictEqual(listed.inboxes.map((i) => i.inboxId), [inbox.inboxId])
        }))

      it.effect("send to an outside address and to another inbox of ours; reply; list and get the messages and the thread", () =>
        Effect.gen(function*() {
          const { client, last, exchanges } = yield* sdkClient
          const support = yield* call(() => client.inboxes.create({ username: `support${unique()}`, displayName: "Support" }))
          const sales = yield* call(() => client.inboxes.create({ username: `sales${unique()}` }))
          const relayedBefore = (yield* (yield* CapturedMail).all).length
          const csv = "region,total\nnorth,12\n"

          const sent = yield* call(() =>
            client.inboxes.messages.send(support.inboxId, {
              to: ["bob@example.net", sales.email],
              subject: "Quarterly numbers",
              text: "The numbers are attached.",
              html: "<p>The numbers are attached.</p>",
              attachments: [{ filename: "q3.csv", contentType: "text/csv", content: Buffer.from(csv).toString("base64") }]
            }, { idempotencyKey: `send-${unique()}` }))
          conforms(serialization.SendMessageResponse, last("POST", `/v0/inboxes/${support.inboxId}/messages/send`).body, "send")
          assert.match(sent.messageId, /^msg_[0-9a-f]+$/)
          assert.match(sent.threadId, /^thr_[0-9a-f]+$/)

          // The outside recipient went to the relay; our own inbox got it by local delivery.
          const relayed = (yield* (yield* CapturedMail).all).slice(relayedBefore)
          assert.deepStrictEqual(relayed.map((m) => m.envelope), [{ from: support.email, to: ["bob@example.net"] }])

          // The sender's copy: listed (labels filter as the SDK sends it) and in full.
          const sentList = yield* call(() => client.inboxes.messages.list(support.inboxId, { labels: ["sent"] }))
          conforms(serialization.ListMessagesResponse, last("GET", `/v0/inboxes/${support.inboxId}/messages`).body, "list sent")
          assert.strictEqual(sentList.count, 1)
          const item = sentList.messages[0]
          assert.strictEqual(item?.messageId, sent.messageId)
          assert.strictEqual(item?.threadId, sent.threadId)
          assert.strictEqual(item?.inboxId, support.inboxId)
          assert.deepStrictEqual(item?.labels, ["sent"])
          assert.strictEqual(item?.from, `Support <${support.email}>`)
          assert.deepStrictEqual(item?.to, ["bob@example.net", sales.email])
          assert.strictEqual(item?.subject, "Quarterly numbers")
          assert.isTrue(isIso(item?.timestamp) && isIso(item?.createdAt))

          const full = yield* call(() => client.inboxes.messages.get(support.inboxId, sent.messageId))
          conforms(serialization.Message, last("GET", `/v0/inboxes/${support.inboxId}/messages/${sent.messageId}`).body, "get sent")
          assert.strictEqual(full.text?.trim(), "The numbers are attached.")
          assert.strictEqual(full.html?.trim(), "<p>The numbers are attached.</p>")
          assert.strictEqual(full.attachments?.length, 1)
          assert.strictEqual(full.attachments?.[0]?.filename, "q3.csv")
          assert.strictEqual(full.attachments?.[0]?.contentType, "text/csv")
          assert.strictEqual(full.attachments?.[0]?.size, csv.length)
          assert.strictEqual(full.attachments?.[0]?.contentDisposition, "attachment")
          assert.isString(full.headers?.["message-id"])

          // The other inbox received it: labels received and unread, the same subject.
          const inboxList = yield* call(() => client.inboxes.messages.list(sales.inboxId))
          conforms(serialization.ListMessagesResponse, last("GET", `/v0/inboxes/${sales.inboxId}/messages`).body, "list received")
          assert.strictEqual(inboxList.count, 1)
          const received = inboxList.messages[0]
          assert.deepStrictEqual(received?.labels, ["received", "unread"])
          assert.strictEqual(received?.subject, "Quarterly numbers")
          assert.strictEqual(received?.from, `Support <${support.email}>`)

          // The receiving inbox replies through the SDK; the reply joins the sender's thread.
          const reply = yield* call(() => client.inboxes.messages.reply(sales.inboxId, received!.messageId, { text: "Thanks, got them." }))
          conforms(serialization.SendMessageResponse, last("POST", `/v0/inboxes/${sales.inboxId}/messages/${received!.messageId}/reply`).body, "reply")
          const supportMessages = yield* call(() => client.inboxes.messages.list(support.inboxId, { ascending: true }))
          assert.deepStrictEqual(supportMessages.messages.map((m) => m.labels), [["sent"], ["received", "unread"]])
          const replyCopy = supportMessages.messages[1]
          assert.strictEqual(replyCopy?.threadId, sent.threadId)
          assert.strictEqual(replyCopy?.subject, "Re: Quarterly numbers")
          assert.strictEqual(replyCopy?.inReplyTo, full.headers?.["message-id"])
          assert.notStrictEqual(reply.messageId, replyCopy?.messageId) // each inbox keeps its own copy

          // Threads: at inbox and organization level, listed and in full.
          const threads = yield* call(() => client.inboxes.threads.list(support.inboxId))
          conforms(serialization.ListThreadsResponse, last("GET", `/v0/inboxes/${support.inboxId}/threads`).body, "inbox threads")
          assert.deepStrictEqual(threads.threads.map((t) => t.threadId), [sent.threadId])
          const summary = threads.threads[0]
          assert.strictEqual(summary?.messageCount, 2)
          assert.strictEqual(summary?.lastMessageId, replyCopy?.messageId)
          assert.sameMembers([...(summary?.labels ?? [])], ["received", "sent", "unread"])
          assert.isTrue(isIso(summary?.sentTimestamp) && isIso(summary?.receivedTimestamp))
          assert.include(summary?.senders ?? [], `Support <${support.email}>`)

          const everywhere = yield* call(() => client.threads.list())
          conforms(serialization.ListThreadsResponse, last("GET", "/v0/threads").body, "organization threads")
          assert.sameMembers(everywhere.threads.map((t) => t.threadId), [sent.threadId, received!.threadId])

          for (const get of [() => client.inboxes.threads.get(support.inboxId, sent.threadId), () => client.threads.get(sent.threadId)]) {
            const thread = yield* call(get)
            conforms(serialization.Thread, exchanges.at(-1)?.body, "thread")
            assert.strictEqual(thread.threadId, sent.threadId)
            assert.strictEqual(thread.messageCount, 2)
            assert.strictEqual(thread.count, 2)
            assert.deepStrictEqual(thread.messages.map((m) => m.messageId), [sent.messageId, replyCopy?.messageId])
            assert.strictEqual(thread.messages[1]?.extractedText?.trim(), "Thanks, got them.")
            assert.deepStrictEqual(thread.attachments?.map((a) => a.filename), ["q3.csv"])
          }

          // What went over the wire: the key as a Bearer token, labels as the SDK encodes them.
          const labelled = exchanges.find((e) => e.url.searchParams.has("labels"))
          assert.strictEqual(labelled?.url.searchParams.get("labels"), JSON.stringify(["sent"]))
        }))

      it.effect("an attachment that arrived through /inbound/raw: metadata with a download URL, and the bytes", () =>
        Effect.gen(function*() {
          const { client, last } = yield* sdkClient
          const { inbox, messageId, threadId, attachmentId } = yield* receiveScan(client)

          const meta = yield* call(() => client.inboxes.messages.getAttachment(inbox.inboxId, messageId, attachmentId))
          conforms(serialization.AttachmentResponse, last("GET", `/v0/inboxes/${inbox.inboxId}/messages/${messageId}/attachments/${attachmentId}`).body, "attachment")
          assert.strictEqual(meta.attachmentId, attachmentId)
          assert.strictEqual(meta.filename, "scan.bin")
          assert.strictEqual(meta.size, SCAN.length)
          assert.strictEqual(meta.contentType, "application/octet-stream")
          assert.strictEqual(meta.contentDisposition, "attachment")
          assert.isTrue(isIso(meta.expiresAt) && meta.expiresAt.getTime() > Date.now())
          const { url } = yield* LoopbackServer
          assert.isTrue(meta.downloadUrl.startsWith(`${url}/downloads/`), meta.downloadUrl)

          // The SDK has no method for the bytes route; its passthrough fetch reaches it with the SDK's own auth.
          const path = `/v0/inboxes/${inbox.inboxId}/messages/${messageId}/attachments/${attachmentId}/download`
          const raw = yield* call(() => client.fetch(path))
          assert.strictEqual(raw.status, 200)
          assert.deepStrictEqual(new Uint8Array(yield* call(() => raw.arrayBuffer())), SCAN)
          assert.match(raw.headers.get("content-disposition") ?? "", /^attachment; .*scan\.bin/)
          assert.strictEqual(last("GET", path).status, 200)

          const thread = yield* call(() => client.threads.get(threadId))
          conforms(serialization.Thread, last("GET", `/v0/threads/${threadId}`).body, "thread")
          assert.deepStrictEqual(thread.attachments?.map((a) => [a.attachmentId, a.filename, a.size]), [[attachmentId, "scan.bin", SCAN.length]])
          assert.deepStrictEqual(thread.messages.map((m) => m.messageId), [messageId])
          assert.isDefined(thread.receivedTimestamp)
          assert.isUndefined(thread.sentTimestamp)
        }))

      it.effect("the attachment's download_url, fetched as an SDK user does, answers the bytes without the key", () =>
        Effect.gen(function*() {
          const { client } = yield* sdkClient
          const { inbox, messageId, attachmentId } = yield* receiveScan(client)
          const meta = yield* call(() => client.inboxes.messages.getAttachment(inbox.inboxId, messageId, attachmentId))
          const download = yield* call(() => fetch(meta.downloadUrl))
          assert.strictEqual(download.status, 200, meta.downloadUrl)
          assert.deepStrictEqual(new Uint8Array(yield* call(() => download.arrayBuffer())), SCAN)
          assert.match(download.headers.get("content-disposition") ?? "", /^attachment; .*scan\.bin/)
        }))

      it.effect("errors come back as the SDK's error classes with our bodies", () =>
        Effect.gen(function*() {
          const { client, url } = yield* sdkClient
          const inbox = yield* call(() => client.inboxes.create({ username: `errs${unique()}` }))

          const missing = yield* refused(() => client.inboxes.messages.get(inbox.inboxId, "msg_0000000000000000000000ff"))
          assert.instanceOf(missing, AgentMail.NotFoundError)
          assert.strictEqual(missing.statusCode, 404)
          assert.include(missing.body as object, { name: "NotFoundError", code: "not_found" })

          const noRecipient = yield* refused(() => client.inboxes.messages.send(inbox.inboxId, { subject: "x", text: "y" }))
          assert.instanceOf(noRecipient, AgentMail.ValidationError)
          assert.strictEqual((noRecipient.body as { code: string }).code, "validation_error")
          assert.deepStrictEqual((noRecipient.body as { errors: ReadonlyArray<{ path: ReadonlyArray<string> }> }).errors[0]?.path, ["to"])

          const unknownKey = new AgentMailClient({ baseUrl: url, apiKey: "am_" + "0".repeat(64), maxRetries: 0 })
          const unauthorized = yield* refused(() => unknownKey.inboxes.list())
          assert.strictEqual(unauthorized.statusCode, 401)
          assert.strictEqual((unauthorized.body as { code: string }).code, "unauthorized")
        }))

      it.effect("the SDK's thread filters (senders, recipients, subject), ascending inbox lists and labels on a send work as the SDK documents them", () =>
        Effect.gen(function*() {
          const { client, url, last } = yield* sdkClient
          const first = yield* call(() => client.inboxes.create({ username: `filter${unique()}` }))
          const second = yield* call(() => client.inboxes.create({ username: `later${unique()}` }))
          // Inboxes, newest first as the spec lists them; oldest first with ascending.
          assert.deepStrictEqual((yield* call(() => client.inboxes.list())).inboxes.map((i) => i.inboxId), [second.inboxId, first.inboxId])
          assert.deepStrictEqual((yield* call(() => client.inboxes.list({ ascending: true }))).inboxes.map((i) => i.inboxId), [first.inboxId, second.inboxId])

          for (const [from, subject] of [["Ann Archer <ann@north.example>", "Invoice 7"], ["Bo Brook <bo@south.example>", "Invoice 8"], ["ann@south.example", "Lunch"]] as const) {
            const delivered = yield* deliverMailOverHttp(url, [first.email], { from, subject, text: "hello" })
            assert.strictEqual(delivered.status, 200, delivered.text)
          }
          const subjects = (threads: AgentMail.ListThreadsResponse) => threads.threads.map((t) => t.subject).sort()
          const list = (request: AgentMail.inboxes.ListThreadsRequest) => call(() => client.inboxes.threads.list(first.inboxId, request))
          assert.deepStrictEqual(subjects(yield* list({ senders: ["ANN"] })), ["Invoice 7", "Lunch"])
          assert.strictEqual(last("GET", `/v0/inboxes/${first.inboxId}/threads`).url.searchParams.get("senders"), JSON.stringify(["ANN"]))
          // Several values: all must match.
          assert.deepStrictEqual(subjects(yield* list({ senders: ["ann", "south.example"] })), ["Lunch"])
          assert.deepStrictEqual(subjects(yield* list({ subject: ["invoice"] })), ["Invoice 7", "Invoice 8"])
          assert.deepStrictEqual(subjects(yield* list({ recipients: [first.email] })), ["Invoice 7", "Invoice 8", "Lunch"])
          assert.deepStrictEqual(subjects(yield* list({ recipients: ["nobody@"] })), [])
          // At organization and pod level too.
          assert.deepStrictEqual(subjects(yield* call(() => client.threads.list({ senders: ["bo@south"] }))), ["Invoice 8"])
          assert.deepStrictEqual(subjects(yield* call(() => client.pods.threads.list(first.podId, { senders: ["bo@south"] }))), ["Invoice 8"])

          // Labels on a send are on the sent message, beside sent; a label the service sets is refused.
          const sent = yield* call(() => client.inboxes.messages.send(first.inboxId, { to: "a@example.net", text: "x", labels: ["vip", "q3"] }))
          assert.sameMembers([...(yield* call(() => client.inboxes.messages.get(first.inboxId, sent.messageId))).labels], ["sent", "vip", "q3"])
          const system = yield* refused(() => client.inboxes.messages.send(first.inboxId, { to: "a@example.net", text: "x", labels: ["received"] }))
          assert.strictEqual(system.statusCode, 400)
          assert.strictEqual((system.body as { code: string }).code, "validation_error")
          assert.include((system.body as { message: string }).message, "labels")
        }))

      it.effect("a thread get with the SDK's limit and pageToken pages its messages, newest first by page, each page oldest first", () =>
        Effect.gen(function*() {
          const { client, url, exchanges } = yield* sdkClient
          const inbox = yield* call(() => client.inboxes.create({ username: `paged${unique()}` }))
          const delivered = yield* deliverMailOverHttp(url, [inbox.email], { from: "ann@example.org", subject: "Long talk", text: "one" })
          const { message_id: firstId, thread_id: threadId } = delivered.body.delivered[0] as { message_id: string; thread_id: string }
          const second = yield* call(() => client.inboxes.messages.reply(inbox.inboxId, firstId, { text: "two" }))
          const third = yield* call(() => client.inboxes.messages.reply(inbox.inboxId, firstId, { text: "three" }))
          const page = yield* call(() => client.threads.get(threadId, { limit: 2 }))
          conforms(serialization.Thread, exchanges.at(-1)?.body, "thread page")
          assert.deepStrictEqual(page.messages.map((m) => m.messageId), [second.messageId, third.messageId])
          assert.strictEqual(page.count, 2)
          assert.strictEqual(page.limit, 2)
          assert.strictEqual(page.messageCount, 3)
          const token = (exchanges.at(-1)?.body as { next_page_token?: string }).next_page_token
          assert.isString(token)
          const older = yield* call(() => client.inboxes.threads.get(inbox.inboxId, threadId, { limit: 2, pageToken: token! }))
          assert.deepStrictEqual(older.messages.map((m) => m.messageId), [firstId])
          assert.notProperty(exchanges.at(-1)?.body as object, "next_page_token")
          // Without either, the whole thread, as the spec has it.
          const whole = yield* call(() => client.threads.get(threadId))
          assert.deepStrictEqual(whole.messages.map((m) => m.messageId), [firstId, second.messageId, third.messageId])
        }))

      it.effect("what the SDK can send beyond the spec and the spec refuses is 400 naming it, never silently ignored", () =>
        Effect.gen(function*() {
          const { client } = yield* sdkClient
          const error = yield* refused(() => client.inboxes.create({ metadata: { seats: 3 } }))
          assert.strictEqual(error.statusCode, 400)
          const body = error.body as { code: string; message: string }
          assert.strictEqual(body.code, "validation_error")
          assert.include(body.message, "metadata.seats")
        }))
    }
  )
}
