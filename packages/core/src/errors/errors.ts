/**
 * Every error of the spec, once. Each class carries its code, HTTP status and the `name` of
 * the error body (`static wire`); `API_ERRORS` lists the classes, and the union `ApiError`,
 * the runtime guard `isApiError` and the wire table are derived from that one list. An
 * error class missing from the list is not an ApiError, so no operation can fail with it:
 * the type checker refuses it instead of the server answering 500.
 *
 * The body every adapter shows is `{ name, code, message, fix?, errors? }`. Three errors
 * carry structured detail: ValidationError (`errors[]` of `{ path, message }`),
 * PlanLimitExceeded (`errors[0]` of the limit), and RateLimited / TooManyAttempts /
 * ServiceUnavailable (`retryAfterSeconds`, sent as `Retry-After`).
 */
import { Schema } from "effect"

export type WireName =
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
  | "RequestTimeoutError"

const wire = <const Code extends string>(code: Code, status: number, name: WireName) => ({ code, status, name })

const Common = { message: Schema.String, fix: Schema.optionalKey(Schema.String) }

export const FieldIssue = Schema.Struct({ path: Schema.Array(Schema.String), message: Schema.String })
export type FieldIssue = typeof FieldIssue.Type

export const PlanLimit = Schema.Struct({
  limit: Schema.String,
  current: Schema.Number,
  max: Schema.Number,
  plan: Schema.String,
  upgrade_to: Schema.optionalKey(Schema.String)
})
export type PlanLimit = typeof PlanLimit.Type

/** malformed request that is not a schema failure */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", Common) {
  static readonly wire = wire("bad_request", 400, "ValidationError")
  readonly code = BadRequest.wire.code
}

/** URL is not public https, or resolves to a private address */
export class InvalidWebhookUrl extends Schema.TaggedError<InvalidWebhookUrl>()("InvalidWebhookUrl", Common) {
  static readonly wire = wire("invalid_webhook_url", 400, "ValidationError")
  readonly code = InvalidWebhookUrl.wire.code
}

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", { ...Common, errors: Schema.Array(FieldIssue) }) {
  static readonly wire = wire("validation_error", 400, "ValidationError")
  readonly code = ValidationError.wire.code
}

/** no, unknown or revoked key; invalid provider signature */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", Common) {
  static readonly wire = wire("unauthorized", 401, "AuthenticationError")
  readonly code = Unauthorized.wire.code
}

export class PlanLimitExceeded extends Schema.TaggedError<PlanLimitExceeded>()("PlanLimitExceeded", { ...Common, errors: Schema.Array(PlanLimit) }) {
  static readonly wire = wire("plan_limit_exceeded", 402, "PlanLimitError")
  readonly code = PlanLimitExceeded.wire.code
}

/** inbox address, list entry or domain exists; agent sign-up answers a taken username with status 409 */
export class AlreadyExists extends Schema.TaggedError<AlreadyExists>()("AlreadyExists", Common) {
  static readonly wire = wire("already_exists", 403, "ForbiddenError")
  readonly code = AlreadyExists.wire.code
}

/** agent sign-up's taken username: the spec answers it 409, unlike every other already_exists */
export class UsernameTaken extends Schema.TaggedError<UsernameTaken>()("UsernameTaken", Common) {
  static readonly wire = wire("already_exists", 409, "ConflictError")
  readonly code = UsernameTaken.wire.code
}

/** owner email unverified */
export class EmailUnverified extends Schema.TaggedError<EmailUnverified>()("EmailUnverified", Common) {
  static readonly wire = wire("email_unverified", 403, "ForbiddenError")
  readonly code = EmailUnverified.wire.code
}

/** inbox is paused */
export class InboxPaused extends Schema.TaggedError<InboxPaused>()("InboxPaused", Common) {
  static readonly wire = wire("inbox_paused", 403, "ForbiddenError")
  readonly code = InboxPaused.wire.code
}

/** mail provider refused the message */
export class MessageRejected extends Schema.TaggedError<MessageRejected>()("MessageRejected", Common) {
  static readonly wire = wire("message_rejected", 403, "MessageRejectedError")
  readonly code = MessageRejected.wire.code
}

/** key lacks the required permission, or its scope never allows the action */
export class MissingPermission extends Schema.TaggedError<MissingPermission>()("MissingPermission", Common) {
  static readonly wire = wire("missing_permission", 403, "ForbiddenError")
  readonly code = MissingPermission.wire.code
}

/** deleting the default pod */
export class PodProtected extends Schema.TaggedError<PodProtected>()("PodProtected", Common) {
  static readonly wire = wire("pod_protected", 403, "ForbiddenError")
  readonly code = PodProtected.wire.code
}

/** a send list refused a recipient */
export class RecipientBlocked extends Schema.TaggedError<RecipientBlocked>()("RecipientBlocked", Common) {
  static readonly wire = wire("recipient_blocked", 403, "ForbiddenError")
  readonly code = RecipientBlocked.wire.code
}

/** agent account without a verified human */
export class SendLocked extends Schema.TaggedError<SendLocked>()("SendLocked", Common) {
  static readonly wire = wire("send_locked", 403, "ForbiddenError")
  readonly code = SendLocked.wire.code
}

/** no such resource, outside key scope, or unknown route */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", Common) {
  static readonly wire = wire("not_found", 404, "NotFoundError")
  readonly code = NotFound.wire.code
}

export class AlreadySubscribed extends Schema.TaggedError<AlreadySubscribed>()("AlreadySubscribed", Common) {
  static readonly wire = wire("already_subscribed", 409, "ConflictError")
  readonly code = AlreadySubscribed.wire.code
}

export class AlreadyVerified extends Schema.TaggedError<AlreadyVerified>()("AlreadyVerified", Common) {
  static readonly wire = wire("already_verified", 409, "ConflictError")
  readonly code = AlreadyVerified.wire.code
}

export class DraftSending extends Schema.TaggedError<DraftSending>()("DraftSending", Common) {
  static readonly wire = wire("draft_sending", 409, "ConflictError")
  readonly code = DraftSending.wire.code
}

export class HumanReplacementLimit extends Schema.TaggedError<HumanReplacementLimit>()("HumanReplacementLimit", Common) {
  static readonly wire = wire("human_replacement_limit", 409, "ConflictError")
  readonly code = HumanReplacementLimit.wire.code
}

export class IdempotencyKeyReuse extends Schema.TaggedError<IdempotencyKeyReuse>()("IdempotencyKeyReuse", Common) {
  static readonly wire = wire("idempotency_key_reuse", 409, "ConflictError")
  readonly code = IdempotencyKeyReuse.wire.code
}

export class NoSubscription extends Schema.TaggedError<NoSubscription>()("NoSubscription", Common) {
  static readonly wire = wire("no_subscription", 409, "ConflictError")
  readonly code = NoSubscription.wire.code
}

export class NotAnAgentOrganization extends Schema.TaggedError<NotAnAgentOrganization>()("NotAnAgentOrganization", Common) {
  static readonly wire = wire("not_an_agent_organization", 409, "ConflictError")
  readonly code = NotAnAgentOrganization.wire.code
}

export class PodNotEmpty extends Schema.TaggedError<PodNotEmpty>()("PodNotEmpty", Common) {
  static readonly wire = wire("pod_not_empty", 409, "ConflictError")
  readonly code = PodNotEmpty.wire.code
}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", Common) {
  static readonly wire = wire("payload_too_large", 413, "PayloadTooLargeError")
  readonly code = PayloadTooLarge.wire.code
}

export class DomainNotVerified extends Schema.TaggedError<DomainNotVerified>()("DomainNotVerified", Common) {
  static readonly wire = wire("domain_not_verified", 422, "UnprocessableError")
  readonly code = DomainNotVerified.wire.code
}

export class HtmlRequired extends Schema.TaggedError<HtmlRequired>()("HtmlRequired", Common) {
  static readonly wire = wire("html_required", 422, "UnprocessableError")
  readonly code = HtmlRequired.wire.code
}

export class RangeTooLarge extends Schema.TaggedError<RangeTooLarge>()("RangeTooLarge", Common) {
  static readonly wire = wire("range_too_large", 422, "UnprocessableError")
  readonly code = RangeTooLarge.wire.code
}

export class RecipientSuppressed extends Schema.TaggedError<RecipientSuppressed>()("RecipientSuppressed", Common) {
  static readonly wire = wire("recipient_suppressed", 422, "UnprocessableError")
  readonly code = RecipientSuppressed.wire.code
}

export class ReservedUsername extends Schema.TaggedError<ReservedUsername>()("ReservedUsername", Common) {
  static readonly wire = wire("reserved_username", 422, "UnprocessableError")
  readonly code = ReservedUsername.wire.code
}

export class SubdomainsNotEnabled extends Schema.TaggedError<SubdomainsNotEnabled>()("SubdomainsNotEnabled", Common) {
  static readonly wire = wire("subdomains_not_enabled", 422, "UnprocessableError")
  readonly code = SubdomainsNotEnabled.wire.code
}

export class TooManyRecipients extends Schema.TaggedError<TooManyRecipients>()("TooManyRecipients", Common) {
  static readonly wire = wire("too_many_recipients", 422, "UnprocessableError")
  readonly code = TooManyRecipients.wire.code
}

export class TrackingDisabled extends Schema.TaggedError<TrackingDisabled>()("TrackingDisabled", Common) {
  static readonly wire = wire("tracking_disabled", 422, "UnprocessableError")
  readonly code = TrackingDisabled.wire.code
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { ...Common, retryAfterSeconds: Schema.Number }) {
  static readonly wire = wire("rate_limited", 429, "RateLimitError")
  readonly code = RateLimited.wire.code
}

export class TooManyAttempts extends Schema.TaggedError<TooManyAttempts>()("TooManyAttempts", { ...Common, retryAfterSeconds: Schema.Number }) {
  static readonly wire = wire("too_many_attempts", 429, "RateLimitError")
  readonly code = TooManyAttempts.wire.code
}

/** the request (headers, or headers and body) did not arrive within the server's time (INBOX_REQUEST_TIMEOUT) */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", Common) {
  static readonly wire = wire("request_timeout", 408, "RequestTimeoutError")
  readonly code = RequestTimeout.wire.code
}

/** the request's header section is larger than the server accepts */
export class HeadersTooLarge extends Schema.TaggedError<HeadersTooLarge>()("HeadersTooLarge", Common) {
  static readonly wire = wire("headers_too_large", 431, "ValidationError")
  readonly code = HeadersTooLarge.wire.code
}

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", Common) {
  static readonly wire = wire("internal_error", 500, "InternalError")
  readonly code = InternalError.wire.code
}

export class BillingProviderError extends Schema.TaggedError<BillingProviderError>()("BillingProviderError", Common) {
  static readonly wire = wire("billing_provider_error", 502, "BillingError")
  readonly code = BillingProviderError.wire.code
}

export class BillingNotConfigured extends Schema.TaggedError<BillingNotConfigured>()("BillingNotConfigured", Common) {
  static readonly wire = wire("billing_not_configured", 503, "BillingError")
  readonly code = BillingNotConfigured.wire.code
}

export class TwoFactorNotSetUp extends Schema.TaggedError<TwoFactorNotSetUp>()("TwoFactorNotSetUp", Common) {
  static readonly wire = wire("2fa_not_set_up", 400, "ValidationError")
  readonly code = TwoFactorNotSetUp.wire.code
}

export class InvalidCode extends Schema.TaggedError<InvalidCode>()("InvalidCode", Common) {
  static readonly wire = wire("invalid_code", 400, "ValidationError")
  readonly code = InvalidCode.wire.code
}

export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", Common) {
  static readonly wire = wire("invalid_token", 400, "ValidationError")
  readonly code = InvalidToken.wire.code
}

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", Common) {
  static readonly wire = wire("invalid_credentials", 401, "AuthenticationError")
  readonly code = InvalidCredentials.wire.code
}

export class InvalidTotp extends Schema.TaggedError<InvalidTotp>()("InvalidTotp", Common) {
  static readonly wire = wire("invalid_totp", 401, "AuthenticationError")
  readonly code = InvalidTotp.wire.code
}

export class TotpRequired extends Schema.TaggedError<TotpRequired>()("TotpRequired", Common) {
  static readonly wire = wire("totp_required", 401, "AuthenticationError")
  readonly code = TotpRequired.wire.code
}

export class CsrfFailed extends Schema.TaggedError<CsrfFailed>()("CsrfFailed", Common) {
  static readonly wire = wire("csrf_failed", 403, "ForbiddenError")
  readonly code = CsrfFailed.wire.code
}

export class EmailNotVerified extends Schema.TaggedError<EmailNotVerified>()("EmailNotVerified", Common) {
  static readonly wire = wire("email_not_verified", 403, "ForbiddenError")
  readonly code = EmailNotVerified.wire.code
}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", Common) {
  static readonly wire = wire("forbidden", 403, "ForbiddenError")
  readonly code = Forbidden.wire.code
}

export class TwoFactorAlreadyEnabled extends Schema.TaggedError<TwoFactorAlreadyEnabled>()("TwoFactorAlreadyEnabled", Common) {
  static readonly wire = wire("2fa_already_enabled", 409, "ConflictError")
  readonly code = TwoFactorAlreadyEnabled.wire.code
}

export class AlreadyMember extends Schema.TaggedError<AlreadyMember>()("AlreadyMember", Common) {
  static readonly wire = wire("already_member", 409, "ConflictError")
  readonly code = AlreadyMember.wire.code
}

/** the organization's only owner cannot be demoted or removed: it would be left with nobody to invite or manage members */
export class LastOwner extends Schema.TaggedError<LastOwner>()("LastOwner", Common) {
  static readonly wire = wire("last_owner", 409, "ConflictError")
  readonly code = LastOwner.wire.code
}

export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", Common) {
  static readonly wire = wire("invalid_signature", 400, "ValidationError")
  readonly code = InvalidSignature.wire.code
}

export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", Common) {
  static readonly wire = wire("upstream_error", 502, "BadGatewayError")
  readonly code = UpstreamError.wire.code
}

export class NotConfigured extends Schema.TaggedError<NotConfigured>()("NotConfigured", Common) {
  static readonly wire = wire("not_configured", 503, "ServiceUnavailableError")
  readonly code = NotConfigured.wire.code
}

/**
 * The server cannot take the request now but will soon (too many request bodies in memory
 * at once, its database unreachable, or it is shutting down); the client retries after
 * `retryAfterSeconds`. The spec names no code for this: docs/api.md.
 */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", { ...Common, retryAfterSeconds: Schema.Number }) {
  static readonly wire = wire("service_unavailable", 503, "ServiceUnavailableError")
  readonly code = ServiceUnavailable.wire.code
}

/** Every domain error class. The union, the guard and the wire table below come from here. */
export const API_ERRORS = [
  BadRequest, InvalidWebhookUrl, ValidationError, Unauthorized, PlanLimitExceeded, AlreadyExists, UsernameTaken, EmailUnverified, InboxPaused, MessageRejected, MissingPermission, PodProtected, RecipientBlocked, SendLocked, NotFound, AlreadySubscribed, AlreadyVerified, DraftSending, HumanReplacementLimit, IdempotencyKeyReuse, NoSubscription, NotAnAgentOrganization, PodNotEmpty, PayloadTooLarge, DomainNotVerified, HtmlRequired, RangeTooLarge, RecipientSuppressed, ReservedUsername, SubdomainsNotEnabled, TooManyRecipients, TrackingDisabled, RateLimited, TooManyAttempts, RequestTimeout, HeadersTooLarge, InternalError, BillingProviderError, BillingNotConfigured, TwoFactorNotSetUp, InvalidCode, InvalidToken, InvalidCredentials, InvalidTotp, TotpRequired, CsrfFailed, EmailNotVerified, Forbidden, TwoFactorAlreadyEnabled, AlreadyMember, LastOwner, InvalidSignature, UpstreamError, NotConfigured, ServiceUnavailable
] as const

/** Every domain error; the error channel of an operation is a subset of this union. */
export type ApiError = InstanceType<typeof API_ERRORS[number]>

export type ErrorCode = ApiError["code"]

const tags: ReadonlySet<string> = new Set(API_ERRORS.map((e) => e.name))

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && tags.has(u._tag) &&
  API_ERRORS.some((E) => u instanceof E)

/** The wire facts of an error: its status and body name. */
export const wireOf = (error: ApiError): { readonly code: ErrorCode; readonly status: number; readonly name: WireName } =>
  (error.constructor as unknown as { readonly wire: { code: ErrorCode; status: number; name: WireName } }).wire

/** Every (code, status, name) the API can answer with. */
export const WIRE: ReadonlyArray<{ readonly code: ErrorCode; readonly status: number; readonly name: WireName }> = API_ERRORS.map((E) => E.wire)
