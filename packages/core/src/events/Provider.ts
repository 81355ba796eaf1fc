/**
 * The mail provider's delivery events (DESIGN.md contract; spec: Operator routes, States:
 * suppression), received at `POST /inbound/mail-provider-events`, signed like our webhooks
 * (checked before this runs: catalogue/operator.ts). Each names a message we sent by its
 * RFC Message-ID:
 * - `delivered` records `message.delivered`;
 * - `bounced` records `message.bounced`, and a hard bounce suppresses the recipients;
 * - `complained` suppresses the recipients and records `message.complained`;
 * - `rejected` records `message.rejected`.
 * Suppressions carry `reason`, `source_message_id`, `inbox_id` and `thread_id`. A report
 * that arrived as mail (a DSN or ARF report: Inbound.ts) keeps only the recipients the
 * message was sent to. An event
 * is applied once by its `webhook-id` (a provider's retry answers `duplicate`), in one
 * transaction with its events and suppressions; a Message-ID we never sent is accepted and
 * ignored (the provider would otherwise retry it forever).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Line } from "../shared/fields.ts"
import { iso, now } from "../shared/time.ts"
import { Suppressions } from "../suppressions/Suppressions.ts"
import { Events } from "./Events.ts"

export const ProviderEvent = Schema.Struct({
  type: Schema.Literals(["delivered", "bounced", "complained", "rejected"]),
  rfc_message_id: Line(998),
  recipients: Schema.Array(Line(512)).check(Schema.isMaxLength(1000)),
  bounce_type: Schema.optionalKey(Schema.Literals(["hard", "soft"])),
  sub_type: Schema.optionalKey(Line(128)),
  reason: Schema.optionalKey(Line(2048)),
  timestamp: Schema.optionalKey(Line(64))
})
export type ProviderEvent = typeof ProviderEvent.Type

export const ProviderEventResult = Schema.Struct({
  status: Schema.Literals(["applied", "duplicate", "ignored"]),
  event_id: Schema.optionalKey(Schema.String)
})

const Sent = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  inbox_id: Schema.String,
  thread_id: Schema.String,
  recipient_addresses: Schema.Array(Schema.String)
})

/** Message-IDs are stored with their angle brackets; providers send them with or without. */
const bracketed = (id: string) => {
  const bare = id.trim().replace(/^<|>$/g, "")
  return `<${bare}>`
}

export class ProviderEvents extends Context.Service<ProviderEvents, {
  /**
   * `inboxIds` narrows the sent messages the event may name to those inboxes: a report that
   * arrived as mail at some inboxes speaks only of what those inboxes sent.
   */
  apply(webhookId: string, event: ProviderEvent, inboxIds?: ReadonlyArray<string>): Effect.Effect<typeof ProviderEventResult.Type>
}>()("inbox/ProviderEvents") {
  static readonly layerNoDeps = Layer.effect(ProviderEvents, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    const suppressions = yield* Suppressions
    return ProviderEvents.of({
      apply: Effect.fn("ProviderEvents.apply")(function*(webhookId, event, inboxIds) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const at = yield* now
          const id = event.rfc_message_id.trim()
          const rows = yield* sql`SELECT id, organization_id, pod_id, inbox_id, thread_id, recipient_addresses FROM messages
            WHERE direction = 'sent' AND rfc_message_id IN (${bracketed(id)}, ${id.replace(/^<|>$/g, "")})
            ${inboxIds === undefined ? sql`` : sql`AND inbox_id = ANY(${inboxIds}::text[])`}
            ORDER BY created_at LIMIT 1`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Sent))), Effect.orDie)
          const message = rows[0]
          // Looked up first: an event about a message we never sent leaves no trace, so the
          // same report arriving again is ignored again (and, by mail, stored as mail again).
          if (message === undefined) return { status: "ignored" as const }
          // A report that came as mail is unsigned: anyone who got the message knows its
          // Message-ID. It speaks only for the addresses the message went to, so a forged one
          // cannot suppress anyone else; with none of them left it is not a report of ours.
          const sentTo = new Set(message.recipient_addresses.map((a) => a.toLowerCase()))
          const recipients = event.recipients.map((r) => r.trim())
            .filter((address) => inboxIds === undefined || sentTo.has(address.toLowerCase()))
          if (recipients.length === 0) return { status: "ignored" as const }
          const fresh = yield* sql`INSERT INTO provider_events (webhook_id, received_at) VALUES (${webhookId}, ${at})
            ON CONFLICT (webhook_id) DO NOTHING RETURNING webhook_id`
          if (fresh.length === 0) return { status: "duplicate" as const }
          const given = event.timestamp === undefined ? undefined : new Date(event.timestamp)
          const timestamp = iso(given !== undefined && !Number.isNaN(given.getTime()) ? given : at)
          const ref = { inbox_id: message.inbox_id, thread_id: message.thread_id, message_id: message.id, timestamp }
          const suppress = (reason: "bounce" | "complaint") =>
            Effect.forEach(recipients, (address) =>
              suppressions.add(message.organization_id, {
                address,
                reason,
                source_message_id: message.id,
                inbox_id: message.inbox_id,
                thread_id: message.thread_id
              }), { discard: true })
          const record = (type: "message.delivered" | "message.bounced" | "message.complained" | "message.rejected", payload: Record<string, unknown>) =>
            events.record({ organizationId: message.organization_id, podId: message.pod_id, inboxId: message.inbox_id, type, payload })
          let eventId: string
          switch (event.type) {
            case "delivered":
              eventId = yield* record("message.delivered", { delivery: { ...ref, recipients } })
              break
            case "bounced": {
              const type = event.bounce_type ?? "hard"
              if (type === "hard") yield* suppress("bounce")
              eventId = yield* record("message.bounced", {
                bounce: { ...ref, type, sub_type: event.sub_type ?? "general", recipients: recipients.map((address) => ({ address, status: "bounced" })) }
              })
              break
            }
            case "complained":
              yield* suppress("complaint")
              eventId = yield* record("message.complained", { complaint: { ...ref, type: "complaint", sub_type: event.sub_type ?? "abuse", recipients } })
              break
            case "rejected":
              eventId = yield* record("message.rejected", {
                reject: { ...ref, reason: event.reason ?? "The mail provider rejected the message.", recipients }
              })
              break
          }
          return { status: "applied" as const, event_id: eventId }
        })).pipe(Effect.orDie)
      })
    })
  }))

  /** With the services it uses (Events, Suppressions); the ports are the caller's. */
  static readonly layer = ProviderEvents.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Events.layer, Suppressions.layer)))
}
