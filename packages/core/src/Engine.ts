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
