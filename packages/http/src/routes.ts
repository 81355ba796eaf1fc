/**
 * REST routes, derived from core's operation catalogue: one route per (operation, path).
 * `answerOperation` decodes the wire format (the credential: key, session cookie or none;
 * body or query, named headers, raw bytes, path parameters), runs the operation, and says
 * how to answer as the operation's output says: JSON, an empty 204, a streamed download,
 * or JSON with the session cookie set or cleared (/auth). Every rule lives in the operation.
 *
 * It is written against a WireRequest, so the direct path (direct.ts, Node's own server for
 * everything but downloads) and these router routes (downloads, and the in-process app when
 * a request does not take the direct path) run the same code.
 */
import {
  type ApiError,
  type Download,
  Engine,
  isApiError,
  type NewSession,
  type Operation,
  operations,
  PayloadTooLarge,
  type SessionResult,
  type Settings
} from "@inbox/core"
import { Clock, Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RequestId } from "./context.ts"
import { noteRequest, RequestFacts } from "./observe.ts"
import { errorResponse, json } from "./respond.ts"
import { clientIp, credentialOf, DEFAULT_BODY_LIMIT, queryObject, readBytes, readJsonBody } from "./request.ts"
import { clearedCookie, sessionCookie } from "./session.ts"
import type { WireRequest } from "./wire.ts"

const hasBody = (method: string) => method === "POST" || method === "PATCH"

/** Whether answering `op` reads a body from the request (raw bytes, or JSON). */
const reads = (op: Operation, method: string) => op.raw !== undefined || hasBody(method)

const OPERATOR_HEADERS = ["x-inbound-secret", "webhook-id", "webhook-timestamp", "webhook-signature"]

const headerValues = (op: Operation, request: WireRequest): Record<string, string> => {
  const result: Record<string, string> = {}
  const pick = (name: string) => {
    const value = request.headers[name]
    if (value !== undefined) result[name] = value
  }
  for (const name in op.headers?.fields ?? {}) pick(name)
  if (op.access.kind === "operator") OPERATOR_HEADERS.forEach(pick)
  return result
}

/** How to answer an operation call: the carrier (router or direct path) writes it. */
export type Answer =
  | { readonly _tag: "json"; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "empty"; readonly status: number; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "download"; readonly download: Download }
  | { readonly _tag: "error"; readonly error: ApiError }

/** The cookie that carries a session output: the new session, or its end. */
const sessionHeaders = (session: NewSession | "end" | undefined) =>
  session === undefined
    ? Effect.succeed<Record<string, string>>({})
    : Effect.map(session === "end" ? clearedCookie : Effect.flatMap(Clock.currentTimeMillis, (now) => sessionCookie(session, now)), (cookie) => ({ "set-cookie": cookie }))

/** Runs `op` for a request on `path` (its pattern) with the router's decoded `params`. */
export const answerOperation = (
  op: Operation,
  path: string,
  request: WireRequest,
  params: Readonly<Record<string, string | undefined>>
): Effect.Effect<Answer, never, Engine | Settings> =>
  (reads(op, request.method)
    // The body's reservation of the intake budget lasts until the operation has answered.
    ? Effect.scoped(Effect.flatMap(Scope.Scope, (scope) => answerWith(op, path, request, params, scope)))
    // Nothing to read, so no scope: a GET's query is already here.
    : answerWith(op, path, request, params, undefined)).pipe(
      Effect.catchIf(isApiError, (error: ApiError) => Effect.succeed({ _tag: "error", error } as const))
    )

/**
 * The body as the operation reads it, only once the operation has admitted the caller
 * (runOperation); a raw message over its route's limit is 413, as the operator's forwarder
 * expects. The reader holds a reservation of the intake budget in the request's `scope`.
 */
const bodyOf = (op: Operation, request: WireRequest, engine: Engine["Service"], scope: Scope.Scope | undefined) => {
  if (scope === undefined) return Effect.succeed({ input: queryObject(request, ["api_key"]) })
  const raw = op.raw
  const read = raw !== undefined
    ? Effect.map(
      readBytes(request, raw.maxBytes, () => new PayloadTooLarge({ message: `The message is larger than ${raw.maxBytes} bytes.` })),
      (bytes) => ({ input: queryObject(request, ["api_key"]), raw: bytes })
    )
    : Effect.map(readJsonBody(request, op.bodyLimit ?? DEFAULT_BODY_LIMIT), (input) => ({ input }))
  return read.pipe(Effect.provideService(Engine, engine), Effect.provideService(Scope.Scope, scope))
}

const answerWith = (
  op: Operation,
  path: string,
  request: WireRequest,
  params: Readonly<Record<string, string | undefined>>,
  scope: Scope.Scope | undefined
) =>
  Effect.gen(function*() {
    const requestId = yield* RequestId
    const ip = yield* clientIp(request)
    yield* noteRequest(path, undefined)
    const engine = yield* Engine
    const facts = yield* Effect.serviceOption(RequestFacts)
    const result = yield* engine.run(op, {
      credential: credentialOf(request, path),
      params,
      headers: headerValues(op, request),
      body: bodyOf(op, request, engine, scope),
      context: {
        clientIp: ip,
        requestId,
        // The request log names the organization of whoever was admitted.
        ...(facts._tag === "Some" ? { onAdmit: (organizationId: string) => void (facts.value.organizationId = organizationId) } : {})
      }
    })
    switch (op.output.kind) {
      case "empty":
        return { _tag: "empty", status: op.output.status ?? 204 } as const
      case "download":
        return { _tag: "download", download: result as Download } as const
      case "session": {
        const { body: answer, session } = result as SessionResult<unknown>
        const headers = yield* sessionHeaders(session)
        return op.output.status === 204
          ? { _tag: "empty", status: 204, headers } as const
          : { _tag: "json", status: 200, body: answer, headers } as const
      }
      case "json":
        return { _tag: "json", status: op.output.statusOf?.(result as never) ?? op.output.status ?? 200, body: result } as const
      default:
        return { _tag: "json", status: 200, body: result } as const
    }
  })

/** The router's response for an answer. */
export const answerResponse = (answer: Answer): HttpServerResponse.HttpServerResponse => {
  switch (answer._tag) {
    case "json":
      return json(answer.status, answer.body, { ...answer.headers })
    case "empty":
      return HttpServerResponse.empty({ status: answer.status, headers: { ...answer.headers } })
    case "error":
      return errorResponse(answer.error)
    case "download": {
      const download = answer.download
      return HttpServerResponse.stream(download.body, {
        status: 200,
        contentType: download.contentType,
        ...(download.size === undefined ? {} : { contentLength: download.size }),
        headers: { ...download.headers }
      })
    }
  }
}

const handler = (op: Operation, path: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const route = yield* HttpRouter.RouteContext
    return answerResponse(yield* answerOperation(op, path, request, route.params))
  })

const routeLayers = operations.flatMap((op) =>
  op.routes.map((r) => HttpRouter.add(r.method, r.path as HttpRouter.PathInput, handler(op, r.path)))
)

export const OperationRoutes = routeLayers.reduce((all, route) => Layer.merge(all, route), Layer.empty as (typeof routeLayers)[number])
