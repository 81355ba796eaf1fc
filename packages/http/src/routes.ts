/**
 * REST routes, derived from core's operation catalogue: one route per (operation, path).
 * A handler decodes the wire format (key, body or query, path parameters), runs the
 * operation, and encodes the answer; every rule lives in the operation.
 */
import { type ApiError, isApiError, type Operation, operations, runOperation } from "@inbox/core"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RequestId } from "./context.ts"
import { errorResponse, json } from "./respond.ts"
import { authenticateAndLimit, clientIp, DEFAULT_BODY_LIMIT, limitRequest, queryObject, readJsonBody } from "./request.ts"

const hasBody = (method: string) => method === "POST" || method === "PATCH"

const handler = (op: Operation, method: string, path: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const route = yield* HttpRouter.RouteContext
    const requestId = yield* RequestId
    const ip = clientIp(request)
    const onV0 = path.startsWith("/v0/")
    const principal = op.auth === "key"
      ? yield* authenticateAndLimit(request, { allowQueryKey: onV0 })
      : yield* Effect.as(limitRequest(undefined, ip), undefined)
    const input = hasBody(method)
      ? yield* readJsonBody(request, op.bodyLimit ?? DEFAULT_BODY_LIMIT)
      : queryObject(request, ["api_key"])
    // The router has already percent-decoded the parameters.
    const params: Record<string, string> = {}
    for (const [k, v] of Object.entries(route.params)) if (v !== undefined) params[k] = v
    const result = yield* runOperation(op, { principal, params, input, context: { clientIp: ip, requestId } })
    return op.status === 204 || result === undefined ? HttpServerResponse.empty({ status: 204 }) : json(200, result)
  }).pipe(
    Effect.catchIf(isApiError, (e: ApiError) => Effect.succeed(errorResponse(e)))
  )

const routeLayers = operations.flatMap((op) =>
  op.routes.map((r) => HttpRouter.add(r.method, r.path as HttpRouter.PathInput, handler(op, r.method, r.path)))
)

export const OperationRoutes = routeLayers.reduce((all, route) => Layer.merge(all, route), Layer.empty as (typeof routeLayers)[number])
