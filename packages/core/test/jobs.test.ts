/**
 * The durable job runner (jobs/Jobs.ts): claims, retries by named policy, leases, keys,
 * transactions, bounded concurrency, the worker loop; and, on PostgreSQL, two runners on
 * one database never run one job twice.
 */
import { assert, it, layer } from "@effect/vitest"
import { Availability, Database, Ids, JobDeferred, JobFailed, Jobs, RETRY_POLICIES, type Signals } from "@inbox/core/internal"
import { postgresSchema, POSTGRES_ENV, storages } from "@inbox/testkit"
import { Clock, Context, Deferred, Effect, Fiber, Layer, Ref } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const runner = <E, R>(storage: Layer.Layer<SqlClient.SqlClient | Signals, E, R>) =>
  Layer.merge(Jobs.layer, Availability.layer).pipe(Layer.provideMerge(Ids.layer), Layer.provideMerge(storage))

const stateOf = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ state: string; attempts: number; last_error: string | null }>`SELECT state, attempts, last_error FROM jobs WHERE id = ${id}`
    return rows[0]
  }).pipe(Effect.orDie)

for (const storage of storages()) {
  layer(runner(storage.layer), { timeout: "120 seconds" })(`jobs on ${storage.name}`, (it) => {
    it.effect("a due job runs once and is done; a job due later waits for its time", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const ran = yield* Ref.make<ReadonlyArray<unknown>>([])
        yield* jobs.register({ kind: "t.once", policy: RETRY_POLICIES.once, concurrency: 4, run: (job) => Ref.update(ran, (r) => [...r, job.payload]) })
        const now = yield* jobs.enqueue({ kind: "t.once", payload: { n: 1 } })
        const later = yield* jobs.enqueue({ kind: "t.once", payload: { n: 2 }, runAt: new Date(60_000) })
        assert.strictEqual(yield* jobs.runDue({ wait: true }), 1)
        assert.deepStrictEqual(yield* Ref.get(ran), [{ n: 1 }])
        assert.strictEqual((yield* stateOf(now))?.state, "done")
        assert.strictEqual((yield* stateOf(later))?.state, "queued")
        yield* TestClock.adjust("1 minute")
        assert.strictEqual(yield* jobs.runDue({ wait: true }), 1)
        assert.deepStrictEqual(yield* Ref.get(ran), [{ n: 1 }, { n: 2 }])
      }))

    it.effect("the worker's pass looks at the kinds with news (a job enqueued here committed, a signal named it, or its job ended), and at every kind once a poll interval", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        const ran = yield* Ref.make(0)
        // As another process writes a job: the row, and no news in this one.
        let written = 0
        const enqueuedElsewhere = Effect.gen(function*() {
          const at = new Date(yield* Clock.currentTimeMillis)
          yield* sql`INSERT INTO jobs (id, kind, payload, run_at, state, created_at, updated_at)
            VALUES (${`job_elsewhere${written++}`}, 't.news', '{}', ${at}, 'queued', ${at}, ${at})`
        }).pipe(Effect.orDie)
        yield* jobs.register({ kind: "t.news", policy: RETRY_POLICIES.once, concurrency: 4, run: () => Ref.update(ran, (n) => n + 1) })
        // A pass of every kind first, so the next ones within the second look at news only.
        yield* TestClock.adjust("1 second")
        yield* jobs.runDue({ wait: true, onlyNews: true })
        yield* enqueuedElsewhere
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 0, "no signal named the kind")
        yield* jobs.wakeUp("t.news req_elsewhere")
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 1, "a signal named it")
        // Its job ended: the kind has news, and a job of it written meanwhile is claimed.
        yield* enqueuedElsewhere
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 1, "its job ended")
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 0)
        yield* enqueuedElsewhere
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 0, "no news")
        yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 1, "the poll interval passed")
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 0)
        // Enqueued in this process: its commit woke the kind, no signal needed.
        yield* sql.withTransaction(jobs.enqueue({ kind: "t.news", payload: {} })).pipe(Effect.orDie)
        assert.strictEqual(yield* jobs.runDue({ wait: true, onlyNews: true }), 1, "enqueued here")
        assert.strictEqual(yield* Ref.get(ran), 4)
      }))

    it.effect("a retryable failure waits the policy's delays (5 s, 30 s, 2 min, ...) and fails after 8 attempts", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const attempts = yield* Ref.make(0)
        yield* jobs.register({
          kind: "t.flaky",
          policy: RETRY_POLICIES.webhook,
          concurrency: 1,
          run: () => Effect.andThen(Ref.update(attempts, (n) => n + 1), Effect.fail(new JobFailed({ message: "http_5xx", retry: true })))
        })
        const id = yield* jobs.enqueue({ kind: "t.flaky", payload: {} })
        yield* jobs.runDue({ wait: true })
        assert.strictEqual(yield* Ref.get(attempts), 1)
        yield* TestClock.adjust("4 seconds")
        assert.strictEqual(yield* jobs.runDue({ wait: true }), 0, "not yet: 5 s less at most 10% jitter")
        for (const wait of ["2 seconds", "34 seconds", "3 minutes", "12 minutes", "34 minutes", "67 minutes", "133 minutes"]) {
          yield* TestClock.adjust(wait as "2 seconds")
          yield* jobs.runDue({ wait: true })
        }
        assert.strictEqual(yield* Ref.get(attempts), 8)
        const final = yield* stateOf(id)
        assert.deepStrictEqual([final?.state, final?.attempts, final?.last_error], ["failed", 8, "http_5xx"])
        yield* TestClock.adjust("10 hours")
        assert.strictEqual(yield* jobs.runDue({ wait: true }), 0)
      }))

    it.effect("a failure without retry fails the job at once; a defect counts as a retryable failure", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        yield* jobs.register({ kind: "t.final", policy: RETRY_POLICIES.webhook, concurrency: 1, run: () => Effect.fail(new JobFailed({ message: "gone", retry: false })) })
        yield* jobs.register({ kind: "t.defect", policy: RETRY_POLICIES.transient, concurrency: 1, run: () => Effect.die("boom") })
        const final = yield* jobs.enqueue({ kind: "t.final", payload: {} })
        const defect = yield* jobs.enqueue({ kind: "t.defect", payload: {} })
        yield* jobs.runDue({ wait: true })
        assert.strictEqual((yield* stateOf(final))?.state, "failed")
        assert.strictEqual((yield* stateOf(defect))?.state, "queued")
      }))

    it.effect("a deferred job is queued again, due at its until, without counting an attempt; its slot goes to the next job", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const ran = yield* Ref.make<ReadonlyArray<string>>([])
        const busy = yield* Ref.make(true)
        yield* jobs.register({
          kind: "t.defer",
          policy: RETRY_POLICIES.once,
          concurrency: 1,
          run: (job) =>
            Effect.gen(function*() {
              const name = (job.payload as { name: string }).name
              if (name === "waits" && (yield* Ref.get(busy))) {
                return yield* new JobDeferred({ until: new Date((yield* Clock.currentTimeMillis) + 10_000) })
              }
              yield* Ref.update(ran, (r) => [...r, name])
            })
        })
        const waits = yield* jobs.enqueue({ kind: "t.defer", payload: { name: "waits" } })
        yield* TestClock.adjust("1 millis")
        yield* jobs.enqueue({ kind: "t.defer", payload: { name: "next" } })
        // One slot: the older job is claimed first and gives it back; the next pass takes the other.
        yield* jobs.runDue({ wait: true })
        assert.deepStrictEqual(yield* Ref.get(ran), [])
        assert.deepStrictEqual([(yield* stateOf(waits))?.state, (yield* stateOf(waits))?.attempts], ["queued", 0])
        yield* jobs.runDue({ wait: true })
        assert.deepStrictEqual(yield* Ref.get(ran), ["next"])
        yield* Ref.set(busy, false)
        yield* TestClock.adjust("9 seconds")
        yield* jobs.runDue({ wait: true })
        assert.deepStrictEqual(yield* Ref.get(ran), ["next"], "not due before its until")
        yield* TestClock.adjust("1 second")
        yield* jobs.runDue({ wait: true })
        assert.deepStrictEqual(yield* Ref.get(ran), ["next", "waits"])
        assert.deepStrictEqual([(yield* stateOf(waits))?.state, (yield* stateOf(waits))?.attempts], ["done", 1])
      }))

    it.effect("a job enqueued in a transaction that rolls back does not exist", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        const rolledBack = yield* sql.withTransaction(Effect.andThen(jobs.enqueue({ kind: "t.tx", payload: {} }), Effect.fail("abort"))).pipe(Effect.flip)
        assert.strictEqual(rolledBack, "abort")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM jobs WHERE kind = 't.tx'`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("the row a job is about, written alongside it, is written with the job, and neither when the transaction rolls back", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE t_alongside (id text PRIMARY KEY)`
        const enqueue = (id: string) =>
          jobs.enqueue({ kind: "t.alongside", key: id, payload: { id }, alongside: sql`row AS (INSERT INTO t_alongside (id) VALUES (${id}))` })
        yield* sql.withTransaction(enqueue("kept"))
        const rolledBack = yield* sql.withTransaction(Effect.andThen(enqueue("dropped"), Effect.fail("abort"))).pipe(Effect.flip)
        assert.strictEqual(rolledBack, "abort")
        const rows = yield* sql<{ id: string; job: string | null }>`SELECT t.id, j.key AS job FROM t_alongside t
          FULL JOIN (SELECT key FROM jobs WHERE kind = 't.alongside') j ON j.key = t.id`
        assert.deepStrictEqual(rows.map((r) => ({ ...r })), [{ id: "kept", job: "kept" }])
      }))

    it.effect("a key keeps one queued job per kind: enqueueing it again moves it; cancel removes it", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        const a = yield* jobs.enqueue({ kind: "t.keyed", key: "draft_1", payload: { v: 1 }, runAt: new Date(10_000_000) })
        const b = yield* jobs.enqueue({ kind: "t.keyed", key: "draft_1", payload: { v: 2 }, runAt: new Date(20_000_000) })
        assert.strictEqual(a, b)
        const rows = yield* sql<{ payload: unknown; run_at: Date }>`SELECT payload, run_at FROM jobs WHERE kind = 't.keyed'`
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]?.run_at.getTime(), 20_000_000)
        assert.isTrue(yield* jobs.cancel("t.keyed", "draft_1"))
        assert.isFalse(yield* jobs.cancel("t.keyed", "draft_1"))
      }))

    it.effect("jobs enqueued together are written in one statement with their rows, each as if enqueued alone: a queued key is moved, ids answer in order", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE t_many (id text PRIMARY KEY)`
        const queued = yield* jobs.enqueue({ kind: "t.many", key: "k1", payload: { v: 0 }, runAt: new Date(10_000_000) })
        const ids = yield* sql.withTransaction(jobs.enqueueMany([
          { kind: "t.many", payload: { v: "keyless" } },
          { kind: "t.many", key: "k1", payload: { v: 1 }, runAt: new Date(20_000_000) },
          { kind: "t.many", key: "k2", payload: { v: 2 } }
        ], sql`rows AS (INSERT INTO t_many (id) VALUES ('a'), ('b'))`))
        assert.strictEqual(ids.length, 3)
        assert.strictEqual(ids[1], queued, "the queued key's job is the one moved")
        const rows = yield* sql<{ id: string; key: string | null; payload: { v: unknown }; run_at: Date }>`SELECT id, key, payload, run_at FROM jobs WHERE kind = 't.many' ORDER BY key NULLS FIRST`
        assert.deepStrictEqual(rows.map((r) => [r.key, r.payload.v]), [[null, "keyless"], ["k1", 1], ["k2", 2]])
        assert.strictEqual(rows[1]!.run_at.getTime(), 20_000_000)
        assert.deepStrictEqual(rows.map((r) => r.id), [ids[0], ids[1], ids[2]])
        const written = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM t_many`
        assert.strictEqual(written[0]!.n, 2)
        const rolledBack = yield* sql.withTransaction(Effect.andThen(jobs.enqueueMany([{ kind: "t.many", key: "k3", payload: {} }]), Effect.fail("abort"))).pipe(Effect.flip)
        assert.strictEqual(rolledBack, "abort")
        assert.strictEqual((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM jobs WHERE key = 'k3'`)[0]!.n, 0)
      }))

    it.effect("a job whose worker died (its lease ran out) is claimed again", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const sql = yield* SqlClient.SqlClient
        const ran = yield* Ref.make(0)
        yield* jobs.register({ kind: "t.orphan", policy: RETRY_POLICIES.transient, concurrency: 1, run: () => Ref.update(ran, (n) => n + 1) })
        const id = yield* jobs.enqueue({ kind: "t.orphan", payload: {} })
        const at = new Date(yield* Clock.currentTimeMillis)
        yield* sql`UPDATE jobs SET state = 'running', attempts = 1, claim = 'dead-worker', lease_until = ${new Date(at.getTime() + 30_000)} WHERE id = ${id}`
        yield* jobs.runDue({ wait: true })
        assert.strictEqual(yield* Ref.get(ran), 0, "the lease still runs")
        yield* TestClock.adjust("31 seconds")
        yield* jobs.runDue({ wait: true })
        assert.strictEqual(yield* Ref.get(ran), 1)
        const row = yield* stateOf(id)
        assert.deepStrictEqual([row?.state, row?.attempts], ["done", 2])
      }))

    it.effect("a kind runs at most its concurrency at a time; the rest wait for a free slot", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const running = yield* Ref.make(0)
        const most = yield* Ref.make(0)
        const done = yield* Ref.make(0)
        const gate = yield* Deferred.make<void>()
        yield* jobs.register({
          kind: "t.bounded",
          policy: RETRY_POLICIES.once,
          concurrency: 2,
          run: () =>
            Effect.gen(function*() {
              const now = yield* Ref.updateAndGet(running, (r) => r + 1)
              yield* Ref.update(most, (m) => Math.max(m, now))
              yield* Deferred.await(gate)
              yield* Ref.update(running, (r) => r - 1)
              yield* Ref.update(done, (d) => d + 1)
            })
        })
        for (let i = 0; i < 5; i++) yield* jobs.enqueue({ kind: "t.bounded", payload: { i } })
        yield* jobs.runDue()
        // The two claimed jobs hold both slots: another pass claims nothing of this kind.
        yield* jobs.runDue()
        while ((yield* Ref.get(running)) < 2) yield* TestClock.withLive(Effect.sleep("5 millis"))
        assert.strictEqual(yield* Ref.get(running), 2)
        yield* Deferred.succeed(gate, undefined)
        // A slot is free once its job's completion is written (group-committed, Jobs.ts), a
        // moment after the handler returns: pass again until every job ran, a bounded number of times.
        for (let pass = 0; pass < 200 && (yield* Ref.get(done)) < 5; pass++) {
          yield* jobs.runDue({ wait: true })
          yield* TestClock.withLive(Effect.sleep("5 millis"))
        }
        assert.strictEqual(yield* Ref.get(done), 5)
        assert.strictEqual(yield* Ref.get(most), 2, "never more than the kind's concurrency at once")
      }))

    it.effect("a stopping worker lets a running job finish within its deadline", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const gate = yield* Deferred.make<void>()
        yield* jobs.register({ kind: "t.drain-finish", policy: RETRY_POLICIES.once, concurrency: 1, run: () => Deferred.await(gate) })
        const id = yield* jobs.enqueue({ kind: "t.drain-finish", payload: {} })
        assert.strictEqual(yield* jobs.runDue(), 1)
        const drained = yield* Effect.forkChild(jobs.drain("10 seconds"))
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual(yield* Fiber.join(drained), 0)
        assert.strictEqual((yield* stateOf(id))?.state, "done")
      }))

    it.effect("a stopping worker releases the jobs it could not finish by its deadline, and another process claims them at once", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        yield* jobs.register({ kind: "t.drain-release", policy: RETRY_POLICIES.once, concurrency: 1, run: () => Effect.never })
        const id = yield* jobs.enqueue({ kind: "t.drain-release", payload: {} })
        assert.strictEqual(yield* jobs.runDue(), 1)
        assert.strictEqual((yield* stateOf(id))?.state, "running")
        const drained = yield* Effect.forkChild(jobs.drain("5 seconds"))
        yield* TestClock.adjust("5 seconds")
        assert.strictEqual(yield* Fiber.join(drained), 1)
        assert.deepStrictEqual(yield* stateOf(id), { state: "queued", attempts: 0, last_error: null })
        // Another process (a second runner on the same database), long before the 30 s lease would have run out.
        const other = Context.get(yield* Layer.build(Jobs.layer), Jobs)
        yield* other.register({ kind: "t.drain-release", policy: RETRY_POLICIES.once, concurrency: 1, run: () => Effect.void })
        assert.strictEqual(yield* other.runDue({ wait: true }), 1)
        assert.deepStrictEqual(yield* stateOf(id), { state: "done", attempts: 1, last_error: null })
      }).pipe(Effect.scoped))

    it.effect("the worker loop runs a job enqueued anywhere without being asked", () =>
      Effect.gen(function*() {
        const jobs = yield* Jobs
        const ran = yield* Deferred.make<unknown>()
        yield* jobs.register({ kind: "t.worker", policy: RETRY_POLICIES.once, concurrency: 1, run: (job) => Deferred.succeed(ran, job.payload) })
        yield* Layer.build(Jobs.layerWorker)
        yield* jobs.enqueue({ kind: "t.worker", payload: { hello: "worker" } })
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(yield* Deferred.await(ran).pipe(Effect.timeout("30 seconds"), TestClock.withLive), { hello: "worker" })
      }).pipe(Effect.scoped))
  })
}

const url = process.env[POSTGRES_ENV]
if (url !== undefined && url !== "") {
  // Two runners, each with its own connection pool, on one schema: PostgreSQL only, since
  // PGlite's single connection would serialise them and the race could not happen.
  layer(Layer.mergeAll(runner(postgresSchema(url))), { timeout: "120 seconds" })("jobs with two runners on PostgreSQL", (it) => {
    it.effect("every job runs exactly once across two runners claiming at the same time", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const schema = (yield* sql<{ s: string }>`SELECT current_schema() AS s`)[0]?.s ?? ""
        const other = yield* Layer.build(runner(Database.layerPostgres({ url, searchPath: schema, maxConnections: 4 })))
        const first = yield* Jobs
        const second = Context.get(other, Jobs)
        const seen = new Map<number, number>()
        const handler = { kind: "t.race", policy: RETRY_POLICIES.once, concurrency: 8, run: (job: { payload: unknown }) => Effect.sync(() => {
          const n = (job.payload as { n: number }).n
          seen.set(n, (seen.get(n) ?? 0) + 1)
        }) }
        yield* first.register(handler)
        yield* second.register(handler)
        for (let n = 0; n < 200; n++) yield* first.enqueue({ kind: "t.race", payload: { n } })
        for (let round = 0; round < 40; round++) {
          yield* Effect.all([first.runDue({ wait: true }), second.runDue({ wait: true })], { concurrency: 2 })
        }
        assert.strictEqual(seen.size, 200)
        assert.deepStrictEqual([...new Set(seen.values())], [1])
      }).pipe(Effect.scoped))
  })
}
