/**
 * Jobs: durable background work in the database (webhook deliveries, scheduled drafts,
 * domain checks), shared by every server process on it. The well-known PostgreSQL job
 * libraries need a `pg` pool and cannot run on the embedded PGlite, so the runner is ours,
 * on the engine's SQL client, with their proven ideas: claims with `FOR UPDATE SKIP LOCKED`,
 * leases kept alive by heartbeats, NOTIFY to wake idle workers, jittered backoff.
 *
 * Contract:
 * - `enqueue` writes the job with the caller's statement: inside a transaction, the job
 *   exists if and only if the transaction commits (the work a change causes is never lost
 *   nor done for a change that rolled back). A `key` makes it unique per kind among queued
 *   and running jobs: enqueueing a queued key again replaces its payload and time.
 * - A due job is claimed by one worker (SKIP LOCKED), which holds a lease renewed every
 *   third of its length while the handler runs. A worker that dies lets its lease run out
 *   and the job is claimed again: a job runs at least once, never by two workers at once
 *   (unless one stalls past its lease, which heartbeats prevent while it lives).
 * - A handler succeeds (done), or fails with `JobFailed`: with `retry` the job is queued
 *   again after its policy's next wait (policies.ts), until its attempts are spent (failed);
 *   without, it fails at once. A defect in a handler counts as a retryable failure. A
 *   handler gives its job back with `JobDeferred`: queued again, due at `until`, the
 *   attempt not counted, its slot free for other jobs meanwhile. For work that could not
 *   start (what it needs is busy), and for recurring work, which so keeps one row and its
 *   key (a job that enqueued its own successor under its key would only move its own time:
 *   the key is unique among queued and running jobs).
 * - Kinds run with bounded concurrency (per kind), so a slow handler never holds up others.
 * - `drain` (the worker's shutdown) waits for the running jobs up to a deadline, then puts
 *   back those still running (queued, due now, the attempt not counted), so another process
 *   claims them at once instead of waiting for their leases to run out.
 */
import { Config, Context, Duration, Effect, Fiber, Latch, Layer, Schedule, Schema, Semaphore, Stream } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Availability, logBackgroundFailure } from "../db/Availability.ts"
import { Ids } from "../platform/Ids.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { batched } from "../shared/batching.ts"
import { now } from "../shared/time.ts"
import { tracedWith } from "../shared/span.ts"
import { maxAttempts, type RetryPolicy } from "./policies.ts"
import { Signals } from "../db/Signals.ts"
import { settingDefault } from "../settings/registry.ts"

/** How long a claim lasts without a heartbeat. */
export const JOB_LEASE = Duration.seconds(30)
/** How often an idle worker looks for due jobs when no signal woke it. */
export const JOB_POLL = Duration.seconds(1)
const WAKE = "jobs"

export class JobFailed extends Schema.TaggedError<JobFailed>()("JobFailed", {
  message: Schema.String,
  /** Retry by the policy (a passing failure), or fail the job now. */
  retry: Schema.Boolean
}) {}

export interface NewJob {
  readonly kind: string
  readonly payload: unknown
  readonly runAt?: Date
  readonly key?: string
  /**
   * A named data-modifying CTE (`name AS (...)`) run in the job's INSERT statement, in the
   * caller's transaction: the row the job is about, written in the same round trip.
   */
  readonly alongside?: Statement.Fragment
}

/**
 * Not an attempt: the handler gives the job back, to be claimed again from `until`, without
 * counting an attempt: it could not start the work (what it needs is busy), or the work
 * recurs (the next run of a schedule).
 */
export class JobDeferred extends Schema.TaggedError<JobDeferred>()("JobDeferred", {
  until: Schema.Date
}) {}

const JobRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  key: Schema.NullOr(Schema.String),
  payload: Json(Schema.Unknown),
  run_at: Schema.Date,
  attempts: Schema.Number,
  claim: Schema.NullOr(Schema.String),
  /** What the kind's `prepare` answered for this job in its claim (null: none, or no row). */
  prepared: Schema.optional(Schema.NullOr(Schema.Unknown))
})
export type Job = typeof JobRow.Type

export interface Handler {
  readonly kind: string
  readonly policy: RetryPolicy
  /** Jobs of this kind run at most this many at a time in one process. */
  readonly concurrency: number
  readonly run: (job: Job) => Effect.Effect<void, JobFailed | JobDeferred>
  /**
   * Work done in the claim's own statement, so a handler's first round trip rides on the
   * claim: CTEs that may read `claimed` (the claimed rows: id, kind, key, payload, run_at,
   * attempts, claim) and write, ending in one named `prepared` (job_id, value jsonb); a
   * job's `value` arrives as `job.prepared`. `at` is the claim's time.
   */
  readonly prepare?: (at: Date) => Statement.Fragment
}

export class Jobs extends Context.Service<Jobs, {
  enqueue(job: NewJob): Effect.Effect<string>
  /** Jobs written in one statement, with `alongside` (one CTE for all); answers their ids in order. */
  enqueueMany(jobs: ReadonlyArray<Omit<NewJob, "alongside">>, alongside?: Statement.Fragment): Effect.Effect<ReadonlyArray<string>>
  /** Removes a queued (not running) job by key; answers whether there was one. */
  cancel(kind: string, key: string): Effect.Effect<boolean>
  register(handler: Handler): Effect.Effect<void>
  /**
   * Claims the jobs due now (up to each kind's free capacity), starts them, and answers how
   * many it started. `wait` waits for them to finish (tests and the worker's drain).
   * `onlyNews` (the worker): only the kinds with news since the last pass (a job of the kind
   * ended, or a signal named it), and every kind once per JOB_POLL.
   */
  runDue(options?: { readonly wait?: boolean; readonly onlyNews?: boolean }): Effect.Effect<number>
  /**
   * Waits up to `deadline` for this process's running jobs, then releases the ones still
   * running to other processes; answers how many it released.
   */
  drain(deadline: Duration.Input): Effect.Effect<number>
  /** Retention: deletes up to `limit` jobs done or failed before `before`; answers how many. */
  purgeSpent(before: Date, limit: number): Effect.Effect<number>
  /** When this process last looked for due jobs (the worker does every second or sooner); /ready reads it. */
  readonly lastPass: Effect.Effect<Date | undefined>
  /**
   * Ends a current or the next `awaitWork` (the worker calls it on a signal: a job of `kind`
   * was enqueued somewhere; no kind: any may have been). The signal's message is the kind
   * and the process that enqueued it: this process's own are ignored, as it woke its
   * worker when their transaction committed.
   */
  wakeUp(signal?: string): Effect.Effect<void>
  /**
   * Waits until there may be work: a job of this process ended (a slot is free) or
   * `wakeUp` was called since the last `runDue` began, or the timeout passed.
   */
  awaitWork(timeout: Duration.Input): Effect.Effect<void>
}>()("inbox/Jobs") {
  static readonly layerNoDeps = Layer.effect(Jobs, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const signals = yield* Signals
    const handlers = new Map<string, { readonly handler: Handler; readonly slots: Semaphore.Semaphore; running: number }>()
    const claims = new Set<string>()
    const running = new Set<Fiber.Fiber<void>>()
    let lastPass: Date | undefined
    const scope = yield* Effect.scope
    // Opened when a job ends or a signal arrives, closed when a pass begins: so a worker
    // whose slots are all busy claims again as soon as one frees, not at the next poll, and
    // nothing that happens during a pass is missed.
    const work = yield* Latch.make()
    // The kinds with news since the last pass. A pass that claimed for every kind whenever
    // a job ended spent a claim statement per idle kind on each job (four per scheduled
    // draft in a burst of them), finding nothing.
    const news = new Set<string>()
    let everyKindAt = 0
    // Names this process in its wake-up signals (see wakeUp).
    const origin = yield* ids.make("req")
    const wake = (kind: string | undefined) => {
      if (kind !== undefined && handlers.has(kind)) news.add(kind)
      else everyKindAt = 0
      work.openUnsafe()
    }

    const leaseEnd = (at: Date) => new Date(at.getTime() + Duration.toMillis(JOB_LEASE))

    // Jobs that succeeded are marked done together (a group commit): each still waits for
    // its statement, so a job is done before its fiber ends.
    const markDone = yield* batched((done: ReadonlyArray<Job>) =>
      Effect.gen(function*() {
        const at = yield* now
        // A claim ends with its job's id, so the two lists match pair by pair.
        yield* sql`UPDATE jobs SET state = 'done', lease_until = NULL, claim = NULL, last_error = NULL, updated_at = ${at}
          WHERE id = ANY(${done.map((j) => j.id)}::text[]) AND claim = ANY(${done.map((j) => j.claim ?? "")}::text[])`
      }).pipe(Effect.orDie)
    )

    const finish = (job: Job, policy: RetryPolicy, failure: JobFailed | JobDeferred | undefined) =>
      Effect.gen(function*() {
        const at = yield* now
        if (failure === undefined) {
          return yield* markDone(job)
        }
        if (failure._tag === "JobDeferred") {
          yield* sql`UPDATE jobs SET state = 'queued', run_at = ${failure.until}, attempts = GREATEST(attempts - 1, 0),
            lease_until = NULL, claim = NULL, updated_at = ${at} WHERE id = ${job.id} AND claim = ${job.claim}`
          return
        }
        const delay = policy.delays[job.attempts - 1]
        if (failure.retry && job.attempts < maxAttempts(policy) && delay !== undefined) {
          const jitter = 1 + ((yield* ids.fraction) - 0.5) / 5
          const runAt = new Date(at.getTime() + Math.round(Duration.toMillis(delay) * jitter))
          yield* sql`UPDATE jobs SET state = 'queued', run_at = ${runAt}, lease_until = NULL, claim = NULL,
            last_error = ${failure.message}, updated_at = ${at} WHERE id = ${job.id} AND claim = ${job.claim}`
        } else {
          yield* sql`UPDATE jobs SET state = 'failed', lease_until = NULL, claim = NULL, last_error = ${failure.message},
            updated_at = ${at} WHERE id = ${job.id} AND claim = ${job.claim}`
        }
      }).pipe(Effect.orDie)

    const execute = (job: Job) =>
      Effect.gen(function*() {
        const entry = handlers.get(job.kind)
        if (entry === undefined) return
        const outcome = yield* entry.handler.run(job).pipe(
          Effect.catchDefect((defect) => Effect.fail(new JobFailed({ message: `unexpected: ${String(defect)}`, retry: true }))),
          Effect.result
        )
        yield* finish(job, entry.handler.policy, outcome._tag === "Failure" ? outcome.failure : undefined)
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (job.claim !== null) claims.delete(job.claim)
          const entry = handlers.get(job.kind)
          if (entry !== undefined) entry.running--
          news.add(job.kind)
          work.openUnsafe()
        })),
        tracedWith(() => ({ name: "Jobs.run", attributes: { kind: job.kind } }))
      )

    const claim = (kind: string, limit: number) =>
      Effect.gen(function*() {
        const at = yield* now
        const token = yield* ids.make("req")
        // Leases run out first, then the due jobs oldest first, each read in its own index's
        // order so a claim stops after `limit` rows: one ORDER BY over both conditions sorted
        // every due job on each claim, so a claim cost more the longer the queue.
        const prepare = handlers.get(kind)?.handler.prepare
        const rows = yield* sql`WITH expired AS (
            SELECT id FROM jobs WHERE state = 'running' AND lease_until < ${at} AND kind = ${kind}
            ORDER BY lease_until LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ), due AS (
            SELECT id FROM jobs WHERE state = 'queued' AND run_at <= ${at} AND kind = ${kind}
            ORDER BY run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ), claimed AS (
            UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ${leaseEnd(at)},
              claim = ${token} || ':' || id, updated_at = ${at}
            WHERE id IN (SELECT id FROM (SELECT id FROM expired UNION ALL SELECT id FROM due) AS ready LIMIT ${limit})
            RETURNING id, kind, key, payload, run_at, attempts, claim
          )${prepare === undefined ? sql`` : sql`, ${prepare(at)}`}
          SELECT c.id, c.kind, c.key, c.payload, c.run_at, c.attempts, c.claim${
          prepare === undefined ? sql`` : sql`, p.value AS prepared`}
          FROM claimed c${prepare === undefined ? sql`` : sql` LEFT JOIN prepared p ON p.job_id = c.id`}`.pipe(decodeRows(JobRow))
        return rows
      })

    const runDue = (options: { readonly wait?: boolean; readonly onlyNews?: boolean } = {}) =>
      Effect.gen(function*() {
        lastPass = yield* now
        work.closeUnsafe()
        const everyKind = options.onlyNews !== true || lastPass.getTime() - everyKindAt >= Duration.toMillis(JOB_POLL)
        if (everyKind) everyKindAt = lastPass.getTime()
        const looked = new Set(news)
        news.clear()
        const started: Array<Fiber.Fiber<void>> = []
        for (const entry of handlers.values()) {
          const free = entry.handler.concurrency - entry.running
          if (free <= 0 || (!everyKind && !looked.has(entry.handler.kind))) continue
          const jobs = yield* claim(entry.handler.kind, free)
          for (const job of jobs) {
            entry.running++
            if (job.claim !== null) claims.add(job.claim)
            const fiber = yield* Effect.forkIn(entry.slots.withPermits(1)(execute(job)), scope)
            running.add(fiber)
            fiber.addObserver(() => running.delete(fiber))
            started.push(fiber)
          }
        }
        if (options.wait === true) yield* Fiber.awaitAll(started)
        return started.length
      })

    // Heartbeat: one statement renews the leases of every job this process is running.
    yield* Effect.gen(function*() {
      if (claims.size === 0) return
      const at = yield* now
      yield* sql`UPDATE jobs SET lease_until = ${leaseEnd(at)} WHERE claim = ANY(${[...claims]}::text[]) AND state = 'running'`
    }).pipe(
      Effect.catchCause(logBackgroundFailure("renewing job leases failed")),
      Effect.repeat(Schedule.spaced(Duration.millis(Duration.toMillis(JOB_LEASE) / 3))),
      Effect.forkScoped
    )

    // One statement for the jobs of a change (and the rows they are about, `alongside`).
    // Once it commits, this process's worker is woken in process (no round trip between the
    // commit and the claim), and other processes' by a signal per kind. The signal is not
    // sent by the transaction itself (a NOTIFY in it, delivered at its commit): PostgreSQL
    // runs the commits of transactions that sent one one at a time (db/Signals.ts).
    const enqueueMany = Effect.fn("Jobs.enqueue")(function*(batch: ReadonlyArray<NewJob>, alongside?: Statement.Fragment) {
      const at = yield* now
      const rows: Array<Record<string, unknown>> = []
      for (const job of batch) {
        rows.push({
          id: yield* ids.make("job"),
          kind: job.kind,
          key: job.key ?? null,
          payload: JSON.stringify(job.payload),
          run_at: job.runAt ?? at,
          state: "queued",
          created_at: at,
          updated_at: at
        })
      }
      // Keyless jobs never conflict (the index is on keyed rows only).
      const written = yield* sql<{ id: string; kind: string; key: string | null }>`${alongside === undefined ? sql`` : sql`WITH ${alongside}`}
        INSERT INTO jobs ${sql.insert(rows as never)}
        ON CONFLICT (kind, key) WHERE key IS NOT NULL AND state IN ('queued', 'running')
        DO UPDATE SET payload = EXCLUDED.payload, run_at = EXCLUDED.run_at, updated_at = EXCLUDED.updated_at
        RETURNING id, kind, key`
      for (const kind of new Set(batch.map((j) => j.kind))) {
        if (handlers.has(kind)) yield* sql.afterCommit(Effect.sync(() => wake(kind)))
        if (signals.crossProcess) yield* signals.notify(WAKE, `${kind} ${origin}`)
      }
      // In the order given: a keyed job answers the row it replaced, if any.
      return rows.map((row) =>
        row["key"] === null
          ? row["id"] as string
          : written.find((w) => w.kind === row["kind"] && w.key === row["key"])?.id ?? row["id"] as string
      )
    }, Effect.orDie)

    return Jobs.of({
      enqueue: (job) => Effect.map(enqueueMany([job], job.alongside), (written) => written[0]!),
      enqueueMany: (batch, alongside) => batch.length === 0 ? Effect.succeed([]) : enqueueMany(batch, alongside),
      cancel: (kind, key) =>
        sql`DELETE FROM jobs WHERE kind = ${kind} AND key = ${key} AND state = 'queued' RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      register: (handler) =>
        Effect.gen(function*() {
          handlers.set(handler.kind, { handler, slots: yield* Semaphore.make(handler.concurrency), running: 0 })
        }),
      runDue,
      lastPass: Effect.sync(() => lastPass),
      wakeUp: (signal) =>
        Effect.sync(() => {
          const [kind, from] = signal === undefined ? [] : signal.split(" ")
          if (from !== origin) wake(kind)
        }),
      awaitWork: (timeout) => work.await.pipe(Effect.timeoutOption(timeout), Effect.asVoid),
      purgeSpent: (before, limit) =>
        sql<{ id: string }>`DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE state IN ('done', 'failed') AND updated_at < ${before}
            ORDER BY updated_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING id`.pipe(Effect.map((rows) => rows.length), Effect.orDie),
      drain: (deadline) =>
        Effect.gen(function*() {
          yield* Fiber.awaitAll([...running]).pipe(Effect.timeoutOption(deadline))
          if (claims.size === 0) return 0
          const at = yield* now
          // The claim check keeps a job that finished meanwhile (done, or retried) as it is.
          const rows = yield* sql`UPDATE jobs SET state = 'queued', run_at = ${at}, lease_until = NULL, claim = NULL,
              attempts = GREATEST(attempts - 1, 0), updated_at = ${at}
            WHERE claim = ANY(${[...claims]}::text[]) AND state = 'running' RETURNING id`
          for (const fiber of running) yield* Fiber.interrupt(fiber)
          yield* signals.notify(WAKE, "released")
          return rows.length
        }).pipe(Effect.orDie)
    })
  }))

  /**
   * The worker loop, for the life of the layer: runs due jobs, then waits for a signal (a
   * job was enqueued anywhere), one of its jobs to end (a free slot), or the poll interval,
   * whichever comes first.
   */
  static readonly layerWorker = Layer.effectDiscard(Effect.gen(function*() {
    const jobs = yield* Jobs
    const signals = yield* Signals
    const deadline = yield* Config.Int("INBOX_SHUTDOWN_TIMEOUT").pipe(Config.withDefault(settingDefault("INBOX_SHUTDOWN_TIMEOUT")), Effect.orDie)
    // Added before the loop is forked, so it runs after the loop stops claiming (finalizers
    // run in reverse): running jobs finish within the deadline or go back to the queue.
    yield* Effect.addFinalizer(() =>
      jobs.drain(Duration.seconds(deadline)).pipe(
        Effect.flatMap((released) => released > 0 ? Effect.logInfo(`released ${released} running jobs to other processes`) : Effect.void),
        Effect.catchCause((cause) => Effect.logWarning("draining the job worker failed", cause))
      ))
    yield* signals.subscribe(WAKE).pipe(Stream.runForEach((kind) => jobs.wakeUp(kind)), Effect.forkScoped)
    const availability = yield* Availability
    yield* Effect.gen(function*() {
      const started = yield* jobs.runDue({ onlyNews: true })
      if (started > 0) return
      yield* jobs.awaitWork(JOB_POLL)
    }).pipe(
      // A failed pass waits like an idle one: an unreachable database fails every pass at
      // once, and the worker then asked it again and again without pause. It is reported
      // as an outage (one line when it goes, one when it returns), not a warning a pass.
      Effect.catchCause((cause) => Effect.andThen(availability.report("the job worker's pass failed", cause), jobs.awaitWork(JOB_POLL))),
      Effect.forever,
      Effect.forkScoped
    )
  }))

  /** With the services it uses (Availability); the ports are the caller's. */
  static readonly layer = Jobs.layerNoDeps.pipe(Layer.provide(Availability.layer))
}
