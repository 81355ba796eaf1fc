/**
 * Answers in the spec's shapes: JSON bodies, empty successes, and the error body
 * `{ name, code, message, fix?, errors? }` with the status from core's wire table.
 * 429 answers carry Retry-After.
 */
import { type ApiError, Engine, errorBody, internalErrorBody, statusOf } from "@inbox/core"
import { Cause, Effect } from "effect"
import { HttpServerResponse } from "effect/http"

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

export const errorResponse = (error: ApiError, headers: Record<string, string> = {}) => {
  const retry = "retryAfterSeconds" in error && error.retryAfterSeconds !== undefined
    ? { "retry-after": String(error.retryAfterSeconds) }
    : {}
  return json(statusOf(error), errorBody(error), { ...headers, ...retry })
}

export const internalError = () => json(500, internalErrorBody)

/**
 * What a request that failed (not interrupted) answers, whichever carrier carried it (the
 * direct path or the router): an unreachable database is its 503 service_unavailable (noted
 * once by the engine, not per request); any other failure is logged with the request's id
 * and answered as a 500 that shows the client nothing internal (`undefined`).
 */
export const failureAnswer = (requestId: string, cause: Cause.Cause<unknown>): Effect.Effect<ApiError | undefined, never, Engine> =>
  Effect.flatMap(Engine.use((engine) => engine.unavailable(cause)), (unavailable) =>
    unavailable !== undefined
      ? Effect.succeed<ApiError | undefined>(unavailable)
      : Effect.as(Effect.logError("request failed", { requestId, cause: Cause.pretty(cause) }), undefined))
