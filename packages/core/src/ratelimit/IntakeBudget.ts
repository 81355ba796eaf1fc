/**
 * The memory budget for what clients are still sending: bytes of HTTP request bodies and
 * SMTP DATA held in this process at once, across every connection (INBOX_INTAKE_MEMORY_MB).
 *
 * Each route caps its own body (50 MiB for a raw message), but many slow uploads at once
 * would each stay under their cap and still exhaust memory together. A reader reserves its
 * bytes as they arrive and releases them when the request or message is done with; a
 * reservation that would pass the budget is refused, and the reader answers "busy, retry"
 * (HTTP 503 service_unavailable with Retry-After, SMTP 452 4.3.1) instead of buffering.
 *
 * Contract: `tryReserve` is all-or-nothing and never blocks; `release` gives back exactly
 * what a reader reserved (readers keep their own tally, `reserver`). Both are synchronous,
 * so stream callbacks can call them between chunks.
 */
import { Context, Effect, Layer } from "effect"
import { ServiceUnavailable } from "../errors/errors.ts"
import { Settings } from "../settings/Settings.ts"

/** How long a refused client is asked to wait before it tries again. */
export const INTAKE_RETRY_AFTER_SECONDS = 5

export interface Reserver {
  /** Reserves `bytes` more; false (nothing reserved) when the budget would be passed. */
  readonly take: (bytes: number) => boolean
  /** Gives back everything this reserver holds. */
  readonly releaseAll: () => void
}

export class IntakeBudget extends Context.Service<IntakeBudget, {
  readonly limit: number
  /** Bytes reserved now. */
  readonly inUse: () => number
  readonly tryReserve: (bytes: number) => boolean
  readonly release: (bytes: number) => void
  /** A tally for one reader: what it takes, and one release of all of it. */
  readonly reserver: () => Reserver
}>()("inbox/IntakeBudget") {
  static readonly make = (limit: number): IntakeBudget["Service"] => {
    let used = 0
    const tryReserve = (bytes: number) => {
      if (bytes <= 0) return true
      if (used + bytes > limit) return false
      used += bytes
      return true
    }
    const release = (bytes: number) => {
      used = Math.max(0, used - bytes)
    }
    return IntakeBudget.of({
      limit,
      inUse: () => used,
      tryReserve,
      release,
      reserver: () => {
        let held = 0
        return {
          take: (bytes) => {
            if (!tryReserve(bytes)) return false
            held += bytes
            return true
          },
          releaseAll: () => {
            release(held)
            held = 0
          }
        }
      }
    })
  }

  static readonly layerNoDeps = Layer.effect(IntakeBudget, Effect.map(Settings, (s) => IntakeBudget.make(s.intakeMemoryBytes)))

  static readonly layer = IntakeBudget.layerNoDeps
}

/** The answer to a reader refused by the budget. */
export const intakeFull = () =>
  new ServiceUnavailable({
    message: "The server is receiving too much data at once; try again shortly.",
    fix: `Retry after ${INTAKE_RETRY_AFTER_SECONDS} seconds.`,
    retryAfterSeconds: INTAKE_RETRY_AFTER_SECONDS
  })
