/**
 * Idempotency-Key on send routes (spec: Endpoints, Errors `idempotency_key_reuse`).
 *
 * Rules (docs/sending.md, "Sending mail"):
 * - the same key with the same route and body within 24 hours answers the first request's
 *   answer and sends nothing;
 * - the same key on another route, or with another body, is 409 idempotency_key_reuse;
 * - a second request while the first is still running waits for it (up to the first's
 *   lease) and then answers the same;
 * - a request that fails with an error the client can act on (4xx) gives the key back, so
 *   the corrected request can use it again; only a success is remembered;
 * - a crash between the relay's acceptance and the commit that records it: the first
 *   request recorded the message (state `sending`, with its Message-ID) and the key (with
 *   the message's ids) before calling the relay, so the retry with the same key finds them,
 *   sends the same bytes again with the same Message-ID (recipients' mail systems collapse
 *   a repeated Message-ID) and answers the same message_id. Delivery is at least once,
 *   never lost, and never a second message in our store.
 *
 * A key is claimed by one conditional INSERT, so two concurrent requests cannot both own it.
 */
import { Context, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { IdempotencyKeyReuse } from "../errors/errors.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { now } from "../shared/time.ts"

/** How long a key remembers its answer. */
export const IDEMPOTENCY_TTL = Duration.hours(24)
/** How long one request owns a key before another may take over (it died). */
export const IDEMPOTENCY_LEASE = Duration.minutes(2)

export const SendAnswer = Schema.Struct({ message_id: Schema.String, thread_id: Schema.String })
export type SendAnswer = typeof SendAnswer.Type

const KeyRow = Schema.Struct({
  route: Schema.String,
  request_hash: Schema.String,
  state: Schema.Literals(["pending", "done"]),
  lease_until: Schema.Date,
  response: Schema.NullOr(Json(SendAnswer)),
  created_at: Schema.Date
})

export type Claim =
  /** This request owns the key and starts from nothing. */
  | { readonly _tag: "Fresh" }
  /** A finished request's answer. */
  | { readonly _tag: "Done"; readonly answer: SendAnswer }
  /** This request owns the key; an earlier owner died after recording this message. */
  | { readonly _tag: "Resume"; readonly answer: SendAnswer }

export interface KeyRef {
  readonly organizationId: string
  readonly key: string
}

class StillRunning extends Schema.TaggedError<StillRunning>()("StillRunning", {}) {}

export class Idempotency extends Context.Service<Idempotency, {
  claim(ref: KeyRef, route: string, requestHash: string): Effect.Effect<Claim, IdempotencyKeyReuse>
  /** Inside the transaction that records the message: the answer a resumed request gives. */
  recorded(ref: KeyRef, answer: SendAnswer): Effect.Effect<void>
  /** Inside the transaction that finishes the send. */
  done(ref: KeyRef, answer: SendAnswer): Effect.Effect<void>
  /** The request failed in a way the client can fix: the key is free again. */
  release(ref: KeyRef): Effect.Effect<void>
  /**
   * Retention: deletes up to `limit` keys older than IDEMPOTENCY_TTL at `at` (none whose
   * first request still holds its lease); answers how many.
   */
  purgeExpired(at: Date, limit: number): Effect.Effect<number>
}>()("inbox/Idempotency") {
  static readonly layerNoDeps = Layer.effect(Idempotency, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const reuse = (message: string) => new IdempotencyKeyReuse({ message, fix: "Use a new Idempotency-Key for a different request." })

    const attempt = (ref: KeyRef, route: string, requestHash: string): Effect.Effect<Claim, IdempotencyKeyReuse | StillRunning> =>
      Effect.gen(function*() {
        const at = yield* now
        const lease = new Date(at.getTime() + Duration.toMillis(IDEMPOTENCY_LEASE))
        const claimed = yield* sql`INSERT INTO idempotency_keys (organization_id, key, route, request_hash, state, lease_until, created_at)
          VALUES (${ref.organizationId}, ${ref.key}, ${route}, ${requestHash}, 'pending', ${lease}, ${at})
          ON CONFLICT (organization_id, key) DO NOTHING RETURNING key`
        if (claimed.length > 0) return { _tag: "Fresh" } as Claim
        const rows = yield* sql`SELECT route, request_hash, state, lease_until, response, created_at FROM idempotency_keys
          WHERE organization_id = ${ref.organizationId} AND key = ${ref.key}`.pipe(decodeRows(KeyRow))
        const row = rows[0]
        if (row === undefined) return yield* new StillRunning() // released meanwhile: try again
        if (row.created_at.getTime() < at.getTime() - Duration.toMillis(IDEMPOTENCY_TTL)) {
          // An expired key is gone for every purpose: delete it and claim it anew. Looked at
          // only on a conflict, so a fresh key is one statement.
          yield* sql`DELETE FROM idempotency_keys WHERE organization_id = ${ref.organizationId} AND key = ${ref.key}
            AND created_at < ${new Date(at.getTime() - Duration.toMillis(IDEMPOTENCY_TTL))}`
          return yield* attempt(ref, route, requestHash)
        }
        if (row.route !== route) return yield* reuse("This Idempotency-Key was used on another route.")
        if (row.request_hash !== requestHash) return yield* reuse("This Idempotency-Key was used with another request body.")
        if (row.state === "done" && row.response !== null) return { _tag: "Done", answer: row.response } as Claim
        if (row.lease_until.getTime() > at.getTime()) return yield* new StillRunning()
        // The owner's lease ran out: it died. Take the key over, once.
        const taken = yield* sql`UPDATE idempotency_keys SET lease_until = ${lease}
          WHERE organization_id = ${ref.organizationId} AND key = ${ref.key} AND state = 'pending' AND lease_until = ${row.lease_until}
          RETURNING key`
        if (taken.length === 0) return yield* new StillRunning()
        return (row.response === null ? { _tag: "Fresh" } : { _tag: "Resume", answer: row.response }) as Claim
      }).pipe(Effect.catchTag("SqlError", Effect.die))

    return Idempotency.of({
      claim: (ref, route, requestHash) =>
        attempt(ref, route, requestHash).pipe(
          // Another request holds the key: wait for it to finish (or for its lease to run out).
          Effect.retry({
            while: (e) => e._tag === "StillRunning",
            schedule: Schedule.spaced("100 millis"),
            times: Duration.toMillis(IDEMPOTENCY_LEASE) / 100 + 10
          }),
          Effect.catchIf(
            (e): e is StillRunning => e._tag === "StillRunning",
            () => Effect.fail(reuse("A request with this Idempotency-Key is still running."))
          )
        ),
      recorded: (ref, answer) =>
        sql`UPDATE idempotency_keys SET response = ${JSON.stringify(answer)}::jsonb
          WHERE organization_id = ${ref.organizationId} AND key = ${ref.key}`.pipe(Effect.asVoid, Effect.orDie),
      done: (ref, answer) =>
        sql`UPDATE idempotency_keys SET state = 'done', response = ${JSON.stringify(answer)}::jsonb
          WHERE organization_id = ${ref.organizationId} AND key = ${ref.key}`.pipe(Effect.asVoid, Effect.orDie),
      release: (ref) =>
        sql`DELETE FROM idempotency_keys WHERE organization_id = ${ref.organizationId} AND key = ${ref.key}`.pipe(Effect.asVoid, Effect.orDie),
      purgeExpired: (at, limit) =>
        sql<{ key: string }>`DELETE FROM idempotency_keys WHERE (organization_id, key) IN (
            SELECT organization_id, key FROM idempotency_keys
            WHERE created_at < ${new Date(at.getTime() - Duration.toMillis(IDEMPOTENCY_TTL))} AND (state = 'done' OR lease_until < ${at})
            ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING key`.pipe(Effect.map((rows) => rows.length), Effect.orDie)
    })
  }))

  static readonly layer = Idempotency.layerNoDeps
}
