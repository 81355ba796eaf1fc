/**
 * The whole engine over test ports: a given storage layer, the captured outbox, an Egress
 * that answers only the URLs a test gives it, real random Ids (tests that need predictable
 * ids use layerFixedIds), test Settings with rate limits off unless asked for, and a blob
 * store (in memory unless the test gives another, e.g. BlobStores.layerPostgres).
 */
import { type BlobStore, BlobStores, Egress, Engine, Ids, Settings, type SettingsShape, type Signals } from "@inbox/core/internal"
import { Layer } from "effect"
import type { EgressTestResponse as TestResponse } from "@inbox/core/internal"
import type { SqlClient } from "effect/sql"
import { CapturedMail } from "./transport.ts"

/** The host the app harness's requests name (app.ts); the test settings allow it. */
export const TEST_HOST = "inbox.test"

/** Test settings: Settings.make with the overrides, and the harness's host among the allowed hosts. */
export const settingsLayer = (overrides: Partial<SettingsShape> = {}) => {
  // A fixed secret key: custom domains need one to seal their DKIM keys. DNS goes to a
  // loopback port nobody serves (refused at once) unless a test gives its own server: no
  // test ever asks a resolver outside this machine.
  const settings = Settings.make({ secretKey: "test-secret-key", dnsServers: ["127.0.0.1:9"], ...overrides })
  return Layer.succeed(Settings, overrides.allowedHosts === undefined ? { ...settings, allowedHosts: [...settings.allowedHosts, TEST_HOST] } : settings)
}

export const engineLayer = <E, R, EB = never, RB = never>(
  storage: Layer.Layer<SqlClient.SqlClient | Signals, E, R>,
  settings: Partial<SettingsShape> = {},
  egress: Readonly<Record<string, TestResponse>> = {},
  /** May need the SqlClient (the PostgreSQL store): `storage` provides it. */
  blobStore: Layer.Layer<BlobStore, EB, RB> = BlobStores.layerMemory
) =>
  Engine.layer.pipe(
    Layer.provideMerge(CapturedMail.layer),
    Layer.provideMerge(Layer.mergeAll(Ids.layer, settingsLayer(settings), Egress.layerTest(egress), blobStore)),
    Layer.provideMerge(storage)
  )
