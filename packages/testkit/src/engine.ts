/**
 * The whole engine over test ports: a given storage layer, the captured outbox, real
 * random Ids (tests that need predictable ids use layerFixedIds) and test Settings with
 * rate limits off unless asked for.
 */
import { Engine, Ids, Settings, type SettingsShape } from "@inbox/core"
import { Layer } from "effect"
import { CapturedMail } from "./transport.ts"

export const settingsLayer = (overrides: Partial<SettingsShape> = {}) => Layer.succeed(Settings, Settings.make(overrides))

export const engineLayer = <E, R>(
  storage: Layer.Layer<import("effect/sql").SqlClient.SqlClient, E, R>,
  settings: Partial<SettingsShape> = {}
) =>
  Engine.layer.pipe(
    Layer.provideMerge(CapturedMail.layer),
    Layer.provideMerge(Layer.mergeAll(Ids.layer, settingsLayer(settings))),
    Layer.provideMerge(storage)
  )
