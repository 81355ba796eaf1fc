/**
 * Metrics (spec: Metric series, Metrics, Limits): usage running totals, event counts and
 * per-recipient rates of an organization, a pod or an inbox.
 *
 * Nothing here scans messages or events. Every change that moves a metric appends one row
 * to `metric_changes` in its own transaction (triggers of migration 0007, 0020), and
 * `layerFold` folds those rows every FOLD_INTERVAL into the counters of `metric_counts`: an
 * all-time total per scope and metric, and sums per minute, five minutes, hour and day.
 * Queries read the view `metric_values` (the counters plus the changes not folded yet), so
 * they count every committed change exactly once, folded or not. A series reads the rows of the coarsest
 * resolution that divides its period, so its cost depends on the window (1,000 buckets read
 * at most 5,000 rows per metric when the period is a multiple of five minutes, an hour or
 * a day; other periods read minute rows, up to 129,600 over 90 days) and on the last
 * second's changes, never on how many messages or events there are.
 *
 * Query rules (docs/metrics.md): `period` is in seconds, a multiple of 60 (default
 * 3600); `limit` is the number of buckets (default 24, at most 1,000); buckets are aligned
 * to the epoch and the last one holds now. The events query takes `start` and `end` as
 * ISO 8601 timestamps (rounded down to the minute); `end` defaults to now and `start` to
 * `end` minus `period` x `limit`. A window starting more than 90 days back or needing more
 * than 1,000 buckets is 400 validation_error; a rates window holding more than 200,000
 * events is 422 range_too_large. Scope applies: a pod or inbox key reads its own pod or
 * inbox on the organization routes, and a pod or inbox outside its scope is 404.
 */
import { Clock, Context, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../access/Principal.ts"
import { logBackgroundFailure } from "../db/Availability.ts"
import { type NotFound, RangeTooLarge, type ValidationError } from "../errors/errors.ts"
import { EVENT_TYPES } from "../events/catalogue.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { TimeParam } from "../messages/Messages.ts"
import { labelsOf } from "../messages/model.ts"
import { Pods } from "../pods/Pods.ts"
import { Line } from "../shared/fields.ts"
import { IntegerParam } from "../shared/pagination.ts"
import { decodeRows, Int8, noAutovacuum } from "../shared/sql.ts"
import { iso, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"

export const USAGE_TYPES = ["storage_bytes", "message_count", "thread_count", "inbox_count", "domain_count", "pod_count"] as const
export const RATE_TYPES = ["bounce", "complaint", "open"] as const

export const MAX_BUCKETS = 1000
export const MAX_DAYS_BACK = 90
export const MAX_RATE_EVENTS = 200_000
export const DEFAULT_PERIOD = 3600
export const DEFAULT_BUCKETS = 24

/** How often the server folds appended metric changes into the counters. */
export const FOLD_INTERVAL = "1 second"

/** Changes one fold transaction takes; a fold repeats until it takes fewer. */
export const FOLD_BATCH = 10_000

const DAY_MS = 86_400_000
const MINUTE_MS = 60_000
const HOUR_MS = 3_600_000

const Types = Schema.optionalKey(Schema.Union([Schema.Array(Line(64)), Line(1024)]))
const Period = IntegerParam(Schema.Int.check(Schema.isBetween({ minimum: 60, maximum: MAX_DAYS_BACK * 86_400 })))
const Buckets = IntegerParam(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))

export const UsageQuery = Schema.Struct({ usage_types: Types, period: Schema.optionalKey(Period), limit: Schema.optionalKey(Buckets) })
export type UsageQuery = typeof UsageQuery.Type
export const RatesQuery = Schema.Struct({ rate_types: Types, period: Schema.optionalKey(Period), limit: Schema.optionalKey(Buckets) })
export type RatesQuery = typeof RatesQuery.Type
export const EventsQuery = Schema.Struct({
  event_types: Types,
  period: Schema.optionalKey(Period),
  limit: Schema.optionalKey(Buckets),
  start: Schema.optionalKey(TimeParam),
  end: Schema.optionalKey(TimeParam)
})
export type EventsQuery = typeof EventsQuery.Type

/**
 * A pod's or an inbox's event counts per bucket, in the agentmail SDK's shape (each event
 * type to its buckets' `{ timestamp, count }`): the spec has event counts at organization
 * level only, as `{ total, counts }`, and is silent here (docs/client-compatibility.md).
 */
export const EventSeries = Schema.Record(Schema.String, Schema.Array(Schema.Struct({ timestamp: Timestamp, count: Schema.Number })))
  .check(Schema.isMinProperties(1))
export type EventSeries = typeof EventSeries.Type

// Never empty: every query answers at least one series (all of them when none is named).
export const UsageSeries = Schema.Record(Schema.String, Schema.Array(Schema.Struct({ timestamp: Timestamp, value: Schema.Number })))
  .check(Schema.isMinProperties(1))
export type UsageSeries = typeof UsageSeries.Type
export const RatesSeries = Schema.Record(
  Schema.String,
  Schema.Array(Schema.Struct({ timestamp: Timestamp, sent: Schema.Number, rate: Schema.NullOr(Schema.Number) }))
).check(Schema.isMinProperties(1))
export type RatesSeries = typeof RatesSeries.Type
export const EventCounts = Schema.Struct({ total: Schema.Number, counts: Schema.Record(Schema.String, Schema.Number) })
export type EventCounts = typeof EventCounts.Type

/** Where a series is read: a pod or inbox named by the path, else the principal's own scope. */
export interface MetricsPlace {
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

const TotalRow = Schema.Struct({ metric: Schema.String, value: Int8 })
const SumRow = Schema.Struct({ metric: Schema.String, i: Schema.Number, value: Int8 })

/** The event counted, and its recipients, behind each rate type. */
const RATE_EVENT: Readonly<Record<typeof RATE_TYPES[number], string>> = {
  bounce: "message.bounced",
  complaint: "message.complained",
  open: "message.opened"
}
const SENT = "message.sent"

/** The names asked for, each one of `allowed`; unknown names are 400 validation_error. */
const typesOf = <T extends string>(field: string, value: ReadonlyArray<string> | string | undefined, allowed: ReadonlyArray<T>) => {
  const names = labelsOf(value)
  const unknown = names.filter((n) => !(allowed as ReadonlyArray<string>).includes(n))
  if (unknown.length > 0) {
    return validationError(unknown.map((n) => ({ path: [field], message: `Unknown ${field.replace(/s$/, "")} "${n}"; expected one of ${allowed.join(", ")}` })))
  }
  return Effect.succeed(names.length === 0 ? allowed : names as ReadonlyArray<T>)
}

interface Window {
  /** Start of the first bucket, ms since the epoch. */
  readonly start: number
  readonly periodMs: number
  readonly buckets: number
}

const checkWindow = (startMs: number, buckets: number, nowMs: number): Effect.Effect<void, ValidationError> => {
  if (buckets > MAX_BUCKETS) {
    return validationError([{ path: ["limit"], message: `The window needs ${buckets} buckets; at most ${MAX_BUCKETS} are allowed` }])
  }
  if (startMs < nowMs - MAX_DAYS_BACK * DAY_MS) {
    return validationError([{ path: ["start"], message: `The window starts more than ${MAX_DAYS_BACK} days back` }])
  }
  return Effect.void
}

/** `limit` buckets of `period` seconds, aligned to the epoch, the last one holding now. */
const seriesWindow = (query: { readonly period?: number; readonly limit?: number }, nowMs: number) =>
  Effect.gen(function*() {
    const periodMs = (query.period ?? DEFAULT_PERIOD) * 1000
    if (periodMs % MINUTE_MS !== 0) return yield* validationError([{ path: ["period"], message: "The period must be a whole number of minutes (a multiple of 60)" }])
    const buckets = query.limit ?? DEFAULT_BUCKETS
    const start = Math.floor(nowMs / periodMs) * periodMs - (buckets - 1) * periodMs
    yield* checkWindow(start, buckets, nowMs)
    return { start, periodMs, buckets } satisfies Window
  })

/** Stored resolutions (seconds) besides the all-time total, coarsest first (migration 0020). */
const RESOLUTIONS = [86_400, 3600, 300, 60] as const

/** The coarsest stored resolution that divides the period: the fewest rows to read. */
const resolutionFor = (periodMs: number) => RESOLUTIONS.find((r) => periodMs % (r * 1000) === 0) ?? 60

const timestamps = (w: Window) => Array.from({ length: w.buckets }, (_, i) => w.start + i * w.periodMs)

export class Metrics extends Context.Service<Metrics, {
  usage(principal: Principal, place: MetricsPlace, query: UsageQuery): Effect.Effect<UsageSeries, ValidationError | NotFound>
  events(principal: Principal, query: EventsQuery): Effect.Effect<EventCounts, ValidationError>
  /** Per bucket of `period` over the last `limit` buckets, or from `start` to `end`. */
  eventSeries(principal: Principal, place: MetricsPlace, query: EventsQuery): Effect.Effect<EventSeries, ValidationError | NotFound>
  rates(principal: Principal, place: MetricsPlace, query: RatesQuery): Effect.Effect<RatesSeries, ValidationError | NotFound | RangeTooLarge>
}>()("inbox/Metrics") {
  static readonly layerNoDeps = Layer.effect(Metrics, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pods = yield* Pods
    const inboxes = yield* Inboxes

    /** The counters' scope id: the inbox or pod of the path (checked against the key's scope), else the key's own. */
    const scopeOf = Effect.fn("Metrics.scopeOf")(function*(principal: Principal, place: MetricsPlace) {
      if (place.inboxId !== undefined) return (yield* inboxes.find(principal, place.inboxId)).id
      if (place.podId !== undefined) return (yield* pods.find(principal, place.podId)).id
      const scope = principal.scope
      return scope.type === "inbox" ? scope.inboxId : scope.type === "pod" ? scope.podId : principal.organizationId
    })

    /**
     * Sums of `metrics` at one resolution in [from, to), per bucket of `periodMs` counted
     * from `from` (all in bucket 0 without a period). The database adds them up: a window
     * of 1,000 five-minute buckets spans 5,000 minute rows per metric, and decoding those
     * rows here cost more than the query (BENCHMARKS.md, "Metrics and shared request limits").
     */
    const sums = (scopeId: string, metrics: ReadonlyArray<string>, resolution: number, from: number, to: number, periodMs?: number) =>
      sql`SELECT metric, ${periodMs === undefined ? sql`0` : sql`floor((extract(epoch FROM bucket) * 1000 - ${from}) / ${periodMs})::int`} AS i,
          sum(value) AS value
        FROM metric_values
        WHERE scope_id = ${scopeId} AND metric IN ${sql.in(metrics)} AND resolution = ${resolution}
          AND bucket >= ${new Date(from)} AND bucket < ${new Date(to)}
        GROUP BY 1, 2`.pipe(decodeRows(SumRow))

    /** Sums per metric and series bucket of `metrics` over the window. */
    const perBucket = Effect.fnUntraced(function*(scopeId: string, metrics: ReadonlyArray<string>, w: Window) {
      const rows = yield* sums(scopeId, metrics, resolutionFor(w.periodMs), w.start, w.start + w.buckets * w.periodMs, w.periodMs)
      const series = new Map<string, Array<number>>(metrics.map((m) => [m, new Array<number>(w.buckets).fill(0)]))
      for (const row of rows) {
        const values = series.get(row.metric)
        if (values !== undefined && row.i >= 0 && row.i < w.buckets) values[row.i] = (values[row.i] ?? 0) + row.value
      }
      return series
    })

    return Metrics.of({
      usage: Effect.fn("Metrics.usage")(function*(principal, place, query) {
        const types = yield* typesOf("usage_types", query.usage_types, USAGE_TYPES)
        const w = yield* seriesWindow(query, yield* Clock.currentTimeMillis)
        const scopeId = yield* scopeOf(principal, place)
        const totals = yield* sql`SELECT metric, sum(value) AS value FROM metric_values
          WHERE scope_id = ${scopeId} AND metric IN ${sql.in(types)} AND resolution = 0
          GROUP BY metric`.pipe(decodeRows(TotalRow))
        const deltas = yield* perBucket(scopeId, types, w)
        const result: Record<string, Array<{ timestamp: string; value: number }>> = {}
        for (const type of types) {
          // A running total at the end of each bucket: today's total less what changed after it.
          let value = Number(totals.find((t) => t.metric === type)?.value ?? 0)
          const changes = deltas.get(type) ?? []
          const points = timestamps(w).map((at) => ({ timestamp: iso(new Date(at)), value: 0 }))
          for (let i = w.buckets - 1; i >= 0; i--) {
            points[i] = { timestamp: points[i]?.timestamp ?? "", value }
            value -= changes[i] ?? 0
          }
          result[type] = points
        }
        return result
      }),

      events: Effect.fn("Metrics.events")(function*(principal, query) {
        const types = yield* typesOf("event_types", query.event_types, EVENT_TYPES)
        const nowMs = yield* Clock.currentTimeMillis
        const periodMs = (query.period ?? DEFAULT_PERIOD) * 1000
        const floorMinute = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS
        const end = floorMinute(query.end === undefined ? nowMs + MINUTE_MS : Date.parse(query.end))
        const start = floorMinute(query.start === undefined ? end - periodMs * (query.limit ?? DEFAULT_BUCKETS) : Date.parse(query.start))
        if (end < start) return yield* validationError([{ path: ["end"], message: "end is before start" }])
        yield* checkWindow(start, Math.ceil((end - start) / periodMs), nowMs)
        // With no pod or inbox named, the scope is the principal's own: never NotFound.
        const scopeId = yield* scopeOf(principal, {}).pipe(Effect.orDie)
        // Whole hours from the hour rows, the ragged minutes at either edge from the minute rows.
        const hoursFrom = Math.min(Math.ceil(start / HOUR_MS) * HOUR_MS, end)
        const hoursTo = Math.max(Math.floor(end / HOUR_MS) * HOUR_MS, hoursFrom)
        const rows = [
          ...(yield* sums(scopeId, types, 3600, hoursFrom, hoursTo)),
          ...(yield* sums(scopeId, types, 60, start, hoursFrom)),
          ...(yield* sums(scopeId, types, 60, hoursTo, end))
        ]
        const counts: Record<string, number> = Object.fromEntries(types.map((t) => [t, 0]))
        for (const row of rows) counts[row.metric] = (counts[row.metric] ?? 0) + Number(row.value)
        return { total: Object.values(counts).reduce((a, b) => a + b, 0), counts }
      }),

      eventSeries: Effect.fn("Metrics.eventSeries")(function*(principal, place, query) {
        const types = yield* typesOf("event_types", query.event_types, EVENT_TYPES)
        const nowMs = yield* Clock.currentTimeMillis
        const periodMs = (query.period ?? DEFAULT_PERIOD) * 1000
        if (periodMs % MINUTE_MS !== 0) return yield* validationError([{ path: ["period"], message: "The period must be a whole number of minutes (a multiple of 60)" }])
        let w: Window
        if (query.start === undefined && query.end === undefined) {
          w = yield* seriesWindow(query, nowMs)
        } else {
          const end = query.end === undefined ? nowMs : Date.parse(query.end)
          const start = Math.floor((query.start === undefined ? end - periodMs * (query.limit ?? DEFAULT_BUCKETS) : Date.parse(query.start)) / MINUTE_MS) * MINUTE_MS
          if (end < start) return yield* validationError([{ path: ["end"], message: "end is before start" }])
          const buckets = Math.max(1, Math.ceil((end - start) / periodMs))
          yield* checkWindow(start, buckets, nowMs)
          w = { start, periodMs, buckets }
        }
        const scopeId = yield* scopeOf(principal, place)
        const counts = yield* perBucket(scopeId, types, w)
        const result: Record<string, Array<{ timestamp: string; count: number }>> = {}
        for (const type of types) {
          const values = counts.get(type) ?? []
          result[type] = timestamps(w).map((at, i) => ({ timestamp: iso(new Date(at)), count: Number(values[i] ?? 0) }))
        }
        return result
      }),

      rates: Effect.fn("Metrics.rates")(function*(principal, place, query) {
        const explicit = query.rate_types !== undefined
        const types = yield* typesOf("rate_types", query.rate_types, RATE_TYPES)
        const w = yield* seriesWindow(query, yield* Clock.currentTimeMillis)
        const scopeId = yield* scopeOf(principal, place)
        const events = [SENT, ...types.map((t) => RATE_EVENT[t])]
        const sums = yield* perBucket(scopeId, [...events, ...events.map((e) => `recipients:${e}`)], w)
        const scanned = events.reduce((n, e) => n + (sums.get(e) ?? []).reduce((a, b) => a + b, 0), 0)
        if (scanned > MAX_RATE_EVENTS) {
          return yield* new RangeTooLarge({
            message: `This rates query covers ${scanned} events; at most ${MAX_RATE_EVENTS} are allowed.`,
            fix: "Ask for fewer buckets or a shorter period."
          })
        }
        const sent = sums.get(`recipients:${SENT}`) ?? []
        const result: Record<string, Array<{ timestamp: string; sent: number; rate: number | null }>> = {}
        for (const type of types) {
          // Opens are counted per message (one open event each), bounces and complaints per recipient.
          const hits = sums.get(type === "open" ? RATE_EVENT.open : `recipients:${RATE_EVENT[type]}`) ?? []
          // Open rates appear when tracking data exists, or when asked for by name.
          if (type === "open" && !explicit && hits.every((n) => n === 0)) continue
          result[type] = timestamps(w).map((at, i) => {
            const s = sent[i] ?? 0
            return { timestamp: iso(new Date(at)), sent: s, rate: s === 0 ? null : (hits[i] ?? 0) / s }
          })
        }
        return result
      })
    })
  }))

  /**
   * Folds appended metric changes into the counters every FOLD_INTERVAL (the server's
   * layer). Readers count unfolded changes too, so a fold changes what queries cost, never
   * what they answer; several processes may fold at once (migration 0020 says why each
   * change still counts once).
   */
  static readonly layerFold = Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Without autovacuum (the embedded database has none; a server may run without it) the
    // space of folded rows is never reused: the table would grow by every change ever made,
    // and every metrics read scans it. Then the fold vacuums the table itself, which is
    // cheap right after a fold has emptied it.
    const vacuums = yield* noAutovacuum(sql)
    const foldOnce = sql<{ n: string | number }>`SELECT metric_fold(${FOLD_BATCH}) AS n`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0)),
      Effect.tap((n): Effect.Effect<unknown, unknown> => n > 0 && vacuums ? sql`VACUUM metric_changes` : Effect.void),
      Effect.orDie
    )
    const foldAll: Effect.Effect<void> = Effect.flatMap(foldOnce, (n) => n === FOLD_BATCH ? foldAll : Effect.void)
    yield* foldAll.pipe(
      Effect.catchCause(logBackgroundFailure("metric fold failed")),
      Effect.repeat(Schedule.spaced(FOLD_INTERVAL)),
      Effect.forkScoped
    )
  }))

  /** With the services it uses (Inboxes, Pods); the ports are the caller's. */
  static readonly layer = Metrics.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Inboxes.layer, Pods.layer)))
}
