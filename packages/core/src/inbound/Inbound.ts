/**
 * Inbound: a raw message arrives (from the operator's forwarder on /inbound/raw, from
 * `inboxctl inbound`, or from another inbox of this server) and is stored in every hosted
 * inbox it is addressed to, labelled, threaded, with its event, in one transaction. The
 * caller answers success only after that commit, so an acknowledged message is never lost.
 *
 * Rules (docs/receiving.md):
 * - parsed once, whatever the number of inboxes; addresses not hosted here are skipped and
 *   named in the answer; none hosted is 404 not_found; an inbox on a custom domain that
 *   another organization now holds verified is not hosted (Domains.permitted);
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
import { Cause, Context, Deferred, Effect, Exit, Layer, Metric, Queue, Schema } from "effect"
import { inboundBatchesSplit, messagesReceived } from "../operating/metrics.ts"
import { SqlClient } from "effect/sql"
import { attachmentInRaw, sha256Of } from "../blobs/Blobs.ts"
import { BadRequest, NotFound, PayloadTooLarge } from "../errors/errors.ts"
import { Events } from "../events/Events.ts"
import { type ProviderEvent, ProviderEvents } from "../events/Provider.ts"
import { type DeliveryReport, parseDeliveryReport } from "../mail/report.ts"
import type { EventType } from "../events/catalogue.ts"
import { Domains } from "../domains/Domains.ts"
import { Lists } from "../lists/Lists.ts"
import { MailParser } from "../mail/parse.ts"
import type { ParseResult } from "../mail/model.ts"
import { MessageStore, type NewMessage } from "../messages/MessageStore.ts"
import { type FullMessageRow, type ThreadRow, toMessage, toThreadSummary } from "../messages/model.ts"
import { normaliseAddress } from "../shared/fields.ts"
import { batchedWith } from "../shared/batching.ts"
import { jsonBytesAtMost, jsonBytesAtMostByLength } from "../shared/json.ts"
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
  /**
   * The inboxes of `to`, when the caller has looked them up already (`Inbound.recipient`:
   * the SMTP receiver's RCPT checks), so the delivery does not ask again. An inbox deleted
   * since fails the delivery (its rows cannot be written), which the caller reports as a
   * temporary failure: nothing is acknowledged that was not stored.
   */
  readonly inboxes?: ReadonlyArray<InboxTarget>
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
   * the provider's `bounced` / `complained` event (or had been, `duplicate`) and not stored
   * in the inbox that sent it (`delivered` names the other inboxes it was addressed to).
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

/**
 * The `message.received` event: the message and its thread, with the message's bodies by
 * reference (`bodiesOf`: its own row holds them; Events joins them back when the event is
 * read), or without them when they would take the event over the limit.
 */
export const receivedEvent = (message: FullMessageRow, thread: ThreadRow) => {
  const full = toMessage(message)
  const summary = toThreadSummary(thread)
  const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...rest } = full
  const payload = { message: rest, thread: summary }
  const whole = { message: full, thread: summary }
  // Bytes as sent, not characters: a body of accented or CJK text is two or three bytes a
  // character. The bounds need no text of the whole message, and the first reads no
  // character: most mail is far under the limit.
  const fits = jsonBytesAtMostByLength(whole) <= EVENT_BODY_LIMIT || jsonBytesAtMost(whole) <= EVENT_BODY_LIMIT ||
    Buffer.byteLength(JSON.stringify(whole)) <= EVENT_BODY_LIMIT
  return fits ? { payload, bodiesOf: message.id } : { payload }
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
 * Feedback reports (RFC 5965 and 6591) that are not complaints: a recipient's "this is not
 * spam", and a DMARC or DKIM failure report, which speaks of who sent the message, not of
 * anyone's wish to stop receiving it.
 */
const NOT_COMPLAINTS: ReadonlySet<string> = new Set(["not-spam", "auth-failure"])

/**
 * The provider event a delivery report amounts to: a bounce names the recipients that
 * failed or are delayed (a DSN that only reports success is not a bounce); a complaint names
 * the complaining recipients. Undefined when it names no message or no recipient, or when
 * it is a feedback report of a kind that is no complaint (NOT_COMPLAINTS).
 */
export const reportEvent = (report: DeliveryReport | undefined): ProviderEvent | undefined => {
  if (report?.rfc_message_id === undefined) return undefined
  if (report.kind === "complaint") {
    return report.recipients.length === 0 || NOT_COMPLAINTS.has(report.feedback_type)
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
/** A hosted inbox a message is addressed to. */
export type InboxTarget = typeof InboxTarget.Type


/**
 * Inbound mail's group commit: how many deliveries, and how many bytes of raw mail, one
 * transaction may carry, and how many transactions a process runs at once. One: a batch
 * costs eight round trips whatever its size, and with two writers each took about half the
 * deliveries waiting, so twice the statements and commits for the same mail. One writer costs
 * less CPU per delivery and answers as many messages a second (bench/PROFILE.md, "What a
 * delivery's scavenges keep"); a delivery that arrives meanwhile waits for the batch under
 * way, which a larger next batch makes up.
 */
export const GROUP_COMMIT = { deliveries: 32, bytes: 16 * 1024 * 1024, writers: 1 } as const

/** One parsed arrival, ready to be written into each of its inboxes. */
interface Delivery {
  readonly inboxes: ReadonlyArray<InboxTarget>
  readonly fromAddress: string
  readonly baseLabels: ReadonlyArray<string>
  readonly message: Omit<NewMessage, "inbox" | "labels">
  /** its raw size: a batch's bytes are bounded */
  readonly weight: number
}

interface Waiting {
  readonly job: Delivery
  readonly done: Deferred.Deferred<ReadonlyArray<DeliveryResult["delivered"][number]>>
}

/** Address of a display-form sender (`Ann <ann@x.org>`), lower-case; the whole string when it has no brackets. */
export const addressOf = (display: string): string => {
  const match = /<([^<>]+)>\s*$/.exec(display)
  return (match?.[1] ?? display).trim().toLowerCase()
}

export class Inbound extends Context.Service<Inbound, {
  deliver(arrival: Arrival): Effect.Effect<DeliveryResult, NotFound | BadRequest | PayloadTooLarge>
  /**
   * The hosted inbox at `address`, or undefined: the SMTP receiver's RCPT check, so it never
   * relays; the answer is handed back to `deliver` (`Arrival.inboxes`).
   */
  recipient(address: string): Effect.Effect<InboxTarget | undefined>
  /** The hosted inboxes among `addresses` (lower case), as `deliver` finds them: mail between inboxes of this server. */
  hosted(addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<InboxTarget>>
}>()("inbox/Inbound") {
  static readonly layerNoDeps = Layer.effect(Inbound, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const parser = yield* MailParser
    const store = yield* MessageStore
    const events = yield* Events
    const lists = yield* Lists
    const providerEvents = yield* ProviderEvents
    const domains = yield* Domains

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

    /**
     * Deliveries of one transaction: for each addressed inbox, its receive lists' verdict,
     * the message stored and threaded, and its event, in a fixed number of statements
     * whatever the number of deliveries (Lists.verdictsMany, MessageStore.insertMany,
     * Events.recordMany).
     */
    const commit = (jobs: ReadonlyArray<Delivery>) =>
      sql.withTransaction(Effect.gen(function*() {
        const items = jobs.flatMap((job) => job.inboxes.map((inbox) => ({ job, inbox })))
        const verdicts = yield* lists.verdictsMany(items.map(({ inbox, job }) => ({
          scope: { organizationId: inbox.organization_id, podId: inbox.pod_id, inboxId: inbox.id },
          direction: "receive" as const,
          addresses: [job.fromAddress]
        })))
        const labels = items.map(({ job }, k) => verdicts[k]!.get(job.fromAddress) === "block" ? [...job.baseLabels, "blocked"] : job.baseLabels)
        const stored = yield* store.insertMany(items.map(({ job, inbox }, k) => ({ ...job.message, inbox, labels: labels[k]! })))
        yield* events.recordMany(items.flatMap(({ inbox }, k) =>
          stored[k]!.duplicate ? [] : [{
            organizationId: inbox.organization_id,
            podId: inbox.pod_id,
            inboxId: inbox.id,
            type: eventTypeOf(labels[k]!),
            ...receivedEvent(stored[k]!.message, stored[k]!.thread)
          }]
        ))
        let k = 0
        return jobs.map((job) =>
          job.inboxes.map((inbox) => {
            const s = stored[k++]!
            return { address: inbox.email, inbox_id: inbox.id, message_id: s.message.id, thread_id: s.message.thread_id, duplicate: s.duplicate }
          })
        )
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    // Group commit. Each request parses its message on its own; the writing is done by
    // GROUP_COMMIT.writers fibers of this layer, each taking every delivery waiting (up to a
    // batch's size and bytes) into one transaction: under load, one commit and a handful of
    // statements carry many deliveries. Alone, a delivery waits for nobody. A request answers
    // after its batch committed, so durability is unchanged. The writers are the layer's
    // own fibers, not a request's: a caller inside a transaction of its own (a local send)
    // never lends it to other deliveries.
    const waiting = yield* Queue.unbounded<Waiting>()
    // Uninterruptible: a batch taken is answered, whatever happens to the layer meanwhile.
    const settle = (batch: ReadonlyArray<Waiting>) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const outcome = yield* Effect.exit(commit(batch.map((w) => w.job)))
        if (Exit.isSuccess(outcome)) {
          for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i]!.done, Exit.succeed(outcome.value[i]!))
          return
        }
        if (batch.length === 1) return yield* Deferred.done(batch[0]!.done, yield* Effect.exit(withoutDeleted(batch[0]!.job, outcome.cause)))
        // One delivery's failure must not fail the others: each again, alone.
        yield* Metric.update(inboundBatchesSplit, 1)
        for (const w of batch) {
          const alone = yield* Effect.exit(commit([w.job]))
          yield* Deferred.done(w.done, Exit.isSuccess(alone) ? Exit.succeed(alone.value[0]!) : yield* Effect.exit(withoutDeleted(w.job, alone.cause)))
        }
      }))
    /**
     * A delivery whose commit failed alone may have lost an inbox to a delete made after it
     * was looked up (the rows' foreign keys refuse it): then the inboxes still there get it and
     * the deleted ones are left out of its result (deliver names them as not hosted). The check
     * costs nothing on the way that succeeds; any other failure stands as it was.
     */
    const withoutDeleted = (job: Delivery, failure: Cause.Cause<never>) =>
      sql<{ id: string }>`SELECT id FROM inboxes WHERE id = ANY(${job.inboxes.map((i) => i.id)}::text[])`.pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.flatMap((rows): Effect.Effect<ReadonlyArray<DeliveryResult["delivered"][number]>> => {
          const left = job.inboxes.filter((i) => rows.some((r) => r.id === i.id))
          if (left.length === job.inboxes.length) return Effect.failCause(failure)
          if (left.length === 0) return Effect.succeed([])
          return Effect.map(commit([{ ...job, inboxes: left }]), (all) => all[0]!)
        })
      )
    const writer = Effect.gen(function*() {
      const taken = yield* Queue.takeBetween(waiting, 1, GROUP_COMMIT.deliveries)
      let batch: Array<Waiting> = []
      let bytes = 0
      for (const w of taken) {
        if (batch.length > 0 && bytes + w.job.weight > GROUP_COMMIT.bytes) {
          yield* settle(batch)
          batch = []
          bytes = 0
        }
        batch.push(w)
        bytes += w.job.weight
      }
      yield* settle(batch)
    }).pipe(
      // A writer that stopped would leave every later delivery waiting: it logs and goes on.
      Effect.catchCause((cause) => Effect.logError("inbound group commit: a writer's pass failed", cause)),
      Effect.forever
    )
    for (let i = 0; i < GROUP_COMMIT.writers; i++) yield* Effect.forkScoped(writer)
    // At shutdown, deliveries still waiting are answered (a 5xx: the forwarder retries).
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.clear(waiting), (left) =>
        Effect.forEach(left, (w) => Deferred.die(w.done, new Error("the server is shutting down")), { discard: true })).pipe(Effect.ignore)
    )
    const groupCommit = (job: Delivery) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<ReadonlyArray<DeliveryResult["delivered"][number]>>()
        yield* Queue.offer(waiting, { job, done })
        return yield* Deferred.await(done)
      })

    /** The inboxes at these addresses that may receive mail at them: only a verified holder of a custom domain does. */
    const hostedInboxes = (addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<InboxTarget>> =>
      addresses.length === 0 ? Effect.succeed([]) : sql`SELECT id, organization_id, pod_id, email FROM inboxes
        WHERE email = ANY(${addresses}::text[])`.pipe(decodeRows(InboxTarget), Effect.flatMap(domains.permitted))

    const deliver = Effect.fn("Inbound.deliver")(function*(arrival: Arrival) {
      const addresses = [...new Set(arrival.to.map((a) => normaliseAddress(a)?.toLowerCase() ?? a.trim().toLowerCase()))]
      const inboxes = arrival.inboxes ?? (yield* hostedInboxes(addresses))
      const hosted = new Map(inboxes.map((i) => [i.email, i]))
      const skipped = addresses.filter((a) => !hosted.has(a))
      if (hosted.size === 0) {
        return yield* new NotFound({ message: "None of the addresses is an inbox of this server.", fix: `Skipped: ${skipped.join(", ")}` })
      }
      const rawSha = sha256Of(arrival.raw)
      // A bounce or complaint about a message one of these inboxes sent is the same event as
      // the mail provider's (one rule, events/Provider.ts), not mail; about anything else, it is mail.
      // One that fails authentication (a spoofed mailer-daemon of a domain that publishes
      // SPF or DMARC) speaks for nobody: it is mail, labelled unauthenticated.
      // Asked of each inbox alone: the report speaks for the inbox that sent the message, and
      // to any other inbox it was addressed to (another organization's, say) it is mail.
      const reported = isUnauthenticated(arrival.auth) ? undefined : reportEvent(parseDeliveryReport(arrival.raw))
      let recipients = [...hosted.values()]
      let report: DeliveryResult["report"]
      if (reported !== undefined) {
        const outcomes = yield* Effect.forEach(recipients, (inbox) => providerEvents.apply(`mail-report:${rawSha}`, reported, [inbox.id]))
        const applied = outcomes.find((o) => o.status !== "ignored")
        if (applied !== undefined && applied.status !== "ignored") {
          report = { type: reported.type as "bounced" | "complained", status: applied.status }
          recipients = recipients.filter((_, k) => outcomes[k]!.status === "ignored")
          if (recipients.length === 0) return { delivered: [], skipped, report }
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
      // kept inside the raw message, which is stored anyway (blobs/parts.ts)
      const attachments = parsed.attachments.map(attachmentInRaw)
      const delivered = yield* groupCommit({
        inboxes: recipients,
        fromAddress,
        baseLabels,
        weight: arrival.raw.byteLength,
        message: {
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
          raw: { sha256: rawSha, bytes: arrival.raw }
        }
      })
      // Inboxes deleted since they were looked up are not hosted any more (withoutDeleted).
      const gone = recipients.filter((inbox) => !delivered.some((d) => d.inbox_id === inbox.id)).map((inbox) => inbox.email)
      if (delivered.length === 0) {
        return yield* new NotFound({ message: "None of the addresses is an inbox of this server.", fix: `Skipped: ${[...skipped, ...gone].join(", ")}` })
      }
      yield* Metric.update(messagesReceived, delivered.filter((d) => !d.duplicate).length)
      return { delivered, skipped: [...skipped, ...gone], ...(report === undefined ? {} : { report }) }
    })

    // The SMTP receiver asks for every RCPT: the lookups of concurrent connections share one
    // statement (shared/batching.ts), so under load a message costs PostgreSQL a fraction
    // of a statement and of a transaction for it, not one each (bench/PROFILE.md, issue 29).
    const lookup = yield* batchedWith((addresses: ReadonlyArray<string>) =>
      Effect.map(hostedInboxes([...new Set(addresses)]), (found) => {
        const byAddress = new Map(found.map((i) => [i.email, i]))
        return addresses.map((a) => byAddress.get(a))
      }))
    const recipient = (address: string): Effect.Effect<InboxTarget | undefined> => {
      const normal = normaliseAddress(address)?.toLowerCase()
      return normal === undefined ? Effect.succeed(undefined) : lookup(normal)
    }

    return Inbound.of({ deliver, recipient, hosted: hostedInboxes })
  }))

  /** With the services it uses (Domains, Events, Lists, MailParser, MessageStore, ProviderEvents); the ports are the caller's. */
  static readonly layer = Inbound.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Domains.layer, Events.layer, Lists.layer, MailParser.layer, MessageStore.layer, ProviderEvents.layer)))
}
