/**
 * Egress: the engine's only way to fetch a URL from the outside world (URL attachments of a
 * send today; webhook deliveries may share it later).
 *
 * Contract of `fetch(url, { maxBytes, timeout })`:
 * - Only `http:` and `https:` URLs are fetched; other schemes, and hosts that are literal
 *   loopback, private or link-local addresses (or `localhost`), fail with reason `forbidden`
 *   before any connection. (A DNS-resolving SSRF guard is not part of this port yet.)
 * - Redirects are followed by hand, at most 5, each target checked like the first URL.
 * - A non-2xx answer fails with reason `status`.
 * - The body is counted while it streams: as soon as more than `maxBytes` arrived (or the
 *   Content-Length announces more) the transfer is cancelled and the call fails with
 *   `too_large`; memory use stays at about `maxBytes`.
 * - The whole call (connect, redirects, body) is bounded by `timeout`, measured on Effect's
 *   Clock; when it passes the request is aborted and the call fails with `timeout`.
 *   Interrupting the call aborts the request too.
 * - Connection and protocol failures fail with `network`.
 * - Success gives the bytes and the media type of the answer (`content_type`, lower-case,
 *   without parameters), when it sent one.
 *
 * Layers: `layer` (global fetch) and `layerTest(responses)` (a map of URL to canned answer;
 * unknown URLs fail with `network`; an answer's `delay` passes on the Clock, so a TestClock
 * can drive timeouts).
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"

export const EgressFailure = Schema.Literals(["too_large", "timeout", "network", "status", "forbidden"])
export type EgressFailure = typeof EgressFailure.Type

export class EgressError extends Schema.TaggedError<EgressError>()("EgressError", {
  reason: EgressFailure,
  url: Schema.String,
  message: Schema.String
}) {}

export interface FetchOptions {
  readonly maxBytes: number
  readonly timeout: Duration.Input
}

export interface Fetched {
  readonly bytes: Uint8Array
  readonly content_type?: string
}

export interface TestResponse {
  readonly body: Uint8Array | string
  readonly content_type?: string
  readonly status?: number
  /** time before the answer starts, on the Clock */
  readonly delay?: Duration.Input
}

export class Egress extends Context.Service<Egress, {
  fetch(url: string, options: FetchOptions): Effect.Effect<Fetched, EgressError>
}>()("inbox/Egress") {
  static readonly layer: Layer.Layer<Egress> = Layer.sync(Egress, () => Egress.of({ fetch: liveFetch }))

  static readonly layerTest = (responses: Readonly<Record<string, TestResponse>>): Layer.Layer<Egress> =>
    Layer.succeed(Egress, Egress.of({
      fetch: (url, options) =>
        Effect.gen(function*() {
          yield* checkUrl(url)
          const answer = Object.hasOwn(responses, url) ? responses[url] : undefined
          if (answer === undefined) return yield* new EgressError({ reason: "network", url, message: "no test response for this URL" })
          if (answer.delay !== undefined) yield* Effect.sleep(answer.delay)
          const status = answer.status ?? 200
          if (status < 200 || status > 299) return yield* new EgressError({ reason: "status", url, message: `answered ${status}` })
          const bytes = typeof answer.body === "string" ? new TextEncoder().encode(answer.body) : answer.body
          if (bytes.byteLength > options.maxBytes) return yield* tooLarge(url, options.maxBytes)
          return answer.content_type === undefined ? { bytes } : { bytes, content_type: mediaType(answer.content_type) }
        }).pipe(withTimeout(url, options.timeout))
    }))
}

const MAX_REDIRECTS = 5

const tooLarge = (url: string, maxBytes: number) => new EgressError({ reason: "too_large", url, message: `body is over ${maxBytes} bytes` })

const withTimeout = (url: string, timeout: Duration.Input) => <A, R>(self: Effect.Effect<A, EgressError, R>) =>
  Effect.timeoutOrElse(self, {
    duration: timeout,
    orElse: () => Effect.fail(new EgressError({ reason: "timeout", url, message: `no complete answer within ${Duration.format(Duration.fromInputUnsafe(timeout))}` }))
  })

const mediaType = (value: string): string => (value.split(";")[0] ?? "").trim().toLowerCase()

// Literal addresses only: a name that resolves to a private address is not caught here.
const privateHost = (host: string): boolean => {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase()
  if (h === "localhost" || h.endsWith(".localhost")) return true
  const v4 = h.replace(/^::ffff:/, "").match(/^(\d+)\.(\d+)\.(\d+)\.(\d+)$/)
  if (v4 !== null) {
    const a = Number(v4[1])
    const b = Number(v4[2])
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127)
  }
  // IPv6: unspecified, loopback, link-local fe80::/10, unique-local fc00::/7, and v4-mapped
  // (URL writes those in hex, so the dotted check above cannot see them)
  return h.includes(":") && (h === "::" || h === "::1" || /^fe[89ab]/.test(h) || /^f[cd]/.test(h) || h.startsWith("::ffff:"))
}

const checkUrl = (url: string): Effect.Effect<URL, EgressError> => {
  const parsed = URL.parse(url)
  if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return Effect.fail(new EgressError({ reason: "forbidden", url, message: "only http and https URLs can be fetched" }))
  }
  if (privateHost(parsed.hostname)) return Effect.fail(new EgressError({ reason: "forbidden", url, message: "the host is a private or loopback address" }))
  return Effect.succeed(parsed)
}

const network = (url: string) => (error: unknown) =>
  new EgressError({ reason: "network", url, message: error instanceof Error ? error.message : String(error) })

const request = (url: string, target: URL, hops: number): Effect.Effect<Response, EgressError> =>
  Effect.tryPromise({ try: (signal) => fetch(target, { signal, redirect: "manual" }), catch: network(url) }).pipe(
    Effect.flatMap((response) => {
      const location = response.headers.get("location")
      if (response.status < 300 || response.status > 399 || location === null) return Effect.succeed(response)
      if (hops >= MAX_REDIRECTS) return Effect.fail(new EgressError({ reason: "network", url, message: "too many redirects" }))
      return Effect.andThen(
        Effect.ignore(Effect.tryPromise(() => response.body?.cancel() ?? Promise.resolve())),
        Effect.flatMap(checkUrl(new URL(location, target).href), (next) => request(url, next, hops + 1))
      )
    })
  )

const readCapped = (url: string, body: ReadableStream<Uint8Array>, maxBytes: number) =>
  Effect.scoped(Effect.gen(function*() {
    // the release cancels the transfer on every exit: done, too large, timeout, interruption
    const reader = yield* Effect.acquireRelease(
      Effect.sync(() => body.getReader()),
      (r) => Effect.ignore(Effect.tryPromise(() => r.cancel()))
    )
    const chunks: Array<Uint8Array> = []
    let total = 0
    for (;;) {
      const next = yield* Effect.tryPromise({ try: () => reader.read(), catch: network(url) })
      if (next.done) break
      total += next.value.byteLength
      if (total > maxBytes) return yield* tooLarge(url, maxBytes)
      chunks.push(next.value)
    }
    const bytes = new Uint8Array(total)
    let at = 0
    for (const c of chunks) {
      bytes.set(c, at)
      at += c.byteLength
    }
    return bytes
  }))

const liveFetch = (url: string, options: FetchOptions): Effect.Effect<Fetched, EgressError> =>
  Effect.gen(function*() {
    const target = yield* checkUrl(url)
    const response = yield* request(url, target, 0)
    if (!response.ok) {
      yield* Effect.ignore(Effect.tryPromise(() => response.body?.cancel() ?? Promise.resolve()))
      return yield* new EgressError({ reason: "status", url, message: `answered ${response.status}` })
    }
    const declared = Number(response.headers.get("content-length") ?? "")
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      yield* Effect.ignore(Effect.tryPromise(() => response.body?.cancel() ?? Promise.resolve()))
      return yield* tooLarge(url, options.maxBytes)
    }
    const bytes = response.body === null ? new Uint8Array(0) : yield* readCapped(url, response.body, options.maxBytes)
    const type = response.headers.get("content-type")
    return type === null ? { bytes } : { bytes, content_type: mediaType(type) }
  }).pipe(withTimeout(url, options.timeout), Effect.withSpan("Egress.fetch"))
