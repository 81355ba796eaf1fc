/**
 * Events: the record of everything the service does. `record` writes one event row with
 * the statement that runs it, so a caller inside a transaction makes the change and its
 * event commit together, or neither (an outbox: an event exists if and only if its change
 * committed). Reading, pushing and delivering events build on these rows.
 *
 * The stored payload is the envelope's payload member(s) (`{ message, thread }`,
 * `{ send }`, ...); the envelope (`type`, `event_type`, `event_id`, `inbox_id`, `pod_id`,
 * `created_at`) is assembled from the row's columns when read.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Ids } from "../platform/Ids.ts"
import { now } from "../shared/time.ts"
import type { EventType } from "./catalogue.ts"

export interface NewEvent {
  readonly organizationId: string
  readonly podId?: string
  readonly inboxId?: string
  readonly type: EventType
  readonly payload: Readonly<Record<string, unknown>>
}

export class Events extends Context.Service<Events, {
  /** Writes the event in the current transaction (if any); answers its id. */
  record(event: NewEvent): Effect.Effect<string>
}>()("inbox/Events") {
  static readonly layer = Layer.effect(Events, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    return Events.of({
      record: Effect.fn("Events.record")(function*(event: NewEvent) {
        const id = yield* ids.make("evt")
        const at = yield* now
        yield* sql`INSERT INTO events (id, organization_id, pod_id, inbox_id, event_type, payload, created_at)
          VALUES (${id}, ${event.organizationId}, ${event.podId ?? null}, ${event.inboxId ?? null}, ${event.type},
            ${JSON.stringify(event.payload)}::jsonb, ${at})`.pipe(Effect.orDie)
        return id
      })
    })
  }))
}
