/**
 * The server process: the engine on live ports (INBOX_* settings) behind Node's HTTP
 * server, and its background work (the blob sweeper). Storage is built first, so
 * migrations have run before the first request is answered and /health means ready.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Blobs, Engine } from "@inbox/core"
import { Config, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { AppRoutes } from "./app.ts"

const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const port = yield* Config.Port("INBOX_PORT").pipe(Config.withDefault(3000))
  const host = yield* Config.String("INBOX_HOST").pipe(Config.withDefault("127.0.0.1"))
  return NodeHttpServer.layer(createServer, { port, host })
}).pipe(Effect.orDie))

/** The HTTP server over an engine the caller provides, with the sweeper of unreferenced blobs. */
export const ServerLive = Layer.merge(
  HttpRouter.serve(AppRoutes, { disableLogger: true }).pipe(Layer.provide(HttpLive)),
  Blobs.layerSweeper
)

/** Serves until interrupted (SIGINT/SIGTERM through NodeRuntime.runMain). */
export const launchServer = Layer.launch(ServerLive.pipe(Layer.provide(Engine.layerConfig)))

export const runServerMain = () => NodeRuntime.runMain(launchServer)
