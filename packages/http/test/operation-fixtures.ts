/**
 * One request per catalogue operation, against a world of two organizations, for the
 * tests that walk the whole catalogue (access.test.ts). A new operation adds its entry
 * here; the walk fails for an operation without one.
 *
 * Organization A has a pod P with two inboxes (I and J) and keys of every scope; B is
 * another organization. A fixture aims at A's resources in P (inbox I where it needs an
 * inbox), creating what it consumes (a delete gets a fresh resource each time).
 */
import { Blobs, sha256Of, signWebhook, Suppressions } from "@inbox/core/internal"
import { buildMail, deliverMail, newOrganization, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Clock, Effect } from "effect"

export interface World {
  readonly a: {
    readonly organizationId: string
    readonly key: string
    readonly podId: string
    readonly inboxId: string
    readonly inboxEmail: string
    /** A key scoped to P, and one scoped to another pod Q of A. */
    readonly podKey: string
    readonly otherPodKey: string
    /** A key scoped to inbox J (in P, not I). */
    readonly otherInboxKey: string
  }
  readonly b: { readonly key: string }
}

export interface FixtureRequest {
  readonly params?: Readonly<Record<string, string>>
  readonly input?: Readonly<Record<string, unknown>>
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
}

const post = (key: string, path: string, json: unknown) =>
  TestApp.use((app) => app.request("POST", path, { key, json }))

const created = (key: string, path: string, json: unknown, field: string) =>
  Effect.map(post(key, path, json), (res) => {
    const id = res.body?.[field]
    if (typeof id !== "string") throw new Error(`fixture: POST ${path} answered ${res.status} ${res.text}`)
    return id
  })

/** A message delivered to inbox I (with one attachment), as the forwarder delivers it. */
const delivered = (w: World) =>
  Effect.map(
    deliverMail(`${w.a.inboxEmail}`, {
      subject: "walk",
      attachments: [{ filename: "a.txt", content: "attached", contentType: "text/plain" }]
    }),
    (res) => {
      const d = res.body?.delivered?.[0]
      if (d === undefined) throw new Error(`fixture: delivery answered ${res.status} ${res.text}`)
      return d as { message_id: string; thread_id: string }
    }
  )

const attachmentOf = (w: World, messageId: string) =>
  TestApp.use((app) =>
    Effect.map(app.request("GET", `/v0/inboxes/${w.a.inboxId}/messages/${messageId}`, { key: w.a.key }), (r) => r.body.attachments[0].attachment_id as string))

export const buildWorld = Effect.gen(function*() {
  const a = yield* newOrganization({ plan: "scale" })
  const b = yield* newOrganization({ plan: "scale" })
  const podId = yield* created(a.key, "/v0/pods", { name: "P" }, "pod_id")
  const otherPod = yield* created(a.key, "/v0/pods", { name: "Q" }, "pod_id")
  const inbox = (yield* post(a.key, `/v0/pods/${podId}/inboxes`, {})).body as { inbox_id: string; email: string }
  const inboxId = inbox.inbox_id
  const otherInbox = yield* created(a.key, `/v0/pods/${podId}/inboxes`, {}, "inbox_id")
  const key = (json: unknown) => created(a.key, "/v0/api-keys", json, "api_key")
  return {
    a: {
      organizationId: a.organizationId,
      key: a.key,
      podId,
      inboxId,
      inboxEmail: inbox.email,
      podKey: yield* key({ name: "pod", pod_id: podId }),
      otherPodKey: yield* key({ name: "other pod", pod_id: otherPod }),
      otherInboxKey: yield* key({ name: "other inbox", inbox_id: otherInbox })
    },
    b: { key: b.key }
  } satisfies World
})

type Fixture = (world: World) => Effect.Effect<FixtureRequest, never, any>

const fixed = (request: FixtureRequest): Fixture => () => Effect.succeed(request)

// Entries and suppressions are unique per list or organization: each fixture call gets its own address.
let serial = 0
const nextAddress = () => `walk-${++serial}@example.com`

/** A path on inbox I's send block list, with an entry already on it. */
const listEntry = (w: World) => {
  const params = { inbox_id: w.a.inboxId, direction: "send", type: "block" }
  const entry = nextAddress()
  return Effect.as(post(w.a.key, `/v0/inboxes/${w.a.inboxId}/lists/send/block`, { entry }), { params: { ...params, entry } })
}

/** A suppression recorded for inbox I (as a bounce of its mail would record it). */
const suppression = (w: World) => {
  const address = nextAddress()
  return Effect.as(
    Suppressions.use((s) => s.add(w.a.organizationId, { address, reason: "bounce", inbox_id: w.a.inboxId })),
    { params: { address } }
  )
}

/** The provider events secret the walk's engine is configured with (access.test.ts). */
export const TEST_PROVIDER_SECRET = `whsec_${Buffer.from("the walk's provider secret").toString("base64")}`

/** A provider event signed as the mail provider signs it (for a Message-ID we never sent: accepted, ignored). */
const providerEvent = () =>
  Effect.map(Clock.currentTimeMillis, (ms) => {
    const body = JSON.stringify({ type: "delivered", rfc_message_id: "<walk@example.org>", recipients: [] })
    const id = `walk_${++serial}`
    const timestamp = String(Math.floor(ms / 1000))
    return {
      headers: {
        "content-type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signWebhook(TEST_PROVIDER_SECRET, id, timestamp, Buffer.from(body))
      },
      body
    }
  })

/** A webhook of inbox I (a public literal address: the walk resolves no names). */
const WEBHOOK_URL = "https://93.184.215.14/walk"
const webhook = (w: World, path: (id: string) => Readonly<Record<string, string>>) =>
  Effect.map(created(w.a.key, `/v0/inboxes/${w.a.inboxId}/webhooks`, { url: WEBHOOK_URL }, "webhook_id"), (id) => ({ params: path(id) }))
const inboxWebhook = (w: World) => webhook(w, (id) => ({ inbox_id: w.a.inboxId, webhook_id: id }))
/** A delivery of a webhook of inbox I: the webhook made first, then a message delivered to I. */
const webhookDelivery = (w: World) =>
  Effect.gen(function*() {
    const webhookId = yield* created(w.a.key, `/v0/inboxes/${w.a.inboxId}/webhooks`, { url: WEBHOOK_URL }, "webhook_id")
    yield* delivered(w)
    const list = yield* TestApp.use((app) => app.request("GET", `/v0/webhooks/${webhookId}/deliveries`, { key: w.a.key }))
    const deliveryId = list.body?.deliveries?.[0]?.delivery_id
    if (typeof deliveryId !== "string") throw new Error(`fixture: deliveries answered ${list.status} ${list.text}`)
    return { params: { webhook_id: webhookId, delivery_id: deliveryId } }
  })

/** A draft in inbox I, ready to send. */
const draft = (w: World) => created(w.a.key, `/v0/inboxes/${w.a.inboxId}/drafts`, { to: "someone@example.net", text: "walk" }, "draft_id")

const nextDomain = () => `walk-${++serial}.example.com`

/** A fresh custom domain of A in pod P (each costs an RSA key: the delete fixture alone needs a new one). */
const freshDomain = (w: World) => Effect.map(created(w.a.key, `/v0/pods/${w.a.podId}/domains`, { domain: nextDomain() }, "domain_id"), (id) => ({ params: { domain_id: id } }))
const domains = new WeakMap<World, FixtureRequest>()
/** One custom domain of A in pod P per world, for the fixtures that do not consume it. */
const domain = (w: World) => {
  const known = domains.get(w)
  return known !== undefined ? Effect.succeed(known) : Effect.tap(freshDomain(w), (request) => Effect.sync(() => domains.set(w, request)))
}

export const FIXTURES: Readonly<Record<string, Fixture>> = {
  "agent.signUp": fixed({ input: { username: "walker", human_email: "walker@example.com" } }),
  "agent.attachHuman": fixed({ input: { human_email: "human@example.com" } }),
  "agent.verify": fixed({ input: { otp_code: "123456" } }),
  "pods.create": fixed({ input: { name: "new pod" } }),
  "pods.list": fixed({}),
  "pods.get": (w) => Effect.succeed({ params: { pod_id: w.a.podId } }),
  "pods.delete": (w) => Effect.map(created(w.a.key, "/v0/pods", { name: "doomed" }, "pod_id"), (id) => ({ params: { pod_id: id } })),
  "inboxes.create": fixed({ input: {} }),
  "inboxes.list": fixed({}),
  "inboxes.get": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "inboxes.update": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { display_name: "Renamed" } }),
  "inboxes.delete": (w) =>
    Effect.map(created(w.a.key, `/v0/pods/${w.a.podId}/inboxes`, {}, "inbox_id"), (id) => ({ params: { inbox_id: id } })),
  "apiKeys.create": fixed({ input: { name: "made by the walk" } }),
  "apiKeys.list": fixed({}),
  "apiKeys.createIn": (w) => Effect.succeed({ params: { pod_id: w.a.podId }, input: { name: "made by the walk in P" } }),
  "apiKeys.get": (w) =>
    Effect.map(created(w.a.key, "/v0/api-keys", { name: "read", pod_id: w.a.podId }, "api_key_id"), (id) => ({ params: { api_key_id: id } })),
  "apiKeys.update": (w) =>
    Effect.map(created(w.a.key, "/v0/api-keys", { name: "renamed", pod_id: w.a.podId }, "api_key_id"), (id) => ({ params: { api_key_id: id }, input: { name: "walked" } })),
  "identity.me": fixed({}),
  "organizations.get": fixed({}),
  "inboxes.search": fixed({ input: { q: "inbox" } }),
  "apiKeys.revoke": (w) =>
    Effect.map(created(w.a.key, "/v0/api-keys", { name: "doomed", pod_id: w.a.podId }, "api_key_id"), (id) => ({ params: { api_key_id: id } })),
  "plans.list": fixed({}),
  "operator.ready": fixed({}),
  "inbound.raw": (w) =>
    Effect.map(Effect.promise(() => buildMail({ to: w.a.inboxEmail })), (raw) => ({
      input: { to: w.a.inboxEmail },
      headers: { "x-inbound-secret": TEST_INBOUND_SECRET, "content-type": "message/rfc822" },
      body: Buffer.from(raw).toString("latin1")
    })),
  "messages.send": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { to: "someone@example.net", text: "walk" } }),
  "messages.reply": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id }, input: { text: "walk" } })),
  "messages.replyAll": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id }, input: { text: "walk" } })),
  "messages.forward": (w) =>
    Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id }, input: { to: "boss@example.net" } })),
  "messages.list": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "messages.sendRaw": (w) =>
    Effect.succeed({
      params: { inbox_id: w.a.inboxId },
      input: { to: "someone@example.net" },
      headers: { "content-type": "message/rfc822" },
      body: `From: ${w.a.inboxEmail}\r\nTo: someone@example.net\r\nSubject: walk\r\n\r\nwalk\r\n`
    }),
  "inboxes.clientSettings": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "mailboxes.list": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "mailboxes.create": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { name: "Walked" } }),
  "mailboxes.sync": (w) => Effect.map(delivered(w), () => ({ params: { inbox_id: w.a.inboxId, mailbox: "INBOX" } })),
  "mailboxes.flags": (w) => Effect.map(delivered(w), () => ({ params: { inbox_id: w.a.inboxId, mailbox: "INBOX" }, input: { uids: [1], add: ["\\Seen"] } })),
  "mailboxes.copy": (w) => Effect.map(delivered(w), () => ({ params: { inbox_id: w.a.inboxId, mailbox: "INBOX" }, input: { uids: [1], to: "walked" } })),
  "mailboxes.expunge": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId, mailbox: "INBOX" }, input: {} }),
  "mailboxes.search": (w) => Effect.map(delivered(w), () => ({ params: { inbox_id: w.a.inboxId, mailbox: "INBOX" }, input: { q: "walk" } })),
  "mailboxes.append": (w) =>
    Effect.succeed({
      params: { inbox_id: w.a.inboxId, mailbox: "INBOX" },
      headers: { "content-type": "message/rfc822" },
      body: `From: friend@example.net\r\nTo: ${w.a.inboxEmail}\r\nSubject: appended\r\n\r\nwalk\r\n`
    }),
  "messages.get": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id } })),
  "messages.update": (w) =>
    Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id }, input: { add_labels: ["walked"] } })),
  "messages.delete": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id } })),
  "messages.batchGet": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId }, input: { message_ids: [d.message_id] } })),
  "messages.batchUpdate": (w) =>
    Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId }, input: { message_ids: [d.message_id], remove_labels: ["unread"] } })),
  "messages.raw": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id } })),
  "messages.rawDownload": (w) => Effect.map(delivered(w), (d) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id } })),
  "messages.attachment": (w) =>
    Effect.flatMap(delivered(w), (d) =>
      Effect.map(attachmentOf(w, d.message_id), (id) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id, attachment_id: id } }))),
  "messages.attachmentDownload": (w) =>
    Effect.flatMap(delivered(w), (d) =>
      Effect.map(attachmentOf(w, d.message_id), (id) => ({ params: { inbox_id: w.a.inboxId, message_id: d.message_id, attachment_id: id } }))),
  "messages.correspondents": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { q: "a", limit: 5 } }),
  "threads.attachment": (w) =>
    Effect.flatMap(delivered(w), (d) => Effect.map(attachmentOf(w, d.message_id), (id) => ({ params: { thread_id: d.thread_id, attachment_id: id } }))),
  "threads.list": fixed({}),
  "threads.get": (w) => Effect.map(delivered(w), (d) => ({ params: { thread_id: d.thread_id } })),
  "threads.update": (w) => Effect.map(delivered(w), (d) => ({ params: { thread_id: d.thread_id }, input: { add_labels: ["walked"] } })),
  "threads.delete": (w) => Effect.map(delivered(w), (d) => ({ params: { thread_id: d.thread_id } })),
  "downloads.get": () =>
    Effect.gen(function*() {
      const blobs = yield* Blobs
      const bytes = new TextEncoder().encode("the walk's download")
      yield* blobs.store([{ sha256: sha256Of(bytes), bytes }])
      const { download_url } = yield* blobs.downloadUrl({ sha256: sha256Of(bytes), contentType: "text/plain", filename: "walk.txt" })
      const url = new URL(download_url)
      return { params: { token: url.pathname.slice("/downloads/".length) }, input: Object.fromEntries(url.searchParams) }
    }),
  "lists.create": (w) =>
    Effect.sync(() => ({ params: { inbox_id: w.a.inboxId, direction: "send", type: "block" }, input: { entry: nextAddress() } })),
  "lists.list": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId, direction: "receive", type: "allow" } }),
  "lists.get": listEntry,
  "lists.delete": listEntry,
  "suppressions.list": fixed({}),
  "suppressions.delete": suppression,
  "events.list": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "webhooks.create": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { url: WEBHOOK_URL } }),
  "webhooks.list": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "webhooks.get": inboxWebhook,
  "webhooks.update": (w) => Effect.map(inboxWebhook(w), (r) => ({ ...r, input: { enabled: false } })),
  "webhooks.delete": inboxWebhook,
  "webhooks.headers": inboxWebhook,
  "webhooks.updateHeaders": (w) => Effect.map(inboxWebhook(w), (r) => ({ ...r, input: { set: { "x-walk": "1" } } })),
  "webhooks.deliveries": (w) => webhook(w, (id) => ({ webhook_id: id })),
  "webhooks.test": (w) => webhook(w, (id) => ({ webhook_id: id })),
  "webhooks.delivery": webhookDelivery,
  "webhooks.redeliver": webhookDelivery,
  "inbound.providerEvents": providerEvent,
  "tracking.open": fixed({ params: { file: "0123456789abcdef0123456789abcdef.gif" } }),
  "drafts.create": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { to: "someone@example.net", text: "walk" } }),
  "drafts.list": fixed({}),
  "drafts.get": (w) => Effect.map(draft(w), (id) => ({ params: { draft_id: id } })),
  "drafts.attachment": (w) =>
    Effect.gen(function*() {
      const made = yield* TestApp.use((app) =>
        app.request("POST", `/v0/inboxes/${w.a.inboxId}/drafts`, { key: w.a.key, json: { text: "walk", attachments: [{ filename: "walk.txt", content: "d2Fsaw==" }] } }))
      return { params: { draft_id: made.body.draft_id, attachment_id: made.body.attachments[0].attachment_id } }
    }),
  "drafts.update": (w) => Effect.map(draft(w), (id) => ({ params: { inbox_id: w.a.inboxId, draft_id: id }, input: { subject: "walked" } })),
  "drafts.delete": (w) => Effect.map(draft(w), (id) => ({ params: { inbox_id: w.a.inboxId, draft_id: id } })),
  "drafts.send": (w) => Effect.map(draft(w), (id) => ({ params: { inbox_id: w.a.inboxId, draft_id: id }, input: {} })),
  "messages.search": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { q: "walk" } }),
  "messages.searchPost": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId }, input: { q: "walk" } }),
  "threads.search": fixed({ input: { q: "walk" } }),
  "domains.create": (w) => Effect.sync(() => ({ params: { pod_id: w.a.podId }, input: { domain: nextDomain() } })),
  "domains.list": fixed({}),
  "domains.get": domain,
  "domains.update": (w) => Effect.map(domain(w), (r) => ({ ...r, input: { tracking_enabled: true } })),
  "domains.delete": freshDomain,
  "domains.verify": domain,
  "domains.zone_file": domain,
  "metrics.usage": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "metrics.events": fixed({}),
  "metrics.eventSeries": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "metrics.rates": (w) => Effect.succeed({ params: { inbox_id: w.a.inboxId } }),
  "billing.get": fixed({}),
  "billing.usage": fixed({}),
  "billing.checkout": fixed({ input: { plan: "pro", interval: "monthly" } }),
  "billing.portal": fixed({ input: {} }),
  "billing.cancel": fixed({ input: {} }),
  // The walk's engine configures no payment provider (503): billing-providers.test.ts signs real ones.
  "inbound.billingStripe": fixed({ headers: { "content-type": "application/json" }, body: "{}" }),
  "inbound.billingRazorpay": fixed({ headers: { "content-type": "application/json" }, body: "{}" })
}
