/**
 * Every error code of the spec, once, as a tagged error that carries its code.
 *
 * Operations fail with these and nothing else; adapters map `code` to a wire status and
 * error name in one table (packages/http/src/errors.ts). The body every adapter shows is
 * `{ name, code, message, fix?, errors? }`: `message` and `fix` travel on the error, `name`
 * and the status are the adapter's. Three errors carry structured detail: ValidationError
 * (`errors[]` of `{ path, message }`), PlanLimitExceeded (`errors[0]` of the limit), and
 * RateLimited / TooManyAttempts (`retryAfterSeconds`, sent as `Retry-After`).
 */
import { Schema } from "effect"

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
  readonly code = "bad_request" as const
}
/** URL is not public https, or resolves to a private address */
export class InvalidWebhookUrl extends Schema.TaggedError<InvalidWebhookUrl>()("InvalidWebhookUrl", Common) {
  readonly code = "invalid_webhook_url" as const
}
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", { ...Common, errors: Schema.Array(FieldIssue) }) {
  readonly code = "validation_error" as const
}
/** no, unknown or revoked key; invalid provider signature */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", Common) {
  readonly code = "unauthorized" as const
}
export class PlanLimitExceeded extends Schema.TaggedError<PlanLimitExceeded>()("PlanLimitExceeded", { ...Common, errors: Schema.Array(PlanLimit) }) {
  readonly code = "plan_limit_exceeded" as const
}
/** inbox address, list entry or domain exists; agent sign-up answers a taken username with status 409 */
export class AlreadyExists extends Schema.TaggedError<AlreadyExists>()("AlreadyExists", { ...Common, status: Schema.optionalKey(Schema.Literal(409)) }) {
  readonly code = "already_exists" as const
}
/** owner email unverified */
export class EmailUnverified extends Schema.TaggedError<EmailUnverified>()("EmailUnverified", Common) {
  readonly code = "email_unverified" as const
}
/** inbox is paused */
export class InboxPaused extends Schema.TaggedError<InboxPaused>()("InboxPaused", Common) {
  readonly code = "inbox_paused" as const
}
/** mail provider refused the message */
export class MessageRejected extends Schema.TaggedError<MessageRejected>()("MessageRejected", Common) {
  readonly code = "message_rejected" as const
}
/** key lacks the required permission, or its scope never allows the action */
export class MissingPermission extends Schema.TaggedError<MissingPermission>()("MissingPermission", Common) {
  readonly code = "missing_permission" as const
}
/** deleting the default pod */
export class PodProtected extends Schema.TaggedError<PodProtected>()("PodProtected", Common) {
  readonly code = "pod_protected" as const
}
/** a send list refused a recipient */
export class RecipientBlocked extends Schema.TaggedError<RecipientBlocked>()("RecipientBlocked", Common) {
  readonly code = "recipient_blocked" as const
}
/** agent account without a verified human */
export class SendLocked extends Schema.TaggedError<SendLocked>()("SendLocked", Common) {
  readonly code = "send_locked" as const
}
/** no such resource, outside key scope, or unknown route */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", Common) {
  readonly code = "not_found" as const
}
export class AlreadySubscribed extends Schema.TaggedError<AlreadySubscribed>()("AlreadySubscribed", Common) {
  readonly code = "already_subscribed" as const
}
export class AlreadyVerified extends Schema.TaggedError<AlreadyVerified>()("AlreadyVerified", Common) {
  readonly code = "already_verified" as const
}
export class DraftSending extends Schema.TaggedError<DraftSending>()("DraftSending", Common) {
  readonly code = "draft_sending" as const
}
export class HumanReplacementLimit extends Schema.TaggedError<HumanReplacementLimit>()("HumanReplacementLimit", Common) {
  readonly code = "human_replacement_limit" as const
}
export class IdempotencyKeyReuse extends Schema.TaggedError<IdempotencyKeyReuse>()("IdempotencyKeyReuse", Common) {
  readonly code = "idempotency_key_reuse" as const
}
export class NoSubscription extends Schema.TaggedError<NoSubscription>()("NoSubscription", Common) {
  readonly code = "no_subscription" as const
}
export class NotAnAgentOrganization extends Schema.TaggedError<NotAnAgentOrganization>()("NotAnAgentOrganization", Common) {
  readonly code = "not_an_agent_organization" as const
}
export class PodNotEmpty extends Schema.TaggedError<PodNotEmpty>()("PodNotEmpty", Common) {
  readonly code = "pod_not_empty" as const
}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", Common) {
  readonly code = "payload_too_large" as const
}
export class DomainNotVerified extends Schema.TaggedError<DomainNotVerified>()("DomainNotVerified", Common) {
  readonly code = "domain_not_verified" as const
}
export class HtmlRequired extends Schema.TaggedError<HtmlRequired>()("HtmlRequired", Common) {
  readonly code = "html_required" as const
}
export class RangeTooLarge extends Schema.TaggedError<RangeTooLarge>()("RangeTooLarge", Common) {
  readonly code = "range_too_large" as const
}
export class RecipientSuppressed extends Schema.TaggedError<RecipientSuppressed>()("RecipientSuppressed", Common) {
  readonly code = "recipient_suppressed" as const
}
export class ReservedUsername extends Schema.TaggedError<ReservedUsername>()("ReservedUsername", Common) {
  readonly code = "reserved_username" as const
}
export class SubdomainsNotEnabled extends Schema.TaggedError<SubdomainsNotEnabled>()("SubdomainsNotEnabled", Common) {
  readonly code = "subdomains_not_enabled" as const
}
export class TooManyRecipients extends Schema.TaggedError<TooManyRecipients>()("TooManyRecipients", Common) {
  readonly code = "too_many_recipients" as const
}
export class TrackingDisabled extends Schema.TaggedError<TrackingDisabled>()("TrackingDisabled", Common) {
  readonly code = "tracking_disabled" as const
}
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { ...Common, retryAfterSeconds: Schema.Number }) {
  readonly code = "rate_limited" as const
}
export class TooManyAttempts extends Schema.TaggedError<TooManyAttempts>()("TooManyAttempts", { ...Common, retryAfterSeconds: Schema.optionalKey(Schema.Number) }) {
  readonly code = "too_many_attempts" as const
}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", Common) {
  readonly code = "internal_error" as const
}
export class BillingProviderError extends Schema.TaggedError<BillingProviderError>()("BillingProviderError", Common) {
  readonly code = "billing_provider_error" as const
}
export class BillingNotConfigured extends Schema.TaggedError<BillingNotConfigured>()("BillingNotConfigured", Common) {
  readonly code = "billing_not_configured" as const
}
export class TwoFactorNotSetUp extends Schema.TaggedError<TwoFactorNotSetUp>()("TwoFactorNotSetUp", Common) {
  readonly code = "2fa_not_set_up" as const
}
export class InvalidCode extends Schema.TaggedError<InvalidCode>()("InvalidCode", Common) {
  readonly code = "invalid_code" as const
}
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", Common) {
  readonly code = "invalid_token" as const
}
export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", Common) {
  readonly code = "invalid_credentials" as const
}
export class InvalidTotp extends Schema.TaggedError<InvalidTotp>()("InvalidTotp", Common) {
  readonly code = "invalid_totp" as const
}
export class TotpRequired extends Schema.TaggedError<TotpRequired>()("TotpRequired", Common) {
  readonly code = "totp_required" as const
}
export class CsrfFailed extends Schema.TaggedError<CsrfFailed>()("CsrfFailed", Common) {
  readonly code = "csrf_failed" as const
}
export class EmailNotVerified extends Schema.TaggedError<EmailNotVerified>()("EmailNotVerified", Common) {
  readonly code = "email_not_verified" as const
}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", Common) {
  readonly code = "forbidden" as const
}
export class TwoFactorAlreadyEnabled extends Schema.TaggedError<TwoFactorAlreadyEnabled>()("TwoFactorAlreadyEnabled", Common) {
  readonly code = "2fa_already_enabled" as const
}
export class AlreadyMember extends Schema.TaggedError<AlreadyMember>()("AlreadyMember", Common) {
  readonly code = "already_member" as const
}
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", Common) {
  readonly code = "invalid_signature" as const
}
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", Common) {
  readonly code = "upstream_error" as const
}
export class NotConfigured extends Schema.TaggedError<NotConfigured>()("NotConfigured", Common) {
  readonly code = "not_configured" as const
}

/** Every domain error; the error channel of an operation is a subset of this union. */
export type ApiError =
  | BadRequest
  | InvalidWebhookUrl
  | ValidationError
  | Unauthorized
  | PlanLimitExceeded
  | AlreadyExists
  | EmailUnverified
  | InboxPaused
  | MessageRejected
  | MissingPermission
  | PodProtected
  | RecipientBlocked
  | SendLocked
  | NotFound
  | AlreadySubscribed
  | AlreadyVerified
  | DraftSending
  | HumanReplacementLimit
  | IdempotencyKeyReuse
  | NoSubscription
  | NotAnAgentOrganization
  | PodNotEmpty
  | PayloadTooLarge
  | DomainNotVerified
  | HtmlRequired
  | RangeTooLarge
  | RecipientSuppressed
  | ReservedUsername
  | SubdomainsNotEnabled
  | TooManyRecipients
  | TrackingDisabled
  | RateLimited
  | TooManyAttempts
  | InternalError
  | BillingProviderError
  | BillingNotConfigured
  | TwoFactorNotSetUp
  | InvalidCode
  | InvalidToken
  | InvalidCredentials
  | InvalidTotp
  | TotpRequired
  | CsrfFailed
  | EmailNotVerified
  | Forbidden
  | TwoFactorAlreadyEnabled
  | AlreadyMember
  | InvalidSignature
  | UpstreamError
  | NotConfigured

export type ErrorCode = ApiError["code"]

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && "code" in u && typeof (u as { code: unknown }).code === "string" && apiErrorTags.has((u as { _tag: string })._tag)

const apiErrorTags: ReadonlySet<string> = new Set([
  "BadRequest", "InvalidWebhookUrl", "ValidationError", "Unauthorized", "PlanLimitExceeded", "AlreadyExists", "EmailUnverified", "InboxPaused", "MessageRejected", "MissingPermission", "PodProtected", "RecipientBlocked", "SendLocked", "NotFound", "AlreadySubscribed", "AlreadyVerified", "DraftSending", "HumanReplacementLimit", "IdempotencyKeyReuse", "NoSubscription", "NotAnAgentOrganization", "PodNotEmpty", "PayloadTooLarge", "DomainNotVerified", "HtmlRequired", "RangeTooLarge", "RecipientSuppressed", "ReservedUsername", "SubdomainsNotEnabled", "TooManyRecipients", "TrackingDisabled", "RateLimited", "TooManyAttempts", "InternalError", "BillingProviderError", "BillingNotConfigured", "TwoFactorNotSetUp", "InvalidCode", "InvalidToken", "InvalidCredentials", "InvalidTotp", "TotpRequired", "CsrfFailed", "EmailNotVerified", "Forbidden", "TwoFactorAlreadyEnabled", "AlreadyMember", "InvalidSignature", "UpstreamError", "NotConfigured"
])
