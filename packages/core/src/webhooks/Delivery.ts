/**
 * Delivering events to webhooks: the handler of the durable job `webhook.delivery` (one
 * job per delivery, written with the event: FanOut.ts). Each attempt:
 * - reads the delivery, its webhook and its event; a deleted webhook ends the job, a
 *   disabled one fails the delivery (`webhook_disabled`) without calling it;
 * - marks it `sending` (with the read, in the job's claim statement), checks the URL again (guard.ts: resolve, check every address,
 *   connect to the checked one; a refusal is `invalid_url`), and POSTs the envelope signed
 *   the Standard Webhooks way: `webhook-id` (the event's id, equal on every retry and for
 *   every attempt after a crash), `webhook-timestamp` (seconds), `webhook-signature`
 *   (`v1,<base64 HMAC-SHA256>` of `id.timestamp.body`), plus the webhook's custom headers;
 * - any 2xx within 10 seconds is `delivered`; otherwise the error (`http_4xx`, `http_5xx`,
 *   `http_3xx` (redirects are not followed), `timeout`, `connection_refused`,
 *   `dns_failure`, `tls_error`, `connection_error`, `invalid_url`) is recorded and the job
 *   fails with retry: the runner waits by RETRY_POLICIES.webhook (5 s, 30 s, 2 min, 10 min,
 *   30 min, 1 h, 2 h) and the eighth failed attempt marks the delivery `failed`.
 *
 * A failed attempt is logged, at most one line a minute per webhook (`webhook deliveries
 * failing`, with the failures since that webhook's last line), so an endpoint that is down
 * shows in the log without a line per retry.
 *
 * A crash mid-attempt leaves the job's lease to run out; another worker (or the restarted
 * process) claims it again, so nothing is lost, and a receiver may see one event twice
 * only under the same `webhook-id`. Attempts to one endpoint run at most
 * ENDPOINT_CONCURRENCY at a time in a process, and DELIVERY_CONCURRENCY in all. The
 * per-endpoint cap is per process on purpose: across processes it would need a database
 * lock or slot row held for the whole HTTP call (up to DELIVERY_TIMEOUT), a pooled
 * connection idle per attempt, so N processes may send up to N × ENDPOINT_CONCURRENCY.
 *
 * A slow endpoint never holds up the others. The runner claims due jobs oldest first,
 * whatever their webhook, so an endpoint with a backlog fills the process's attempts; an
 * attempt that waited ENDPOINT_WAIT for its endpoint's turn gives its job back
 * (`JobDeferred`: due again ENDPOINT_WAIT later, not counted as an attempt, the delivery
 * row as it was), and its slot goes to the next due job, of any webhook. A fast endpoint's
 * turns come round in milliseconds, so its backlog keeps all the attempts it can use.
 */
import { Deferred, Duration, Effect, Exit, Layer, Metric, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { type Job, JobDeferred, JobFailed, Jobs } from "../jobs/Jobs.ts"
import { maxAttempts, RETRY_POLICIES } from "../jobs/policies.ts"
import { webhookOutcome } from "../operating/metrics.ts"
import { Settings } from "../settings/Settings.ts"
import { webhookResealing } from "./sealed.ts"
import { openStored } from "../shared/sealing.ts"
import { sign } from "../shared/signing.ts"
import { traced } from "../shared/span.ts"
import { batched } from "../shared/batching.ts"
import { now } from "../shared/time.ts"
import { EventBodies, type EventRow, toEnvelope, withBodies } from "../events/Events.ts"
import { DELIVERY_JOB } from "./FanOut.ts"
import { checkWebhookUrl, type CheckedUrl, HostResolver, pinnedLookup } from "../egress/guard.ts"
import { openHeaderValues } from "./headers.ts"

/** Spec: a 2xx within 10 seconds counts as delivered. */
export const DELIVERY_TIMEOUT = Duration.seconds(10)
/**
 * Attempts a process runs at once, all webhooks together. Most of an attempt's time is
 * waiting (its statements, the group commits, the endpoint's slot), so more attempts in
 * flight keep the endpoints' slots busy: 128 delivered half as much again as 64 to one
 * endpoint (pnpm bench webhooks; BENCHMARKS.md, "Events: webhook deliveries").
 */
export const DELIVERY_CONCURRENCY = 128
export const ENDPOINT_CONCURRENCY = 8
/**
 * How long an attempt waits for a turn at a busy endpoint before giving its job back. An
 * endpoint answering in 200 ms serves the ENDPOINT_CONCURRENCY × 5 attempts ahead of a new
 * one within it; one that hangs for DELIVERY_TIMEOUT no longer keeps attempts waiting.
 */
export const ENDPOINT_WAIT = Duration.seconds(1)

/** Webhook secrets (and header values) kept opened in a process (the oldest opened goes first). */
const OPENED_SECRETS = 10_000
/** Bytes of a receiver's answer we read before closing: we only need its status. */
const MAX_ANSWER_BYTES = 64 * 1024
/** A failing webhook gets at most one log line in this time. */
const FAILURE_LOG_INTERVAL_MS = 60_000
/** Webhooks whose failures are remembered for the log at most (the longest unheard goes first). */
const FAILURE_LOG_WEBHOOKS = 10_000

/**
 * The log's rate limit for failures, per webhook: `failed(webhookId, at)` answers how many
 * failures to report now (this one and those counted since the webhook's last line), or
 * undefined within FAILURE_LOG_INTERVAL_MS of that line, when this one is only counted.
 */
const failureLog = (intervalMs = FAILURE_LOG_INTERVAL_MS, webhooks = FAILURE_LOG_WEBHOOKS) => {
  const lines = new Map<string, { readonly at: number; counted: number }>()
  return (webhookId: string, at: number): number | undefined => {
    const last = lines.get(webhookId)
    if (last !== undefined && at - last.at < intervalMs) {
      last.counted++
      return undefined
    }
    lines.delete(webhookId)
    if (lines.size >= webhooks) lines.delete(lines.keys().next().value!)
    lines.set(webhookId, { at, counted: 0 })
    return (last?.counted ?? 0) + 1
  }
}

const Row = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  /** as the row was before this attempt marked it sending: a deferred attempt puts them back */
  previous_attempts: Schema.Number,
  previous_attempt_at: Schema.NullOr(Schema.String),
  webhook_id: Schema.String,
  attempt: Schema.Number,
  url: Schema.String,
  secret: Schema.String,
  enabled: Schema.Boolean,
  header_values: Schema.NullOr(Schema.String),
  event: Schema.NullOr(Schema.Struct({
    id: Schema.String,
    organization_id: Schema.String,
    pod_id: Schema.NullOr(Schema.String),
    inbox_id: Schema.NullOr(Schema.String),
    event_type: Schema.String,
    payload: Schema.Record(Schema.String, Schema.Unknown),
    created_at: Schema.String,
    bodies: EventBodies
  }))
})

export interface Attempt {
  readonly statusCode?: number
  readonly error?: string
}

const errorOfCode = (code: string | undefined): string =>
  code === "ECONNREFUSED"
    ? "connection_refused"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? "dns_failure"
    : code !== undefined && (code.startsWith("ERR_TLS") || code.includes("CERT") || code.startsWith("ERR_SSL"))
    ? "tls_error"
    : "connection_error"

/** A delivery's headers: the webhook's own, then the Standard Webhooks id, timestamp and signature. */
export const signedHeaders = (own: Readonly<Record<string, string>>, secret: string, eventId: string, at: Date, body: string) => {
  const timestamp = Math.floor(at.getTime() / 1000).toString()
  return {
    ...own,
    "webhook-id": eventId,
    "webhook-timestamp": timestamp,
    "webhook-signature": sign(secret, eventId, timestamp, Buffer.from(body))
  }
}

/** One POST to a checked address; interruption (the timeout) aborts it. */
export const post = (target: CheckedUrl, headers: Record<string, string>, body: string): Effect.Effect<Attempt> =>
  Effect.callback<Attempt>((resume, signal) => {
    const lookup = pinnedLookup(target)
    const send = target.url.protocol === "https:" ? httpsRequest : httpRequest
    const req = send(target.url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body).toString() },
      lookup,
      signal
    }, (res) => {
      let read = 0
      res.on("data", (chunk: Buffer) => {
        read += chunk.length
        if (read > MAX_ANSWER_BYTES) res.destroy()
      })
      const status = res.statusCode ?? 0
      const done = () => resume(Effect.succeed(status >= 200 && status <= 299
        ? { statusCode: status }
        : { statusCode: status, error: status >= 500 ? "http_5xx" : status >= 400 ? "http_4xx" : status >= 300 ? "http_3xx" : "http_1xx" }))
      res.on("end", done)
      res.on("close", done)
      res.on("error", done)
    })
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (!signal.aborted) resume(Effect.succeed({ error: errorOfCode(e.code) }))
    })
    req.end(body)
  })

/**
 * One endpoint's turns: at most ENDPOINT_CONCURRENCY POSTs at once, the rest waiting in
 * order. A turn is handed straight to the next waiter when one ends.
 */
interface Gate {
  busy: number
  readonly waiting: Array<Deferred.Deferred<void>>
}

const leave = (gate: Gate) => {
  const next = gate.waiting.shift()
  if (next === undefined) gate.busy--
  else Deferred.doneUnsafe(next, Exit.void)
}

/** A turn at the endpoint, or false when none came within ENDPOINT_WAIT. */
const enter = (gate: Gate): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (gate.busy < ENDPOINT_CONCURRENCY) {
      gate.busy++
      return Effect.succeed(true)
    }
    const turn = Deferred.makeUnsafe<void>()
    gate.waiting.push(turn)
    // Still in line: leave it. Not in line: a turn was handed over (perhaps as the wait ran
    // out), and it is ours to use or to pass on.
    const stillWaiting = () => {
      const at = gate.waiting.indexOf(turn)
      if (at >= 0) gate.waiting.splice(at, 1)
      return at >= 0
    }
    return Deferred.await(turn).pipe(
      Effect.timeoutOption(ENDPOINT_WAIT),
      Effect.map((came) => Option.isSome(came) || !stillWaiting()),
      Effect.onInterrupt(() => Effect.sync(() => stillWaiting() || leave(gate)))
    )
  })

/** The job handler's work for one delivery; the layer registers it with Jobs. */
const layerHandlerNoDeps = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const jobs = yield* Jobs
  const settings = yield* Settings
  const resolver = yield* HostResolver
  const endpoints = new Map<string, Gate>()
  const policy = RETRY_POLICIES.webhook
  const failed = failureLog()

  const gateOf = (webhookId: string) => {
    let gate = endpoints.get(webhookId)
    if (gate === undefined) {
      gate = { busy: 0, waiting: [] }
      endpoints.set(webhookId, gate)
    }
    return gate
  }

  // Deliveries that succeeded are recorded together (a group commit); each attempt still
  // waits for its statement, so it is marked delivered (after its 2xx) before its job ends.
  const recordDelivered = yield* batched((done: ReadonlyArray<{ readonly id: string; readonly statusCode: number; readonly attempts: number }>) =>
    Effect.gen(function*() {
      const at = yield* now
      yield* sql`UPDATE webhook_deliveries d SET status = 'delivered', status_code = v.status_code, error = NULL,
          attempts = v.attempts, last_attempt_at = ${at}, delivered_at = ${at}, updated_at = ${at}
        FROM (SELECT unnest(${done.map((x) => x.id)}::text[]) AS id, unnest(${done.map((x) => x.statusCode)}::int[]) AS status_code,
          unnest(${done.map((x) => x.attempts)}::int[]) AS attempts) v
        WHERE d.id = v.id`
    }).pipe(Effect.orDie)
  )

  const record = (id: string, webhookId: string, job: Job, outcome: Attempt) =>
    Effect.gen(function*() {
      if (outcome.error === undefined) {
        yield* recordDelivered({ id, statusCode: outcome.statusCode ?? 200, attempts: job.attempts })
        return yield* Metric.update(webhookOutcome.delivered, 1)
      }
      // A failed attempt: retried after the policy's wait, or failed for good on the last one.
      const at = yield* now
      const status = job.attempts >= maxAttempts(policy) ? "failed" : "pending"
      yield* Metric.update(status === "failed" ? webhookOutcome.failed : webhookOutcome.retried, 1)
      const failures = failed(webhookId, at.getTime())
      if (failures !== undefined) {
        yield* Effect.logWarning("webhook deliveries failing").pipe(Effect.annotateLogs({
          webhook_id: webhookId,
          failures,
          error: outcome.error,
          status_code: outcome.statusCode ?? null,
          delivery_status: status
        }))
      }
      yield* sql`UPDATE webhook_deliveries SET status = ${status}, status_code = ${outcome.statusCode ?? null},
          error = ${outcome.error}, attempts = ${job.attempts}, last_attempt_at = ${at}, delivered_at = NULL, updated_at = ${at}
        WHERE id = ${id}`.pipe(Effect.orDie)
      return yield* new JobFailed({ message: outcome.error, retry: true })
    })

  // Run in the claim's own statement (Jobs' `prepare`): reads each claimed delivery, its
  // webhook and event, and marks it `sending` when it is to be attempted (the statement's
  // snapshot decides both alike). A statement of its own after the claim was one more
  // round trip before every POST.
  const prepare = (at: Date) =>
    sql`target AS (
        SELECT c.id AS job_id, d.id, d.status, d.attempts AS previous_attempts, d.last_attempt_at AS previous_attempt_at,
          d.webhook_id, w.url, w.secret, w.enabled, w.header_values, c.attempts AS attempt,
          (SELECT to_jsonb(e) FROM (SELECT id, organization_id, pod_id, inbox_id, event_type, payload,
            to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, ${withBodies(sql)}
            FROM events WHERE id = d.event_id) e) AS event
        FROM claimed c JOIN webhook_deliveries d ON d.id = c.payload->>'delivery_id' JOIN webhooks w ON w.id = d.webhook_id),
      sending AS (
        UPDATE webhook_deliveries d SET status = 'sending', attempts = t.attempt, last_attempt_at = ${at}, updated_at = ${at}
        FROM target t WHERE d.id = t.id AND t.enabled AND t.event IS NOT NULL AND t.status NOT IN ('delivered', 'failed')),
      prepared AS (SELECT job_id, to_jsonb(target) - 'job_id' AS value FROM target)`
  const decodePrepared = Schema.decodeUnknownSync(Schema.NullOr(Row))

  /**
   * The signing secret and the custom header values: sealed rows open with INBOX_SECRET_KEY;
   * secrets from before sealing are plain. Opened once per webhook and stored value (a
   * rotation or a header change changes the value), not per attempt: deriving the key and
   * opening it was a visible share of a delivery's CPU.
   */
  const openedOnce = <A>(openValue: (webhookId: string, stored: string) => Effect.Effect<A | undefined>) => {
    const opened = new Map<string, { readonly stored: string; readonly value: A | undefined }>()
    return (webhookId: string, stored: string) => {
      const known = opened.get(webhookId)
      if (known !== undefined && known.stored === stored) return Effect.succeed(known.value)
      return Effect.map(openValue(webhookId, stored), (value) => {
        if (opened.size >= OPENED_SECRETS) opened.delete(opened.keys().next().value!)
        opened.set(webhookId, { stored, value })
        return value
      })
    }
  }
  const signingSecret = openedOnce((webhookId, stored) => openStored(settings.secretKey, "webhook", webhookId, stored))
  const headerValues = openedOnce((webhookId, stored) => openHeaderValues(settings.secretKey, webhookId, stored))

  const run = (job: Job) =>
    Effect.gen(function*() {
      const id = (job.payload as { delivery_id: string }).delivery_id
      const row = decodePrepared(job.prepared ?? null)
      const at = yield* now
      if (row === null || row.status === "delivered" || row.status === "failed") return
      if (!row.enabled || row.event === null) {
        yield* sql`UPDATE webhook_deliveries SET status = 'failed', error = ${row.enabled ? "event_deleted" : "webhook_disabled"},
          updated_at = ${at} WHERE id = ${id}`.pipe(Effect.orDie)
        yield* Metric.update(webhookOutcome.failed, 1)
        return
      }
      const secret = yield* signingSecret(row.webhook_id, row.secret)
      const own = row.header_values === null ? {} : yield* headerValues(row.webhook_id, row.header_values)
      if (secret === undefined || own === undefined) {
        // Sealed under another INBOX_SECRET_KEY: no signature we could make would verify, and
        // a delivery without its headers (often the receiver's credentials) is not this webhook's.
        yield* sql`UPDATE webhook_deliveries SET status = 'failed', error = 'secret_unreadable', updated_at = ${at}
          WHERE id = ${id}`.pipe(Effect.orDie)
        yield* Metric.update(webhookOutcome.failed, 1)
        const failures = failed(row.webhook_id, at.getTime())
        if (failures !== undefined) {
          yield* Effect.logError(`a webhook ${secret === undefined ? "secret" : "header value"} does not open with INBOX_SECRET_KEY`).pipe(
            Effect.annotateLogs({ webhook_id: row.webhook_id, failures })
          )
        }
        return
      }
      const event: EventRow = { ...row.event, created_at: new Date(row.event.created_at) }
      const body = JSON.stringify(toEnvelope(event))
      const headers = signedHeaders(own, secret, event.id, at, body)
      const gate = gateOf(row.webhook_id)
      if (!(yield* enter(gate))) {
        // No attempt was made: the row goes back to what this attempt found.
        yield* sql`UPDATE webhook_deliveries SET status = ${row.status}, attempts = ${row.previous_attempts},
            last_attempt_at = ${row.previous_attempt_at}, updated_at = ${at}
          WHERE id = ${id} AND status = 'sending'`.pipe(Effect.orDie)
        return yield* new JobDeferred({ until: new Date((yield* now).getTime() + Duration.toMillis(ENDPOINT_WAIT)) })
      }
      // The address is resolved and checked within the turn and the time limit: a webhook
      // whose name server never answers holds one of its own turns for DELIVERY_TIMEOUT at
      // most, not an attempt of the process for as long as the system resolver waits.
      const outcome = yield* Effect.gen(function*() {
        const checked = yield* checkWebhookUrl(row.url, settings.webhookAllowPrivate).pipe(
          Effect.provideService(HostResolver, resolver),
          Effect.result
        )
        return checked._tag === "Failure" ? { error: "invalid_url" } : yield* post(checked.success, headers, body)
      }).pipe(
        Effect.timeoutOrElse({ duration: DELIVERY_TIMEOUT, orElse: () => Effect.succeed<Attempt>({ error: "timeout" }) }),
        Effect.ensuring(Effect.sync(() => leave(gate)))
      )
      yield* record(id, row.webhook_id, job, outcome)
    }).pipe(traced("Webhooks.deliver"))

  yield* jobs.register({ kind: DELIVERY_JOB, policy, concurrency: DELIVERY_CONCURRENCY, run, prepare })
}))

/** The delivery handler, registered with the job queue it uses (its ports are the caller's). */
export const layerHandler = layerHandlerNoDeps.pipe(Layer.provide(Layer.mergeAll(Jobs.layer, HostResolver.layer, webhookResealing)))
