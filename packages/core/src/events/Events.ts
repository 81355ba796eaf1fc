/**
 * Events: the record of everything the service does. `record` writes one event row with
 * the statement that runs it, so a caller inside a transaction makes the change and its
 * event commit together, or neither (an outbox: an event exists if and only if its change
 * committed). In the same transaction it writes the event's webhook deliveries (with their
 * durable jobs) and signals the event's id, so after the commit every WebSocket subscriber,
 * on any process sharing the database, reads it; a rolled-back change delivers nothing.
 *
 * The stored payload is the envelope's payload member(s) (`{ message, thread }`,
 * `{ send }`, ...); the envelope (`type`, `event_type`, `event_id`, `inbox_id`, `pod_id`,
 * `created_at`) is assembled from the row's columns when read (`toEnvelope`). A received
 * message's bodies are not written into its event a second time: the payload's message
 * leaves them out, `bodies_of` names the message row that holds them, and every reader
 * selects them with the event (`withBodies`). So an event read after its message was
 * deleted has the message without bodies, as an event over about 1 MB always has.
 *
 * Who sees an event (the list, the WebSocket): the principal's scope (`visibleTo` on the
 * event's pod and inbox), and the opt-in `message.received.*` types only for a principal
 * holding the matching `label_*_read` permission (`visibleTypes`).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { holds, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { Signals } from "../db/Signals.ts"
import type { NotFound, ValidationError } from "../errors/errors.ts"
import { BodiesRow, bodiesOf } from "../messages/model.ts"
import { Ids } from "../platform/Ids.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"
import { type FannedEvent, WebhookFanOut } from "../webhooks/FanOut.ts"
import { EVENT_TYPES, type EventType, OPT_IN_EVENT_TYPES, OPT_IN_PERMISSION } from "./catalogue.ts"
export { EventEnvelope } from "./payloads.ts"

/** The Signals channel that carries the id of every committed event (migration 0021 spells it too: its trigger sends the signal on PostgreSQL). */
export const EVENTS_CHANNEL = "events"

export interface NewEvent {
  readonly organizationId: string
  readonly podId?: string
  readonly inboxId?: string
  readonly type: EventType
  readonly payload: Readonly<Record<string, unknown>>
  /**
   * The message whose stored bodies belong in the payload's `message`, which leaves them
   * out: readers join them back (`withBodies`).
   */
  readonly bodiesOf?: string
  /**
   * The change that causes the event, as common table expressions (`name AS (UPDATE ...)`)
   * run in the event's statement: one round trip fewer. The caller still holds the
   * transaction that makes the webhook deliveries the event causes atomic with it.
   */
  readonly alongside?: Statement.Fragment
}

/** The bodies `withBodies` selects beside an event: absent or NULL when it has none to join. */
export const EventBodies = Schema.optionalKey(Schema.NullOr(Json(BodiesRow)))

/**
 * The column `bodies` of an event read `FROM events` (not aliased): the stored bodies of the
 * message its payload leaves them out of, if that message is still stored.
 */
export const withBodies = (sql: SqlClient.SqlClient) =>
  sql`(SELECT json_build_object('text', b.text, 'html', b.html, 'extracted_text', b.extracted_text,
      'extracted_html', b.extracted_html, 'extracted_text_is_text', b.extracted_text_is_text,
      'extracted_html_is_html', b.extracted_html_is_html)
    FROM messages b WHERE b.id = events.bodies_of AND b.organization_id = events.organization_id) AS bodies`

export const EventRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  event_type: Schema.String,
  payload: Json(Schema.Record(Schema.String, Schema.Unknown)),
  created_at: Schema.Date,
  bodies: EventBodies
})
export type EventRow = typeof EventRow.Type

export type EventEnvelope = Readonly<Record<string, unknown>> & {
  readonly type: "event"
  readonly event_type: EventType
  readonly event_id: string
  readonly created_at: string
}

export const toEnvelope = (row: EventRow): EventEnvelope => ({
  type: "event",
  event_type: row.event_type as EventType,
  event_id: row.id,
  ...(row.inbox_id === null ? {} : { inbox_id: row.inbox_id }),
  ...(row.pod_id === null ? {} : { pod_id: row.pod_id }),
  created_at: iso(row.created_at),
  ...(row.bodies == null
    ? row.payload
    : { ...row.payload, message: { ...(row.payload["message"] as Readonly<Record<string, unknown>>), ...bodiesOf(row.bodies) } })
})

/** The event types a principal may see: every default type, and each opt-in type it holds the permission of. */
export const visibleTypes = (principal: Principal): ReadonlyArray<EventType> =>
  EVENT_TYPES.filter((t) => !(OPT_IN_EVENT_TYPES as ReadonlyArray<string>).includes(t) || holds(principal, OPT_IN_PERMISSION[t as typeof OPT_IN_EVENT_TYPES[number]]))

/** Whether a principal may see one event (the WebSocket's check of each pushed event). */
export const canSee = (principal: Principal, row: EventRow): boolean => {
  if (row.organization_id !== principal.organizationId) return false
  if (!visibleTypes(principal).includes(row.event_type as EventType)) return false
  switch (principal.scope.type) {
    case "organization":
      return true
    case "pod":
      return row.pod_id === principal.scope.podId
    case "inbox":
      return row.inbox_id === principal.scope.inboxId
  }
}

export const ListEventsQuery = Schema.Struct(PageQueryFields)

export class Events extends Context.Service<Events, {
  /** Writes the event in the current transaction (if any), with its webhook deliveries; answers its id. */
  record(event: NewEvent): Effect.Effect<string>
  /** Writes several events as `record` does, in one statement; answers their ids in order. */
  recordMany(events: ReadonlyArray<Omit<NewEvent, "alongside">>): Effect.Effect<ReadonlyArray<string>>
  /** Events the principal may see, newest first; of one inbox (by id or address) when given. */
  /** `inbox`: the id of an inbox the caller already resolved in its scope. */
  list(principal: Principal, query: typeof ListEventsQuery.Type, inbox?: string): Effect.Effect<Page<EventEnvelope>, ValidationError>
  /** Stored events by id (any organization): the WebSocket reads what a signal names. */
  byIds(ids: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<EventRow>>
  /** Retention: deletes up to `limit` events created before `before`, oldest first; answers how many. */
  purge(before: Date, limit: number): Effect.Effect<number>
}>()("inbox/Events") {
  static readonly layerNoDeps = Layer.effect(Events, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const signals = yield* Signals
    const fanOut = yield* WebhookFanOut

    // One statement inserts the events (and the change they come with) and answers the
    // webhooks that want each one; then their deliveries and the signals.
    const write = Effect.fn("Events.record")(function*(events: ReadonlyArray<NewEvent>, alongside?: Statement.Fragment) {
      const at = yield* now
      const fanned: Array<FannedEvent> = []
      for (const event of events) {
        fanned.push({ id: yield* ids.make("evt"), organizationId: event.organizationId, podId: event.podId, inboxId: event.inboxId, type: event.type, at })
      }
      const rows = events.map((event, i) => ({
        id: fanned[i]!.id,
        organization_id: event.organizationId,
        pod_id: event.podId ?? null,
        inbox_id: event.inboxId ?? null,
        event_type: event.type,
        payload: JSON.stringify(event.payload),
        bodies_of: event.bodiesOf ?? null,
        created_at: at
      }))
      const hooks = yield* sql<{ event_id: string; id: string }>`WITH ${alongside === undefined ? sql`` : sql`${alongside},`} recorded AS (
          INSERT INTO events ${sql.insert(rows as never)}
        ) ${fanOut.matching(fanned)}`.pipe(Effect.orDie)
      if (hooks.length > 0) {
        yield* fanOut.enqueue(fanned.map((event) => ({ event, hookIds: hooks.filter((h) => h.event_id === event.id).map((h) => h.id) })))
      }
      // Sent once the transaction commits (db/Signals.ts says why not from a trigger).
      for (const event of fanned) yield* signals.notify(EVENTS_CHANNEL, event.id)
      return fanned.map((e) => e.id)
    })

    return Events.of({
      record: (event) => Effect.map(write([event], event.alongside), (written) => written[0]!),
      recordMany: (events) => events.length === 0 ? Effect.succeed([]) : write(events),
      list: Effect.fn("Events.list")(function*(principal, query, inbox) {
        const page = yield* newestFirst(sql, query)
        const inboxFilter = inbox === undefined ? sql`` : sql`AND inbox_id = ${inbox}`
        const rows = yield* sql`SELECT *, ${withBodies(sql)} FROM events
          WHERE ${visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })} ${inboxFilter}
            AND event_type IN ${sql.in([...visibleTypes(principal)])}
            ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(EventRow))
        return toPage(rows, page.limit, toEnvelope)
      }),
      byIds: (eventIds) =>
        eventIds.length === 0
          ? Effect.succeed([])
          : sql`SELECT *, ${withBodies(sql)} FROM events WHERE id IN ${sql.in([...eventIds])}`.pipe(decodeRows(EventRow)),
      purge: (before, limit) =>
        sql<{ id: string }>`DELETE FROM events WHERE id IN (
            SELECT id FROM events WHERE created_at < ${before} ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING id`.pipe(Effect.map((rows) => rows.length), Effect.orDie)
    })
  }))

  /** With the services it uses (WebhookFanOut); the ports are the caller's. */
  static readonly layer = Events.layerNoDeps.pipe(Layer.provide(WebhookFanOut.layer))
}
