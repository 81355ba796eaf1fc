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
  /** A SELECT of the ids of the enabled webhooks that want the event (its types, its scope, its inboxes and pods). */
  matching(event: FannedEvent): Statement.Fragment
  /** Writes one delivery and its job for each webhook `matching` chose, in the current transaction. */
  enqueue(event: FannedEvent, hookIds: ReadonlyArray<string>): Effect.Effect<void>
}>()("inbox/WebhookFanOut") {
  static readonly layer = Layer.effect(WebhookFanOut, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const jobs = yield* Jobs
    return WebhookFanOut.of({
      matching: (event) => {
        const pod = event.podId ?? null
        const inbox = event.inboxId ?? null
        return sql`SELECT id FROM webhooks
          WHERE organization_id = ${event.organizationId} AND enabled AND ${event.type} = ANY(event_types)
            AND (pod_id IS NULL OR pod_id = ${pod}) AND (inbox_id IS NULL OR inbox_id = ${inbox})
            AND ((cardinality(inbox_ids) = 0 AND cardinality(pod_ids) = 0)
              OR ${inbox}::text = ANY(inbox_ids) OR ${pod}::text = ANY(pod_ids))`
      },
      enqueue: Effect.fn("WebhookFanOut.enqueue")(function*(event: FannedEvent, hookIds: ReadonlyArray<string>) {
        for (const hook of hookIds) {
          const id = yield* ids.make("dlv")
          // The delivery row and its job in one statement: a round trip fewer per event.
          yield* jobs.enqueue({
            kind: DELIVERY_JOB,
            payload: { delivery_id: id },
            key: id,
            alongside: sql`delivery AS (INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, status, attempts, created_at, updated_at)
              VALUES (${id}, ${hook}, ${event.organizationId}, ${event.id}, ${event.type}, 'pending', 0, ${event.at}, ${event.at}))`
          })
        }
      })
    })
  }))
}
