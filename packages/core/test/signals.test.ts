/**
 * The Signals contract of the cross-process layer (db/Signals.ts, PostgreSQL): a signal
 * sent inside a transaction is delivered once it has committed and never when it rolls
 * back; outside one, at once. (The in-process layer of PGlite delivers at once, which its
 * single connection makes harmless: its contract does not include this.)
 */
import { assert, layer } from "@effect/vitest"
import { Signals } from "@inbox/core"
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
  })
}
