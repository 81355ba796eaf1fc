/**
 * Group commit: statements that many fibers make at once become one statement. Each caller
 * waits until the statement that carries its item has run (and dies with it if it failed),
 * so a write is as durable when the call returns as if it had been made alone; only the
 * number of statements (and of commits) changes. A statement may also answer each item
 * (`batchedWith`: a read, or a write that returns rows), in the order of the items.
 *
 * No fiber of its own: the caller that finds no statement under way runs one, for itself
 * and for every item that arrives while it runs, until none is left; a lone item waits for
 * nothing but itself. That run is uninterruptible, so an interrupted caller never strands
 * the items it carries.
 */
import { Deferred, Effect, Exit } from "effect"

/**
 * A function that runs `item` in the next batch (at most `max` items a statement) and
 * answers what `run` answered for it: `run` gives one answer per item, in their order.
 */
export const batchedWith = <A, B>(run: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>>, max = 500) =>
  Effect.sync(() => {
    const pending: Array<{ readonly item: A; readonly done: Deferred.Deferred<B> }> = []
    let running = false
    // The check for an empty queue and giving up the turn are one synchronous step, so an
    // item pushed meanwhile either joins this loop or makes its caller the next runner.
    const runAll: Effect.Effect<void> = Effect.suspend(() => {
      const batch = pending.splice(0, max)
      if (batch.length === 0) {
        running = false
        return Effect.void
      }
      return Effect.exit(run(batch.map((b) => b.item))).pipe(
        Effect.flatMap((outcome) =>
          Effect.forEach(batch, (b, i) =>
            Deferred.done(
              b.done,
              Exit.isFailure(outcome)
                ? Exit.failCause(outcome.cause)
                : i < outcome.value.length
                ? Exit.succeed(outcome.value[i]!)
                : Exit.die(new Error(`a batch of ${batch.length} answered ${outcome.value.length} items`))
            ), { discard: true })
        ),
        Effect.andThen(runAll)
      )
    })
    return (item: A): Effect.Effect<B> =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<B>()
        pending.push({ item, done })
        if (!running) {
          running = true
          yield* Effect.uninterruptible(runAll)
        }
        return yield* Deferred.await(done)
      })
  })

/** A function that writes `item` in the next batch (at most `max` items a statement). */
export const batched = <A>(write: (items: ReadonlyArray<A>) => Effect.Effect<void>, max = 500) =>
  batchedWith((items: ReadonlyArray<A>) => Effect.as(write(items), items.map(() => undefined)), max)
