/**
 * Time as the API shows it: ISO 8601 UTC with milliseconds, always from Effect's Clock so
 * tests run on a TestClock and no module reads the wall clock directly.
 */
import { Clock, Effect, Schema } from "effect"

export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

export const iso = (date: Date): string => date.toISOString()

/** A timestamp on the wire: ISO 8601 UTC with milliseconds. */
export const Timestamp = Schema.String.annotate({
  description: "ISO 8601 UTC timestamp with milliseconds",
  format: "date-time"
})
