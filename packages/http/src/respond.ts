/**
 * Answers in the spec's shapes: JSON bodies, empty successes, and the error body
 * `{ name, code, message, fix?, errors? }` with the status from core's wire table.
 * 429 answers carry Retry-After.
 */
import { type ApiError, errorBody, internalErrorBody, statusOf } from "@inbox/core"
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
