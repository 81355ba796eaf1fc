/**
 * Sending: send, reply, reply-all and forward from an inbox (spec: Messages, Send rules,
 * Errors, Limits). Every rule is here, so REST, MCP, the CLI and drafts refuse alike.
 *
 * Order (docs/sending.md, "Sending mail"; validation before state):
 * 1. the inbox (and for replies and forwards the message answered) must be visible (404);
 * 2. the request itself: recipients (at least one; 50 unique at most, 422
 *    too_many_recipients), addresses, attachments' shape, `html_required`,
 *    `tracking_disabled` (Mail.validateSend);
 * 3. the account and the inbox: `send_locked`, `email_unverified`, `inbox_paused`, and
 *    `domain_not_verified` for an inbox on a custom domain another organization now holds
 *    verified (Domains.admitSender);
 * 4. the recipients: lists (`recipient_blocked`: send lists for new messages and forwards,
 *    reply lists for replies) and suppressions (`recipient_suppressed`);
 * 5. the Idempotency-Key (Idempotency.ts);
 * 6. composing, which fetches URL attachments (413 payload_too_large over the limits);
 * 7. recording, in one transaction under the inbox row's lock: the per-inbox cap (100 per
 *    rolling 24 hours, 429 rate_limited with Retry-After), the plan's monthly and daily
 *    sends (402), the message stored with label `sent` in state `sending` (a reply joins
 *    its parent's thread, a forward starts one), the day's send count;
 * 8. handing it over: addresses hosted here are delivered locally through the inbound path
 *    (same labels, lists and events as mail from outside); the others go to the relay. A
 *    relay that refuses the message (403 message_rejected) or fails undoes step 7 and
 *    records `message.rejected`;
 * 9. finishing, in one transaction: state `sent`, the `message.sent` event, the key's answer.
 *
 * A process that dies between 7 and 9 leaves the message `sending`: the same
 * Idempotency-Key resumes it, and `recoverStale` (run by the server every minute) sends
 * messages left `sending` for over five minutes again, with the same bytes and Message-ID.
 */
import { Context, Duration, Effect, Layer, Metric, Schedule, Schema } from "effect"
import { messagesSent } from "../operating/metrics.ts"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import type { Principal } from "../access/Principal.ts"
import { attachmentBlob, Blobs, sha256Of } from "../blobs/Blobs.ts"
import { logBackgroundFailure } from "../db/Availability.ts"
import { Egress } from "../egress/Egress.ts"
import {
  type ApiError,
  InboxPaused,
  type MessageRejected,
  RateLimited,
  RecipientBlocked,
  RecipientSuppressed,
  TooManyRecipients,
  TrackingDisabled,
  ValidationError
} from "../errors/errors.ts"
import { Events } from "../events/Events.ts"
import { Inbound } from "../inbound/Inbound.ts"
import { Inboxes, type InboxRow } from "../inboxes/Inboxes.ts"
import { Lists } from "../lists/Lists.ts"
import { MailParser } from "../mail/parse.ts"
import { attachmentBytes } from "../blobs/parts.ts"
import { addressList, headerFields, rfc5322Date, withHeadersFirst, withoutHeader } from "../mail/submission.ts"
import { normaliseAddress } from "../shared/fields.ts"
import { compose, type ComposeKind, MAX_RECIPIENTS, type ParentMessage, type SendInput, validateSend } from "../mail/compose.ts"
import { checkSendLabels, Messages } from "../messages/Messages.ts"
import { MessageStore } from "../messages/MessageStore.ts"
import type { FullMessageRow } from "../messages/model.ts"
import { type OrganizationRow, Organizations, planOf } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { checkLimit } from "../plans/plans.ts"
import { Settings } from "../settings/Settings.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"
import { Suppressions } from "../suppressions/Suppressions.ts"
import { MailTransport } from "../transport/MailTransport.ts"
import { Domains } from "../domains/Domains.ts"
import { Idempotency, type KeyRef, SendAnswer } from "./Idempotency.ts"

/** Sends per inbox in any rolling 24 hours, on every plan. */
export const INBOX_SEND_CAP = 100
export const INBOX_SEND_WINDOW = Duration.hours(24)
/** A message left `sending` this long was abandoned by a process that died. */
export const STALE_SENDING = Duration.minutes(5)

export { SendAnswer }

export interface SendRequest {
  readonly kind: ComposeKind
  readonly inboxId: string
  /** The message answered or forwarded. */
  readonly messageId?: string
  readonly input: SendInput
  /** Labels the sent message carries beside `sent` (the agentmail SDK's `labels` on a send); caller-defined ones only. */
  readonly labels?: ReadonlyArray<string> | undefined
  readonly idempotencyKey?: string
}

const dayOf = (at: Date) => at.toISOString().slice(0, 10)
const monthStartOf = (at: Date) => `${at.toISOString().slice(0, 7)}-01`

const hashRequest = (request: SendRequest) =>
  createHash("sha256").update(JSON.stringify([
    request.kind,
    request.inboxId,
    request.messageId ?? null,
    request.input,
    // Only when given, so a request without labels hashes as it did before they were taken.
    ...(request.labels === undefined ? [] : [request.labels])
  ])).digest("hex")

/** What compose needs of a stored message it answers or forwards. */
const parentOf = (row: FullMessageRow, attachmentContents?: ParentMessage["attachment_contents"]): ParentMessage => ({
  from: row.sender,
  to: row.recipients,
  subject: row.subject,
  ...(row.cc === null ? {} : { cc: row.cc }),
  ...(row.text === null ? {} : { text: row.text }),
  ...(row.html === null ? {} : { html: row.html }),
  rfc_message_id: row.rfc_message_id,
  ...(row.references === null ? {} : { references: row.references }),
  date: iso(row.timestamp),
  headers: row.headers,
  ...(attachmentContents === undefined ? {} : { attachment_contents: attachmentContents })
})

const SendingRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  inbox_id: Schema.String,
  thread_id: Schema.String,
  raw_sha256: Schema.String,
  recipient_addresses: Schema.Array(Schema.String),
  subject: Schema.NullOr(Schema.String),
  timestamp: Schema.Date
})
type SendingRow = typeof SendingRow.Type

/** A message the client wrote itself (SMTP submission, the raw send route). */
export interface RawSendRequest {
  readonly inboxId: string
  readonly raw: Uint8Array
  /** The envelope's recipients (SMTP RCPT TO); absent: To, Cc and Bcc of the message. */
  readonly recipients?: ReadonlyArray<string>
  /** The envelope's sender (SMTP MAIL FROM), when the client gave one: it must be the inbox's address too. */
  readonly envelopeFrom?: string
}

/**
 * The send-as rule for an envelope sender (`mail_from`): an inbox sends only as its own
 * address, never another's nor none (`<>`), since the envelope sender is where bounces go and
 * what SPF checks. `sendRaw` applies it; SMTP submission asks it at MAIL FROM, so a client
 * learns before it sends the message (RFC 5321: 553).
 */
export const envelopeSenderRefusal = (inboxEmail: string, mailFrom: string): ValidationError | undefined =>
  normaliseAddress(mailFrom)?.toLowerCase() === inboxEmail.toLowerCase() ? undefined : new ValidationError({
    message: `This inbox sends only as ${inboxEmail}: the envelope sender must be that address.`,
    errors: [{ path: ["mail_from"], message: `must be ${inboxEmail}` }]
  })

export class Sending extends Context.Service<Sending, {
  send(principal: Principal, request: SendRequest): Effect.Effect<SendAnswer, ApiError>
  /**
   * Sends a message as its client wrote it, through every rule of `send` (docs/sending.md,
   * "Raw messages"): From, and the envelope's sender when given, must be the inbox's address
   * (400 validation_error on `from` or `mail_from`); the Bcc header is removed; a missing
   * Message-ID or Date is added; the thread follows In-Reply-To and References. A message
   * whose Message-ID this inbox already sent is not sent again: its first answer is given.
   */
  sendRaw(principal: Principal, request: RawSendRequest): Effect.Effect<SendAnswer, ApiError>
  /** Sends again what a dead process left `sending`; answers how many it finished. */
  recoverStale(): Effect.Effect<number>
}>()("inbox/Sending") {
  static readonly layerNoDeps = Layer.effect(Sending, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const inboxes = yield* Inboxes
    const messages = yield* Messages
    const store = yield* MessageStore
    const organizations = yield* Organizations
    const lists = yield* Lists
    const suppressions = yield* Suppressions
    const idempotency = yield* Idempotency
    const transport = yield* MailTransport
    const inbound = yield* Inbound
    const events = yield* Events
    const blobs = yield* Blobs
    const egress = yield* Egress
    const parser = yield* MailParser
    const domains = yield* Domains

    const hostedAmong = (addresses: ReadonlyArray<string>) =>
      Effect.map(inbound.hosted(addresses.map((a) => a.toLowerCase())), (rows) => new Set(rows.map((r) => r.email)))

    /** Step 7: checks the caps and stores the message as `sending`, in one transaction. */
    const record = (inbox: InboxRow, org: OrganizationRow, row: Omit<Parameters<typeof store.insert>[0], "inbox">, key: KeyRef | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        const at = yield* now
        // The inbox row lock serialises this inbox's sends, so the count below cannot go stale.
        yield* sql`SELECT 1 FROM inboxes WHERE id = ${inbox.id} FOR UPDATE`
        const windowStart = new Date(at.getTime() - Duration.toMillis(INBOX_SEND_WINDOW))
        // Sends are counted in their own rows (migration 0029), not as the sent messages still
        // stored: deleting those must not give sends back. Rows older than the window go here.
        const recent = yield* sql<{ at: Date }>`WITH expired AS (
            DELETE FROM inbox_sends WHERE inbox_id = ${inbox.id} AND at <= ${windowStart})
          SELECT at FROM inbox_sends WHERE inbox_id = ${inbox.id} AND at > ${windowStart}
          ORDER BY at DESC LIMIT ${INBOX_SEND_CAP}`
        if (recent.length >= INBOX_SEND_CAP) {
          const oldest = recent[recent.length - 1]?.at ?? at
          const retryAfterSeconds = Math.max(1, Math.ceil((oldest.getTime() + Duration.toMillis(INBOX_SEND_WINDOW) - at.getTime()) / 1000))
          return yield* new RateLimited({
            message: `This inbox sent ${INBOX_SEND_CAP} messages in the last 24 hours.`,
            fix: `Try again in ${retryAfterSeconds} seconds.`,
            retryAfterSeconds
          })
        }
        // Today's counter row is the lock that serialises the organization's plan checks.
        // The month adds today's count as the upsert left it to the other days' rows.
        const counts = yield* sql<{ today: number; month: number }>`WITH today AS (
            INSERT INTO send_counts (organization_id, day, count) VALUES (${org.id}, ${dayOf(at)}, 1)
            ON CONFLICT (organization_id, day) DO UPDATE SET count = send_counts.count + 1 RETURNING count)
          SELECT (SELECT count FROM today)::int AS today, ((SELECT count FROM today) + (SELECT coalesce(sum(count), 0) FROM send_counts
            WHERE organization_id = ${org.id} AND day >= ${monthStartOf(at)} AND day <> ${dayOf(at)}))::int AS month`
        yield* checkLimit(planOf(org, at), "sends_per_month", (counts[0]?.month ?? 1) - 1)
        yield* checkLimit(planOf(org, at), "sends_per_day", (counts[0]?.today ?? 1) - 1)
        const stored = yield* store.insert({ inbox, ...row })
        yield* sql`INSERT INTO inbox_sends (inbox_id, message_id, at) VALUES (${inbox.id}, ${stored.message.id}, ${at})`
        if (key !== undefined) yield* idempotency.recorded(key, { message_id: stored.message.id, thread_id: stored.message.thread_id })
        return stored.message
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    /** Undoes step 7 after a refused or failed hand-over, and records the refusal. */
    const undo = (message: SendingRow, reason: string, key: KeyRef | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* store.deleteMessage(message.id, message.thread_id)
        yield* sql`DELETE FROM inbox_sends WHERE message_id = ${message.id}`
        yield* sql`UPDATE send_counts SET count = greatest(count - 1, 0)
          WHERE organization_id = ${message.organization_id} AND day = ${dayOf(message.timestamp)}`
        yield* events.record({
          organizationId: message.organization_id,
          podId: message.pod_id,
          inboxId: message.inbox_id,
          type: "message.rejected",
          payload: { reject: { inbox_id: message.inbox_id, message_id: message.id, reason, recipients: message.recipient_addresses } }
        })
        if (key !== undefined) yield* idempotency.release(key)
      })).pipe(Effect.orDie)

    /**
     * Steps 8 and 9 for a recorded message. `fresh`: the bytes and sender of a message this
     * process just recorded, so they are not read back; a resumed send reads them.
     */
    const handOver = (message: SendingRow, key: KeyRef | undefined, fresh?: { readonly raw: Uint8Array; readonly from: string }) =>
      Effect.gen(function*() {
        const raw = fresh?.raw ?? (yield* blobs.readAll(message.raw_sha256))
        const from = fresh?.from ??
          (yield* sql<{ email: string }>`SELECT email FROM inboxes WHERE id = ${message.inbox_id}`.pipe(Effect.orDie))[0]?.email ?? ""
        const local = yield* hostedAmong(message.recipient_addresses)
        const remote = message.recipient_addresses.filter((a) => !local.has(a.toLowerCase()))
        const handed = Effect.gen(function*() {
          // Mail leaving the server from a verified custom domain is DKIM-signed as that domain.
          if (remote.length > 0) {
            yield* transport.send({
              envelope: { from, to: remote },
              raw: yield* domains.signOutgoing(message.organization_id, from, raw),
              ...(message.subject === null ? {} : { subject: message.subject })
            })
          }
          if (local.size > 0) {
            // Mail between inboxes of this server takes the inbound path; an inbox deleted meanwhile is simply skipped.
            yield* inbound.deliver({ raw, to: [...local] }).pipe(Effect.catch(() => Effect.void))
          }
        })
        yield* handed.pipe(
          Effect.catchTag("MessageRejected", (e: MessageRejected) => Effect.andThen(undo(message, e.message, key), Effect.fail(e))),
          Effect.catchDefect((defect) => Effect.andThen(undo(message, "the mail relay failed", key), Effect.die(defect)))
        )
        const at = yield* now
        const answer = { message_id: message.id, thread_id: message.thread_id }
        // The state and its event in one statement, in a transaction with what the event
        // causes (webhook deliveries) and, with an Idempotency-Key, the key's answer.
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* events.record({
            alongside: sql`sent AS (${store.markSent(message.id, at)})`,
            organizationId: message.organization_id,
            podId: message.pod_id,
            inboxId: message.inbox_id,
            type: "message.sent",
            payload: {
              send: {
                inbox_id: message.inbox_id,
                thread_id: message.thread_id,
                message_id: message.id,
                timestamp: iso(message.timestamp),
                recipients: message.recipient_addresses
              }
            }
          })
          if (key !== undefined) yield* idempotency.done(key, answer)
        })).pipe(Effect.orDie)
        yield* Metric.update(messagesSent, 1)
        return answer
      })

    /** Takes a `sending` message for this process (one claimant wins), or undefined. */
    const claim = (messageId: string, olderThan: Date | undefined) =>
      Effect.gen(function*() {
        const at = yield* now
        const rows = yield* Effect.flatMap(store.claimSending(messageId, at, olderThan), Schema.decodeUnknownEffect(Schema.Array(SendingRow))).pipe(Effect.orDie)
        return rows[0]
      })

    /** Step 3 and 4: the account, the inbox and the recipients may send; answers the organization. */
    const admit = Effect.fnUntraced(function*(inbox: InboxRow, direction: "send" | "reply", addresses: ReadonlyArray<string>) {
      const org = yield* organizations.requireCanSend(inbox.organization_id).pipe(Effect.catchTag("NotFound", Effect.die))
      if (inbox.status === "paused") {
        return yield* new InboxPaused({ message: `The inbox ${inbox.email} is paused.`, fix: "Set its status to active to send again." })
      }
      yield* domains.admitSender(inbox.organization_id, inbox.email)
      const scope = { organizationId: inbox.organization_id, podId: inbox.pod_id, inboxId: inbox.id }
      const verdicts = yield* lists.verdicts(scope, direction, addresses)
      const blocked = addresses.find((a) => verdicts.get(a.toLowerCase()) === "block")
      if (blocked !== undefined) {
        return yield* new RecipientBlocked({ message: `The ${direction} lists block ${blocked}.`, fix: "Remove the recipient, or change the allow and block lists." })
      }
      const suppressed = yield* suppressions.suppressed(inbox.organization_id, addresses)
      if (suppressed.length > 0) {
        return yield* new RecipientSuppressed({
          message: `${suppressed.join(", ")} ${suppressed.length === 1 ? "is" : "are"} suppressed after a hard bounce or a complaint.`,
          fix: "Remove the recipient, or delete the suppression if the address works again."
        })
      }
      return org
    })

    const send = Effect.fn("Sending.send")(function*(principal: Principal, request: SendRequest) {
      const inbox = yield* inboxes.find(principal, request.inboxId)
      const parentRow = request.messageId === undefined ? undefined : yield* messages.find(principal, request.inboxId, request.messageId)
      const sender = { email: inbox.email, ...(inbox.display_name === null ? {} : { display_name: inbox.display_name }) }
      const { addresses } = yield* validateSend(request.kind, request.input, sender, parentRow === undefined ? undefined : parentOf(parentRow))
      // The labels a message may be given later (PATCH add_labels) it may be sent with.
      const extraLabels = yield* checkSendLabels(request.labels)
      if (request.input.track_opens === true && !settings.openTracking) {
        return yield* new TrackingDisabled({ message: "Open tracking is turned off on this server.", fix: "Leave track_opens unset." })
      }

      const direction = request.kind === "reply" || request.kind === "reply_all" ? "reply" : "send"
      const org = yield* admit(inbox, direction, addresses)

      const key = request.idempotencyKey === undefined ? undefined : { organizationId: inbox.organization_id, key: request.idempotencyKey }
      if (key !== undefined) {
        const claimed = yield* idempotency.claim(key, `${request.kind} ${inbox.id} ${request.messageId ?? ""}`, hashRequest(request))
        if (claimed._tag === "Done") return claimed.answer
        if (claimed._tag === "Resume") {
          const resumed = yield* claim(claimed.answer.message_id, undefined)
          if (resumed !== undefined) return yield* handOver(resumed, key)
          // Nothing left to resume (the message was undone): start over under the same key.
        }
      }

      return yield* Effect.gen(function*() {
        const attachmentContents = request.kind === "forward" && parentRow !== undefined
          ? yield* Effect.forEach(parentRow.attachments, (a) =>
            Effect.map(attachmentBytes(parentRow.raw_sha256, a).pipe(Effect.provideService(Blobs, blobs), Effect.provideService(MailParser, parser)), (content) => ({
              meta: {
                content_type: a.content_type,
                content_disposition: a.content_disposition,
                size: a.size,
                ...(a.filename === undefined ? {} : { filename: a.filename }),
                ...(a.content_id === undefined ? {} : { content_id: a.content_id })
              },
              content
            })))
          : undefined
        const openToken = request.input.track_opens === true ? yield* ids.secret(16) : undefined
        const composed = yield* compose(request.kind, request.input, {
          inbox: sender,
          ...(openToken === undefined ? {} : { tracking: { public_url: settings.publicUrl, open_token: openToken } })
        }, parentRow === undefined ? undefined : parentOf(parentRow, attachmentContents)).pipe(
          Effect.provideService(Egress, egress),
          Effect.provideService(Ids, ids)
        )
        // The sent copy is read back like received mail, so both have the same full form.
        const readBack = yield* parser.parse(composed.raw).pipe(Effect.orDie)
        const message = yield* record(inbox, org, {
          direction: "sent",
          state: "sending",
          rfc_message_id: composed.rfc_message_id,
          ...(composed.in_reply_to === undefined ? {} : { in_reply_to: composed.in_reply_to }),
          ...(composed.references === undefined ? {} : { references: composed.references }),
          from: composed.from,
          from_address: inbox.email,
          to: composed.to,
          ...(composed.cc === undefined ? {} : { cc: composed.cc }),
          ...(composed.bcc === undefined ? {} : { bcc: composed.bcc }),
          recipient_addresses: composed.envelope.to,
          subject: composed.subject,
          preview: readBack.message.preview,
          size: composed.raw.byteLength,
          ...(readBack.message.text === undefined ? {} : { text: readBack.message.text }),
          ...(readBack.message.html === undefined ? {} : { html: readBack.message.html }),
          ...(readBack.message.extracted_text === undefined ? {} : { extracted_text: readBack.message.extracted_text }),
          ...(readBack.message.extracted_html === undefined ? {} : { extracted_html: readBack.message.extracted_html }),
          headers: readBack.message.headers,
          attachments: composed.attachments.map(attachmentBlob),
          raw: { sha256: sha256Of(composed.raw), bytes: composed.raw },
          labels: ["sent", ...extraLabels],
          ...(request.kind === "reply" || request.kind === "reply_all"
            ? { thread_id: parentRow?.thread_id ?? "" }
            : request.kind === "forward"
            ? { is_forward: true }
            : {}),
          ...(openToken === undefined ? {} : { open_token: openToken })
        }, key)
        return yield* handOver({
          id: message.id,
          organization_id: message.organization_id,
          pod_id: message.pod_id,
          inbox_id: message.inbox_id,
          thread_id: message.thread_id,
          raw_sha256: message.raw_sha256,
          recipient_addresses: composed.envelope.to,
          subject: composed.subject ?? null,
          timestamp: message.timestamp
        }, key, { raw: composed.raw, from: inbox.email })
      }).pipe(
        // A refusal the client can fix frees the key for the corrected request.
        Effect.tapError(() => key === undefined ? Effect.void : idempotency.release(key))
      )
    })


    const sendRaw = Effect.fn("Sending.sendRaw")(function*(principal: Principal, request: RawSendRequest) {
      const inbox = yield* inboxes.find(principal, request.inboxId)
      const refused = request.envelopeFrom === undefined ? undefined : envelopeSenderRefusal(inbox.email, request.envelopeFrom)
      if (refused !== undefined) return yield* refused
      const fields = headerFields(request.raw)
      const fromFields = fields.filter((f) => f.name === "from").flatMap((f) => addressList(f.value))
      if (fromFields.length !== 1 || fromFields[0] !== inbox.email.toLowerCase()) {
        return yield* new ValidationError({
          message: `The From header must be the inbox's own address, ${inbox.email}.`,
          errors: [{ path: ["from"], message: `must be ${inbox.email}` }]
        })
      }
      const headerRecipients = ["to", "cc", "bcc"].flatMap((name) => fields.filter((f) => f.name === name).flatMap((f) => addressList(f.value)))
      const given = request.recipients ?? headerRecipients
      const addresses = [...new Set(given.map((a) => normaliseAddress(a)?.toLowerCase() ?? ""))]
      const unreadable = given.find((a) => normaliseAddress(a) === undefined)
      if (unreadable !== undefined || addresses.length === 0) {
        return yield* new ValidationError({
          message: unreadable === undefined ? "At least one recipient is required." : `${unreadable} is not an email address.`,
          errors: [{ path: ["to"], message: unreadable === undefined ? "At least one recipient is required in to, cc or bcc" : "not an email address" }]
        })
      }
      if (addresses.length > MAX_RECIPIENTS) {
        return yield* new TooManyRecipients({ message: `${addresses.length} unique recipients; at most ${MAX_RECIPIENTS} across to, cc and bcc` })
      }
      const at = yield* now
      const domain = inbox.email.split("@").pop() ?? "localhost"
      const added: Array<readonly [string, string]> = []
      if (!fields.some((f) => f.name === "message-id")) added.push(["Message-ID", `<${yield* ids.secret(16)}@${domain}>`])
      if (!fields.some((f) => f.name === "date")) added.push(["Date", rfc5322Date(at)])
      // The Bcc header never leaves: recipients learn nothing of each other's blind copies.
      const raw = withHeadersFirst(withoutHeader(request.raw, "bcc"), added)
      const readBack = yield* parser.parse(raw).pipe(Effect.mapError((e) => new ValidationError({ message: `The message cannot be read: ${e.message}`, errors: [] })))
      const parsed = readBack.message
      const rfcMessageId = parsed.rfc_message_id ?? `<${sha256Of(raw)}@message-id.invalid>`
      // A client that submits the same message again (a retry after a lost answer) sends it once.
      const already = yield* sql<{ id: string; thread_id: string }>`SELECT id, thread_id FROM messages
        WHERE inbox_id = ${inbox.id} AND direction = 'sent' AND rfc_message_id = ${rfcMessageId}`.pipe(Effect.orDie)
      if (already[0] !== undefined) return { message_id: already[0].id, thread_id: already[0].thread_id }

      const org = yield* admit(inbox, parsed.in_reply_to === undefined ? "send" : "reply", addresses)
      const bcc = addresses.filter((a) => !headerRecipients.includes(a))
      const message = yield* record(inbox, org, {
        direction: "sent",
        state: "sending",
        rfc_message_id: rfcMessageId,
        ...(parsed.in_reply_to === undefined ? {} : { in_reply_to: parsed.in_reply_to }),
        ...(parsed.references === undefined ? {} : { references: parsed.references }),
        from: parsed.from,
        from_address: inbox.email,
        to: parsed.to,
        ...(parsed.cc === undefined ? {} : { cc: parsed.cc }),
        ...(bcc.length === 0 ? {} : { bcc }),
        recipient_addresses: addresses,
        subject: parsed.subject,
        preview: parsed.preview,
        size: raw.byteLength,
        ...(parsed.text === undefined ? {} : { text: parsed.text }),
        ...(parsed.html === undefined ? {} : { html: parsed.html }),
        ...(parsed.extracted_text === undefined ? {} : { extracted_text: parsed.extracted_text }),
        ...(parsed.extracted_html === undefined ? {} : { extracted_html: parsed.extracted_html }),
        headers: parsed.headers,
        attachments: readBack.attachments.map(attachmentBlob),
        raw: { sha256: sha256Of(raw), bytes: raw },
        labels: ["sent"]
      }, undefined)
      return yield* handOver({
        id: message.id,
        organization_id: message.organization_id,
        pod_id: message.pod_id,
        inbox_id: message.inbox_id,
        thread_id: message.thread_id,
        raw_sha256: message.raw_sha256,
        recipient_addresses: addresses,
        subject: parsed.subject,
        timestamp: message.timestamp
      }, undefined, { raw, from: inbox.email })
    })

    const recoverStale = Effect.fn("Sending.recoverStale")(function*() {
      const at = yield* now
      const cutoff = new Date(at.getTime() - Duration.toMillis(STALE_SENDING))
      const stale = yield* sql<{ id: string }>`SELECT id FROM messages WHERE state = 'sending' AND updated_at < ${cutoff} LIMIT 100`.pipe(Effect.orDie)
      let finished = 0
      for (const { id } of stale) {
        const claimed = yield* claim(id, cutoff).pipe(Effect.orDie)
        if (claimed === undefined) continue
        const done = yield* handOver(claimed, undefined).pipe(Effect.option)
        if (done._tag === "Some") finished++
      }
      return finished
    })

    return Sending.of({ send, sendRaw, recoverStale })
  }))

  /** Runs `recoverStale` every minute for the life of the layer (the server's). */
  static readonly layerRecovery = Layer.effectDiscard(
    Sending.use((s) => s.recoverStale()).pipe(
      Effect.catchCause(logBackgroundFailure("recovering abandoned sends failed")),
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped
    )
  )

  /** With the services it uses (Blobs, Domains, Events, Idempotency, Inbound, Inboxes, Lists, MailParser, MessageStore, Messages, Organizations, Suppressions); the ports are the caller's. */
  static readonly layer = Sending.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Blobs.layer, Domains.layer, Events.layer, Idempotency.layer, Inbound.layer, Inboxes.layer, Lists.layer, MailParser.layer, MessageStore.layer, Messages.layer, Organizations.layer, Suppressions.layer)))
}
