/**
 * The HTTP application: operation routes, /health, /openapi.json, /mcp, and one global
 * middleware that gives every response an `x-request-id` (errors and 404s too), answers
 * unknown routes with 404 not_found (400 bad_request when the URL cannot be decoded), and
 * turns any defect into a logged 500 internal_error that shows the client nothing internal
 * (an unreachable database into 503 service_unavailable with Retry-After, unlogged: the
 * outage has its own two lines, db/Availability.ts).
 * Inside it, `guard` admits the request by its Host and Origin and adds the CORS and
 * caching headers (guard.ts).
 */
import { BadRequest, Engine, NotFound } from "@inbox/core"
import { Cause, Effect, Layer } from "effect"
import { HttpRouter, HttpServerError, HttpServerResponse } from "effect/http"
import { RequestId } from "./context.ts"
import { guard } from "./guard.ts"
import { DashboardRoutes } from "./dashboard.ts"
import { McpRoutes } from "./mcp.ts"
import { observe, ObserveRoutes } from "./observe.ts"
import { openApiDocument } from "./openapi.ts"
import { errorResponse, failureAnswer, internalError, json } from "./respond.ts"
import { OperationRoutes } from "./routes.ts"
import { WebSocketRoute } from "./websocket.ts"

const Health = HttpRouter.add("GET", "/health", Effect.succeed(json(200, { status: "ok" })))

const OpenApi = HttpRouter.add("GET", "/openapi.json", Effect.succeed(json(200, openApiDocument)))

const isRouteNotFound = (u: unknown): u is HttpServerError.HttpServerError & { reason: HttpServerError.RouteNotFound } =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RouteNotFound"

const isMalformed = (url: string): boolean => {
  try {
    decodeURIComponent(url.split("?")[0] ?? "")
    return false
  } catch {
    return true
  }
}

const RequestIds = HttpRouter.middleware((app) =>
  Effect.gen(function*() {
    const requestId = yield* (yield* Engine).requestId
    const response = yield* app.pipe(
      Effect.catchCause((cause) => {
        const failure = Cause.findErrorOption(cause)
        if (failure._tag === "Some" && isRouteNotFound(failure.value)) {
          // The router cannot match a path it cannot decode: that is a malformed URL, not a missing route.
          return Effect.succeed(errorResponse(
            isMalformed(failure.value.reason.request.url)
              ? new BadRequest({ message: "The URL is not validly percent-encoded." })
              : new NotFound({ message: "No such route.", fix: "Check the method and path." })
          ))
        }
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
        return Effect.map(failureAnswer(requestId, cause), (error) => error === undefined ? internalError() : errorResponse(error))
      }),
      guard,
      Effect.provideService(RequestId, requestId),
      observe(requestId)
    )
    return HttpServerResponse.setHeader(response, "x-request-id", requestId)
  }), { global: true })

export const AppRoutes = Layer.mergeAll(
  OperationRoutes,
  WebSocketRoute,
  McpRoutes,
  Health,
  OpenApi,
  DashboardRoutes,
  RequestIds,
  ObserveRoutes
)
