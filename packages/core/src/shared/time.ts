/**
 * Time as the API shows it: ISO 8601 UTC with milliseconds, always from Effect's Clock so
 * tests run on a TestClock and no module reads the wall clock directly.
 */
import { Clock, Effect, Schema } from "effect"

export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

export const iso = (date: Date): string => isoOf(date.getTime())

const TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, "0"))
const THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"))
/** 0000-01-01T00:00:00.000Z and 10000-01-01T00:00:00.000Z: outside, `toISOString` writes a sign and six digits. */
const FIRST_MS = -62_167_219_200_000
const PAST_MS = 253_402_300_800_000

/**
 * `new Date(ms).toISOString()`, the same text, computed in arithmetic: V8 formats each call
 * with a printf, which on a request's log line and its timestamps was a measurable share of
 * its instructions (bench/PROFILE.md). The text up to the second is kept for the last two
 * seconds asked (a request's log line and the row it answers mostly fall in one or two), so
 * most calls only add the milliseconds. Days to a civil date as in Howard Hinnant's
 * `civil_from_days`; years outside 0 to 9999 and invalid times go to `toISOString` itself.
 */
export const isoOf = (ms: number): string => {
  if (!(ms >= FIRST_MS && ms < PAST_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString()
  const second = Math.floor(ms / 1000)
  return `${secondText(second)}${THREE[ms - second * 1000]}Z`
}

let lastSecond = Number.NaN
let lastText = ""
let otherSecond = Number.NaN
let otherText = ""

const secondText = (second: number): string => {
  if (second === lastSecond) return lastText
  if (second === otherSecond) return otherText
  const text = writeSecond(second)
  otherSecond = lastSecond
  otherText = lastText
  lastSecond = second
  lastText = text
  return text
}

/** `YYYY-MM-DDTHH:MM:SS.` of a second since the epoch. */
const writeSecond = (second: number): string => {
  const days = Math.floor(second / 86_400)
  let rest = second - days * 86_400
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  const hours = Math.floor(rest / 3600)
  rest -= hours * 3600
  const minutes = Math.floor(rest / 60)
  const yearText = year >= 1000 ? String(year) : String(year).padStart(4, "0")
  return `${yearText}-${TWO[month]}-${TWO[day]}T${TWO[hours]}:${TWO[minutes]}:${TWO[rest - minutes * 60]}.`
}

/** A timestamp on the wire: ISO 8601 UTC with milliseconds. */
export const Timestamp = Schema.String.annotate({
  description: "ISO 8601 UTC timestamp with milliseconds",
  format: "date-time"
})
