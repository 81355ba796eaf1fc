/**
 * What an operator sees of the HTTP server: one structured log line per request (request id,
 * the principal's organization, method, route pattern, status, duration; never a key, a
 * body or a query string), request counts and latency per route for `/metrics`, and the
 * `/metrics` (Prometheus text, behind INBOX_METRICS_TOKEN). `/ready` is core's operation
 * (operating/operations.ts).
 *
 * The route label is the pattern (`/v0/inboxes/:inbox_id`), never the concrete path, so the
 * number of series stays bounded; a request that matched no route counts as `unmatched`.
 *
 * Secrets a URL may carry (an API key in `?api_key=`, which browsers' WebSockets need, and
 * the dashboard's `?csrf_token=`) reach no log line and no span: the router's spans and
 * errors name URLs with those values REDACTED (RedactedQueryParams), and every log line
 * written, whatever wrote it, has them and any `am_` key replaced (redactSecrets).
 */
import { isoOf, NotFound, OperatorMetrics, sameSecret, settingDefault, Settings, Unauthorized } from "@inbox/core"
import { Clock, Config, Console, Context, Effect, Formatter, Layer, Logger, LogLevel, Metric, References } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { writeSync } from "node:fs"
import { errorResponse, json } from "./respond.ts"

/** Filled in while a request runs, read when it is answered. */
export class RequestFacts extends Context.Service<RequestFacts, {
  route: string | undefined
  organizationId: string | undefined
}>()("inbox/http/RequestFacts") {}

/** Routes outside the operation catalogue, labelled by their fixed path. */
const FIXED_ROUTES = new Set(["/health", "/ready", "/metrics", "/mcp", "/openapi.json"])

/**
 * The labelled metrics of one (method, route, status), made once: labelling a metric builds
 * its key, which per request was measurable on the request path. Bounded like the routes.
 */
const labelled = new Map<string, { readonly requests: typeof OperatorMetrics.httpRequests; readonly duration: typeof OperatorMetrics.httpDuration }>()
const routeMetrics = (method: string, route: string, status: number) => {
  const id = `${method} ${route} ${status}`
  let metrics = labelled.get(id)
  if (metrics === undefined) {
    metrics = {
      requests: Metric.withAttributes(OperatorMetrics.httpRequests, { method, route, status: String(status) }),
      duration: Metric.withAttributes(OperatorMetrics.httpDuration, { method, route })
    }
    labelled.set(id, metrics)
  }
  return metrics
}

/** The route label of a request: the operation's pattern, a fixed route's path, or `unmatched`. */
export const routeLabel = (facts: { readonly route: string | undefined }, path: string) =>
  facts.route ?? (FIXED_ROUTES.has(path) ? path : "unmatched")

/** Counts an answered request and writes its log line. */
export const recordRequest = (
  requestId: string,
  method: string,
  route: string,
  status: number,
  startedMs: number,
  organizationId: string | undefined
) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const seconds = (now - startedMs) / 1000
    const metrics = routeMetrics(method, route, status)
    return Effect.contextWith((context: Context.Context<never>) => {
      // Both series in one step (Metric.update is a step each).
      metrics.requests.updateUnsafe(1, context)
      metrics.duration.updateUnsafe(seconds, context)
      const own = {
        request_id: requestId,
        organization_id: organizationId ?? null,
        method,
        route,
        status,
        duration_ms: Math.round(seconds * 1000)
      }
      // As Effect.annotateLogs merges them, without copying the line's own into a new object
      // when there is nothing around it to merge with (the usual case).
      const outer = Context.get(context, References.CurrentLogAnnotations)
      return Effect.provideService(REQUEST_LINE, References.CurrentLogAnnotations, isEmpty(outer) ? own : { ...outer, ...own })
    })
  })

const REQUEST_LINE = Effect.logInfo("request")

const isEmpty = (record: Readonly<Record<string, unknown>>) => {
  for (const _ in record) return false
  return true
}

/** Wraps the handling of one request: metrics and the request's log line. */
export const observe = (requestId: string) =>
  <E, R>(handle: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = yield* Clock.currentTimeMillis
      const facts = { route: undefined as string | undefined, organizationId: undefined as string | undefined }
      const response = yield* Effect.provideService(handle, RequestFacts, facts)
      const route = routeLabel(facts, request.url.split("?")[0] ?? "")
      yield* recordRequest(requestId, request.method, route, response.status, started, facts.organizationId)
      return response
    })

/** Prometheus text; only with INBOX_METRICS_TOKEN set, and only for `Authorization: Bearer <it>`. */
const Metrics = HttpRouter.add("GET", "/metrics", Effect.gen(function*() {
  const settings = yield* Settings
  if (settings.metricsToken === undefined) {
    return errorResponse(new NotFound({ message: "Metrics are off.", fix: "Set INBOX_METRICS_TOKEN to serve /metrics." }))
  }
  const request = yield* HttpServerRequest.HttpServerRequest
  const given = (request.headers["authorization"] ?? "").replace(/^Bearer /i, "")
  if (!sameSecret(given, settings.metricsToken)) {
    return errorResponse(new Unauthorized({ message: "The metrics token is missing or wrong.", fix: "Send Authorization: Bearer $INBOX_METRICS_TOKEN." }))
  }
  return HttpServerResponse.text(yield* OperatorMetrics.prometheusText, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
}))

export const ObserveRoutes = Metrics

/**
 * Standard output in batches: the lines logged during one turn of the event loop go out in
 * one write. A write per line was a system call per request, and with the formatting it was
 * about a sixth of the request path's CPU (bench/PROFILE.md). At most one turn of lines waits
 * in memory, and it is written synchronously when the process exits.
 */
const batchedStdout = (() => {
  let pending: Array<string> = []
  const flush = () => {
    if (pending.length === 0) return
    const text = pending.join("\n") + "\n"
    pending = []
    process.stdout.write(text)
  }
  process.once("exit", () => {
    if (pending.length > 0) writeSync(1, pending.join("\n") + "\n")
    pending = []
  })
  return (line: string) => {
    if (pending.push(line) === 1) setImmediate(flush)
  }
})()

/** Query parameters whose values are secrets. */
const SECRET_PARAMS = ["api_key", "csrf_token"]

/** The router's spans and errors show URLs with these parameters' values REDACTED (Effect's list, plus ours). */
export const RedactedQueryParams = Layer.succeed(UrlParams.CurrentRedactedNames, [
  ...UrlParams.CurrentRedactedNames.defaultValue(),
  ...SECRET_PARAMS
])

const SECRET_IN_TEXT = /\b(api_key|csrf_token)=[^&\s"'\\#]*|\bam_[0-9a-f]{16,}/gi

/** A log line with the values of secret query parameters and any API key (`am_` and hex) replaced by REDACTED. */
export const redactSecrets = (line: string): string =>
  // Most lines name neither: the test costs less than the replace.
  !/api_key|csrf_token|am_/i.test(line)
    ? line
    : line.replace(SECRET_IN_TEXT, (_found, name: string | undefined) => name !== undefined ? `${name}=REDACTED` : "am_REDACTED")

/** Effect's pretty logger writes through the Console service: this one redacts every string it is given. */
const redactingConsole = (console: Console.Console): Console.Console => {
  const redactArgs = (write: (...args: ReadonlyArray<unknown>) => void) => (...args: ReadonlyArray<unknown>) =>
    write(...args.map((a) => typeof a === "string" ? redactSecrets(a) : a))
  return { ...console, log: redactArgs(console.log), error: redactArgs(console.error), info: redactArgs(console.info), warn: redactArgs(console.warn), debug: redactArgs(console.debug) }
}

const isPlain = (value: unknown) => value === null || typeof value !== "object" && typeof value !== "bigint"

const allPlain = (annotations: Readonly<Record<string, unknown>>) => {
  for (const key in annotations) if (!isPlain(annotations[key])) return false
  return true
}

const structured = Logger.map(Logger.formatStructured, (entry) => redactSecrets(Formatter.formatJson(entry)))

/**
 * The JSON line of Effect's `consoleJson` (same fields, same order), written through
 * `batchedStdout`. A line of one string message, no cause, no log spans and plain annotations
 * (every request line) is built here straight from the fiber's annotations and stringified
 * natively: `formatStructured` copies every annotation into a new object first, which was a
 * measurable share of a request's allocation (bench/PROFILE.md). Anything else goes through
 * Effect's formatter, which handles redacted values, errors, bigints and cycles.
 */
const jsonLogger = Logger.make((options) => {
  const message = options.message
  const text = typeof message === "string" ? message : Array.isArray(message) && message.length === 1 && typeof message[0] === "string" ? message[0] as string : undefined
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  if (text !== undefined && options.cause.reasons.length === 0 && options.fiber.getRef(References.CurrentLogSpans).length === 0 && allPlain(annotations)) {
    batchedStdout(redactSecrets(JSON.stringify({
      message: text,
      level: options.logLevel.toUpperCase(),
      timestamp: isoOf(options.date.getTime()),
      annotations,
      spans: {},
      fiberId: `#${options.fiber.id}`
    })))
    return
  }
  batchedStdout(structured.log(options))
})

/**
 * The server's logger: INBOX_LOG_FORMAT `json` (default: one JSON object a line) or
 * `pretty`; INBOX_LOG_LEVEL the least level written (`info` by default).
 */
export const LoggingLive = Layer.unwrap(Effect.gen(function*() {
  const format = (yield* Config.Literals(["json", "pretty"], "INBOX_LOG_FORMAT").pipe(Config.withDefault(settingDefault("INBOX_LOG_FORMAT"))))
  const level = yield* Config.Literals(["trace", "debug", "info", "warning", "error", "fatal", "none"], "INBOX_LOG_LEVEL").pipe(Config.withDefault(settingDefault("INBOX_LOG_LEVEL")))
  const levels: Record<typeof level, LogLevel.LogLevel> = {
    trace: "Trace", debug: "Debug", info: "Info", warning: "Warn", error: "Error", fatal: "Fatal", none: "None"
  }
  return Layer.mergeAll(
    Logger.layer([format === "json" ? jsonLogger : Logger.consolePretty()]),
    Layer.succeed(References.MinimumLogLevel, levels[level]),
    format === "json" ? Layer.empty : Layer.succeed(Console.Console, redactingConsole(Console.Console.defaultValue()))
  )
}).pipe(Effect.orDie))
