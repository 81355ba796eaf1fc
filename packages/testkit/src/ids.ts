/**
 * Deterministic Ids for tests: `<prefix>_` then a zero-padded hex counter, secrets from the
 * same counter, and one-time codes that a test can predict or read from the outbox.
 */
import { Ids } from "@inbox/core/internal"
import { Effect, Layer } from "effect"

export const layerFixedIds = Layer.sync(Ids, () => {
  let n = 0
  const next = () => (++n).toString(16).padStart(24, "0")
  return Ids.of({
    make: (prefix) => Effect.sync(() => `${prefix}_${next()}`),
    secret: (bytes) => Effect.sync(() => next().padStart(bytes * 2, "0").slice(-bytes * 2)),
    digits: (count) => Effect.sync(() => String(n++ % 10 ** count).padStart(count, "0")),
    fraction: Effect.succeed(0.5)
  })
})
