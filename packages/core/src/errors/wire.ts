/**
 * How an error looks on the wire, for every adapter (REST, the MCP endpoint, the CLI's
 * one-line errors): the body `{ name, code, message, fix?, errors? }` and the status, both
 * read from the error's class (errors.ts).
 */
import { type ApiError, wireOf } from "./errors.ts"

export interface ErrorBody {
  readonly name: string
  readonly code: string
  readonly message: string
  readonly fix?: string
  readonly errors?: ReadonlyArray<unknown>
}

export const statusOf = (error: ApiError): number => wireOf(error).status

export const errorBody = (error: ApiError): ErrorBody => ({
  name: wireOf(error).name,
  code: error.code,
  message: error.message,
  ...(error.fix === undefined ? {} : { fix: error.fix }),
  ...("errors" in error ? { errors: error.errors } : {})
})

/** Seconds to send as Retry-After, for the errors that carry them. */
export const retryAfterOf = (error: ApiError): number | undefined =>
  "retryAfterSeconds" in error ? error.retryAfterSeconds : undefined

export const internalErrorBody: ErrorBody = {
  name: "InternalError",
  code: "internal_error",
  message: "An unexpected error occurred. Quote the x-request-id header when reporting it."
}
