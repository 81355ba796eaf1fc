/**
 * The whole app behind Node's real HTTP server on a loopback port, for clients that need a
 * URL rather than a web handler: an SDK, a WebSocket client. The port is chosen by the
 * system; the engine is built after the listener, so its public URL is the server's own
 * address and the download URLs it signs can be fetched as a client would fetch them. The
 * server is the engine's own Node server (makeNodeServer), which takes WebSocket upgrades
 * itself once the engine is built (makeDirectWebSocket), as `inboxctl serve` does.
 */
import { NodeHttpServer } from "@effect/platform-node"
import type { SettingsShape, Signals } from "@inbox/core/internal"
import { AppRoutes, makeDirectWebSocket, makeNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import type { SqlClient } from "effect/sql"
import type { IncomingMessage } from "node:http"
import type { Duplex } from "node:stream"
import { engineLayer } from "./engine.ts"
import { TEST_INBOUND_SECRET } from "./app.ts"
import { buildMail, type TestMail } from "./mail-builder.ts"

/** Where the loopback server answers: `http://127.0.0.1:PORT`, no trailing slash. */
export class LoopbackServer extends Context.Service<LoopbackServer, { readonly url: string }>()("testkit/LoopbackServer") {}

const serverUrl = HttpServer.HttpServer.useSync((server) =>
  "port" in server.address ? `http://127.0.0.1:${server.address.port}` : "http://127.0.0.1")

/**
 * The app served on 127.0.0.1 over the engine on `storage` (testkit ports: captured outbox,
 * test settings with `settings` applied and `publicUrl` set to the server's URL). Provides
 * LoopbackServer and the engine's services.
 */
export const loopbackServer = <E, R>(
  storage: Layer.Layer<SqlClient.SqlClient | Signals, E, R>,
  settings: Partial<SettingsShape> = {}
) => {
  // The listener comes before the engine (its URL is the engine's), the WebSocket's upgrades after it.
  const upgrades: { take?: (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean } = {}
  const listener = NodeHttpServer.layer(
    () => makeNodeServer(NODE_SERVER_DEFAULTS, () => "req_loopback", undefined, {}, (request, socket, head) => upgrades.take?.(request, socket, head) ?? false),
    { port: 0, host: "127.0.0.1" }
  )
  const engine = Layer.unwrap(Effect.map(serverUrl, (url) =>
    engineLayer(storage, { ...settings, publicUrl: url }).pipe(Layer.merge(Layer.succeed(LoopbackServer, LoopbackServer.of({ url }))))))
  const webSocket = Layer.effectDiscard(Effect.map(makeDirectWebSocket, (ws) => void (upgrades.take = ws.upgrade)))
  return HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(webSocket),
    Layer.provideMerge(engine),
    Layer.provideMerge(listener)
  )
}

/**
 * POST /inbound/raw over TCP, as the operator's forwarder does, with a message built by
 * `buildMail` and the testkit's inbound secret.
 */
export const deliverMailOverHttp = (
  baseUrl: string,
  to: string | ReadonlyArray<string>,
  mail: TestMail = {},
  headers: Record<string, string> = {}
) =>
  Effect.promise(async () => {
    const recipients = typeof to === "string" ? to : to.join(",")
    const raw = await buildMail({ to, ...mail })
    const response = await fetch(`${baseUrl}/inbound/raw?to=${encodeURIComponent(recipients)}`, {
      method: "POST",
      headers: { "x-inbound-secret": TEST_INBOUND_SECRET, "content-type": "message/rfc822", ...headers },
      body: Buffer.from(raw)
    })
    const text = await response.text()
    // Tests read the body field by field and assert each, so the testkit leaves it untyped.
    return { status: response.status, text, body: text === "" ? undefined : JSON.parse(text) as any }
  })
