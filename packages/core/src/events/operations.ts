/**
 * The events list (spec: Events): `GET /v0/events` (needs `message_read`, as the spec says)
 * and `GET /v0/inboxes/:inbox_id/events`, newest first, each key seeing the events of its
 * scope, and the opt-in `message.received.*` types only with the matching `label_*_read`.
 * A client that was disconnected catches up here.
 */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { EventEnvelope, Events, ListEventsQuery } from "./Events.ts"

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
    Events.use((events) => Effect.map(events.list(principal, input, params.inbox_id), (page) => listBody("events", page)))
})

export const eventOperations = [listEvents]
