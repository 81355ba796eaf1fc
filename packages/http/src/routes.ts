/**
 * REST routes, derived from core's operation catalogue: one route per (operation, path).
 * A handler decodes the wire format (key, body or query, named headers, raw bytes, path
 * parameters), runs the operation, and encodes the answer as the operation's output says:
 * JSON, an empty 204, or a streamed download. Every rule lives in the operation.
 */
import { type ApiError, isApiError, type Operation, operations, runOperation } from "@inbox/core"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RequestId } from "./context.ts"
import { noteRequest } from "./observe.ts"
import { errorResponse, json } from "./respond.ts"
import {
  authenticateAndLimit,
  clientIp,
  DEFAULT_BODY_LIMIT,
  limitRequest,
  queryObject,
  readBytes,
  readJsonBody
} from "./request.ts"

const hasBody = (method: string) => method === "POST" || method === "PATCH"

const headerValues = (op: Operation, request: HttpServerRequest.HttpServerRequest): Record<string, string> => {
  const names = [
    ...Object.keys(op.headers?.fields ?? {}),
    ...(op.access.kind === "operator" ? ["x-inbound-secret", "webhook-id", "webhook-timestamp", "webhook-signature"] : [])
  ]
  const result: Record<string, string> = {}
  for (const name of names) {
    const value = request.headers[name]
    if (value !== undefined) result[name] = value
  }
  return result
}

const handler = (op: Operation, method: string, path: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const route = yield* HttpRouter.RouteContext
    const requestId = yield* RequestId
    const ip = yield* clientIp(request)
    const onV0 = path.startsWith("/v0/")
    yield* noteRequest(path, undefined)
    const principal = op.access.kind === "member"
      ? yield* authenticateAndLimit(request, { allowQueryKey: onV0, allowSession: onV0 })
      : yield* Effect.as(limitRequest(undefined, ip), undefined)
    yield* noteRequest(path, principal?.organizationId)
    const raw = op.raw === undefined ? undefined : yield* readBytes(request, op.raw.maxBytes)
    const input = op.raw !== undefined || !hasBody(method)
      ? queryObject(request, ["api_key"])
      : yield* readJsonBody(request, op.bodyLimit ?? DEFAULT_BODY_LIMIT)
    const result = yield* runOperation(op, {
      principal,
      params: route.params,
      input,
      headers: headerValues(op, request),
      ...(raw === undefined ? {} : { raw }),
      context: { clientIp: ip, requestId }
    })
    switch (op.output.kind) {
      case "empty":
        return HttpServerResponse.empty({ status: op.output.status ?? 204 })
      case "download": {
        const download = result as import("@inbox/core").Download
        return HttpServerResponse.stream(download.body, {
          status: 200,
          contentType: download.contentType,
          ...(download.size === undefined ? {} : { contentLength: download.size }),
          headers: { ...download.headers }
        })
      }
      default:
        return json(200, result)
    }
  }).pipe(
    Effect.catchIf(isApiError, (e: ApiError) => Effect.succeed(errorResponse(e)))
  )

const routeLayers = operations.flatMap((op) =>
  op.routes.map((r) => HttpRouter.add(r.method, r.path as HttpRouter.PathInput, handler(op, r.method, r.path)))
)

export const OperationRoutes = routeLayers.reduce((all, route) => Layer.merge(all, route), Layer.empty as (typeof routeLayers)[number])
