/**
 * The direct path: catalogue operations answered straight from Node's request event, one
 * fiber per request, without Effect's HTTP adapter, router and middleware chain in between.
 * Profiled on `GET /v0/inboxes/:id` (bench/PROFILE.md), those layers cost the request path
 * about as much CPU as all of its own work; the direct path does the same steps once each:
 *
 *   request id → Host check (guard.ts) → answerOperation (routes.ts) → the guard's headers
 *   → the response → metrics and the log line (observe.ts)
 *
 * Routes are matched by the same matcher as Effect's router (FindMyWay, same settings), so
 * a path means the same thing on both. A request the direct path does not take (no
 * operation route matches, a download, OPTIONS, HEAD) goes on to the router app unchanged,
 * which also keeps every operation route: the in-process test app may call either.
 */
import { type ApiError, Engine, errorBody, internalErrorBody, type Operation, operations, type Settings, statusOf, tracedWith } from "@inbox/core"
import { Cause, Clock, Context, Effect } from "effect"
import { FindMyWay, HttpRouter } from "effect/http"
import type { IncomingMessage, ServerResponse } from "node:http"
import { admit, guardHeaders, pathOf } from "./guard.ts"
import { recordRequest, routeLabel } from "./observe.ts"
import { failureAnswer } from "./respond.ts"
import { type Answer, answerOperation } from "./routes.ts"
import { fromNode, type WireRequest } from "./wire.ts"

interface Entry {
  readonly op: Operation
  readonly path: string
}

const matcher = (config: Partial<FindMyWay.RouterConfig>) => {
  const router = FindMyWay.make<Entry>(config)
  for (const op of operations) {
    // Downloads stream their body through the router's response; they stay there.
    if (op.output.kind === "download") continue
    for (const r of op.routes) router.on(r.method, r.path as FindMyWay.PathInput, { op, path: r.path })
  }
  return router
}

/** A finished answer on the wire: status, headers, and a body already encoded. */
export interface WireAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

const JSON_TYPE = "application/json"

const errorAnswer = (error: ApiError): WireAnswer => {
  const retry = "retryAfterSeconds" in error && error.retryAfterSeconds !== undefined ? { "retry-after": String(error.retryAfterSeconds) } : {}
  return { status: statusOf(error), headers: { "content-type": JSON_TYPE, ...retry }, body: JSON.stringify(errorBody(error)) }
}

/** The headers of a JSON answer that adds none of its own (most): one object, never changed. */
const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": JSON_TYPE }

const toWire = (answer: Exclude<Answer, { _tag: "download" }>): WireAnswer => {
  switch (answer._tag) {
    case "json":
      return {
        status: answer.status,
        headers: answer.headers === undefined ? JSON_HEADERS : { "content-type": JSON_TYPE, ...answer.headers },
        body: JSON.stringify(answer.body)
      }
    case "empty":
      return { status: answer.status, headers: { ...answer.headers }, body: undefined }
    case "error":
      return errorAnswer(answer.error)
  }
}

const INTERNAL_ERROR: WireAnswer = { status: 500, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(internalErrorBody) }

/**
 * JSON_HEADERS and each path's guard headers merged once: a plain JSON answer's headers then
 * start as one copy of a single object, where spreading the two was a property store per
 * header (bench/PROFILE.md).
 */
const withJson = new Map<Readonly<Record<string, string>>, Readonly<Record<string, string>>>()
const answerHeaders = (own: Readonly<Record<string, string>>, guard: Readonly<Record<string, string>>): Record<string, string> => {
  if (own !== JSON_HEADERS) return { ...own, ...guard }
  let merged = withJson.get(guard)
  if (merged === undefined) withJson.set(guard, merged = { ...JSON_HEADERS, ...guard })
  return { ...merged }
}

/**
 * Builds the direct path over the engine (the layer's context). `take(request)`
 * answers whether the direct path serves `request`, and `serve` answers it: an effect that
 * never fails, a defect becoming a logged 500 as in the router app (an unreachable database
 * a 503 with Retry-After, db/Availability.ts).
 */
export const makeDirectPath = Effect.gen(function*() {
  const services = yield* Effect.context<Engine | Settings>()
  const router = matcher(yield* HttpRouter.RouterConfig)
  const engine = Context.get(services, Engine)

  const take = (method: string, url: string) => {
    if (method !== "GET" && method !== "POST" && method !== "PATCH" && method !== "DELETE" && method !== "PUT") return undefined
    return router.find(method, url)
  }

  const serve = (request: WireRequest, entry: Entry, params: Readonly<Record<string, string | undefined>>) =>
    Effect.flatMap(engine.requestId, (requestId) =>
      Effect.flatMap(Clock.currentTimeMillis, (started) => {
        const path = pathOf(request.url)
        const facts = { route: undefined as string | undefined, organizationId: undefined as string | undefined }
        // The request's id and facts go to answerOperation as arguments: providing them as
        // services copied the fiber's context twice per request.
        const answered = admit(request, path).pipe(
          Effect.andThen(answerOperation(entry.op, entry.path, request, params, { requestId, facts })),
          Effect.map((a) => toWire(a as Exclude<Answer, { _tag: "download" }>)),
          // admit refuses with an ApiError; answerOperation answers its own.
          Effect.catch((error: ApiError) => Effect.succeed(errorAnswer(error))),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.map(failureAnswer(requestId, cause), (error) => error === undefined ? INTERNAL_ERROR : errorAnswer(error))
          ),
          // The request's root span, named as OpenTelemetry names HTTP server spans; only when traced.
          tracedWith(() => ({
            name: `${request.method} ${entry.path}`,
            kind: "server",
            attributes: { "http.request.method": request.method, "http.route": entry.path, "inbox.request_id": requestId }
          }))
        )
        return Effect.map(answered, (answer) => {
          const headers = answerHeaders(answer.headers, guardHeaders(path))
          headers["x-request-id"] = requestId
          if (answer.body !== undefined) headers["content-length"] = String(Buffer.byteLength(answer.body))
          return {
            answer: { status: answer.status, headers, body: answer.body },
            record: recordRequest(requestId, request.method, routeLabel(facts, path), answer.status, started, facts.organizationId)
          }
        })
      }))

  const runFork = Effect.runForkWith(services)

  /** Node's request listener: true when the direct path took the request. */
  const listener = (request: IncomingMessage, response: ServerResponse): boolean => {
    const found = take(request.method ?? "", request.url ?? "/")
    if (found === undefined) return false
    const fiber = runFork(Effect.flatMap(serve(fromNode(request), found.handler, found.params), ({ answer, record }) => {
      write(response, answer, request.complete)
      return record
    }))
    if (fiber.pollUnsafe() === undefined) {
      response.once("close", () => {
        if (!response.writableEnded) fiber.interruptUnsafe()
      })
    }
    return true
  }

  /** The same path for a web Request (the in-process test app); undefined when it does not take it. */
  const answerWeb = (request: WireRequest): Promise<WireAnswer> | undefined => {
    const found = take(request.method, request.url)
    if (found === undefined) return undefined
    return Effect.runPromiseWith(services)(
      Effect.flatMap(serve(request, found.handler, found.params), ({ answer, record }) => Effect.as(record, answer))
    )
  }

  /** Whether the direct path serves `method` on `url` (the rest goes to the router app). */
  const takes = (method: string, url: string) => take(method, url) !== undefined

  return { listener, answerWeb, takes }
})

/**
 * Writes the answer. A body left unread (refused before or while it was read: too large, no
 * credential, the intake budget full) closes the connection after the answer, rather than
 * reading and discarding the rest to keep it alive.
 */
const write = (response: ServerResponse, answer: WireAnswer, bodyRead: boolean) => {
  if (response.destroyed) return
  response.writeHead(answer.status, bodyRead ? answer.headers : { ...answer.headers, connection: "close" })
  if (answer.body === undefined) response.end()
  else response.end(answer.body)
}

export type DirectPath = Effect.Success<typeof makeDirectPath>
