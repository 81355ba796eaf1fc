/**
 * Live events for WebSocket subscribers (spec: WebSocket; docs/events.md, "WebSocket").
 *
 * One fiber per process follows the `events` signal (NOTIFY after each commit on
 * PostgreSQL, so an event recorded by any process sharing the database arrives; in process
 * with PGlite), reads the named rows in one query per batch, serialises each event once,
 * and hands it to every listening connection, which keeps the events its principal may see
 * (`canSee`: scope and opt-in permissions, as the list) and its subscription wants. A
 * connection listens with a plain callback, called in that one fiber: with 10,000
 * connections, a fiber and a hub subscription of their own each cost about 40 KiB per
 * connection and a fiber wake-up per connection and event. The signal carries ids, never
 * payloads; a subscriber that was away catches up through the events list.
 *
 * The subscription rules live here, so every adapter applies them alike: `subscribe`
 * decodes a client frame and answers the `subscribed` echo or an `error` frame; `listen`
 * admits at most INBOX_MAX_WEBSOCKETS connections per process and
 * INBOX_MAX_WEBSOCKETS_PER_KEY per API key (or dashboard user), so subscribers can never
 * take all of a process's connections: HTTP keeps INBOX_MAX_CONNECTIONS of its own.
 */
import { Context, Data, Effect, Layer, Queue, Schema, type Scope, Stream } from "effect"
import type { Principal } from "../access/Principal.ts"
import { Signals } from "../db/Signals.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Pods } from "../pods/Pods.ts"
import { Settings } from "../settings/Settings.ts"
import { Id } from "../shared/fields.ts"
import { issuesOf } from "../shared/validation.ts"
import { DEFAULT_EVENT_TYPES, EVENT_TYPES, type EventType, unreadableOptIn } from "./catalogue.ts"
import { canSee, type EventRow, Events, EVENTS_CHANNEL, toEnvelope } from "./Events.ts"

export const SubscribeFrame = Schema.Struct({
  type: Schema.Literal("subscribe"),
  event_types: Schema.optionalKey(Schema.Array(Schema.Literals(EVENT_TYPES))),
  inbox_ids: Schema.optionalKey(Schema.Array(Id)),
  pod_ids: Schema.optionalKey(Schema.Array(Id))
})

export interface Subscription {
  readonly eventTypes: ReadonlySet<string>
  readonly inboxIds: ReadonlySet<string>
  readonly podIds: ReadonlySet<string>
}

export type ServerFrame =
  | { readonly type: "subscribed"; readonly event_types?: ReadonlyArray<string>; readonly inbox_ids?: ReadonlyArray<string>; readonly pod_ids?: ReadonlyArray<string> }
  | { readonly type: "error"; readonly name: string; readonly message: string }

const errorFrame = (name: string, message: string): ServerFrame => ({ type: "error", name, message })

/** Whether an event goes to a connection: its principal may see it and its subscription wants it. */
export const wants = (principal: Principal, subscription: Subscription, row: EventRow): boolean =>
  canSee(principal, row) &&
  subscription.eventTypes.has(row.event_type) &&
  ((subscription.inboxIds.size === 0 && subscription.podIds.size === 0) ||
    (row.inbox_id !== null && subscription.inboxIds.has(row.inbox_id)) ||
    (row.pod_id !== null && subscription.podIds.has(row.pod_id)))

/** A recorded event and its envelope's JSON text, as listeners are handed it. */
interface LiveEvent {
  readonly row: EventRow
  readonly frame: string
}

/** A listening connection: who it is, its current subscription, where its frames go. */
interface Listener {
  readonly principal: Principal
  readonly current: () => Subscription | undefined
  readonly deliver: (frame: string) => void
}

const decodeFrame = Schema.decodeUnknownEffect(Schema.fromJsonString(SubscribeFrame))

/** A connection refused by the caps: `server` (the process holds its maximum) or `key` (the key holds its own). */
export class ListenRefused extends Data.TaggedError("ListenRefused")<{ readonly cap: "server" | "key"; readonly limit: number }> {}

/** Who a per-key cap counts: the API key, or the dashboard user of a session. */
const holderOf = (principal: Principal): string =>
  principal.keyId !== undefined ? `key:${principal.keyId}` : `user:${principal.session?.userId ?? principal.organizationId}`

export class LiveEvents extends Context.Service<LiveEvents, {
  /**
   * A client frame: a new subscription and the `subscribed` echo, or an `error` frame
   * (malformed frame, an opt-in type without its permission, an inbox or pod not visible).
   */
  subscribe(principal: Principal, frame: string): Effect.Effect<{ readonly subscription?: Subscription; readonly reply: ServerFrame }>
  /**
   * Calls `deliver` with the event frames for one connection, until the scope closes: each
   * envelope as JSON text, serialised once for every connection, filtered by `wants` against
   * the connection's current subscription. `deliver` runs in the dispatching fiber, so it
   * must return at once (queue the frame on the connection, never wait for it to be sent).
   */
  listen(principal: Principal, current: () => Subscription | undefined, deliver: (frame: string) => void): Effect.Effect<void, ListenRefused, Scope.Scope>
}>()("inbox/LiveEvents") {
  static readonly layerNoDeps = Layer.effect(LiveEvents, Effect.gen(function*() {
    const signals = yield* Signals
    const events = yield* Events
    const inboxes = yield* Inboxes
    const pods = yield* Pods
    const settings = yield* Settings
    const ids = yield* Queue.unbounded<string>()
    yield* signals.subscribe(EVENTS_CHANNEL).pipe(Stream.runForEach((id) => Queue.offer(ids, id)), Effect.forkScoped)
    // The connections listening now. With none, a signalled batch is not read at all: an
    // event nobody listens to costs no query (one more statement per delivery otherwise),
    // and whoever subscribes later catches up through the events list, as after any absence.
    // Each a plain record, no closure of its own: a process may hold thousands.
    const listeners = new Set<Listener>()
    const perHolder = new Map<string, number>()
    // One read per batch of signalled ids, whatever the number of connections.
    yield* Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(ids, 1, 500)
      if (listeners.size === 0) return
      const rows = yield* events.byIds(batch)
      const order = new Map(batch.map((id, i) => [id, i]))
      for (const row of [...rows].sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0))) {
        // Serialised once here, not once per connection.
        const event = { row, frame: JSON.stringify(toEnvelope(row)) }
        for (const listener of listeners) {
          const subscription = listener.current()
          if (subscription !== undefined && wants(listener.principal, subscription, event.row)) listener.deliver(event.frame)
        }
      }
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("reading live events failed", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    return LiveEvents.of({
      subscribe: (principal, frame) =>
        Effect.gen(function*() {
          const decoded = yield* decodeFrame(frame).pipe(Effect.result)
          if (decoded._tag === "Failure") {
            const issue = issuesOf(decoded.failure.issue)[0]
            return { reply: errorFrame("ValidationError", issue === undefined ? "Invalid frame" : `${issue.path.join(".") || "frame"}: ${issue.message}`) }
          }
          const f = decoded.success
          const refused = unreadableOptIn(principal, f.event_types ?? [])
          if (refused !== undefined) {
            return { reply: errorFrame("ForbiddenError", `Subscribing to ${refused.type} needs the "${refused.permission}" permission.`) }
          }
          const inboxIds: Array<string> = []
          for (const id of f.inbox_ids ?? []) {
            const found = yield* inboxes.find(principal, id).pipe(Effect.result)
            if (found._tag === "Failure") return { reply: errorFrame("NotFoundError", `Inbox ${id} was not found.`) }
            inboxIds.push(found.success.id)
          }
          for (const id of f.pod_ids ?? []) {
            const found = yield* pods.get(principal, id).pipe(Effect.result)
            if (found._tag === "Failure") return { reply: errorFrame("NotFoundError", `Pod ${id} was not found.`) }
          }
          const subscription: Subscription = {
            eventTypes: new Set<EventType>(f.event_types ?? DEFAULT_EVENT_TYPES),
            inboxIds: new Set(inboxIds),
            podIds: new Set(f.pod_ids ?? [])
          }
          const reply: ServerFrame = {
            type: "subscribed",
            ...(f.event_types === undefined ? {} : { event_types: f.event_types }),
            ...(f.inbox_ids === undefined ? {} : { inbox_ids: f.inbox_ids }),
            ...(f.pod_ids === undefined ? {} : { pod_ids: f.pod_ids })
          }
          return { subscription, reply }
        }),
      listen: (principal, current, deliver) =>
        Effect.acquireRelease(
          Effect.suspend(() => {
            const holder = holderOf(principal)
            const held = perHolder.get(holder) ?? 0
            if (listeners.size >= settings.maxWebSockets) return Effect.fail(new ListenRefused({ cap: "server", limit: settings.maxWebSockets }))
            if (held >= settings.maxWebSocketsPerKey) return Effect.fail(new ListenRefused({ cap: "key", limit: settings.maxWebSocketsPerKey }))
            const listener: Listener = { principal, current, deliver }
            listeners.add(listener)
            perHolder.set(holder, held + 1)
            return Effect.succeed({ listener, holder })
          }),
          ({ holder, listener }) =>
            Effect.sync(() => {
              listeners.delete(listener)
              const left = (perHolder.get(holder) ?? 1) - 1
              if (left <= 0) perHolder.delete(holder)
              else perHolder.set(holder, left)
            })
        ).pipe(Effect.asVoid)
    })
  }))

  /** With the services it uses (Events, Inboxes, Pods); the ports are the caller's. */
  static readonly layer = LiveEvents.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Events.layer, Inboxes.layer, Pods.layer)))
}
