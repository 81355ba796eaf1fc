import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { batched } from "../src/shared/batching.ts"

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
