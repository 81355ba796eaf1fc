/**
 * Egress: the engine's way to fetch a URL from the outside world (URL attachments of a send).
 *
 * Contract of `fetch(url, { maxBytes, timeout })`:
 * - Only `http:` and `https:` URLs are fetched. The host is resolved and every address it
 *   has must be public (the webhook URL rule, egress/guard.ts: private, loopback,
 *   link-local, reserved, documentation and IPv4-mapped ranges refused), else the call fails
 *   with reason `forbidden` before any connection; the connection then goes to an address
 *   that was checked, never to a second answer of the resolver (DNS rebinding).
 *   INBOX_WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule for both, for closed networks.
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
import type { IncomingMessage } from "node:http"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { isIP } from "node:net"
import { Settings } from "../settings/Settings.ts"
import { type CheckedUrl, checkPublicUrl, HostResolver, isPublicAddress, pinnedLookup } from "./guard.ts"

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
  /** Live fetches, names resolved by the given HostResolver. */
  static readonly layerResolving: Layer.Layer<Egress, never, HostResolver | Settings> = Layer.effect(Egress, Effect.gen(function*() {
    const resolver = yield* HostResolver
    const settings = yield* Settings
    return Egress.of({
      fetch: (url, options) => liveFetch(url, options, settings.webhookAllowPrivate).pipe(Effect.provideService(HostResolver, resolver))
    })
  }))

  /** Live fetches through the system resolver. */
  static readonly layer: Layer.Layer<Egress, never, Settings> = Egress.layerResolving.pipe(Layer.provide(HostResolver.layer))

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

/** The canned layer's check: what the live guard refuses without a resolver (literal addresses, localhost). */
const checkUrl = (url: string): Effect.Effect<URL, EgressError> => {
  const parsed = URL.parse(url)
  if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return Effect.fail(new EgressError({ reason: "forbidden", url, message: "only http and https URLs can be fetched" }))
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase()
  if (host === "localhost" || host.endsWith(".localhost") || (isIP(host) !== 0 && !isPublicAddress(host))) {
    return Effect.fail(new EgressError({ reason: "forbidden", url, message: "the host is a private or loopback address" }))
  }
  return Effect.succeed(parsed)
}

const network = (url: string) => (error: unknown) =>
  new EgressError({ reason: "network", url, message: error instanceof Error ? error.message : String(error) })

/** The URL checked by the guard: refused hosts fail with `forbidden`. */
const guarded = (url: string, target: string, allowPrivate: boolean) =>
  checkPublicUrl(target, { allowPrivate, httpsOnly: false }).pipe(
    Effect.mapError((refused) => new EgressError({ reason: "forbidden", url, message: refused.message }))
  )

/** One GET to a checked address; the answer's body is left to read. Interruption aborts it. */
const get = (url: string, target: CheckedUrl): Effect.Effect<IncomingMessage, EgressError> =>
  Effect.callback<IncomingMessage, EgressError>((resume, signal) => {
    const lookup = pinnedLookup(target)
    const send = target.url.protocol === "https:" ? httpsRequest : httpRequest
    const req = send(target.url, { method: "GET", lookup, signal }, (res) => resume(Effect.succeed(res)))
    req.on("error", (error) => {
      if (!signal.aborted) resume(Effect.fail(network(url)(error)))
    })
    req.end()
  })

const request = (url: string, target: CheckedUrl, hops: number, allowPrivate: boolean): Effect.Effect<IncomingMessage, EgressError, HostResolver> =>
  Effect.flatMap(get(url, target), (response) => {
    const status = response.statusCode ?? 0
    const location = response.headers["location"]
    if (status < 300 || status > 399 || location === undefined) return Effect.succeed(response)
    response.destroy()
    if (hops >= MAX_REDIRECTS) return Effect.fail(new EgressError({ reason: "network", url, message: "too many redirects" }))
    return Effect.flatMap(guarded(url, new URL(location, target.url).href, allowPrivate), (next) => request(url, next, hops + 1, allowPrivate))
  })

const readCapped = (url: string, body: IncomingMessage, maxBytes: number) =>
  Effect.callback<Uint8Array, EgressError>((resume) => {
    const chunks: Array<Buffer> = []
    let total = 0
    body.on("data", (chunk: Buffer) => {
      total += chunk.byteLength
      if (total > maxBytes) {
        body.destroy()
        resume(Effect.fail(tooLarge(url, maxBytes)))
        return
      }
      chunks.push(chunk)
    })
    body.on("end", () => resume(Effect.succeed(new Uint8Array(Buffer.concat(chunks, total)))))
    body.on("error", (error) => resume(Effect.fail(network(url)(error))))
    // Every exit that is not the end (too large, timeout, interruption) stops the transfer.
    return Effect.sync(() => body.destroy())
  })

const liveFetch = (url: string, options: FetchOptions, allowPrivate: boolean): Effect.Effect<Fetched, EgressError, HostResolver> =>
  Effect.gen(function*() {
    const target = yield* guarded(url, url, allowPrivate)
    const response = yield* request(url, target, 0, allowPrivate)
    const status = response.statusCode ?? 0
    if (status < 200 || status > 299) {
      response.destroy()
      return yield* new EgressError({ reason: "status", url, message: `answered ${status}` })
    }
    const declared = Number(response.headers["content-length"] ?? "")
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.destroy()
      return yield* tooLarge(url, options.maxBytes)
    }
    const bytes = yield* readCapped(url, response, options.maxBytes)
    const type = response.headers["content-type"]
    return type === undefined ? { bytes } : { bytes, content_type: mediaType(type) }
  }).pipe(withTimeout(url, options.timeout), Effect.withSpan("Egress.fetch"))
