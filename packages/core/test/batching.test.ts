import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { batched, batchedWith } from "../src/shared/batching.ts"

describe("group commit (shared/batching.ts)", () => {
  it.live("writes made while a statement runs go together in the next one, and each caller returns after its own write", () =>
    Effect.gen(function*() {
      const statements: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const write = yield* batched((items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          statements.push(items)
          if (statements.length === 1) yield* Deferred.await(gate)
        })
      )
      const first = yield* Effect.forkChild(write(0))
      yield* Effect.sleep("10 millis")
      const rest = yield* Effect.forkChild(Effect.forEach([1, 2, 3, 4], write, { concurrency: "unbounded" }))
      yield* Effect.sleep("10 millis")
      // The first statement is still running: nobody has returned, the others wait for it.
      assert.deepStrictEqual(statements, [[0]])
      assert.isUndefined(first.pollUnsafe())
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(rest)
      assert.deepStrictEqual(statements, [[0], [1, 2, 3, 4]])
    }))

  it.live("a failed statement fails every write it carried, and the next write goes on", () =>
    Effect.gen(function*() {
      let calls = 0
      const write = yield* batched((_: ReadonlyArray<string>) => (calls++ === 0 ? Effect.die("disk full") : Effect.void))
      const failed = yield* Effect.exit(write("a"))
      assert.isTrue(Exit.isFailure(failed))
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(write("b"))))
    }))
})

describe("group reads (shared/batching.ts, batchedWith)", () => {
  it.live("items asked for while a statement runs are answered by the next one, each caller with its own answer", () =>
    Effect.gen(function*() {
      const statements: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const square = yield* batchedWith((items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          statements.push(items)
          if (statements.length === 1) yield* Deferred.await(gate)
          return items.map((n) => n * n)
        })
      )
      const first = yield* Effect.forkChild(square(2))
      yield* Effect.sleep("10 millis")
      const rest = yield* Effect.forkChild(Effect.forEach([3, 4, 5], square, { concurrency: "unbounded" }))
      yield* Effect.sleep("10 millis")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), 4)
      assert.deepStrictEqual(yield* Fiber.join(rest), [9, 16, 25])
      assert.deepStrictEqual(statements, [[2], [3, 4, 5]])
    }))

  it.live("a statement that answers fewer items than it carried fails the callers left without an answer", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      let calls = 0
      const lookup = yield* batchedWith((items: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (calls++ === 0) yield* Deferred.await(gate)
          return items.slice(0, 1)
        })
      )
      const first = yield* Effect.forkChild(lookup("a"))
      yield* Effect.sleep("10 millis")
      const rest = yield* Effect.forkChild(Effect.forEach(["b", "c"], (x) => Effect.exit(lookup(x)), { concurrency: "unbounded" }))
      yield* Effect.sleep("10 millis")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), "a")
      const [b, c] = yield* Fiber.join(rest)
      assert.isTrue(Exit.isSuccess(b!))
      assert.isTrue(Exit.isFailure(c!))
    }))
})
