/**
 * Every core service wired together over the ports it needs: what the Engine facade
 * (Engine.ts) runs operations with. `layer` needs the ports (SqlClient, BlobStore,
 * MailTransport, Egress, Ids, Settings); `layerConfig` adds the live ports from the
 * environment; `layerEmbedded` the embedded ones, with settings in code.
 */
import { type Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { Principal } from "../access/Principal.ts"
import type { TypedOperation } from "../catalogue/Operation.ts"
import { runOperation } from "./run.ts"
import { Egress } from "../egress/Egress.ts"
import type { ApiError } from "../errors/errors.ts"
import { Agents } from "../agent/Agents.ts"
import { Blobs } from "../blobs/Blobs.ts"
import { BlobStore } from "../blobs/BlobStore.ts"
import * as BlobStores from "../blobs/stores.ts"
import { ApiKeys } from "../apikeys/ApiKeys.ts"
import { KeyCache } from "../apikeys/KeyCache.ts"
import { Availability } from "../db/Availability.ts"
import * as Database from "../db/Database.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Lists } from "../lists/Lists.ts"
import { Organizations } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { Pods } from "../pods/Pods.ts"
import { IntakeBudget } from "../ratelimit/IntakeBudget.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { Settings, type SettingsShape } from "../settings/Settings.ts"
import { Suppressions } from "../suppressions/Suppressions.ts"
import { MailTransport } from "../transport/MailTransport.ts"
import { Events } from "../events/Events.ts"
import { Inbound } from "../inbound/Inbound.ts"
import { MailParser } from "../mail/parse.ts"
import { Messages } from "../messages/Messages.ts"
import { MessageStore } from "../messages/MessageStore.ts"
import { Idempotency } from "../sending/Idempotency.ts"
import { Sending } from "../sending/Sending.ts"
import { Threads } from "../threads/Threads.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { Signals } from "../db/Signals.ts"
import { Auth } from "../auth/Auth.ts"
import { WebhookFanOut } from "../webhooks/FanOut.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { LiveEvents } from "../events/Live.ts"
import { ProviderEvents } from "../events/Provider.ts"
import { Opens } from "../events/Opens.ts"
import { HostResolver } from "../egress/guard.ts"
import * as WebhookDelivery from "../webhooks/Delivery.ts"
import { Drafts } from "../drafts/Drafts.ts"
import { Mailboxes } from "../mailboxes/Mailboxes.ts"
import { Search } from "../search/Search.ts"
import { Dns } from "../dns/Dns.ts"
import { Domains } from "../domains/Domains.ts"
import { Metrics } from "../metrics/Metrics.ts"
import { Billing } from "../billing/Billing.ts"
import { Correspondents } from "../messages/Correspondents.ts"

export type EngineServices =
  | Organizations
  | Pods
  | Inboxes
  | ApiKeys
  | Agents
  | RateLimiter
  | MailParser
  | Blobs
  | Events
  | Lists
  | Suppressions
  | MessageStore
  | Messages
  | Correspondents
  | Threads
  | Inbound
  | Idempotency
  | Sending
  | Jobs
  | Signals
  | WebhookFanOut
  | Webhooks
  | LiveEvents
  | ProviderEvents
  | Opens
  | HostResolver
  | Drafts
  | Mailboxes
  | Search
  | Settings
  | Ids
  | MailTransport
  | Egress
  | BlobStore
  | Auth
  | Domains
  | Dns
  | Metrics
  | Billing
  | KeyCache
  | IntakeBudget
  | Availability
  | SqlClient.SqlClient

/**
 * Every service of the engine. Each service's `layer` provides the services it uses itself
 * (a layer referenced from several is built once: layers are shared by reference within a
 * build), so this list has no order; what is left to provide are the ports.
 */
const services = Layer.mergeAll(
  Organizations.layer,
  Pods.layer,
  Inboxes.layer,
  ApiKeys.layer,
  KeyCache.layer,
  Agents.layer,
  Auth.layer,
  Domains.layer,
  Lists.layer,
  Suppressions.layer,
  Blobs.layer,
  MessageStore.layer,
  Messages.layer,
  Correspondents.layer,
  Threads.layer,
  Inbound.layer,
  Idempotency.layer,
  Sending.layer,
  Drafts.layer,
  Mailboxes.layer,
  Search.layer,
  Events.layer,
  LiveEvents.layer,
  ProviderEvents.layer,
  Opens.layer,
  Webhooks.layer,
  WebhookFanOut.layer,
  WebhookDelivery.layerHandler,
  Jobs.layer,
  HostResolver.layer,
  RateLimiter.layer,
  IntakeBudget.layer,
  MailParser.layer,
  Metrics.layer,
  Billing.layer,
  Availability.layer
)

/**
 * The services over given ports. DNS is asked through Node's resolver with the servers
 * of Settings (INBOX_DNS_SERVERS), so it needs no port of its own from the caller.
 */
export const layer = services.pipe(Layer.provideMerge(Dns.layer))

/**
 * The services over live ports configured from INBOX_* variables. The blob store follows
 * the storage settings (BlobStores.layerConfig): S3 with INBOX_BLOB_URL, else PostgreSQL
 * with INBOX_DATABASE_URL, else files in INBOX_DATA_DIR beside the embedded database.
 */
export const layerConfig = layer.pipe(
  Layer.provideMerge(Egress.layer),
  Layer.provideMerge(MailTransport.layerConfig),
  Layer.provideMerge(Layer.mergeAll(Ids.layer, Settings.layer, BlobStores.layerConfig)),
  Layer.provideMerge(Database.layerConfig)
)

/**
 * The engine embedded in another Node application: PGlite in `dataDir` (or in memory),
 * blobs as files in `dataDir/blobs` (or in memory), mail to the local outbox unless a
 * relay URL is given, and settings in code rather than from the environment. Unreferenced
 * blobs are swept by `Blobs.layerSweeper`, which the server runs; an embedding application
 * that deletes messages provides it too.
 */
export const layerEmbedded = (options: {
  readonly dataDir?: string
  readonly baseDomain?: string
  readonly smtpUrl?: string
  readonly settings?: Partial<SettingsShape>
  readonly sharedBuffers?: string
} = {}) =>
  layer.pipe(
    Layer.provideMerge(Egress.layer),
    Layer.provideMerge(options.smtpUrl === undefined ? MailTransport.layerLocalOutbox : MailTransport.layerSmtp(options.smtpUrl)),
    Layer.provideMerge(Layer.mergeAll(
      Ids.layer,
      Layer.succeed(Settings, Settings.make({ ...options.settings, ...(options.baseDomain === undefined ? {} : { baseDomain: options.baseDomain }) })),
      options.dataDir === undefined || /^[a-z]+:\/\//i.test(options.dataDir) ? BlobStores.layerMemory : BlobStores.layerFiles(options.dataDir)
    )),
    Layer.provideMerge(Database.layerPglite({
      dataDir: options.dataDir ?? "memory://",
      ...(options.sharedBuffers === undefined ? {} : { sharedBuffers: options.sharedBuffers })
    }))
  )

export interface CallRequest<Params, Input> {
  readonly params?: Params
  /** The body (POST, PATCH) or query (GET, DELETE) as a client would send it. */
  readonly input?: Input
  readonly headers?: Readonly<Record<string, string>>
  readonly raw?: Uint8Array
}

/**
 * Runs one catalogue operation for `principal`, validating the request exactly as the REST
 * API does (the same decoding, permissions and scope), and answers what REST would answer
 * in its body. `principal` is an organization member for member operations; pass
 * `undefined` for public ones.
 */
export const call = <Name extends string, Params, Input, Output, Services>(
  operation: TypedOperation<Name, Params, Input, Output, Services>,
  principal: Principal | undefined,
  request: CallRequest<Params, Input> = {}
): Effect.Effect<Output, ApiError, EngineServices> =>
  runOperation(operation, {
    principal,
    params: (request.params ?? {}) as Readonly<Record<string, string | undefined>>,
    input: request.input ?? {},
    headers: request.headers ?? {},
    ...(request.raw === undefined ? {} : { raw: request.raw }),
    context: { clientIp: "embedded", requestId: "embedded" }
  }) as Effect.Effect<Output, ApiError, EngineServices>
