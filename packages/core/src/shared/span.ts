/**
 * Spans for the few functions every API request runs (authenticating its key, running its
 * operation, reading the inbox). `Effect.fn("Name")` builds a span and captures a call-site
 * stack trace on every call, a cost on every request (bench/PROFILE.md), even when no tracer is installed: Effect's
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

/**
 * The same, for a span whose name and attributes are built per call (a request's span):
 * `span` runs only when traced, so untraced requests build no string or object for it.
 */
export const tracedWith = (
  span: () => { readonly name: string; readonly kind?: Tracer.SpanKind; readonly attributes?: Record<string, unknown> }
) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return effect
    const { name, ...options } = span()
    return Effect.withSpan(effect, name, { ...options, ...NO_STACK })
  })
