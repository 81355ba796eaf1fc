/**
 * Group commit: writes that many fibers make at once become one statement. Each caller
 * waits until the statement that carries its item has run (and dies with it if it failed),
 * so a write is as durable when the call returns as if it had been made alone; only the
 * number of statements (and of commits) changes.
 *
 * No fiber of its own: the caller that finds no write under way writes, for itself and
 * for every item that arrives while its statement runs, until none is left; a lone write
 * waits for nothing but itself. That write is uninterruptible, so an interrupted caller
 * never strands the items it carries.
 */
import { Deferred, Effect } from "effect"

/** A function that writes `item` in the next batch (at most `max` items a statement). */
export const batched = <A>(write: (items: ReadonlyArray<A>) => Effect.Effect<void>, max = 500) =>
  Effect.sync(() => {
    const pending: Array<{ readonly item: A; readonly written: Deferred.Deferred<void> }> = []
    let writing = false
    // The check for an empty queue and giving up the turn are one synchronous step, so an
    // item pushed meanwhile either joins this loop or makes its caller the next writer.
    const writeAll: Effect.Effect<void> = Effect.suspend(() => {
      const batch = pending.splice(0, max)
      if (batch.length === 0) {
        writing = false
        return Effect.void
      }
      return Effect.exit(write(batch.map((b) => b.item))).pipe(
        Effect.flatMap((outcome) => Effect.forEach(batch, (b) => Deferred.done(b.written, outcome), { discard: true })),
        Effect.andThen(writeAll)
      )
    })
    return (item: A): Effect.Effect<void> =>
      Effect.gen(function*() {
        const written = yield* Deferred.make<void>()
        pending.push({ item, written })
        if (!writing) {
          writing = true
          yield* Effect.uninterruptible(writeAll)
        }
        return yield* Deferred.await(written)
      })
  })
