/**
 * The engine: every core service wired together over the ports it needs.
 *
 * `Engine.layer` needs the ports (SqlClient, MailTransport, Ids, Settings) and provides the
 * services; `Engine.layerConfig` adds the live ports from the environment. An embedding
 * application provides this layer and calls operations directly, with no HTTP.
 */
import { Layer } from "effect"
import { Agents } from "./agent/Agents.ts"
import { ApiKeys } from "./apikeys/ApiKeys.ts"
import * as Database from "./db/Database.ts"
import { Inboxes } from "./inboxes/Inboxes.ts"
import { Organizations } from "./organizations/Organizations.ts"
import { Ids } from "./platform/Ids.ts"
import { Pods } from "./pods/Pods.ts"
import { RateLimiter } from "./ratelimit/RateLimiter.ts"
import { Settings } from "./settings/Settings.ts"
import { MailTransport } from "./transport/MailTransport.ts"

export type EngineServices = Organizations | Pods | Inboxes | ApiKeys | Agents | RateLimiter | Settings | Ids

const services = Agents.layer.pipe(
  Layer.provideMerge(ApiKeys.layer),
  Layer.provideMerge(Inboxes.layer),
  Layer.provideMerge(Pods.layer),
  Layer.provideMerge(Organizations.layer),
  Layer.provideMerge(RateLimiter.layer)
)

/** The services over given ports. */
export const layer = services

/** The services over live ports configured from INBOX_* variables. */
export const layerConfig = services.pipe(
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
    Layer.provideMerge(options.smtpUrl === undefined ? MailTransport.layerLocalOutbox : MailTransport.layerSmtp(options.smtpUrl)),
    Layer.provideMerge(Layer.mergeAll(
      Ids.layer,
      Layer.succeed(Settings, Settings.make(options.baseDomain === undefined ? {} : { baseDomain: options.baseDomain }))
    )),
    Layer.provideMerge(Database.layerPglite({ dataDir: options.dataDir ?? "memory://" }))
  )
