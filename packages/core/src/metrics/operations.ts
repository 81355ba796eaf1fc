/** The metrics operations of the catalogue (spec: Metrics), all under `metrics_read`. */
import { operation, Output, route } from "../catalogue/Operation.ts"
import { EventCounts, EventSeries, EventsQuery, Metrics, RatesQuery, RatesSeries, UsageQuery, UsageSeries } from "./Metrics.ts"

export const usageMetrics = operation({
  name: "metrics.usage",
  summary: "Running totals per bucket of storage_bytes, message_count, thread_count, inbox_count, domain_count and pod_count.",
  routes: [
    route.get("/v0/metrics/usage"),
    route.get("/v0/pods/:pod_id/metrics/usage"),
    route.get("/v0/inboxes/:inbox_id/metrics/usage")
  ],
  access: { kind: "member", permission: "metrics_read" },
  query: UsageQuery,
  output: Output.json(UsageSeries),
  mutates: false,
  mcp: { tool: "get_usage_metrics" },
  cli: { command: "metrics usage" },
  run: ({ principal, params, input }) =>
    Metrics.use((m) => m.usage(principal, { podId: params.pod_id, inboxId: params.inbox_id }, input))
})

export const eventMetrics = operation({
  name: "metrics.events",
  summary: "How many events of each type happened between start and end, and their total.",
  routes: [route.get("/v0/metrics/events")],
  access: { kind: "member", permission: "metrics_read" },
  query: EventsQuery,
  output: Output.json(EventCounts),
  mutates: false,
  mcp: { tool: "get_event_metrics" },
  cli: { command: "metrics events" },
  run: ({ principal, input }) => Metrics.use((m) => m.events(principal, input))
})

export const eventSeriesMetrics = operation({
  name: "metrics.eventSeries",
  summary: "A pod's or an inbox's events of each type per bucket of period (the last limit buckets, or start to end), as { <event_type>: [{ timestamp, count }] }.",
  routes: [route.get("/v0/pods/:pod_id/metrics/events"), route.get("/v0/inboxes/:inbox_id/metrics/events")],
  access: { kind: "member", permission: "metrics_read" },
  query: EventsQuery,
  output: Output.json(EventSeries),
  mutates: false,
  mcp: { tool: "get_event_series" },
  cli: { command: "metrics event-series" },
  run: ({ principal, params, input }) =>
    Metrics.use((m) => m.eventSeries(principal, { podId: params.pod_id, inboxId: params.inbox_id }, input))
})

export const rateMetrics = operation({
  name: "metrics.rates",
  summary: "Bounce, complaint and open rates per recipient sent, per bucket; rate is null when nothing was sent.",
  routes: [
    route.get("/v0/metrics/rates"),
    route.get("/v0/pods/:pod_id/metrics/rates"),
    route.get("/v0/inboxes/:inbox_id/metrics/rates")
  ],
  access: { kind: "member", permission: "metrics_read" },
  query: RatesQuery,
  output: Output.json(RatesSeries),
  mutates: false,
  mcp: { tool: "get_rate_metrics" },
  cli: { command: "metrics rates" },
  run: ({ principal, params, input }) =>
    Metrics.use((m) => m.rates(principal, { podId: params.pod_id, inboxId: params.inbox_id }, input))
})

export const metricsOperations = [usageMetrics, eventMetrics, eventSeriesMetrics, rateMetrics]
