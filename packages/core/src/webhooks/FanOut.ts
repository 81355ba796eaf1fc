/**
 * The webhook side of recording an event: in the event's own transaction, one delivery row
 * and one durable job (kind `webhook.delivery`) per enabled webhook that wants the event
 * (its `event_types`, its scope, its `inbox_ids` / `pod_ids`). So an event that committed
 * has its deliveries however the process dies right after, and a rolled-back change has
 * none. Finding no webhook is one indexed query on the organization's webhooks.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
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
  enqueue(event: FannedEvent): Effect.Effect<void>
}>()("inbox/WebhookFanOut") {
  static readonly layer = Layer.effect(WebhookFanOut, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const jobs = yield* Jobs
    return WebhookFanOut.of({
      enqueue: Effect.fn("WebhookFanOut.enqueue")(function*(event: FannedEvent) {
        const pod = event.podId ?? null
        const inbox = event.inboxId ?? null
        const hooks = yield* sql<{ id: string }>`SELECT id FROM webhooks
          WHERE organization_id = ${event.organizationId} AND enabled AND ${event.type} = ANY(event_types)
            AND (pod_id IS NULL OR pod_id = ${pod}) AND (inbox_id IS NULL OR inbox_id = ${inbox})
            AND ((cardinality(inbox_ids) = 0 AND cardinality(pod_ids) = 0)
              OR ${inbox}::text = ANY(inbox_ids) OR ${pod}::text = ANY(pod_ids))`.pipe(Effect.orDie)
        for (const hook of hooks) {
          const id = yield* ids.make("dlv")
          yield* sql`INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, status, attempts, created_at, updated_at)
            VALUES (${id}, ${hook.id}, ${event.organizationId}, ${event.id}, ${event.type}, 'pending', 0, ${event.at}, ${event.at})`.pipe(Effect.orDie)
          yield* jobs.enqueue({ kind: DELIVERY_JOB, payload: { delivery_id: id }, key: id })
        }
      })
    })
  }))
}
