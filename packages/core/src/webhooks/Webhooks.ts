/**
 * Webhooks (spec: Webhook, Webhooks, Webhook delivery): where events are POSTed, signed.
 *
 * A webhook belongs to a scope, which decides who sees it and which events it may receive:
 * the organization (`/v0/webhooks` with an organization key), a pod (`/v0/pods/:pod_id/...`,
 * or any collection path with a pod key) or an inbox (`/v0/inboxes/:inbox_id/...`, or an
 * inbox key). `inbox_ids` and `pod_ids` (up to 10 each) narrow it further: with either, it
 * receives only events of those inboxes or pods. `event_types` defaults to the eight
 * default types. The secret (`whsec_` and base64 of 24 random bytes) is shown only by
 * create; custom header values are write-only (their names are shown) and, like the
 * secret, sealed at rest under INBOX_SECRET_KEY (headers.ts).
 *
 * The URL rule is guard.ts, checked here at creation and change (400 invalid_webhook_url)
 * and again at every delivery. The Free plan's webhook count is checked under the
 * organization's row lock (402 plan_limit_exceeded).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { InvalidWebhookUrl, type MissingPermission, type NotFound, type PlanLimitExceeded, type ValidationError } from "../errors/errors.ts"
import { DEFAULT_EVENT_TYPES, EVENT_TYPES } from "../events/catalogue.ts"
import { EventRow, toEnvelope, withBodies } from "../events/Events.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Organizations, planNow } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { checkLimit } from "../plans/plans.ts"
import { Pods } from "../pods/Pods.ts"
import { Settings } from "../settings/Settings.ts"
import { webhookResealing } from "./sealed.ts"
import { openStored, sealIfKey } from "../shared/sealing.ts"
import { type Attempt, DELIVERY_TIMEOUT, post, signedHeaders } from "./Delivery.ts"
import { WebhookFanOut } from "./FanOut.ts"
import { openHeaderValues, sealHeaderValues } from "./headers.ts"
import { compact, Id, Line } from "../shared/fields.ts"
import { keyset, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { checkWebhookUrl, HostResolver } from "../egress/guard.ts"

export const MAX_SCOPE_IDS = 10
export const MAX_HEADERS = 20
/** Deliveries list: 20 by default (the spec's recorded page), up to 100. */
export const DELIVERIES_DEFAULT_LIMIT = 20

/** Headers the delivery itself sets, or that would change how the request is read. */
const RESERVED_HEADERS = new Set([
  "host", "content-type", "content-length", "transfer-encoding", "connection", "user-agent", "expect", "upgrade",
  "keep-alive", "te", "trailer", "proxy-authorization", "webhook-id", "webhook-timestamp", "webhook-signature"
])

const HeaderName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, { message: "Expected a header name (letters, digits, - and other token characters)" })
)
const HeaderValue = Line(1024)

export const EventTypeName = Schema.Literals(EVENT_TYPES)
const EventTypes = Schema.Array(EventTypeName).check(Schema.isMinLength(1))
const ScopeIds = Schema.Array(Id).check(Schema.isMaxLength(MAX_SCOPE_IDS))
const Headers = Schema.Record(HeaderName, HeaderValue)
const Url = Line(2048)

export const CreateWebhookInput = Schema.Struct({
  url: Url,
  event_types: Schema.optionalKey(EventTypes),
  inbox_ids: Schema.optionalKey(ScopeIds),
  pod_ids: Schema.optionalKey(ScopeIds),
  headers: Schema.optionalKey(Headers)
})
export type CreateWebhookInput = typeof CreateWebhookInput.Type

export const UpdateWebhookInput = Schema.Struct({
  url: Schema.optionalKey(Url),
  enabled: Schema.optionalKey(Schema.Boolean),
  event_types: Schema.optionalKey(EventTypes),
  inbox_ids: Schema.optionalKey(ScopeIds),
  pod_ids: Schema.optionalKey(ScopeIds)
})
export type UpdateWebhookInput = typeof UpdateWebhookInput.Type

/**
 * `set` and `remove` are the spec's; `headers` and `remove_headers` the agentmail SDK's names
 * for the same (docs/client-compatibility.md). One of each pair at a time.
 */
export const UpdateHeadersInput = Schema.Struct({
  set: Schema.optionalKey(Headers),
  remove: Schema.optionalKey(Schema.Array(HeaderName).check(Schema.isMaxLength(MAX_HEADERS))),
  headers: Schema.optionalKey(Headers),
  remove_headers: Schema.optionalKey(Schema.Array(HeaderName).check(Schema.isMaxLength(MAX_HEADERS)))
})
export type UpdateHeadersInput = typeof UpdateHeadersInput.Type

export const ListWebhooksQuery = Schema.Struct(PageQueryFields)
export const ListDeliveriesQuery = ListWebhooksQuery

/**
 * The test event `POST /v0/webhooks/:webhook_id/test` sends: the envelope of every event,
 * with an event type no real event has, so a receiver's filter can tell it apart.
 */
export const TEST_EVENT_TYPE = "webhook.test"

/** What a test send did: the event id it carried, and the endpoint's answer. */
export const WebhookTestResult = Schema.Struct({
  event_id: Schema.String,
  delivered: Schema.Boolean,
  status_code: Schema.optionalKey(Schema.Number),
  error: Schema.optionalKey(Schema.String)
})
export type WebhookTestResult = typeof WebhookTestResult.Type

export const WebhookRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  url: Schema.String,
  secret: Schema.String,
  enabled: Schema.Boolean,
  event_types: Schema.Array(Schema.String),
  inbox_ids: Schema.Array(Schema.String),
  pod_ids: Schema.Array(Schema.String),
  header_names: Schema.Array(Schema.String),
  /** sealed (headers.ts); null without headers */
  header_values: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type WebhookRow = typeof WebhookRow.Type

/** A webhook as the API shows it; `secret` only in the create answer. */
export const Webhook = Schema.Struct({
  webhook_id: Schema.String,
  url: Schema.String,
  secret: Schema.optionalKey(Schema.String),
  enabled: Schema.Boolean,
  event_types: Schema.Array(Schema.String),
  inbox_ids: Schema.optionalKey(Schema.Array(Schema.String)),
  pod_ids: Schema.optionalKey(Schema.Array(Schema.String)),
  pod_id: Schema.optionalKey(Schema.String),
  inbox_id: Schema.optionalKey(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Webhook = typeof Webhook.Type

export const toWebhook = (row: WebhookRow): Webhook =>
  compact({
    webhook_id: row.id,
    url: row.url,
    enabled: row.enabled,
    event_types: row.event_types,
    inbox_ids: row.inbox_ids.length > 0 ? row.inbox_ids : undefined,
    pod_ids: row.pod_ids.length > 0 ? row.pod_ids : undefined,
    pod_id: row.pod_id,
    inbox_id: row.inbox_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })

/** The names, as the spec's `headers` and as the agentmail SDK's `header_names`. */
export const HeaderNames = Schema.Struct({ headers: Schema.Array(Schema.String), header_names: Schema.Array(Schema.String) })

export const DELIVERY_STATUSES = ["pending", "sending", "delivered", "failed"] as const

const DeliveryRow = Schema.Struct({
  id: Schema.String,
  webhook_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  status: Schema.Literals(DELIVERY_STATUSES),
  status_code: Schema.NullOr(Schema.Number),
  attempts: Schema.Number,
  error: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.NullOr(Schema.Date),
  delivered_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date
})

/** A delivery (spec: Webhook delivery); the timestamps are our names (docs/events.md). */
export const Delivery = Schema.Struct({
  delivery_id: Schema.String,
  webhook_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  status: Schema.Literals(DELIVERY_STATUSES),
  status_code: Schema.optionalKey(Schema.Number),
  attempts: Schema.Number,
  error: Schema.optionalKey(Schema.String),
  last_attempt_at: Schema.optionalKey(Timestamp),
  delivered_at: Schema.optionalKey(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Delivery = typeof Delivery.Type

const toDelivery = (row: typeof DeliveryRow.Type): Delivery =>
  compact({
    delivery_id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    status_code: row.status_code,
    attempts: row.attempts,
    error: row.error,
    last_attempt_at: row.last_attempt_at === null ? undefined : iso(row.last_attempt_at),
    delivered_at: row.delivered_at === null ? undefined : iso(row.delivered_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })

/**
 * One delivery with the body it sends: the event's envelope, exactly as POSTed (`payload`,
 * absent once retention deleted the event).
 */
export const DeliveryDetail = Schema.Struct({
  ...Delivery.fields,
  payload: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
export type DeliveryDetail = typeof DeliveryDetail.Type

/** The pod or inbox a request's path names (neither: the organization's collection). */
export interface WebhookPath {
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

type Refusal = ValidationError | InvalidWebhookUrl | NotFound | MissingPermission

export class Webhooks extends Context.Service<Webhooks, {
  create(principal: Principal, path: WebhookPath, input: CreateWebhookInput): Effect.Effect<Webhook, Refusal | PlanLimitExceeded>
  list(principal: Principal, path: WebhookPath, query: typeof ListWebhooksQuery.Type): Effect.Effect<Page<Webhook>, NotFound | ValidationError>
  get(principal: Principal, path: WebhookPath, id: string): Effect.Effect<Webhook, NotFound>
  update(principal: Principal, path: WebhookPath, id: string, input: UpdateWebhookInput): Effect.Effect<Webhook, Refusal>
  delete(principal: Principal, path: WebhookPath, id: string): Effect.Effect<void, NotFound>
  headers(principal: Principal, path: WebhookPath, id: string): Effect.Effect<typeof HeaderNames.Type, NotFound>
  updateHeaders(principal: Principal, path: WebhookPath, id: string, input: UpdateHeadersInput): Effect.Effect<typeof HeaderNames.Type, NotFound | ValidationError>
  deliveries(principal: Principal, id: string, query: typeof ListDeliveriesQuery.Type): Effect.Effect<Page<Delivery>, NotFound | ValidationError>
  /** One delivery of the webhook, with the body it sends. */
  delivery(principal: Principal, id: string, deliveryId: string): Effect.Effect<DeliveryDetail, NotFound>
  /**
   * Sends a delivery's event to the webhook again: a new delivery (pending, its own attempts
   * and retries, the same event and so the same webhook-id), the old one left as it was.
   * Not found once retention deleted the event.
   */
  redeliver(principal: Principal, id: string, deliveryId: string): Effect.Effect<Delivery, NotFound>
  /** Sends a signed test event to the webhook now (not a delivery: nothing is stored or retried). */
  test(principal: Principal, id: string): Effect.Effect<WebhookTestResult, NotFound>
}>()("inbox/Webhooks") {
  static readonly layerNoDeps = Layer.effect(Webhooks, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const resolver = yield* HostResolver
    const organizations = yield* Organizations
    const inboxes = yield* Inboxes
    const pods = yield* Pods
    const fanOut = yield* WebhookFanOut

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    /** The scope a new webhook gets: the path's, else the key's own pod or inbox. */
    const ownerOf = (principal: Principal, path: WebhookPath) =>
      Effect.gen(function*() {
        if (path.inboxId !== undefined) {
          const inbox = yield* inboxes.find(principal, path.inboxId)
          return { podId: inbox.pod_id, inboxId: inbox.id }
        }
        if (path.podId !== undefined) return { podId: (yield* pods.get(principal, path.podId)).pod_id, inboxId: undefined }
        const scope = principal.scope
        return scope.type === "inbox"
          ? { podId: scope.podId, inboxId: scope.inboxId }
          : scope.type === "pod"
          ? { podId: scope.podId, inboxId: undefined }
          : { podId: undefined, inboxId: undefined }
      })

    /** A path's filter on the webhooks it lists or names. */
    const pathFilter = (principal: Principal, path: WebhookPath) =>
      Effect.gen(function*() {
        if (path.inboxId !== undefined) return sql`AND inbox_id = ${(yield* inboxes.find(principal, path.inboxId)).id}`
        if (path.podId !== undefined) return sql`AND pod_id = ${(yield* pods.get(principal, path.podId)).pod_id} AND inbox_id IS NULL`
        return sql``
      })

    const checkUrl = (url: string) =>
      checkWebhookUrl(url, settings.webhookAllowPrivate).pipe(
        Effect.provideService(HostResolver, resolver),
        Effect.mapError((refused) => new InvalidWebhookUrl({ message: refused.message, fix: "Give a public https URL." }))
      )

    /** inbox_ids and pod_ids as ids the principal sees, within the webhook's own scope. */
    const scopeIds = (principal: Principal, owner: { podId: string | undefined; inboxId: string | undefined }, input: { inbox_ids?: ReadonlyArray<string>; pod_ids?: ReadonlyArray<string> }) =>
      Effect.gen(function*() {
        if (owner.inboxId !== undefined && (input.inbox_ids !== undefined || input.pod_ids !== undefined)) {
          return yield* validationError([{ path: [input.inbox_ids !== undefined ? "inbox_ids" : "pod_ids"], message: "An inbox's webhook receives that inbox's events only" }])
        }
        if (owner.podId !== undefined && input.pod_ids !== undefined) {
          return yield* validationError([{ path: ["pod_ids"], message: "A pod's webhook receives that pod's events only; narrow it with inbox_ids" }])
        }
        const inboxIds: Array<string> = []
        for (const id of input.inbox_ids ?? []) {
          const inbox = yield* inboxes.find(principal, id)
          if (owner.podId !== undefined && inbox.pod_id !== owner.podId) return yield* notFound("Inbox", id)
          if (!inboxIds.includes(inbox.id)) inboxIds.push(inbox.id)
        }
        const podIds: Array<string> = []
        for (const id of input.pod_ids ?? []) {
          const pod = yield* pods.get(principal, id)
          if (!podIds.includes(pod.pod_id)) podIds.push(pod.pod_id)
        }
        return { inboxIds, podIds }
      })

    const find = (principal: Principal, path: WebhookPath, id: string, lock = false) =>
      Effect.gen(function*() {
        const filter = yield* pathFilter(principal, path)
        const rows = yield* sql`SELECT * FROM webhooks WHERE id = ${id} AND ${visible(principal)} ${filter}
          ${lock ? sql`FOR UPDATE` : sql``}`.pipe(decodeRows(WebhookRow))
        const row = rows[0]
        if (row === undefined) return yield* notFound("Webhook", id)
        return row
      })

    /** A delivery of a webhook the principal sees, and its event while retention keeps it. */
    const findDelivery = (principal: Principal, id: string, deliveryId: string) =>
      Effect.gen(function*() {
        const hook = yield* find(principal, {}, id)
        const rows = yield* sql`SELECT * FROM webhook_deliveries WHERE id = ${deliveryId} AND webhook_id = ${hook.id}`.pipe(decodeRows(DeliveryRow))
        const row = rows[0]
        if (row === undefined) return yield* notFound("Delivery", deliveryId)
        const events = yield* sql`SELECT *, ${withBodies(sql)} FROM events WHERE id = ${row.event_id}`.pipe(decodeRows(EventRow))
        return { delivery: toDelivery(row), event: events[0] }
      })

    const headerNames = (row: WebhookRow) => {
      const names = [...row.header_names].sort()
      return { headers: names, header_names: names }
    }
    const namesOf = (headers: Readonly<Record<string, string>>) => Object.keys(headers).sort()

    const checkHeaders = (headers: Readonly<Record<string, string>>, field: ReadonlyArray<string>) => {
      const reserved = Object.keys(headers).find((name) => RESERVED_HEADERS.has(name.toLowerCase()))
      return reserved === undefined
        ? Effect.void
        : Effect.fail(validationError([{ path: [...field, reserved], message: "This header is set by the delivery and cannot be replaced" }]))
    }


    const lower = (headers: Readonly<Record<string, string>>) =>
      Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))

    return Webhooks.of({
      create: Effect.fn("Webhooks.create")(function*(principal, path, input) {
        yield* checkHeaders(input.headers ?? {}, ["headers"])
        if (Object.keys(input.headers ?? {}).length > MAX_HEADERS) {
          return yield* validationError([{ path: ["headers"], message: `At most ${MAX_HEADERS} headers` }])
        }
        yield* checkUrl(input.url)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const owner = yield* ownerOf(principal, path)
          const scope = yield* scopeIds(principal, owner, input)
          // The organization's row lock serialises creates, so the count cannot go stale.
          const org = yield* organizations.lock(principal.organizationId).pipe(Effect.orDie)
          const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks WHERE organization_id = ${org.id}`
          yield* checkLimit(yield* planNow(org), "webhooks", count[0]?.n ?? 0)
          const at = yield* now
          const secret = `whsec_${Buffer.from(yield* ids.secret(24), "hex").toString("base64")}`
          const id = yield* ids.make("wh")
          // Sealed at rest when the server has INBOX_SECRET_KEY (always with the embedded database).
          const stored = sealIfKey(settings.secretKey, "webhook", id, secret)
          const headers = lower(input.headers ?? {})
          const rows = yield* sql`INSERT INTO webhooks (id, organization_id, pod_id, inbox_id, url, secret, enabled, event_types, inbox_ids, pod_ids,
              header_names, header_values, created_at, updated_at)
            VALUES (${id}, ${org.id}, ${owner.podId ?? null}, ${owner.inboxId ?? null}, ${input.url}, ${stored}, TRUE,
              ${[...new Set(input.event_types ?? DEFAULT_EVENT_TYPES)]}::text[], ${scope.inboxIds}::text[], ${scope.podIds}::text[],
              ${namesOf(headers)}::text[], ${sealHeaderValues(settings.secretKey, id, headers)}, ${at}, ${at})
            RETURNING *`.pipe(decodeRows(WebhookRow))
          const { webhook_id, url, ...rest } = toWebhook(rows[0]!)
          return { webhook_id, url, secret, ...rest }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      list: Effect.fn("Webhooks.list")(function*(principal, path, query) {
        const filter = yield* pathFilter(principal, path)
        const page = yield* keyset(sql, query, { column: "created_at" })
        const rows = yield* sql`SELECT * FROM webhooks WHERE ${visible(principal)} ${filter} ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(WebhookRow))
        return toPage(rows, page.limit, (row) => toWebhook(row))
      }),
      get: Effect.fn("Webhooks.get")(function*(principal, path, id) {
        return toWebhook(yield* find(principal, path, id))
      }),
      update: Effect.fn("Webhooks.update")(function*(principal, path, id, input) {
        if (input.url !== undefined) yield* checkUrl(input.url)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const row = yield* find(principal, path, id, true)
          const scope = input.inbox_ids === undefined && input.pod_ids === undefined
            ? undefined
            : yield* scopeIds(principal, { podId: row.pod_id ?? undefined, inboxId: row.inbox_id ?? undefined }, input)
          const at = yield* now
          const rows = yield* sql`UPDATE webhooks SET
              url = ${input.url ?? row.url},
              enabled = ${input.enabled ?? row.enabled},
              event_types = ${input.event_types === undefined ? [...row.event_types] : [...new Set(input.event_types)]}::text[],
              inbox_ids = ${input.inbox_ids === undefined ? [...row.inbox_ids] : scope?.inboxIds ?? []}::text[],
              pod_ids = ${input.pod_ids === undefined ? [...row.pod_ids] : scope?.podIds ?? []}::text[],
              updated_at = ${at}
            WHERE id = ${row.id} RETURNING *`.pipe(decodeRows(WebhookRow))
          return toWebhook(rows[0]!)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      delete: Effect.fn("Webhooks.delete")(function*(principal, path, id) {
        const row = yield* find(principal, path, id)
        yield* sql`DELETE FROM webhooks WHERE id = ${row.id}`.pipe(Effect.orDie)
      }),
      headers: Effect.fn("Webhooks.headers")(function*(principal, path, id) {
        return headerNames(yield* find(principal, path, id))
      }),
      updateHeaders: Effect.fn("Webhooks.updateHeaders")(function*(principal, path, id, input) {
        if (input.set !== undefined && input.headers !== undefined) {
          return yield* validationError([{ path: ["headers"], message: "Give set or headers (the same thing), not both" }])
        }
        if (input.remove !== undefined && input.remove_headers !== undefined) {
          return yield* validationError([{ path: ["remove_headers"], message: "Give remove or remove_headers (the same thing), not both" }])
        }
        const set = lower(input.set ?? input.headers ?? {})
        const remove = (input.remove ?? input.remove_headers ?? []).map((n) => n.toLowerCase())
        yield* checkHeaders(set, [input.headers !== undefined ? "headers" : "set"])
        const both = remove.find((name) => Object.hasOwn(set, name))
        if (both !== undefined) return yield* validationError([{ path: ["remove"], message: `The header ${both} cannot be set and removed at once` }])
        return yield* sql.withTransaction(Effect.gen(function*() {
          const row = yield* find(principal, path, id, true)
          const kept = row.header_names.filter((name) => !remove.includes(name) && !Object.hasOwn(set, name))
          const stored = yield* openHeaderValues(settings.secretKey, row.id, row.header_values)
          // Sealed under another INBOX_SECRET_KEY: the values kept cannot be carried over, and
          // are never dropped silently; setting or removing every one of them is still possible.
          if (stored === undefined && kept.length > 0) {
            return yield* validationError([{
              path: ["set"],
              message: `The stored values of ${kept.join(", ")} do not open with this server's INBOX_SECRET_KEY; set or remove them too`
            }])
          }
          const headers: Record<string, string> = { ...stored, ...set }
          for (const name of remove) delete headers[name]
          if (Object.keys(headers).length > MAX_HEADERS) return yield* validationError([{ path: ["set"], message: `At most ${MAX_HEADERS} headers` }])
          const rows = yield* sql`UPDATE webhooks SET header_names = ${namesOf(headers)}::text[],
              header_values = ${sealHeaderValues(settings.secretKey, row.id, headers)}, updated_at = ${yield* now}
            WHERE id = ${row.id} RETURNING *`.pipe(decodeRows(WebhookRow))
          return headerNames(rows[0]!)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      deliveries: Effect.fn("Webhooks.deliveries")(function*(principal, id, query) {
        const hook = yield* find(principal, {}, id)
        const page = yield* keyset(sql, { ...query, limit: query.limit ?? DELIVERIES_DEFAULT_LIMIT }, { column: "created_at" })
        const rows = yield* sql`SELECT * FROM webhook_deliveries WHERE webhook_id = ${hook.id} ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(DeliveryRow))
        return toPage(rows, page.limit, toDelivery)
      }),
      delivery: Effect.fn("Webhooks.delivery")(function*(principal, id, deliveryId) {
        const { delivery, event } = yield* findDelivery(principal, id, deliveryId)
        return event === undefined ? delivery : { ...delivery, payload: toEnvelope(event) }
      }),
      redeliver: Effect.fn("Webhooks.redeliver")(function*(principal, id, deliveryId) {
        const { delivery, event } = yield* findDelivery(principal, id, deliveryId)
        if (event === undefined) return yield* notFound("Event", delivery.event_id)
        const at = yield* now
        const [newId] = yield* sql.withTransaction(fanOut.enqueue([{
          event: { id: event.id, organizationId: event.organization_id, podId: event.pod_id ?? undefined, inboxId: event.inbox_id ?? undefined, type: event.event_type, at },
          hookIds: [delivery.webhook_id]
        }])).pipe(Effect.catchTag("SqlError", Effect.die))
        const rows = yield* sql`SELECT * FROM webhook_deliveries WHERE id = ${newId!}`.pipe(decodeRows(DeliveryRow))
        return toDelivery(rows[0]!)
      }),
      test: Effect.fn("Webhooks.test")(function*(principal, id) {
        const row = yield* find(principal, {}, id)
        const at = yield* now
        const eventId = yield* ids.make("evt")
        const body = JSON.stringify({
          type: "event",
          event_type: TEST_EVENT_TYPE,
          event_id: eventId,
          created_at: iso(at),
          webhook_id: row.id,
          message: "A test event: the webhook's URL is reached and its signature can be verified."
        })
        const result = (attempt: Attempt): WebhookTestResult =>
          compact({ event_id: eventId, delivered: attempt.error === undefined, status_code: attempt.statusCode, error: attempt.error })
        const secret = yield* openStored(settings.secretKey, "webhook", row.id, row.secret)
        const headers = yield* openHeaderValues(settings.secretKey, row.id, row.header_values)
        if (secret === undefined || headers === undefined) return result({ error: "secret_unreadable" })
        const checked = yield* checkWebhookUrl(row.url, settings.webhookAllowPrivate).pipe(
          Effect.provideService(HostResolver, resolver),
          Effect.result
        )
        if (checked._tag === "Failure") return result({ error: "invalid_url" })
        const attempt = yield* post(checked.success, signedHeaders(headers, secret, eventId, at, body), body).pipe(Effect.timeoutOrElse({ duration: DELIVERY_TIMEOUT, orElse: () => Effect.succeed<Attempt>({ error: "timeout" }) }))
        return result(attempt)
      })
    })
  }))

  /** Signing secrets and header values re-sealed under a rotated INBOX_SECRET_KEY (and plain header values sealed) before any is opened. */
  static readonly resealing = webhookResealing

  /** With the services it uses (HostResolver, Inboxes, Organizations, Pods), after its own rotation; the ports are the caller's. */
  static readonly layer = Webhooks.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(HostResolver.layer, Inboxes.layer, Organizations.layer, Pods.layer, WebhookFanOut.layer, Webhooks.resealing)))
}
