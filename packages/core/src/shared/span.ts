/**
 * Spans for the few functions every API request runs (authenticating its key, running its
 * operation, reading the inbox). `Effect.fn("Name")` builds a span and captures a call-site
 * stack trace on every call, about 4-5 µs of CPU, even when no tracer is installed: Effect's
 * native tracer keeps its spans nowhere. `traced(name)` names the same span but builds it
 * only when another tracer is installed (an OpenTelemetry exporter, when we add one), as
 * Effect's HTTP server already does for its request spans. Elsewhere `Effect.fn` stays: its
 * cost matters only on this path.
 */
import { Effect, Tracer } from "effect"

// The span's stack would point here, not at the caller. Only the data-first form of
// Effect.withSpan honours this option (effect 4.1's piped form captures regardless).
const NO_STACK = { captureStackTrace: false } as const

export const traced = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) =>
    fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer ? effect : Effect.withSpan(effect, name, NO_STACK)
  )
