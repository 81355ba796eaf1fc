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
 *   /auth (a session's CSRF token, a two-step secret), and
 *   `X-Content-Type-Options: nosniff` everywhere.
 */
import { type ApiError, checkHost, checkSameOrigin, type Settings } from "@inbox/core"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse } from "./respond.ts"
import type { WireRequest } from "./wire.ts"

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

export const pathOf = (url: string): string => url.split(/[?#]/, 1)[0] ?? ""

const withCors = (path: string) => path.startsWith("/v0/") || path === "/v0" || path.startsWith("/public/")

/** The names the request addresses: its Host header, and the authority of an absolute-form target. */
const hostsOf = (request: WireRequest): ReadonlyArray<string> => {
  const authority = /^[a-z][a-z0-9+.-]*:\/\//i.test(request.originalUrl) ? URL.parse(request.originalUrl)?.host : undefined
  return [request.headers["host"], authority].filter((h): h is string => h !== undefined && h !== "")
}

/**
 * Refuses a request that names another site (Host), or a cross-origin page on /mcp. Every
 * request passes here, so a request with the usual one Host header takes one check and no
 * generator.
 */
export const admit = (request: WireRequest, path: string): Effect.Effect<void, ApiError, Settings> => {
  if (path === "/health" || path === "/ready" || path === "/metrics") return Effect.void
  const hosts = hostsOf(request)
  const checked = hosts.length <= 1 ? checkHost(hosts[0]) : Effect.forEach(hosts, checkHost, { discard: true })
  return path === "/mcp" ? Effect.andThen(checked, checkSameOrigin(request.headers["origin"], hosts[0])) : checked
}

const OTHER_HEADERS = { "x-content-type-options": "nosniff" }
const V0_HEADERS = { ...OTHER_HEADERS, "cache-control": "no-store", ...CORS_HEADERS }
const PUBLIC_HEADERS = { ...OTHER_HEADERS, ...CORS_HEADERS }
const AUTH_HEADERS = { ...OTHER_HEADERS, "cache-control": "no-store" }

/** The headers every answer on `path` carries (made once, not per request). */
export const guardHeaders = (path: string): Readonly<Record<string, string>> =>
  path.startsWith("/v0/") || path === "/v0"
    ? V0_HEADERS
    : withCors(path)
    ? PUBLIC_HEADERS
    : path.startsWith("/auth/")
    ? AUTH_HEADERS
    : OTHER_HEADERS

/** The answer to a refused request (`admit`), before its guard headers. */
export const refusal = (error: ApiError, path: string) => errorResponse(error, path === "/mcp" ? { "cache-control": "no-store" } : {})

/** Runs `app` for an admitted request and gives its answer the headers above. */
export const guard = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = pathOf(request.url)
    const refused = yield* admit(request, path).pipe(
      Effect.match({ onFailure: (e) => refusal(e, path), onSuccess: () => undefined })
    )
    const headers = guardHeaders(path)
    if (refused !== undefined) return HttpServerResponse.setHeaders(refused, headers)
    if (request.method === "OPTIONS" && withCors(path)) {
      return HttpServerResponse.setHeaders(HttpServerResponse.empty({ status: 204, headers: PREFLIGHT_HEADERS }), headers)
    }
    return HttpServerResponse.setHeaders(yield* app, headers)
  })
