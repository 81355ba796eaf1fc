/**
 * RateLimiter: fixed-window request counters keyed by caller (IP or key) and purpose.
 *
 * Contract: `take(key, policy)` counts one request and fails with 429 `rate_limited`
 * (carrying the seconds until the window resets, sent as Retry-After) once `policy.limit`
 * requests were counted in the current window. Windows are aligned to the epoch (a window
 * of 60 s starts on the minute), so every process agrees on them without asking.
 *
 * Where the counters live follows the database: on a PostgreSQL server that several
 * processes may share (Signals.crossProcess), in the UNLOGGED table `rate_counters`; on the
 * embedded database (one process by construction) in this process's memory. Disabled
 * entirely when Settings.rateLimits is false (INBOX_RATE_LIMITS=off).
 *
 * Shared counters are taken in reservations (`reservationOf`): a process adds a
 * reservation to the caller's row and serves that many requests from memory before it asks
 * again. Nothing passes beyond the limit across all processes; the price is that a
 * reservation another process holds unused may refuse a caller a little early (at most a
 * reservation per other process). Small limits (sign-up, password attempts, anything under
 * 200 per window) reserve one request at a time, so they hold exactly. One upsert per
 * request halved GET throughput; what the reservations cost now is in BENCHMARKS.md
 * ("HTTP: inboxes", the run with the request limits on).
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

/** The share of a limit a process reserves at a time from a shared counter (at least one request). */
export const RESERVATION_SHARE = 0.01

export const reservationOf = (limit: number) => Math.max(1, Math.floor(limit * RESERVATION_SHARE))

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
  static readonly layerNoDeps = Layer.effect(RateLimiter, Effect.gen(function*() {
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
        return Effect.flatMap(count(`${policy.name}:${key}`, windowStart, policy.limit), (allowed) => {
          if (allowed) return Effect.void
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

  static readonly layer = RateLimiter.layerNoDeps
}

/** Counts one request in the window starting at `windowStart`; answers whether it is within `limit`. */
type Counter = (id: string, windowStart: number, limit: number) => Effect.Effect<boolean>

interface Window {
  start: number
  /** Requests counted (memory), or reserved requests not yet used (shared). */
  n: number
}

/** Windows by caller, bounded under a flood of distinct callers. */
const windowsOf = () => {
  const windows = new Map<string, Window>()
  return (id: string, windowStart: number): Window => {
    let w = windows.get(id)
    if (w === undefined || w.start !== windowStart) {
      if (windows.size > 100_000) windows.clear()
      w = { start: windowStart, n: 0 }
      windows.set(id, w)
    }
    return w
  }
}

const memoryCounter = (): Counter => {
  const windowOf = windowsOf()
  return (id, windowStart, limit) => Effect.sync(() => ++windowOf(id, windowStart).n <= limit)
}

const CountRow = Schema.Struct({ count: Schema.Number })

/**
 * A request first spends what this process reserved for its caller's window. Otherwise one
 * upsert adds a reservation to the caller's row (the row's lock orders concurrent
 * reservations, so their sum is exact across processes) and keeps what still fits under
 * the limit. A process whose clock lags still counts into the newer window it finds rather
 * than resetting it.
 */
const sharedCounter = (sql: SqlClient.SqlClient): Counter => {
  const windowOf = windowsOf()
  return (id, windowStart, limit) => {
    const reserved = windowOf(id, windowStart)
    if (reserved.n > 0) {
      reserved.n--
      return Effect.succeed(true)
    }
    const size = reservationOf(limit)
    return sql`INSERT INTO rate_counters (key, window_start, count) VALUES (${id}, ${windowStart}, ${size})
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN EXCLUDED.window_start > rate_counters.window_start THEN EXCLUDED.count ELSE rate_counters.count + EXCLUDED.count END,
        window_start = greatest(rate_counters.window_start, EXCLUDED.window_start)
      RETURNING count`.pipe(
      decodeRows(CountRow),
      Effect.map((rows) => {
        const count = rows[0]?.count ?? size
        const granted = Math.min(size, limit - (count - size))
        if (granted <= 0) return false
        // Other fibers of this process may have reserved for the same window meanwhile: add up.
        windowOf(id, windowStart).n += granted - 1
        return true
      }),
      Effect.orDie
    )
  }
}
