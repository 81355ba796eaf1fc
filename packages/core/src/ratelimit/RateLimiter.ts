/**
 * RateLimiter: fixed-window request counters keyed by caller (IP or key) and purpose.
 *
 * Contract: `take(key, policy)` counts one request and fails with 429 `rate_limited`
 * (carrying the seconds until the window resets, sent as Retry-After) once `policy.limit`
 * requests were counted in the current window. Counters live in this process's memory:
 * with several server processes each enforces its own share, which is the usual trade-off
 * for request limits (they protect the process, not an exact quota). Disabled entirely when
 * Settings.rateLimits is false (INBOX_RATE_LIMITS=off).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { RateLimited } from "../errors/errors.ts"
import { Settings } from "../settings/Settings.ts"

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
    const windows = new Map<string, { start: number; count: number }>()
    const perKey = { ...RATE_POLICIES.requestsPerKey, limit: settings.requestsPerMinute }
    const perIp = { ...RATE_POLICIES.requestsPerIp, limit: settings.requestsPerMinute }
    const take = (key: string, policy: RatePolicy): Effect.Effect<void, RateLimited> =>
        !settings.rateLimits ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
          const id = `${policy.name}:${key}`
          const windowMs = policy.windowSeconds * 1000
          let w = windows.get(id)
          if (w === undefined || nowMs - w.start >= windowMs) {
            if (windows.size > 100_000) windows.clear() // bound memory under a flood of distinct keys
            w = { start: nowMs, count: 0 }
            windows.set(id, w)
          }
          w.count++
          if (w.count <= policy.limit) return Effect.void
          const retryAfterSeconds = Math.max(1, Math.ceil((w.start + windowMs - nowMs) / 1000))
          return Effect.fail(new RateLimited({
            message: `Too many requests; try again in ${retryAfterSeconds} seconds.`,
            retryAfterSeconds
          }))
        })
    return RateLimiter.of({
      take,
      request: (keyId, clientIp) => keyId === undefined ? take(clientIp, perIp) : take(keyId, perKey)
    })
  }))
}
