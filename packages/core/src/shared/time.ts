/**
 * Time as the API shows it: ISO 8601 UTC with milliseconds, always from Effect's Clock so
 * tests run on a TestClock and no module reads the wall clock directly.
 */
import { Clock, Effect } from "effect"

export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

export const iso = (date: Date): string => date.toISOString()
