/**
 * @inbox/core/internal: everything the engine is made of, for core's own tests and the
 * testkit's white-box fixtures. Not a public API: adapters and applications import
 * `@inbox/core` (index.ts) and port implementations `@inbox/core/ports` (ports.ts), and a
 * dependency-cruiser rule keeps every adapter's source to those two.
 */
export * from "./errors/errors.ts"
export * from "./errors/wire.ts"
export {
  createEngine,
  type EmbeddedOptions,
  Engine,
  type EngineApi,
  type EngineHandle,
  type InputOf,
  type LiveConnection,
  type LiveHandlers,
  LOCAL,
  type OperationName,
  type OutputOf
} from "./engine/Engine.ts"
export * as EngineServicesLayers from "./engine/services.ts"
export type { EngineServices } from "./engine/services.ts"
export * as Database from "./db/Database.ts"
export { Availability, isDatabaseUnreachable } from "./db/Availability.ts"
export { pgliteStream } from "./db/pglite-bridge.ts"
export {
  type Access,
  type Anonymous,
  type Call,
  type CallContext,
  type CliFace,
  type Download,
  type InputSchema,
  type ListEnvelope,
  type Method,
  operation,
  type Operator,
  type OperatorCredential,
  Output,
  paramNames,
  type ParamsOf,
  type SessionResult,
  type PrincipalOf,
  type RequiredPermission,
  type Route,
  route,
  routeOf,
  type RouteOptions,
  type ToolFace,
  type TypedOperation
} from "./catalogue/Operation.ts"
export { type CatalogueEntry as Operation, type CatalogueServices, findOperation, operations } from "./engine/catalogue.ts"
export { type AdmissionServices, type Credential, type RawCall, runOperation } from "./engine/run.ts"
export { admitMember, admitSession } from "./engine/credential.ts"
export { inputJsonSchema, type JsonSchema, type ObjectJsonSchema, outputJsonSchema } from "./catalogue/jsonSchema.ts"
export * from "./access/Principal.ts"
export * from "./access/permissions.ts"
export { checkHost, checkSameOrigin, hostNameOf } from "./access/hosts.ts"
export * from "./plans/plans.ts"
export { SETTING_DEFAULTS, Settings, type SettingsShape } from "./settings/Settings.ts"
export { defaultText, type Setting, type SettingName, type SettingScope, SETTINGS, settingDefault } from "./settings/registry.ts"
export { Ids, type IdPrefix } from "./platform/Ids.ts"
export { MailTransport, type OutgoingMail, readLocalOutbox } from "./transport/MailTransport.ts"
export { RATE_POLICIES, RateLimiter, type RatePolicy, reservationOf } from "./ratelimit/RateLimiter.ts"
export { INTAKE_RETRY_AFTER_SECONDS, IntakeBudget, intakeFull, type Reserver } from "./ratelimit/IntakeBudget.ts"
export { Organizations, type OrganizationRow } from "./organizations/Organizations.ts"
export { Pod, Pods } from "./pods/Pods.ts"
export { Inbox, Inboxes } from "./inboxes/Inboxes.ts"
export { ApiKey, ApiKeys, CreatedApiKey, KEY_PREFIX } from "./apikeys/ApiKeys.ts"
export { KEY_CACHE_TTL_MS, KeyCache } from "./apikeys/KeyCache.ts"
export { Agents } from "./agent/Agents.ts"
export { ListEntry, Lists, type ListDirection, type ListScope, type ListType, type Verdict } from "./lists/Lists.ts"
export { type NewSuppression, Suppression, SUPPRESSION_REASONS, type SuppressionReason, Suppressions } from "./suppressions/Suppressions.ts"
export * as PodOperations from "./pods/operations.ts"
export * as InboxOperations from "./inboxes/operations.ts"
export * as ApiKeyOperations from "./apikeys/operations.ts"
export * as AgentOperations from "./agent/operations.ts"
export * as PlanOperations from "./plans/operations.ts"
export * as ListOperations from "./lists/operations.ts"
export * as SuppressionOperations from "./suppressions/operations.ts"
export { decodeInput, issuesOf, validationError } from "./shared/validation.ts"
export { jsonBodyOf, jsonWork, MAX_JSON_DEPTH, parseJson } from "./shared/json.ts"
export { EmailAddress, normaliseAddress, normaliseDomain } from "./shared/fields.ts"
export { listBody, type Page } from "./shared/pagination.ts"
export { sameSecret } from "./shared/secrets.ts"
export { sign as signWebhook, signatureMatches } from "./shared/signing.ts"
export { traced, tracedWith } from "./shared/span.ts"
export { DataFolderInUse, LOCK_FILE } from "./db/lock.ts"
export * as Mail from "./mail/index.ts"
export { canSee, EventEnvelope, type EventRow, Events, EVENTS_CHANNEL, type NewEvent, toEnvelope, visibleTypes } from "./events/Events.ts"
export * as EventOperations from "./events/operations.ts"
export { type ListenRefused, LiveEvents, type ServerFrame, type Subscription, wants } from "./events/Live.ts"
export { Delivery as WebhookDelivery, Webhook, Webhooks } from "./webhooks/Webhooks.ts"
export { checkPublicUrl, checkWebhookUrl, HostResolver, isPublicAddress } from "./egress/guard.ts"
export { DELIVERY_JOB } from "./webhooks/FanOut.ts"
export { DELIVERY_CONCURRENCY, ENDPOINT_CONCURRENCY, ENDPOINT_WAIT } from "./webhooks/Delivery.ts"
export * as WebhookOperations from "./webhooks/operations.ts"
export * from "./events/catalogue.ts"
export { DeliveryResult, Inbound } from "./inbound/Inbound.ts"
export { Messages } from "./messages/Messages.ts"
export { MessageStore, type NewMessage, type Stored } from "./messages/MessageStore.ts"
export { FullMessageRow, Message, MessageSummary, Thread, ThreadSummary, toMessage } from "./messages/model.ts"
export { Threads } from "./threads/Threads.ts"
export { Sending } from "./sending/Sending.ts"
export { Idempotency } from "./sending/Idempotency.ts"
export { type Handler as JobHandler, type Job, JobDeferred, JobFailed, Jobs, type NewJob } from "./jobs/Jobs.ts"
export { maxAttempts, RETRY_POLICIES, type RetryPolicy } from "./jobs/policies.ts"
export { Signals } from "./db/Signals.ts"
export * as Maintenance from "./db/Maintenance.ts"
export { DRAFT_JOB, Draft, Drafts } from "./drafts/Drafts.ts"
export * as DraftOperations from "./drafts/operations.ts"
export { MessageSearchResult, Search, SEARCH_CANDIDATES, SearchBudget } from "./search/Search.ts"
export { parseQuery } from "./search/query.ts"
export * as SearchOperations from "./search/operations.ts"
export * as MessageOperations from "./messages/operations.ts"
export * as SendingOperations from "./sending/operations.ts"
export * as ThreadOperations from "./threads/operations.ts"
export * as InboundOperations from "./inbound/operations.ts"
export { Egress, EgressError, type TestResponse as EgressTestResponse } from "./egress/Egress.ts"
export { BlobStore, type BlobStoreName, type PresignOptions } from "./blobs/BlobStore.ts"
export * as BlobStores from "./blobs/stores.ts"
export { Blobs, DOWNLOAD_URL_SECONDS, type DownloadTarget, sha256Of, type SignedDownload, SWEEP_INTERVAL } from "./blobs/Blobs.ts"
export { contentDisposition, downloadHeaders, downloadOf, type DownloadSource, safeContentType } from "./blobs/download.ts"
export * as BlobOperations from "./blobs/operations.ts"
export { Auth, Me, type NewSession, type Session } from "./auth/Auth.ts"
export * as AuthOperations from "./auth/operations.ts"
export * as AuthModel from "./auth/model.ts"
export * as Backup from "./operating/Backup.ts"
export * as Move from "./operating/Move.ts"
export * as OperatorMetrics from "./operating/metrics.ts"
export * as OperatorOperations from "./operating/operations.ts"
export { type Purged, Retention, RETENTION_DEFAULTS, RETENTION_JOB, type RetentionSettings } from "./operating/Retention.ts"
export { Dns, DnsUnavailable, type MxRecord, type RawResolver } from "./dns/Dns.ts"
export { Domain, DOMAIN_CHECK_JOB, DOMAIN_STATUSES, Domains, type DomainStatus, DomainSummary, transition as domainTransition } from "./domains/Domains.ts"
export * as DomainOperations from "./domains/operations.ts"
export { Metrics, MAX_BUCKETS, MAX_DAYS_BACK, MAX_RATE_EVENTS, RATE_TYPES, USAGE_TYPES } from "./metrics/Metrics.ts"
export * as MetricsOperations from "./metrics/operations.ts"
export { Billing, BillingSummary, BillingUsage, GRACE_DAYS } from "./billing/Billing.ts"
export * as BillingOperations from "./billing/operations.ts"
export { noAutovacuum } from "./shared/sql.ts"
