/**
 * The engine: every core service wired together over the ports it needs.
 *
 * `Engine.layer` needs the ports (SqlClient, MailTransport, Ids, Settings) and provides the
 * services; `Engine.layerConfig` adds the live ports from the environment. An embedding
 * application provides this layer and calls operations directly, with no HTTP.
 */
import { type Effect, Layer } from "effect"
import type { Principal } from "./access/Principal.ts"
import type { TypedOperation } from "./catalogue/Operation.ts"
import { runOperation } from "./catalogue/run.ts"
import { Egress } from "./egress/Egress.ts"
import type { ApiError } from "./errors/errors.ts"
import { Agents } from "./agent/Agents.ts"
import { ApiKeys } from "./apikeys/ApiKeys.ts"
import * as Database from "./db/Database.ts"
import { Inboxes } from "./inboxes/Inboxes.ts"
import { Lists } from "./lists/Lists.ts"
import { Organizations } from "./organizations/Organizations.ts"
import { Ids } from "./platform/Ids.ts"
import { Pods } from "./pods/Pods.ts"
import { RateLimiter } from "./ratelimit/RateLimiter.ts"
import { Settings } from "./settings/Settings.ts"
import { Suppressions } from "./suppressions/Suppressions.ts"
import { MailTransport } from "./transport/MailTransport.ts"

export type EngineServices =
  | Organizations
  | Pods
  | Inboxes
  | ApiKeys
  | Agents
  | Lists
  | Suppressions
  | RateLimiter
  | Settings
  | Ids
  | MailTransport
  | Egress

const services = Agents.layer.pipe(
  Layer.provideMerge(ApiKeys.layer),
  Layer.provideMerge(Layer.merge(Lists.layer, Suppressions.layer)),
  Layer.provideMerge(Inboxes.layer),
  Layer.provideMerge(Pods.layer),
  Layer.provideMerge(Organizations.layer),
  Layer.provideMerge(RateLimiter.layer)
)

/** The services over given ports. */
export const layer = services

/** The services over live ports configured from INBOX_* variables. */
export const layerConfig = services.pipe(
  Layer.provideMerge(Egress.layer),
  Layer.provideMerge(MailTransport.layerConfig),
  Layer.provideMerge(Layer.mergeAll(Ids.layer, Settings.layer)),
  Layer.provideMerge(Database.layerConfig)
)

/**
 * The engine embedded in another Node application: PGlite in `dataDir` (or in memory),
 * mail to the local outbox unless a relay URL is given, and settings in code rather than
 * from the environment.
 */
export const layerEmbedded = (options: {
  readonly dataDir?: string
  readonly baseDomain?: string
  readonly smtpUrl?: string
} = {}) =>
  services.pipe(
    Layer.provideMerge(Egress.layer),
    Layer.provideMerge(options.smtpUrl === undefined ? MailTransport.layerLocalOutbox : MailTransport.layerSmtp(options.smtpUrl)),
    Layer.provideMerge(Layer.mergeAll(
      Ids.layer,
      Layer.succeed(Settings, Settings.make(options.baseDomain === undefined ? {} : { baseDomain: options.baseDomain }))
    )),
    Layer.provideMerge(Database.layerPglite({ dataDir: options.dataDir ?? "memory://" }))
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
export const call = <Params, Input, Output>(
  operation: TypedOperation<Params, Input, Output>,
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
