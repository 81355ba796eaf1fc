/**
 * Retention: what the engine stops keeping, purged by a scheduled durable job.
 *
 * - messages in the trash whose labels last changed more than INBOX_RETENTION_TRASH_DAYS
 *   ago (default 30), with their threads refreshed (MessageStore.purgeTrash);
 * - Idempotency-Keys past their 24 hours (Idempotency.purgeExpired);
 * - jobs done or failed more than INBOX_RETENTION_JOBS_DAYS ago (default 7);
 * - events older than INBOX_RETENTION_EVENTS_DAYS (default 90, the longest metrics window);
 * - dashboard accounts whose address was not verified within UNVERIFIED_ACCOUNT_TTL of
 *   sign-up (7 days; Auth.purgeUnverified).
 * A days setting of 0 keeps that kind forever.
 *
 * Each owner deletes its own rows; this module only decides when and how much. Every batch
 * is one short statement or transaction of at most INBOX_RETENTION_BATCH rows (default 500),
 * found by an index and skipping rows another transaction holds (SKIP LOCKED), so a purge
 * never holds many locks for long, however much is due; batches repeat until one comes back
 * short.
 *
 * Schedule: one job of kind `retention.purge` per INBOX_RETENTION_INTERVAL_MINUTES slot
 * (default 60), keyed by its slot, so however many server processes start, one purge runs
 * per slot; each run enqueues the next slot, and a starting server enqueues the current one.
 * A failed run is retried by the `maintenance` policy.
 */
import { Config, Context, Duration, Effect, Layer } from "effect"
import { Auth } from "../auth/Auth.ts"
import { UNVERIFIED_ACCOUNT_TTL } from "../auth/model.ts"
import { Events } from "../events/Events.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { RETRY_POLICIES } from "../jobs/policies.ts"
import { MessageStore } from "../messages/MessageStore.ts"
import { Idempotency } from "../sending/Idempotency.ts"
import { settingDefault } from "../settings/registry.ts"
import { now } from "../shared/time.ts"

export interface RetentionSettings {
  /** Days a message stays in the trash; 0 keeps it. */
  readonly trashDays: number
  /** Days a done or failed job is kept; 0 keeps them. */
  readonly jobsDays: number
  /** Days an event is kept; 0 keeps them. */
  readonly eventsDays: number
  /** Rows per batch. */
  readonly batch: number
  /** Minutes between purges. */
  readonly intervalMinutes: number
}

export const RETENTION_DEFAULTS: RetentionSettings = {
  trashDays: settingDefault("INBOX_RETENTION_TRASH_DAYS"),
  jobsDays: settingDefault("INBOX_RETENTION_JOBS_DAYS"),
  eventsDays: settingDefault("INBOX_RETENTION_EVENTS_DAYS"),
  batch: settingDefault("INBOX_RETENTION_BATCH"),
  intervalMinutes: settingDefault("INBOX_RETENTION_INTERVAL_MINUTES")
}

/** The settings from INBOX_RETENTION_TRASH_DAYS, _JOBS_DAYS, _EVENTS_DAYS, _BATCH and _INTERVAL_MINUTES. */
export const retentionConfig = Config.all({
  trashDays: Config.Int("INBOX_RETENTION_TRASH_DAYS").pipe(Config.withDefault(RETENTION_DEFAULTS.trashDays)),
  jobsDays: Config.Int("INBOX_RETENTION_JOBS_DAYS").pipe(Config.withDefault(RETENTION_DEFAULTS.jobsDays)),
  eventsDays: Config.Int("INBOX_RETENTION_EVENTS_DAYS").pipe(Config.withDefault(RETENTION_DEFAULTS.eventsDays)),
  batch: Config.Int("INBOX_RETENTION_BATCH").pipe(Config.withDefault(RETENTION_DEFAULTS.batch)),
  intervalMinutes: Config.Int("INBOX_RETENTION_INTERVAL_MINUTES").pipe(Config.withDefault(RETENTION_DEFAULTS.intervalMinutes))
})

/** What one purge deleted. */
export interface Purged {
  readonly trash: number
  readonly idempotencyKeys: number
  readonly jobs: number
  readonly events: number
  readonly unverifiedAccounts: number
}

export const RETENTION_JOB = "retention.purge"

const DAY_MS = 24 * 60 * 60 * 1000

export class Retention extends Context.Service<Retention, {
  readonly settings: RetentionSettings
  /** Purges everything due now, batch after batch; answers what it deleted. */
  readonly purge: Effect.Effect<Purged>
}>()("inbox/Retention") {
  static readonly layer = (overrides: Partial<RetentionSettings> = {}) =>
    Layer.effect(Retention, Effect.gen(function*() {
      const settings = { ...RETENTION_DEFAULTS, ...overrides }
      const store = yield* MessageStore
      const idempotency = yield* Idempotency
      const jobs = yield* Jobs
      const events = yield* Events
      const auth = yield* Auth
      const batch = Math.max(1, settings.batch)

      /** Runs `step` until a batch comes back short; the total deleted. */
      const drain = (step: (limit: number) => Effect.Effect<number>) =>
        Effect.gen(function*() {
          let total = 0
          for (;;) {
            const n = yield* step(batch)
            total += n
            if (n < batch) return total
            // Let other work run between batches.
            yield* Effect.yieldNow
          }
        })
      const olderThan = (at: Date, days: number) => new Date(at.getTime() - days * DAY_MS)

      const purge = Effect.gen(function*() {
        const at = yield* now
        const purged: Purged = {
          trash: settings.trashDays > 0 ? yield* drain((n) => store.purgeTrash(olderThan(at, settings.trashDays), n)) : 0,
          idempotencyKeys: yield* drain((n) => idempotency.purgeExpired(at, n)),
          jobs: settings.jobsDays > 0 ? yield* drain((n) => jobs.purgeSpent(olderThan(at, settings.jobsDays), n)) : 0,
          events: settings.eventsDays > 0 ? yield* drain((n) => events.purge(olderThan(at, settings.eventsDays), n)) : 0,
          unverifiedAccounts: yield* drain((n) => auth.purgeUnverified(new Date(at.getTime() - Duration.toMillis(UNVERIFIED_ACCOUNT_TTL)), n))
        }
        if (Object.values(purged).some((n) => n > 0)) yield* Effect.logInfo("retention purged", { ...purged })
        return purged
      }).pipe(Effect.withSpan("Retention.purge"))

      return Retention.of({ settings, purge })
    }))

  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    return Retention.layer(yield* retentionConfig)
  }).pipe(Effect.orDie))

  /**
   * The schedule (a server's background work): registers the purge job and enqueues the
   * current slot's run.
   */
  static readonly layerSchedule = Layer.effectDiscard(Effect.gen(function*() {
    const retention = yield* Retention
    const jobs = yield* Jobs
    const intervalMs = Math.max(1, retention.settings.intervalMinutes) * 60 * 1000
    const enqueueSlot = (slot: number, runAt: Date) =>
      jobs.enqueue({ kind: RETENTION_JOB, key: `slot:${slot}`, payload: { slot }, runAt })
    yield* jobs.register({
      kind: RETENTION_JOB,
      policy: RETRY_POLICIES.maintenance,
      concurrency: 1,
      run: (job) =>
        Effect.gen(function*() {
          yield* retention.purge
          const next = (job.payload as { slot: number }).slot + 1
          yield* enqueueSlot(next, new Date(next * intervalMs))
        })
    })
    const at = yield* now
    yield* enqueueSlot(Math.floor(at.getTime() / intervalMs), at)
  }))
}
