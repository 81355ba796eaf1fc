/**
 * The webhook operations of the catalogue (spec: Webhooks). Create and list at
 * `/v0/webhooks`, `/v0/pods/:pod_id/webhooks` and `/v0/inboxes/:inbox_id/webhooks`; the
 * item routes (get, PATCH, DELETE, headers) at `/v0/webhooks/:webhook_id` and under the pod
 * and inbox prefixes (there the webhook must be that pod's or inbox's); deliveries at
 * `/v0/webhooks/:webhook_id/deliveries`, one with its payload and its redelivery (a new
 * delivery of the same event, our addition: the spec has none) under it; a signed test event sent on demand at
 * `/v0/webhooks/:webhook_id/test`. Permissions `webhook_create`, `webhook_read`,
 * `webhook_update` (the test too), `webhook_delete`.
 */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { optInPermissions } from "../events/catalogue.ts"
import { listBody } from "../shared/pagination.ts"
import {
  CreateWebhookInput,
  Delivery,
  DeliveryDetail,
  HeaderNames,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  UpdateHeadersInput,
  UpdateWebhookInput,
  TEST_EVENT_TYPE,
  Webhook,
  Webhooks,
  WebhookTestResult
} from "./Webhooks.ts"

const COLUMNS = ["webhook_id", "url", "enabled", "event_types", "created_at"]
const PATH_NOTE = "Give pod_id or inbox_id for a pod's or an inbox's webhooks."

const pathOf = (params: { readonly pod_id?: string | undefined; readonly inbox_id?: string | undefined }) => ({
  podId: params.pod_id,
  inboxId: params.inbox_id
})

export const createWebhook = operation({
  name: "webhooks.create",
  summary: `Create a webhook: events are POSTed to its public https url, signed with the secret shown only in this answer. ${PATH_NOTE}`,
  routes: [route.post("/v0/webhooks"), route.post("/v0/pods/:pod_id/webhooks"), route.post("/v0/inboxes/:inbox_id/webhooks")],
  access: { kind: "member", permission: "webhook_create" },
  body: CreateWebhookInput,
  // An opt-in type goes only to a webhook made by a key that may read it (as the events list
  // and the WebSocket), else any key with webhook_create could read spam and blocked mail.
  permissionsFor: (input) => optInPermissions(input.event_types ?? []),
  output: Output.json(Webhook),
  mutates: true,
  mcp: { tool: "create_webhook" },
  cli: { command: "webhooks create", columns: [...COLUMNS, "secret"] },
  run: ({ principal, params, input }) => Webhooks.use((w) => w.create(principal, pathOf(params), input))
})

export const listWebhooks = operation({
  name: "webhooks.list",
  summary: `List webhooks, newest first (no secrets). ${PATH_NOTE}`,
  routes: [route.get("/v0/webhooks"), route.get("/v0/pods/:pod_id/webhooks"), route.get("/v0/inboxes/:inbox_id/webhooks")],
  access: { kind: "member", permission: "webhook_read" },
  query: ListWebhooksQuery,
  output: Output.list("webhooks", Webhook),
  mutates: false,
  mcp: { tool: "list_webhooks" },
  cli: { command: "webhooks list", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Webhooks.use((w) => Effect.map(w.list(principal, pathOf(params), input), (page) => listBody("webhooks", page)))
})

export const getWebhook = operation({
  name: "webhooks.get",
  summary: "Get a webhook (no secret).",
  routes: [
    route.get("/v0/webhooks/:webhook_id"),
    route.get("/v0/pods/:pod_id/webhooks/:webhook_id"),
    route.get("/v0/inboxes/:inbox_id/webhooks/:webhook_id")
  ],
  access: { kind: "member", permission: "webhook_read" },
  output: Output.json(Webhook),
  mutates: false,
  mcp: { tool: "get_webhook" },
  cli: { command: "webhooks get", columns: COLUMNS },
  run: ({ principal, params }) => Webhooks.use((w) => w.get(principal, pathOf(params), params.webhook_id))
})

export const updateWebhook = operation({
  name: "webhooks.update",
  summary: "Change a webhook's url, enabled, event_types, or its scope (inbox_ids, pod_ids). A disabled webhook is not called.",
  routes: [
    route.patch("/v0/webhooks/:webhook_id"),
    route.patch("/v0/pods/:pod_id/webhooks/:webhook_id"),
    route.patch("/v0/inboxes/:inbox_id/webhooks/:webhook_id")
  ],
  access: { kind: "member", permission: "webhook_update" },
  body: UpdateWebhookInput,
  permissionsFor: (input) => optInPermissions(input.event_types ?? []),
  output: Output.json(Webhook),
  mutates: true,
  mcp: { tool: "update_webhook" },
  cli: { command: "webhooks update", columns: COLUMNS },
  run: ({ principal, params, input }) => Webhooks.use((w) => w.update(principal, pathOf(params), params.webhook_id, input))
})

export const deleteWebhook = operation({
  name: "webhooks.delete",
  summary: "Delete a webhook and its deliveries.",
  routes: [
    route.delete("/v0/webhooks/:webhook_id"),
    route.delete("/v0/pods/:pod_id/webhooks/:webhook_id"),
    route.delete("/v0/inboxes/:inbox_id/webhooks/:webhook_id")
  ],
  access: { kind: "member", permission: "webhook_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_webhook" },
  cli: { command: "webhooks delete" },
  run: ({ principal, params }) => Webhooks.use((w) => w.delete(principal, pathOf(params), params.webhook_id))
})

export const getWebhookHeaders = operation({
  name: "webhooks.headers",
  summary: "The names of a webhook's custom request headers (values are write-only).",
  routes: [
    route.get("/v0/webhooks/:webhook_id/headers"),
    route.get("/v0/pods/:pod_id/webhooks/:webhook_id/headers"),
    route.get("/v0/inboxes/:inbox_id/webhooks/:webhook_id/headers")
  ],
  access: { kind: "member", permission: "webhook_read" },
  output: Output.json(HeaderNames),
  mutates: false,
  mcp: { tool: "get_webhook_headers" },
  cli: { command: "webhooks headers" },
  run: ({ principal, params }) => Webhooks.use((w) => w.headers(principal, pathOf(params), params.webhook_id))
})

export const updateWebhookHeaders = operation({
  name: "webhooks.updateHeaders",
  summary: "Set (set: name to value) or remove (remove: names) custom request headers of a webhook; answers the names.",
  routes: [
    route.patch("/v0/webhooks/:webhook_id/headers"),
    route.patch("/v0/pods/:pod_id/webhooks/:webhook_id/headers"),
    route.patch("/v0/inboxes/:inbox_id/webhooks/:webhook_id/headers")
  ],
  access: { kind: "member", permission: "webhook_update" },
  body: UpdateHeadersInput,
  output: Output.json(HeaderNames),
  mutates: true,
  mcp: { tool: "update_webhook_headers" },
  cli: { command: "webhooks set-headers" },
  run: ({ principal, params, input }) => Webhooks.use((w) => w.updateHeaders(principal, pathOf(params), params.webhook_id, input))
})

export const listDeliveries = operation({
  name: "webhooks.deliveries",
  summary: "List a webhook's deliveries, newest first (20 by default, up to 100): status, status_code, attempts, error.",
  routes: [route.get("/v0/webhooks/:webhook_id/deliveries")],
  access: { kind: "member", permission: "webhook_read" },
  query: ListDeliveriesQuery,
  output: Output.list("deliveries", Delivery),
  mutates: false,
  mcp: { tool: "list_webhook_deliveries" },
  cli: { command: "webhooks deliveries", columns: ["delivery_id", "event_type", "status", "status_code", "attempts", "error", "created_at"] },
  run: ({ principal, params, input }) =>
    Webhooks.use((w) => Effect.map(w.deliveries(principal, params.webhook_id, input), (page) => listBody("deliveries", page)))
})

export const getDelivery = operation({
  name: "webhooks.delivery",
  summary: "One delivery of a webhook with its payload: the event's envelope as POSTed (absent once the event is past retention).",
  routes: [route.get("/v0/webhooks/:webhook_id/deliveries/:delivery_id")],
  access: { kind: "member", permission: "webhook_read" },
  output: Output.json(DeliveryDetail),
  mutates: false,
  mcp: { tool: "get_webhook_delivery" },
  cli: { command: "webhooks delivery" },
  run: ({ principal, params }) => Webhooks.use((w) => w.delivery(principal, params.webhook_id, params.delivery_id))
})

export const redeliver = operation({
  name: "webhooks.redeliver",
  summary:
    "Send a delivery's event to the webhook again: answers 202 with a new pending delivery (same event, so the same webhook-id; its own attempts and retries). 404 once the event is past retention.",
  routes: [route.post("/v0/webhooks/:webhook_id/deliveries/:delivery_id/redeliver")],
  access: { kind: "member", permission: "webhook_update" },
  output: Output.accepted(Delivery),
  mutates: true,
  mcp: { tool: "redeliver_webhook_delivery" },
  cli: { command: "webhooks redeliver", columns: ["delivery_id", "event_type", "status", "created_at"] },
  run: ({ principal, params }) => Webhooks.use((w) => w.redeliver(principal, params.webhook_id, params.delivery_id))
})

export const testWebhook = operation({
  name: "webhooks.test",
  summary: `Send a signed test event (event_type "${TEST_EVENT_TYPE}") to the webhook's URL now and answer what the endpoint said. Nothing is stored or retried.`,
  routes: [route.post("/v0/webhooks/:webhook_id/test")],
  access: { kind: "member", permission: "webhook_update" },
  output: Output.json(WebhookTestResult),
  mutates: true,
  mcp: { tool: "test_webhook" },
  cli: { command: "webhooks test", columns: ["event_id", "delivered", "status_code", "error"] },
  run: ({ principal, params }) => Webhooks.use((w) => w.test(principal, params.webhook_id))
})

export const webhookOperations = [
  createWebhook,
  listWebhooks,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  getWebhookHeaders,
  updateWebhookHeaders,
  listDeliveries,
  getDelivery,
  redeliver,
  testWebhook
]
