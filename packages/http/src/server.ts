/**
 * The server process: the engine on live ports (INBOX_* settings) behind Node's HTTP
 * server (node.ts: timeouts, connection cap, Node's own refusals as JSON), and its
 * background work (the job worker, the blob sweeper, resending abandoned sends). Storage is
 * built first, so migrations have run before the first request is answered and /health
 * means ready.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Blobs, Engine, Jobs, Sending, SmtpReceiver } from "@inbox/core"
import { Config, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { AppRoutes } from "./app.ts"
import { layerNodeServer, nodeServerOptionsConfig } from "./node.ts"

const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const port = yield* Config.Port("INBOX_PORT").pipe(Config.withDefault(3000))
  const host = yield* Config.String("INBOX_HOST").pipe(Config.withDefault("127.0.0.1"))
  return layerNodeServer({ port, host }, yield* nodeServerOptionsConfig)
}).pipe(Effect.orDie))

/** The HTTP server over an engine the caller provides. */
export const ServerLive = HttpRouter.serve(AppRoutes, { disableLogger: true }).pipe(Layer.provide(HttpLive))

/**
 * The background work of a server process: the job worker, the blob sweeper, resending what
 * a dead process left half-sent, and the SMTP receiver when INBOX_SMTP_LISTEN is set.
 */
export const BackgroundLive = Layer.mergeAll(Sending.layerRecovery, Jobs.layerWorker, Blobs.layerSweeper, SmtpReceiver.layerConfig)

/** Serves until interrupted (SIGINT/SIGTERM through NodeRuntime.runMain). */
export const launchServer = Layer.launch(Layer.mergeAll(ServerLive, BackgroundLive).pipe(Layer.provide(Engine.layerConfig)))

export const runServerMain = () => NodeRuntime.runMain(launchServer)
