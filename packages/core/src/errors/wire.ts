/**
 * How an error looks on the wire: its HTTP status and the `name` of the error body, in one
 * table for every adapter (REST, the MCP endpoint, the CLI's one-line errors).
 *
 * The body is `{ name, code, message, fix?, errors? }`. A taken username on agent sign-up is
 * the one code whose status differs by route (409 instead of 403); the error says so itself.
 */
import type { ApiError, ErrorCode } from "./errors.ts"

type Name =
  | "ValidationError"
  | "AuthenticationError"
  | "ForbiddenError"
  | "NotFoundError"
  | "PlanLimitError"
  | "UnprocessableError"
  | "ConflictError"
  | "MessageRejectedError"
  | "RateLimitError"
  | "PayloadTooLargeError"
  | "InternalError"
  | "BillingError"
  | "ServiceUnavailableError"
  | "BadGatewayError"

export const WIRE: Readonly<Record<ErrorCode, { readonly status: number; readonly name: Name }>> = {
  bad_request: { status: 400, name: "ValidationError" },
  invalid_webhook_url: { status: 400, name: "ValidationError" },
  validation_error: { status: 400, name: "ValidationError" },
  unauthorized: { status: 401, name: "AuthenticationError" },
  plan_limit_exceeded: { status: 402, name: "PlanLimitError" },
  already_exists: { status: 403, name: "ForbiddenError" },
  email_unverified: { status: 403, name: "ForbiddenError" },
  inbox_paused: { status: 403, name: "ForbiddenError" },
  message_rejected: { status: 403, name: "MessageRejectedError" },
  missing_permission: { status: 403, name: "ForbiddenError" },
  pod_protected: { status: 403, name: "ForbiddenError" },
  recipient_blocked: { status: 403, name: "ForbiddenError" },
  send_locked: { status: 403, name: "ForbiddenError" },
  not_found: { status: 404, name: "NotFoundError" },
  already_subscribed: { status: 409, name: "ConflictError" },
  already_verified: { status: 409, name: "ConflictError" },
  draft_sending: { status: 409, name: "ConflictError" },
  human_replacement_limit: { status: 409, name: "ConflictError" },
  idempotency_key_reuse: { status: 409, name: "ConflictError" },
  no_subscription: { status: 409, name: "ConflictError" },
  not_an_agent_organization: { status: 409, name: "ConflictError" },
  pod_not_empty: { status: 409, name: "ConflictError" },
  payload_too_large: { status: 413, name: "PayloadTooLargeError" },
  domain_not_verified: { status: 422, name: "UnprocessableError" },
  html_required: { status: 422, name: "UnprocessableError" },
  range_too_large: { status: 422, name: "UnprocessableError" },
  recipient_suppressed: { status: 422, name: "UnprocessableError" },
  reserved_username: { status: 422, name: "UnprocessableError" },
  subdomains_not_enabled: { status: 422, name: "UnprocessableError" },
  too_many_recipients: { status: 422, name: "UnprocessableError" },
  tracking_disabled: { status: 422, name: "UnprocessableError" },
  rate_limited: { status: 429, name: "RateLimitError" },
  too_many_attempts: { status: 429, name: "RateLimitError" },
  internal_error: { status: 500, name: "InternalError" },
  billing_provider_error: { status: 502, name: "BillingError" },
  billing_not_configured: { status: 503, name: "BillingError" },
  "2fa_not_set_up": { status: 400, name: "ValidationError" },
  invalid_code: { status: 400, name: "ValidationError" },
  invalid_token: { status: 400, name: "ValidationError" },
  invalid_credentials: { status: 401, name: "AuthenticationError" },
  invalid_totp: { status: 401, name: "AuthenticationError" },
  totp_required: { status: 401, name: "AuthenticationError" },
  csrf_failed: { status: 403, name: "ForbiddenError" },
  email_not_verified: { status: 403, name: "ForbiddenError" },
  forbidden: { status: 403, name: "ForbiddenError" },
  "2fa_already_enabled": { status: 409, name: "ConflictError" },
  already_member: { status: 409, name: "ConflictError" },
  invalid_signature: { status: 400, name: "ValidationError" },
  upstream_error: { status: 502, name: "BadGatewayError" },
  not_configured: { status: 503, name: "ServiceUnavailableError" }
}

export interface ErrorBody {
  readonly name: string
  readonly code: string
  readonly message: string
  readonly fix?: string
  readonly errors?: ReadonlyArray<unknown>
}

export const statusOf = (error: ApiError): number =>
  error._tag === "AlreadyExists" && error.status !== undefined ? error.status : WIRE[error.code].status

export const errorBody = (error: ApiError): ErrorBody => ({
  name: WIRE[error.code].name,
  code: error.code,
  message: error.message,
  ...(error.fix === undefined ? {} : { fix: error.fix }),
  ...("errors" in error ? { errors: error.errors } : {})
})

export const internalErrorBody: ErrorBody = {
  name: "InternalError",
  code: "internal_error",
  message: "An unexpected error occurred. Quote the x-request-id header when reporting it."
}
