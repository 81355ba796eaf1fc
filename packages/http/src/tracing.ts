/**
 * OpenTelemetry traces: when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set,
 * the spans the engine already names (`Effect.fn("Inboxes.create")`, the operation run by
 * each request, the direct path's request span, SQL statements, jobs, webhook deliveries)
 * are exported over OTLP/HTTP by Effect's own exporter (`effect/observability`), batched.
 *
 * Unset, no tracer is installed: Effect's native tracer stays, and the request path's
 * spans (`shared/span.ts`, built only under another tracer) cost nothing (bench/PROFILE.md).
 *
 * Settings follow the OpenTelemetry SDK's names: OTEL_EXPORTER_OTLP_ENDPOINT (the
 * collector's base URL; `/v1/traces` is added), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the
 * full URL, takes precedence), OTEL_EXPORTER_OTLP_PROTOCOL `http/protobuf` (default) or
 * `http/json`, OTEL_EXPORTER_OTLP_HEADERS `k=v,...`, OTEL_SERVICE_NAME (default `inbox`),
 * OTEL_BSP_SCHEDULE_DELAY (ms between exports, default 5000), OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none to turn it off. Effect's `layerFromConfig` would also need
 * OTEL_TRACES_EXPORTER=otlp, which the OpenTelemetry SDKs default to; hence this reading.
 */
import { Config, Duration, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"

const tracesUrl = Effect.gen(function*() {
  const full = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
  if (Option.isSome(full) && full.value.trim() !== "") return full.value.trim()
  const base = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
  if (Option.isNone(base) || base.value.trim() === "") return undefined
  return `${base.value.trim().replace(/\/+$/, "")}/v1/traces`
})

const parseHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at > 0) headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return headers
}

/** The OTLP tracer when an endpoint is configured; nothing (the native tracer) otherwise. */
export const TracingLive = Layer.unwrap(Effect.gen(function*() {
  const url = yield* tracesUrl
  const disabled = yield* Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
  const exporter = yield* Config.String("OTEL_TRACES_EXPORTER").pipe(Config.withDefault("otlp"))
  if (url === undefined || disabled || exporter.trim().toLowerCase() === "none") return Layer.empty
  const protocol = yield* Config.String("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").pipe(
    Config.orElse(() => Config.String("OTEL_EXPORTER_OTLP_PROTOCOL")),
    Config.withDefault("http/protobuf")
  )
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return yield* Effect.die(new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`))
  }
  const headers = yield* Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""))
  const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("inbox"))
  const delayMs = yield* Config.Int("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000))
  yield* Effect.logInfo("exporting traces over OTLP", { url, protocol })
  return OtlpTracer.layer({
    url,
    resource: { serviceName },
    headers: parseHeaders(headers),
    exportInterval: Duration.millis(delayMs)
  }).pipe(
    Layer.provide(protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
}).pipe(Effect.orDie))
