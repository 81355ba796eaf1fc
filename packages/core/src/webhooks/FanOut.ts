/**
 * The webhook side of recording an event: in the event's own transaction, one delivery row
 * and one durable job (kind `webhook.delivery`) per enabled webhook that wants the event
 * (its `event_types`, its scope, its `inbox_ids` / `pod_ids`). So an event that committed
 * has its deliveries however the process dies right after, and a rolled-back change has
 * none. Which webhooks want an event is asked in the statement that inserts the event
 * (`matching`, Events.record): a delivery's round trips are most of its cost, and most
 * events have no webhook to go to.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Jobs } from "../jobs/Jobs.ts"
import { Ids } from "../platform/Ids.ts"

/** The job kind of one webhook delivery. */
export const DELIVERY_JOB = "webhook.delivery"

export interface FannedEvent {
  readonly id: string
  readonly organizationId: string
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
  readonly type: string
  readonly at: Date
}

export class WebhookFanOut extends Context.Service<WebhookFanOut, {
  /**
   * A SELECT of `(event_id, id)`: for each event, the enabled webhooks that want it (its
   * types, its scope, its inboxes and pods).
   */
  matching(events: ReadonlyArray<FannedEvent>): Statement.Fragment
  /**
   * Writes one delivery and its job for each webhook `matching` chose for each event, in the
   * current transaction; answers the new deliveries' ids in order.
   */
  enqueue(wanted: ReadonlyArray<{ readonly event: FannedEvent; readonly hookIds: ReadonlyArray<string> }>): Effect.Effect<ReadonlyArray<string>>
}>()("inbox/WebhookFanOut") {
  static readonly layerNoDeps = Layer.effect(WebhookFanOut, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const jobs = yield* Jobs
    return WebhookFanOut.of({
      matching: (events) =>
        // An event without a pod or inbox travels as '' (the driver cannot type an array of nulls alone).
        sql`SELECT e.id AS event_id, w.id FROM (
            SELECT id, organization_id, event_type, NULLIF(pod, '') AS pod_id, NULLIF(inbox, '') AS inbox_id FROM unnest(
              ${events.map((e) => e.id)}::text[], ${events.map((e) => e.organizationId)}::text[], ${events.map((e) => e.type)}::text[],
              ${events.map((e) => e.podId ?? "")}::text[], ${events.map((e) => e.inboxId ?? "")}::text[]
            ) AS u (id, organization_id, event_type, pod, inbox)
          ) AS e
          JOIN webhooks w ON w.organization_id = e.organization_id AND w.enabled AND e.event_type = ANY(w.event_types)
            AND (w.pod_id IS NULL OR w.pod_id = e.pod_id) AND (w.inbox_id IS NULL OR w.inbox_id = e.inbox_id)
            AND ((cardinality(w.inbox_ids) = 0 AND cardinality(w.pod_ids) = 0)
              OR e.inbox_id = ANY(w.inbox_ids) OR e.pod_id = ANY(w.pod_ids))`,
      enqueue: Effect.fn("WebhookFanOut.enqueue")(function*(wanted: ReadonlyArray<{ readonly event: FannedEvent; readonly hookIds: ReadonlyArray<string> }>) {
        const deliveries: Array<Record<string, unknown>> = []
        for (const { event, hookIds } of wanted) {
          for (const hook of hookIds) {
            deliveries.push({
              id: yield* ids.make("dlv"),
              webhook_id: hook,
              organization_id: event.organizationId,
              event_id: event.id,
              event_type: event.type,
              status: "pending",
              attempts: 0,
              created_at: event.at,
              updated_at: event.at
            })
          }
        }
        if (deliveries.length === 0) return []
        // Every delivery row and its job in one statement: a round trip for all of a change's events.
        yield* jobs.enqueueMany(
          deliveries.map((d) => ({ kind: DELIVERY_JOB, payload: { delivery_id: d["id"] }, key: d["id"] as string })),
          sql`delivery AS (INSERT INTO webhook_deliveries ${sql.insert(deliveries as never)})`
        )
        return deliveries.map((d) => d["id"] as string)
      })
    })
  }))

  /** With the services it uses (Jobs); the ports are the caller's. */
  static readonly layer = WebhookFanOut.layerNoDeps.pipe(Layer.provide(Jobs.layer))
}
