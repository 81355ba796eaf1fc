/**
 * The database going away and coming back. A PostgreSQL server that is stopped, restarts,
 * or drops its connections is a temporary condition, not a fault of the request that met
 * it: the request is answered 503 `service_unavailable` with Retry-After (the SMTP receiver
 * answers 451 4.3.0), and the operator reads one line when the database goes and one when
 * it returns, instead of a stack trace per request.
 *
 * What counts as unreachable is decided here, once, from a failure's Cause
 * (`isDatabaseUnreachable`): an SqlError whose reason is a connection error (refused,
 * closed, the pool's connect timeout, SQLSTATE class 08) or whose server said it is
 * shutting down or starting up (57P01, 57P02, 57P03). Adapters and background loops hand
 * their failures to `Availability`; the first unreachable one starts an outage (logged),
 * and a probe asks the database every PROBE_INTERVAL until it answers (logged with how
 * long it was away). Nothing waits on the probe: requests keep failing fast meanwhile, and
 * the pool reconnects by itself once the server is back.
 */
import { Cause, Clock, Context, Effect, Layer } from "effect"
import { SqlError, SqlClient } from "effect/sql"
import { ServiceUnavailable } from "../errors/errors.ts"

/** Sent as Retry-After while the database is unreachable. */
export const RETRY_AFTER_SECONDS = 5
/** Time between two probes of an unreachable database. */
export const PROBE_INTERVAL = "500 millis"
const PROBE_TIMEOUT = "2 seconds"

/** admin_shutdown, crash_shutdown, cannot_connect_now (the server is starting or stopping). */
const UNREACHABLE_STATES: ReadonlySet<string> = new Set(["57P01", "57P02", "57P03"])

const unreachableError = (u: unknown, depth = 0): SqlError.SqlError | undefined => {
  if (depth > 4 || typeof u !== "object" || u === null) return undefined
  if (SqlError.isSqlError(u)) {
    if (u.reason._tag === "ConnectionError") return u
    const code = (u.reason.cause as { readonly code?: unknown } | undefined)?.code
    return typeof code === "string" && UNREACHABLE_STATES.has(code) ? u : undefined
  }
  // A wrapped failure (an Error whose cause is the SqlError) counts too.
  return "cause" in u ? unreachableError(u.cause, depth + 1) : undefined
}

const findUnreachable = (cause: Cause.Cause<unknown>): SqlError.SqlError | undefined => {
  for (const reason of cause.reasons) {
    const found = reason._tag === "Fail" ? unreachableError(reason.error) : reason._tag === "Die" ? unreachableError(reason.defect) : undefined
    if (found !== undefined) return found
  }
  return undefined
}

/** Whether `cause` is the database being unreachable (a temporary condition), not a fault. */
export const isDatabaseUnreachable = (cause: Cause.Cause<unknown>): boolean => findUnreachable(cause) !== undefined

/**
 * The failure of a background loop that runs again later: interruptions go on, an
 * unreachable database is left to the outage's two lines (the job worker, which looks every
 * second, reports it to Availability), anything else is logged as a warning with its cause.
 */
export const logBackgroundFailure = (message: string) => <E>(cause: Cause.Cause<E>): Effect.Effect<void, E> =>
  Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : isDatabaseUnreachable(cause) ? Effect.void : Effect.logWarning(message, Cause.pretty(cause))

/** What the driver said, for the outage's log line: its message and the socket's (no URL, no password). */
const describe = (error: SqlError.SqlError): string => {
  const inner = error.reason.cause
  const detail = inner instanceof Error && inner.message !== "" ? `: ${inner.message}` : ""
  return `${error.reason.message ?? error.reason._tag}${detail}`
}

const unavailableError = () =>
  new ServiceUnavailable({
    message: "The database cannot be reached for now.",
    fix: `Try again in ${RETRY_AFTER_SECONDS} seconds.`,
    retryAfterSeconds: RETRY_AFTER_SECONDS
  })

export class Availability extends Context.Service<Availability, {
  /**
   * The error to answer when `cause` is the database being unreachable (the outage is noted:
   * logged when it begins, probed until it ends); undefined for any other cause.
   */
  readonly unavailable: (cause: Cause.Cause<unknown>) => Effect.Effect<ServiceUnavailable | undefined>
  /**
   * For background work that failed: an unreachable database is noted as above, any other
   * failure is logged as a warning with its cause. Interruptions are not failures.
   */
  readonly report: (message: string, cause: Cause.Cause<unknown>) => Effect.Effect<void>
}>()("inbox/Availability") {
  static readonly layerNoDeps = Layer.effect(Availability, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const scope = yield* Effect.scope
    let downSince: number | undefined

    const probe = Effect.gen(function*() {
      for (;;) {
        yield* Effect.sleep(PROBE_INTERVAL)
        const answered = yield* sql`SELECT 1`.pipe(
          Effect.timeoutOption(PROBE_TIMEOUT),
          Effect.map((r) => r._tag === "Some"),
          Effect.orElseSucceed(() => false)
        )
        if (answered) break
      }
      const at = yield* Clock.currentTimeMillis
      const since = downSince ?? at
      downSince = undefined
      yield* Effect.logInfo("database reachable again").pipe(Effect.annotateLogs({ down_ms: at - since }))
    }).pipe(
      // The probe belongs to the server, not to the request that found the outage.
      Effect.withTracerEnabled(false)
    )

    // Checked and set in one step: many requests meet an outage at once, one of them starts it.
    const note = (error: SqlError.SqlError) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => {
        if (downSince !== undefined) return Effect.void
        downSince = at
        return Effect.andThen(
          Effect.logWarning("database unreachable").pipe(Effect.annotateLogs({ error: describe(error) })),
          Effect.forkIn(probe, scope)
        )
      })

    const unavailable = (cause: Cause.Cause<unknown>) => {
      const error = findUnreachable(cause)
      return error === undefined ? Effect.succeed(undefined) : Effect.as(note(error), unavailableError())
    }

    return Availability.of({
      unavailable,
      report: (message, cause) =>
        Effect.suspend(() => {
          if (Cause.hasInterruptsOnly(cause)) return Effect.void
          const error = findUnreachable(cause)
          return error === undefined ? Effect.logWarning(message, cause) : note(error)
        })
    })
  }))

  static readonly layer = Availability.layerNoDeps
}
