/**
 * What every request meets before its route, and what every response carries after it:
 *
 * - Host: a request that names another site is refused with 400 bad_request (core's
 *   checkHost), on every route but GET /health and /ready, whose answers say nothing and
 *   which load balancers probe by address, and /metrics, which Prometheus scrapes by address
 *   and which asks for its own token;
 * - Origin on /mcp: a browser page on another origin is refused with 403 forbidden (core's
 *   checkSameOrigin), since /mcp has no CORS;
 * - CORS on /v0 and /public: any origin may call them, without credentials. An API key is a
 *   bearer secret the page must already hold, so CORS protects nothing there, and
 *   `Access-Control-Allow-Origin: *` never lets a browser send or read the dashboard's
 *   session cookie across origins. `OPTIONS` on those paths answers the preflight with 204;
 * - `Cache-Control: no-store` on /v0 (a created key's secret must never be cached) and
 *   `X-Content-Type-Options: nosniff` everywhere.
 */
import { checkHost, checkSameOrigin } from "@inbox/core"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse } from "./respond.ts"

const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "x-request-id, retry-after"
}

const PREFLIGHT_HEADERS = {
  ...CORS_HEADERS,
  "access-control-allow-methods": "GET, POST, PATCH, DELETE",
  "access-control-allow-headers": "authorization, content-type, idempotency-key",
  "access-control-max-age": "600"
}

const pathOf = (url: string): string => url.split(/[?#]/, 1)[0] ?? ""

const withCors = (path: string) => path.startsWith("/v0/") || path === "/v0" || path.startsWith("/public/")

/** The names the request addresses: its Host header, and the authority of an absolute-form target. */
const hostsOf = (request: HttpServerRequest.HttpServerRequest): ReadonlyArray<string> => {
  const authority = /^[a-z][a-z0-9+.-]*:\/\//i.test(request.originalUrl) ? URL.parse(request.originalUrl)?.host : undefined
  return [request.headers["host"], authority].filter((h): h is string => h !== undefined && h !== "")
}

const admit = (request: HttpServerRequest.HttpServerRequest, path: string) =>
  Effect.gen(function*() {
    if (path === "/health" || path === "/ready" || path === "/metrics") return
    const hosts = hostsOf(request)
    if (hosts.length === 0) yield* checkHost(undefined)
    for (const host of hosts) yield* checkHost(host)
    if (path === "/mcp") yield* checkSameOrigin(request.headers["origin"], hosts[0])
  })

const decorate = (response: HttpServerResponse.HttpServerResponse, path: string) =>
  HttpServerResponse.setHeaders(response, {
    "x-content-type-options": "nosniff",
    ...(path.startsWith("/v0/") || path === "/v0" ? { "cache-control": "no-store" } : {}),
    ...(withCors(path) ? CORS_HEADERS : {})
  })

/** Runs `app` for an admitted request and gives its answer the headers above. */
export const guard = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = pathOf(request.url)
    const refused = yield* admit(request, path).pipe(
      Effect.match({ onFailure: (e) => errorResponse(e, path === "/mcp" ? { "cache-control": "no-store" } : {}), onSuccess: () => undefined })
    )
    if (refused !== undefined) return decorate(refused, path)
    if (request.method === "OPTIONS" && withCors(path)) {
      return decorate(HttpServerResponse.empty({ status: 204, headers: PREFLIGHT_HEADERS }), path)
    }
    return decorate(yield* app, path)
  })
