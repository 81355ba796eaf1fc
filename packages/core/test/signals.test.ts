/**
 * The Signals contract of the cross-process layer (db/Signals.ts, PostgreSQL): a signal
 * sent inside a transaction is delivered once it has committed and never when it rolls
 * back; outside one, at once; and a listener whose connection is cut listens again. (The
 * in-process layer of PGlite delivers at once, which its single connection makes harmless:
 * its contract does not include this.)
 */
import { assert, layer } from "@effect/vitest"
import { Signals } from "@inbox/core/internal"
import { postgresSchema, POSTGRES_ENV } from "@inbox/testkit"
import { Effect, Option, Queue, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const url = process.env[POSTGRES_ENV]
if (url !== undefined && url !== "") {
  layer(postgresSchema(url), { timeout: "60 seconds" })("signals across processes (PostgreSQL)", (it) => {
    it.effect("a signal sent in a transaction arrives after its commit, never after a rollback, and at once outside one", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const signals = yield* Signals
        assert.isTrue(signals.crossProcess)
        const received = yield* Queue.unbounded<string>()
        yield* signals.subscribe("t.signals").pipe(Stream.runForEach((m) => Queue.offer(received, m)), Effect.forkScoped)
        const next = Queue.take(received).pipe(Effect.timeout("5 seconds"), TestClock.withLive)
        const nothingWithin = (millis: number) =>
          Effect.map(Queue.take(received).pipe(Effect.timeoutOption(`${millis} millis`), TestClock.withLive), Option.getOrUndefined)

        // Listening starts with the layer; a first signal outside a transaction shows it is on.
        yield* signals.notify("t.signals", "outside")
        assert.strictEqual(yield* next, "outside")

        yield* sql.withTransaction(Effect.gen(function*() {
          yield* signals.notify("t.signals", "committed")
          // Still inside the transaction: nothing has been sent.
          assert.isUndefined(yield* nothingWithin(300))
        }))
        assert.strictEqual(yield* next, "committed")

        const rolledBack = yield* sql.withTransaction(Effect.andThen(signals.notify("t.signals", "rolled back"), Effect.fail("abort"))).pipe(Effect.flip)
        assert.strictEqual(rolledBack, "abort")
        yield* signals.notify("t.signals", "after")
        // Signals from one process arrive in order: the rolled-back one would come first.
        assert.strictEqual(yield* next, "after")
        assert.isUndefined(yield* nothingWithin(300))
      }))

    it.effect("a transaction's signals all arrive after its commit, in order (sent together), and those of transactions at once too", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const signals = yield* Signals
        const received = yield* Queue.unbounded<string>()
        yield* signals.subscribe("t.together").pipe(Stream.runForEach((m) => Queue.offer(received, m)), Effect.forkScoped)
        const next = Queue.take(received).pipe(Effect.timeout("5 seconds"), TestClock.withLive)
        yield* signals.notify("t.together", "on")
        assert.strictEqual(yield* next, "on")

        yield* sql.withTransaction(Effect.forEach(["a", "b", "c"], (m) => signals.notify("t.together", m), { discard: true }))
        assert.deepStrictEqual([yield* next, yield* next, yield* next], ["a", "b", "c"])

        // Several transactions committing at once: every signal of each arrives, each once.
        yield* Effect.forEach([1, 2, 3, 4], (t) =>
          sql.withTransaction(Effect.forEach(["x", "y"], (m) => signals.notify("t.together", `${t}${m}`), { discard: true })), { concurrency: "unbounded", discard: true })
        const all: Array<string> = []
        for (let i = 0; i < 8; i++) all.push(yield* next)
        assert.deepStrictEqual([...all].sort(), ["1x", "1y", "2x", "2y", "3x", "3y", "4x", "4y"])
        for (const t of [1, 2, 3, 4]) assert.isBelow(all.indexOf(`${t}x`), all.indexOf(`${t}y`))
      }).pipe(Effect.scoped))

    it.effect("a listener whose connection is cut listens again: signals sent after it still arrive", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const signals = yield* Signals
        const received = yield* Queue.unbounded<string>()
        yield* signals.subscribe("t.relisten").pipe(Stream.runForEach((m) => Queue.offer(received, m)), Effect.forkScoped)
        const within = (millis: number) =>
          Effect.map(Queue.take(received).pipe(Effect.timeoutOption(`${millis} millis`), TestClock.withLive), Option.getOrUndefined)
        yield* signals.notify("t.relisten", "before")
        assert.strictEqual(yield* within(5_000), "before")
        // The listening connection is this process's one in LISTEN (this file holds no other layer).
        const mine = sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
          WHERE application_name = ${`inbox-${process.pid}`} AND query LIKE 'LISTEN%'`
        const [listener] = yield* mine
        assert.isDefined(listener)
        // With a timeout PostgreSQL waits until the backend has exited: without it the call
        // returns at once, and a signal sent next could still be heard on the old connection
        yield* sql`SELECT pg_terminate_backend(${listener!.pid}, 5000)`
        // Sent until one arrives: listening again takes a moment, and what is sent before is lost.
        let heard: string | undefined
        for (let i = 0; i < 50 && heard === undefined; i++) {
          yield* signals.notify("t.relisten", `after ${i}`)
          heard = yield* within(200)
        }
        assert.isDefined(heard, "a signal sent after the cut arrived")
        const now = yield* mine
        assert.lengthOf(now, 1)
        assert.notStrictEqual(now[0]?.pid, listener!.pid)
      }).pipe(Effect.scoped))
  })
}
