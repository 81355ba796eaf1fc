/**
 * The events list (spec: Events): `GET /v0/events` (needs `message_read`, as the spec says)
 * and `GET /v0/inboxes/:inbox_id/events`, newest first, each key seeing the events of its
 * scope, and the opt-in `message.received.*` types only with the matching `label_*_read`.
 * A client that was disconnected catches up here.
 */
import { Effect, Schema, Stream } from "effect"
import { Opens, PIXEL } from "./Opens.ts"
import { jsonBodyOf } from "../shared/json.ts"
import { Line } from "../shared/fields.ts"
import { decodeInput } from "../shared/validation.ts"
import { ProviderEvent, ProviderEventResult, ProviderEvents } from "./Provider.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { EventEnvelope, Events, ListEventsQuery } from "./Events.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"

export const listEvents = operation({
  name: "events.list",
  summary: "List events (message.received, message.sent, ...) newest first, of the organization or of one inbox (inbox_id); for catching up after downtime.",
  routes: [route.get("/v0/events"), route.get("/v0/inboxes/:inbox_id/events")],
  access: { kind: "member", permission: "message_read" },
  query: ListEventsQuery,
  output: Output.list("events", EventEnvelope),
  mutates: false,
  mcp: { tool: "list_events" },
  cli: { command: "events list", columns: ["event_id", "event_type", "inbox_id", "created_at"] },
  run: ({ principal, params, input }) =>
    Effect.gen(function*() {
      // The path's inbox is resolved here, not in Events: Events sits below Inboxes in the
      // engine (custom domains, under inboxes, write events), so it cannot ask Inboxes.
      const inbox = params.inbox_id === undefined ? undefined : (yield* (yield* Inboxes).find(principal, params.inbox_id)).id
      return listBody("events", yield* (yield* Events).list(principal, input, inbox))
    })
})


export const receiveProviderEvent = operation({
  name: "inbound.providerEvents",
  summary: "The mail provider's delivery events (delivered, bounced, complained, rejected), signed with INBOX_PROVIDER_EVENTS_SECRET; applied once per webhook-id.",
  routes: [route.post("/inbound/mail-provider-events")],
  access: { kind: "operator", credential: "provider_signature" },
  headers: Schema.Struct({ "webhook-id": Line(256) }),
  raw: { maxBytes: 256 * 1024 },
  output: Output.json(ProviderEventResult),
  mutates: true,
  mcp: { exclude: "an operator route: the mail provider calls it, signed with the provider events secret" },
  cli: { exclude: "an operator route: the mail provider calls it over HTTP" },
  run: ({ headers, raw }) =>
    Effect.gen(function*() {
      const parsed = yield* jsonBodyOf(raw)
      const event = yield* decodeInput(ProviderEvent, parsed)
      return yield* ProviderEvents.use((p) => p.apply(headers["webhook-id"], event))
    })
})


export const openPixel = operation({
  name: "tracking.open",
  summary: "The open-tracking pixel of a message sent with track_opens: a 1x1 GIF; the first fetch records message.opened.",
  routes: [route.get("/t/o/:file")],
  access: { kind: "public" },
  headers: Schema.Struct({ "user-agent": Schema.optionalKey(Schema.String) }),
  output: Output.download,
  mutates: true,
  mcp: { exclude: "fetched by mail readers, not API clients" },
  cli: { exclude: "fetched by mail readers, not API clients" },
  run: ({ params, headers }) =>
    Effect.as(Opens.use((o) => o.open(params.file, headers["user-agent"])), {
      contentType: "image/gif",
      size: PIXEL.length,
      headers: { "cache-control": "no-store, no-cache, must-revalidate, private" },
      body: Stream.make(new Uint8Array(PIXEL))
    })
})

export const eventOperations = [listEvents, receiveProviderEvent, openPixel]
