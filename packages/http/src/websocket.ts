/**
 * `GET /v0/websocket` (spec: WebSocket): live events over a WebSocket. The key comes in
 * `Authorization: Bearer` or `?api_key=` (browsers cannot set headers on a WebSocket), or
 * the dashboard's session cookie with `?csrf_token=` and a same-origin Origin; it
 * needs `message_read`, like the events list; a refused key is answered before the upgrade
 * with the usual error body. The client sends
 * `{"type":"subscribe","event_types":[...],"inbox_ids":[...],"pod_ids":[...]}` (again to
 * change it) and gets `{"type":"subscribed",...}` echoing it, then `{"type":"event",...}`
 * frames; a bad frame or a forbidden subscription gets `{"type":"error","name","message"}`.
 * The rules live in core (events/Live.ts); this adapter only moves frames.
 *
 * Frames are written in the dispatching fiber (events/Live.ts), straight to the socket:
 * with 10,000 connections, a writer fiber per connection woken for each event cost a fiber
 * step each, which put our p99 well behind the bare `ws` server's in pnpm bench websocket
 * (BENCHMARKS.md, "Events: WebSocket fan-out"). A slow consumer is bounded by the bytes its socket holds
 * unsent: once more than WS_BUFFER_BYTES wait, it is closed with code 4008 ("slow
 * consumer") rather than holding memory, and it catches up through the events list after
 * reconnecting. The close frame queues behind what waits, so a client that reads again
 * sees it; `ws` drops a peer that never does after its close timeout.
 *
 * Connections are capped by core (the engine's live.connect): past the process's cap the socket is
 * closed at once with 1013 ("try again later"), past its key's cap with 4029; either way
 * HTTP requests keep their own connections (node.ts).
 */
import { type ApiError, Engine, isApiError, type ListenRefused } from "@inbox/core"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Socket } from "effect/socket"
import { errorResponse } from "./respond.ts"
import { RequestId } from "./context.ts"
import { clientIp, credentialOf, searchParams } from "./request.ts"

/** Bytes of frames one connection may leave unsent before it is closed as a slow consumer. */
export const WS_BUFFER_BYTES = 4 * 1024 * 1024
export const SLOW_CONSUMER_CLOSE = 4008
/** The connection's key was revoked, changed or deleted (its inbox or pod too). */
export const KEY_ENDED_CLOSE = 4001
/** The process holds INBOX_MAX_WEBSOCKETS connections: the standard "Try Again Later". */
export const SERVER_FULL_CLOSE = 1013
/** The key (or dashboard user) holds INBOX_MAX_WEBSOCKETS_PER_KEY connections. */
export const KEY_FULL_CLOSE = 4029

/**
 * The bytes the connection's TCP socket holds unsent, where the server is Node's (the
 * request's source is its IncomingMessage); 0 elsewhere, where no bound can be read.
 */
const unsentBytes = (request: HttpServerRequest.HttpServerRequest): () => number => {
  const socket = (request.source as { readonly socket?: { readonly writableLength?: unknown } } | undefined)?.socket
  return () => typeof socket?.writableLength === "number" ? socket.writableLength : 0
}

const handler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const engine = yield* Engine
  const credential = credentialOf(request, "/v0/websocket")
  // The upgrade is a GET, but the socket then streams the organization's mail events: a
  // session is held to the rule of a state-changing request, its token in ?csrf_token=
  // since a browser cannot set headers on a WebSocket.
  const principal = yield* engine.admit(
    credential.kind === "session" ? { ...credential, csrfToken: searchParams(request).get("csrf_token") ?? undefined } : credential,
    { clientIp: yield* clientIp(request), requestId: yield* RequestId }
  )
  // The permission and the caps are core's, checked before the upgrade; a refused key or
  // permission is answered with the usual error body, a cap with a close code.
  const connecting = yield* engine.live.connect(principal).pipe(
    Effect.catchIf((e): e is ListenRefused => !isApiError(e), (refused) => Effect.succeed(refused))
  )
  const socket = yield* request.upgrade
  // Acquiring the reader sends the 101; only then may the writer be used.
  const read = yield* Socket.readerString(socket)
  const writer = yield* socket.writer
  const unsent = unsentBytes(request)
  let closing = false
  const close = (code: number, reason: string) => {
    if (closing) return
    closing = true
    Effect.runSyncExit(writer.write(new Socket.CloseEvent(code, reason)))
  }
  if ("cap" in connecting) {
    const { cap, limit } = connecting
    close(
      cap === "server" ? SERVER_FULL_CLOSE : KEY_FULL_CLOSE,
      cap === "server" ? `this server holds its maximum of ${limit} WebSocket connections; try again later` : `this API key holds its maximum of ${limit} WebSocket connections`
    )
    // Frames the client sends meanwhile are ignored until its close answer ends the read.
    return yield* Effect.forever(read)
  }
  // Writing to an open socket returns at once (it only queues bytes), as `deliver` must.
  yield* connecting.start({
    deliver: (frame) => {
      if (closing) return
      if (unsent() > WS_BUFFER_BYTES) return close(SLOW_CONSUMER_CLOSE, "slow consumer: too many events waiting")
      Effect.runSyncExit(writer.write(frame))
    },
    keyEnded: () => close(KEY_ENDED_CLOSE, "the API key was revoked or changed")
  })
  yield* Effect.gen(function*() {
    for (const frame of yield* read) yield* writer.write(JSON.stringify(yield* connecting.subscribe(frame)))
  }).pipe(Effect.forever)
  return HttpServerResponse.empty()
}).pipe(
  Effect.scoped,
  Effect.catchIf((e): e is ApiError & typeof e => isApiError(e), (e) => Effect.succeed(errorResponse(e))),
  // The client left (or the upgrade failed): nothing more to answer.
  Effect.catch(() => Effect.succeed(HttpServerResponse.empty()))
)

/** `/v0` too: the official agentmail SDK's WebSocket client connects to `<websockets URL>/v0`. */
export const WebSocketRoute = Layer.merge(HttpRouter.add("GET", "/v0/websocket", handler), HttpRouter.add("GET", "/v0", handler))
