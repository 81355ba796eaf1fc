/**
 * The payload of each event type (spec: Events; ours where the spec is silent,
 * docs/events.md), and the envelope as one union of them, so the list, the WebSocket, webhooks
 * and MCP's output schema all describe exactly what is sent.
 */
import { Schema } from "effect"
import { Message, MessageSummary, ThreadSummary } from "../messages/model.ts"
import { Timestamp } from "../shared/time.ts"
import type { EventType } from "./catalogue.ts"

const Ref = {
  inbox_id: Schema.String,
  thread_id: Schema.String,
  message_id: Schema.String,
  timestamp: Timestamp
}

const received = { message: Message, thread: ThreadSummary }

/** The payload member(s) of each type. */
export const EVENT_PAYLOADS = {
  "message.received": received,
  "message.received.spam": received,
  "message.received.blocked": received,
  "message.received.unauthenticated": received,
  "message.sent": { send: Schema.Struct({ ...Ref, recipients: Schema.Array(Schema.String) }) },
  "message.delivered": { delivery: Schema.Struct({ ...Ref, recipients: Schema.Array(Schema.String) }) },
  "message.bounced": {
    bounce: Schema.Struct({
      ...Ref,
      type: Schema.Literals(["hard", "soft"]),
      sub_type: Schema.String,
      recipients: Schema.Array(Schema.Struct({ address: Schema.String, status: Schema.String }))
    })
  },
  "message.complained": {
    complaint: Schema.Struct({ ...Ref, type: Schema.String, sub_type: Schema.String, recipients: Schema.Array(Schema.String) })
  },
  "message.rejected": {
    reject: Schema.Struct({
      inbox_id: Schema.String,
      message_id: Schema.String,
      thread_id: Schema.optionalKey(Schema.String),
      timestamp: Schema.optionalKey(Timestamp),
      reason: Schema.String,
      recipients: Schema.Array(Schema.String)
    })
  },
  "message.opened": {
    message: MessageSummary,
    thread: ThreadSummary,
    open: Schema.Struct({ ...Ref, open_count: Schema.Number, via_proxy: Schema.Boolean })
  },
  "domain.verified": {
    domain: Schema.Struct({ domain_id: Schema.String, domain: Schema.String, status: Schema.optionalKey(Schema.String) })
  }
} as const satisfies Record<EventType, Schema.Struct.Fields>

const envelopeOf = <T extends EventType>(type: T) =>
  Schema.Struct({
    type: Schema.Literal("event"),
    event_type: Schema.Literal(type),
    event_id: Schema.String,
    inbox_id: Schema.optionalKey(Schema.String),
    pod_id: Schema.optionalKey(Schema.String),
    created_at: Timestamp,
    ...EVENT_PAYLOADS[type]
  })

/** The envelope (spec: Event): `type` is always `event`, then the type's payload member(s). */
export const EventEnvelope = Schema.Union((Object.keys(EVENT_PAYLOADS) as Array<EventType>).map(envelopeOf))
