/**
 * Inbound: a raw message arrives (from the operator's forwarder on /inbound/raw, from
 * `inboxctl inbound`, or from another inbox of this server) and is stored in every hosted
 * inbox it is addressed to, labelled, threaded, with its event, in one transaction. The
 * caller answers success only after that commit, so an acknowledged message is never lost.
 *
 * Rules (README, "Receiving mail"):
 * - parsed once, whatever the number of inboxes; addresses not hosted here are skipped and
 *   named in the answer; none hosted is 404 not_found;
 * - labels `received` and `unread`, plus:
 *   - `unauthenticated` when DMARC fails, or, with no DMARC verdict (absent or `none`),
 *     when SPF and DKIM both fail (fail, softfail or permerror);
 *   - `blocked` when the inbox's receive lists block the sender (Lists.verdicts);
 *   - `spam` when the forwarder says so (`x-spam-verdict: spam`) or the message carries
 *     `X-Spam-Flag: YES` (a header a sender can only use against itself);
 * - a message already stored in the inbox (same Message-ID) is not stored again and emits
 *   nothing (a forwarder's retry); a message without a Message-ID gets one derived from
 *   its bytes, so an exact retry is still recognised;
 * - the event is `message.received`, or the opt-in `message.received.blocked`,
 *   `.unauthenticated` or `.spam` (in that order of precedence) for a labelled message.
 */
import { Context, Effect, Layer, Metric, Schema } from "effect"
import { messagesReceived } from "../operating/metrics.ts"
import { SqlClient } from "effect/sql"
import { sha256Of } from "../blobs/Blobs.ts"
import { BadRequest, NotFound, PayloadTooLarge } from "../errors/errors.ts"
import { Events } from "../events/Events.ts"
import { type ProviderEvent, ProviderEvents } from "../events/Provider.ts"
import { type DeliveryReport, parseDeliveryReport } from "../mail/report.ts"
import type { EventType } from "../events/catalogue.ts"
import { Lists } from "../lists/Lists.ts"
import { MailParser } from "../mail/parse.ts"
import type { ParseResult } from "../mail/model.ts"
import { MessageStore } from "../messages/MessageStore.ts"
import { type FullMessageRow, type ThreadRow, toMessage, toThreadSummary } from "../messages/model.ts"
import { normaliseAddress } from "../shared/fields.ts"
import { decodeRows } from "../shared/sql.ts"

export const AuthResult = Schema.Literals(["pass", "fail", "softfail", "neutral", "none", "temperror", "permerror"])
export type AuthResult = typeof AuthResult.Type

export interface AuthVerdicts {
  readonly spf?: AuthResult
  readonly dkim?: AuthResult
  readonly dmarc?: AuthResult
}

export interface Arrival {
  readonly raw: Uint8Array
  readonly to: ReadonlyArray<string>
  readonly auth?: AuthVerdicts
  readonly spam?: boolean
}

export const DeliveryResult = Schema.Struct({
  delivered: Schema.Array(Schema.Struct({
    address: Schema.String,
    inbox_id: Schema.String,
    message_id: Schema.String,
    thread_id: Schema.String,
    /** true when the inbox already had this message (a retry): nothing new was stored */
    duplicate: Schema.Boolean
  })),
  skipped: Schema.Array(Schema.String),
  /**
   * Set when the message was a delivery report about a message we sent: it was applied as
   * the provider's `bounced` / `complained` event (or had been, `duplicate`) and not stored.
   */
  report: Schema.optionalKey(Schema.Struct({
    type: Schema.Literals(["bounced", "complained"]),
    status: Schema.Literals(["applied", "duplicate"])
  }))
})
export type DeliveryResult = typeof DeliveryResult.Type

const FAILING: ReadonlySet<AuthResult> = new Set(["fail", "softfail", "permerror"])

export const isUnauthenticated = (auth: AuthVerdicts | undefined): boolean => {
  if (auth === undefined) return false
  if (auth.dmarc !== undefined && auth.dmarc !== "none") return auth.dmarc === "fail"
  return auth.spf !== undefined && auth.dkim !== undefined && FAILING.has(auth.spf) && FAILING.has(auth.dkim)
}

/** Event bodies above about 1 MB drop the message's body fields (spec: Events). */
export const EVENT_BODY_LIMIT = 1024 * 1024

/** The `message.received` payload: the full message and its thread, without bodies when too large. */
export const receivedPayload = (message: FullMessageRow, thread: ThreadRow) => {
  const full = toMessage(message)
  const payload = { message: full, thread: toThreadSummary(thread) }
  if (JSON.stringify(payload).length <= EVENT_BODY_LIMIT) return payload
  const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...rest } = full
  return { message: rest, thread: payload.thread }
}

const eventTypeOf = (labels: ReadonlyArray<string>): EventType =>
  labels.includes("blocked")
    ? "message.received.blocked"
    : labels.includes("unauthenticated")
    ? "message.received.unauthenticated"
    : labels.includes("spam")
    ? "message.received.spam"
    : "message.received"

/**
 * The provider event a delivery report amounts to: a bounce names the recipients that
 * failed or are delayed (a DSN that only reports success is not a bounce); a complaint names
 * the complaining recipients. Undefined when it names no message or no recipient.
 */
export const reportEvent = (report: DeliveryReport | undefined): ProviderEvent | undefined => {
  if (report?.rfc_message_id === undefined) return undefined
  if (report.kind === "complaint") {
    return report.recipients.length === 0
      ? undefined
      : { type: "complained", rfc_message_id: report.rfc_message_id, recipients: report.recipients, sub_type: report.feedback_type }
  }
  const failed = report.recipients.filter((r) => r.action === "failed" || r.action === "delayed")
  if (failed.length === 0) return undefined
  return {
    type: "bounced",
    rfc_message_id: report.rfc_message_id,
    recipients: failed.map((r) => r.address),
    bounce_type: report.bounce_type,
    ...(failed[0]?.diagnostic === undefined ? {} : { reason: failed[0].diagnostic.slice(0, 2048) })
  }
}

const InboxTarget = Schema.Struct({ id: Schema.String, organization_id: Schema.String, pod_id: Schema.String, email: Schema.String })

/** Address of a display-form sender (`Ann <ann@x.org>`), lower-case; the whole string when it has no brackets. */
export const addressOf = (display: string): string => {
  const match = /<([^<>]+)>\s*$/.exec(display)
  return (match?.[1] ?? display).trim().toLowerCase()
}

export class Inbound extends Context.Service<Inbound, {
  deliver(arrival: Arrival): Effect.Effect<DeliveryResult, NotFound | BadRequest | PayloadTooLarge>
  /** Whether `address` is a hosted inbox: the SMTP receiver's RCPT check, so it never relays. */
  accepts(address: string): Effect.Effect<boolean>
}>()("inbox/Inbound") {
  static readonly layer = Layer.effect(Inbound, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const parser = yield* MailParser
    const store = yield* MessageStore
    const events = yield* Events
    const lists = yield* Lists
    const providerEvents = yield* ProviderEvents

    const parse = (raw: Uint8Array) =>
      parser.parse(raw).pipe(Effect.catchTag("MailParseError", (e): Effect.Effect<never, BadRequest | PayloadTooLarge> => {
        switch (e.reason) {
          case "too_large":
            return Effect.fail(new PayloadTooLarge({ message: e.message }))
          case "timeout":
          case "resources":
            // Not the message's fault for sure: a 5xx makes the forwarder retry.
            return Effect.die(e)
          default:
            return Effect.fail(new BadRequest({ message: `The message cannot be read: ${e.message}` }))
        }
      }))

    const deliver = Effect.fn("Inbound.deliver")(function*(arrival: Arrival) {
      const addresses = [...new Set(arrival.to.map((a) => normaliseAddress(a)?.toLowerCase() ?? a.trim().toLowerCase()))]
      const inboxes = addresses.length === 0 ? [] : yield* sql`SELECT id, organization_id, pod_id, email FROM inboxes
        WHERE email = ANY(${addresses}::text[])`.pipe(decodeRows(InboxTarget))
      const hosted = new Map(inboxes.map((i) => [i.email, i]))
      const skipped = addresses.filter((a) => !hosted.has(a))
      if (hosted.size === 0) {
        return yield* new NotFound({ message: "None of the addresses is an inbox of this server.", fix: `Skipped: ${skipped.join(", ")}` })
      }
      const rawSha = sha256Of(arrival.raw)
      // A bounce or complaint about a message one of these inboxes sent is the same event as
      // the mail provider's (one rule, events/Provider.ts), not mail; about anything else, it is mail.
      const reported = reportEvent(parseDeliveryReport(arrival.raw))
      if (reported !== undefined) {
        const outcome = yield* providerEvents.apply(`mail-report:${rawSha}`, reported, [...hosted.values()].map((i) => i.id))
        if (outcome.status !== "ignored") {
          return { delivered: [], skipped, report: { type: reported.type as "bounced" | "complained", status: outcome.status } }
        }
      }
      const parsed: ParseResult = yield* parse(arrival.raw)
      const message = parsed.message
      const rfcMessageId = message.rfc_message_id ?? `<${rawSha}@message-id.invalid>`
      const fromAddress = addressOf(message.from)
      const spam = arrival.spam === true || (message.headers["x-spam-flag"] ?? "").trim().toLowerCase() === "yes"
      const baseLabels = [
        "received",
        "unread",
        ...(isUnauthenticated(arrival.auth) ? ["unauthenticated"] : []),
        ...(spam ? ["spam"] : [])
      ]
      const attachments = parsed.attachments.map((a) => ({
        meta: a.meta,
        sha256: sha256Of(a.content),
        bytes: a.content
      }))

      const delivered = yield* sql.withTransaction(Effect.forEach([...hosted.values()], (inbox) =>
        Effect.gen(function*() {
          const verdict = yield* lists.verdicts({ organizationId: inbox.organization_id, podId: inbox.pod_id, inboxId: inbox.id }, "receive", [fromAddress])
          const labels = verdict.get(fromAddress) === "block" ? [...baseLabels, "blocked"] : baseLabels
          const stored = yield* store.insert({
            inbox,
            direction: "received",
            state: "stored",
            rfc_message_id: rfcMessageId,
            ...(message.in_reply_to === undefined ? {} : { in_reply_to: message.in_reply_to }),
            ...(message.references === undefined ? {} : { references: message.references }),
            from: message.from,
            from_address: fromAddress,
            to: message.to,
            ...(message.cc === undefined ? {} : { cc: message.cc }),
            recipient_addresses: [...message.to, ...(message.cc ?? [])].map(addressOf),
            subject: message.subject,
            preview: message.preview,
            size: message.size,
            ...(message.text === undefined ? {} : { text: message.text }),
            ...(message.html === undefined ? {} : { html: message.html }),
            ...(message.extracted_text === undefined ? {} : { extracted_text: message.extracted_text }),
            ...(message.extracted_html === undefined ? {} : { extracted_html: message.extracted_html }),
            headers: message.headers,
            attachments,
            raw: { sha256: rawSha, bytes: arrival.raw },
            labels
          })
          if (!stored.duplicate) {
            yield* events.record({
              organizationId: inbox.organization_id,
              podId: inbox.pod_id,
              inboxId: inbox.id,
              type: eventTypeOf(labels),
              payload: receivedPayload(stored.message, stored.thread)
            })
          }
          return {
            address: inbox.email,
            inbox_id: inbox.id,
            message_id: stored.message.id,
            thread_id: stored.message.thread_id,
            duplicate: stored.duplicate
          }
        }))).pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Metric.update(messagesReceived, delivered.filter((d) => !d.duplicate).length)
      return { delivered, skipped }
    })

    const accepts = (address: string) => {
      const normal = normaliseAddress(address)?.toLowerCase()
      return normal === undefined
        ? Effect.succeed(false)
        : sql`SELECT 1 FROM inboxes WHERE email = ${normal}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
    }

    return Inbound.of({ deliver, accepts })
  }))
}
