/**
 * RateLimiter: fixed-window request counters keyed by caller (IP or key) and purpose.
 *
 * Contract: `take(key, policy)` counts one request and fails with 429 `rate_limited`
 * (carrying the seconds until the window resets, sent as Retry-After) once `policy.limit`
 * requests were counted in the current window. Windows are aligned to the epoch (a window
 * of 60 s starts on the minute), so every process agrees on them without asking.
 *
 * Where the counters live follows the database: on a PostgreSQL server that several
 * processes may share (Signals.crossProcess), in the UNLOGGED table `rate_counters`, one
 * upsert per request, so a limit holds across every process exactly; on the embedded
 * database (one process by construction) in this process's memory. Disabled entirely when
 * Settings.rateLimits is false (INBOX_RATE_LIMITS=off).
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Signals } from "../db/Signals.ts"
import { RateLimited } from "../errors/errors.ts"
import { Settings } from "../settings/Settings.ts"
import { decodeRows } from "../shared/sql.ts"

export interface RatePolicy {
  readonly name: string
  readonly limit: number
  readonly windowSeconds: number
}

/** Named policies, in one place. */
export const RATE_POLICIES = {
  agentSignUpPerIp: { name: "agent_sign_up", limit: 5, windowSeconds: 3600 },
  verificationMailPerAddress: { name: "verification_mail", limit: 5, windowSeconds: 3600 },
  /** The limit of these two is Settings.requestsPerMinute (INBOX_REQUESTS_PER_MINUTE). */
  requestsPerKey: { name: "requests_per_key", limit: 6000, windowSeconds: 60 },
  requestsPerIp: { name: "requests_per_ip", limit: 6000, windowSeconds: 60 }
} as const satisfies Record<string, RatePolicy>

export class RateLimiter extends Context.Service<RateLimiter, {
  take(key: string, policy: RatePolicy): Effect.Effect<void, RateLimited>
  /** Counts one API request against its key, or its client IP when no key authenticated it. */
  request(keyId: string | undefined, clientIp: string): Effect.Effect<void, RateLimited>
}>()("inbox/RateLimiter") {
  static readonly layer = Layer.effect(RateLimiter, Effect.gen(function*() {
    const settings = yield* Settings
    const signals = yield* Signals
    const sql = yield* SqlClient.SqlClient
    const perKey = { ...RATE_POLICIES.requestsPerKey, limit: settings.requestsPerMinute }
    const perIp = { ...RATE_POLICIES.requestsPerIp, limit: settings.requestsPerMinute }
    const count = signals.crossProcess ? sharedCounter(sql) : memoryCounter()
    const take = (key: string, policy: RatePolicy): Effect.Effect<void, RateLimited> =>
      !settings.rateLimits ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
        const windowMs = policy.windowSeconds * 1000
        const windowStart = Math.floor(nowMs / windowMs) * windowMs
        return Effect.flatMap(count(`${policy.name}:${key}`, windowStart), (n) => {
          if (n <= policy.limit) return Effect.void
          const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + windowMs - nowMs) / 1000))
          return Effect.fail(new RateLimited({
            message: `Too many requests; try again in ${retryAfterSeconds} seconds.`,
            retryAfterSeconds
          }))
        })
      })
    return RateLimiter.of({
      take,
      request: (keyId, clientIp) => keyId === undefined ? take(clientIp, perIp) : take(keyId, perKey)
    })
  }))
}

/** Counts one request in the window starting at `windowStart`; answers the window's count so far. */
type Counter = (id: string, windowStart: number) => Effect.Effect<number>

const memoryCounter = (): Counter => {
  const windows = new Map<string, { start: number; count: number }>()
  return (id, windowStart) =>
    Effect.sync(() => {
      let w = windows.get(id)
      if (w === undefined || w.start < windowStart) {
        if (windows.size > 100_000) windows.clear() // bound memory under a flood of distinct keys
        w = { start: windowStart, count: 0 }
        windows.set(id, w)
      }
      return ++w.count
    })
}

const CountRow = Schema.Struct({ count: Schema.Number })

/**
 * One upsert per request: the row's lock serialises concurrent requests of one caller, so
 * the count is exact across processes. A process whose clock lags still counts into the
 * newer window it finds rather than resetting it.
 */
const sharedCounter = (sql: SqlClient.SqlClient): Counter => (id, windowStart) =>
  sql`INSERT INTO rate_counters (key, window_start, count) VALUES (${id}, ${windowStart}, 1)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN EXCLUDED.window_start > rate_counters.window_start THEN 1 ELSE rate_counters.count + 1 END,
      window_start = greatest(rate_counters.window_start, EXCLUDED.window_start)
    RETURNING count`.pipe(decodeRows(CountRow), Effect.map((rows) => rows[0]?.count ?? 1), Effect.orDie)
