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
import { RequestFacts } from "./observe.ts"
import { errorResponse, json } from "./respond.ts"
import { clientIpWith, credentialOf, DEFAULT_BODY_LIMIT, queryObject, readBytes, readJsonBody } from "./request.ts"
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

/**
 * What the carrier already knows of the request: its id, and the facts its log line reads
 * (the direct path passes them; the router's routes read them from the request's context).
 */
export interface Known {
  readonly requestId: string
  readonly facts: { route: string | undefined; organizationId: string | undefined } | undefined
}

/** Runs `op` for a request on `path` (its pattern) with the router's decoded `params`. */
export const answerOperation = (
  op: Operation,
  path: string,
  request: WireRequest,
  params: Readonly<Record<string, string | undefined>>,
  known?: Known
): Effect.Effect<Answer, never, Engine | Settings> => {
  const answer = (scope: Scope.Scope | undefined) =>
    known !== undefined
      ? answerWith(op, path, request, params, scope, known)
      : Effect.flatMap(
        Effect.all([Effect.service(RequestId), Effect.serviceOption(RequestFacts)]),
        ([requestId, facts]) => answerWith(op, path, request, params, scope, { requestId, facts: facts._tag === "Some" ? facts.value : undefined })
      )
  return (reads(op, request.method)
    // The body's reservation of the intake budget lasts until the operation has answered.
    ? Effect.scoped(Effect.flatMap(Scope.Scope, answer))
    // Nothing to read, so no scope: a GET's query is already here.
    : answer(undefined)).pipe(
      Effect.catchIf(isApiError, toErrorAnswer)
    )
}

const toErrorAnswer = (error: ApiError): Effect.Effect<Answer> => Effect.succeed({ _tag: "error", error })

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
  scope: Scope.Scope | undefined,
  known: Known
): Effect.Effect<Answer, ApiError, Engine | Settings> =>
  Effect.flatMap(Effect.service(Engine), (engine): Effect.Effect<Answer, ApiError, Engine | Settings> => {
    const ip = clientIpWith(engine.settings, request)
    const facts = known.facts
    // The request log names the route pattern, and the organization of whoever was admitted.
    if (facts !== undefined) {
      facts.route = path
      facts.organizationId = undefined
    }
    const result = engine.run(op, {
      credential: credentialOf(request, path),
      params,
      headers: headerValues(op, request),
      body: bodyOf(op, request, engine, scope),
      context: {
        clientIp: ip,
        requestId: known.requestId,
        ...(facts !== undefined ? { onAdmit: (organizationId: string) => void (facts.organizationId = organizationId) } : {})
      }
    })
    const output = op.output
    switch (output.kind) {
      case "empty":
        return Effect.as(result, { _tag: "empty", status: output.status ?? 204 } as const)
      case "download":
        return Effect.map(result, (download) => ({ _tag: "download", download: download as Download }) as const)
      case "session":
        return Effect.flatMap(result, (value) => {
          const { body: answer, session } = value as SessionResult<unknown>
          return Effect.map(sessionHeaders(session), (headers) =>
            output.status === 204
              ? { _tag: "empty", status: 204, headers } as const
              : { _tag: "json", status: 200, body: answer, headers } as const)
        })
      case "json":
        return Effect.map(result, (body) => ({ _tag: "json", status: output.statusOf?.(body as never) ?? output.status ?? 200, body }) as const)
      default:
        return Effect.map(result, (body) => ({ _tag: "json", status: 200, body }) as const)
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
