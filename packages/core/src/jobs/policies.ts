/**
 * Retry policies of durable jobs, named once. A policy is the list of waits after failed
 * attempts 1, 2, ...; its length plus one is the number of attempts in all. The job runner
 * spreads each wait by up to 10% (jitter) so a burst of failures does not retry in step.
 */
import { Duration } from "effect"

export interface RetryPolicy {
  readonly name: string
  readonly delays: ReadonlyArray<Duration.Duration>
}

export const RETRY_POLICIES = {
  /** Webhook deliveries (spec: States and transitions): 8 attempts, then failed. */
  webhook: {
    name: "webhook",
    delays: ["5 seconds", "30 seconds", "2 minutes", "10 minutes", "30 minutes", "1 hour", "2 hours"].map((d) => Duration.fromInputUnsafe(d as Duration.Input))
  },
  /** Once: a scheduled draft that fails is marked failed, not retried (spec). */
  once: { name: "once", delays: [] },
  /** Background checks that may hit a passing outage (DNS): a few quick retries. */
  transient: {
    name: "transient",
    delays: ["10 seconds", "1 minute", "5 minutes"].map((d) => Duration.fromInputUnsafe(d as Duration.Input))
  },
  /** Housekeeping (retention purges): retried a few times, then left to the next scheduled run. */
  maintenance: {
    name: "maintenance",
    delays: ["1 minute", "5 minutes", "15 minutes"].map((d) => Duration.fromInputUnsafe(d as Duration.Input))
  }
} as const satisfies Record<string, RetryPolicy>

export const maxAttempts = (policy: RetryPolicy): number => policy.delays.length + 1
