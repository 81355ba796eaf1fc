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
 *
 * Node's server takes the upgrade itself (`makeDirectWebSocket`, called from node.ts's
 * upgrade event), as direct.ts takes requests: the admission runs in one short fiber, then
 * the connection is a `ws` socket with plain callbacks and an Effect scope holding its
 * listener, and nothing else. Through Effect's adapter every connection kept its request's
 * fiber, the router's middleware, a Socket with its own fiber and queues: about 29 KiB of
 * heap per connection against 3.4 KiB for a bare `ws` server (BENCHMARKS.md, "Events:
 * WebSocket fan-out"). The router's route stays for what does not come through that
 * server's upgrade event (a GET without an upgrade, another server hosting the app): it
 * admits and refuses alike.
 */
import { type ApiError, Engine, errorBody, internalErrorBody, isApiError, type ListenRefused, type LiveConnection, type LiveHandlers, type Principal, type Settings, statusOf } from "@inbox/core"
import { Cause, Clock, Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Socket } from "effect/socket"
import { type IncomingMessage, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { WebSocket, WebSocketServer } from "ws"
import { RequestId } from "./context.ts"
import { admit, guardHeaders, pathOf } from "./guard.ts"
import { RequestFacts, recordRequest } from "./observe.ts"
import { clientIp, credentialOf, DEFAULT_BODY_LIMIT, searchParams } from "./request.ts"
import { errorResponse, failureAnswer } from "./respond.ts"
import { fromNode, type WireRequest } from "./wire.ts"

/** Bytes of frames one connection may leave unsent before it is closed as a slow consumer. */
export const WS_BUFFER_BYTES = 4 * 1024 * 1024
export const SLOW_CONSUMER_CLOSE = 4008
/** The connection's key was revoked, changed or deleted (its inbox or pod too). */
export const KEY_ENDED_CLOSE = 4001
/** The process holds INBOX_MAX_WEBSOCKETS connections: the standard "Try Again Later". */
export const SERVER_FULL_CLOSE = 1013
/** The key (or dashboard user) holds INBOX_MAX_WEBSOCKETS_PER_KEY connections. */
export const KEY_FULL_CLOSE = 4029

const ROUTE = "/v0/websocket"

/**
 * The member behind the request. The upgrade is a GET, but the socket then streams the
 * organization's mail events: a session is held to the rule of a state-changing request,
 * its token in ?csrf_token= since a browser cannot set headers on a WebSocket.
 */
const admitMember = (request: WireRequest) =>
  Effect.gen(function*() {
    const credential = credentialOf(request, ROUTE)
    return yield* (yield* Engine).admit(
      credential.kind === "session" ? { ...credential, csrfToken: searchParams(request).get("csrf_token") ?? undefined } : credential,
      { clientIp: yield* clientIp(request), requestId: yield* RequestId }
    )
  })

/**
 * The member's live connection, or the cap that refused it. The permission and the caps
 * are core's, checked before the upgrade: a missing permission fails with its ApiError
 * (answered with the usual error body), a cap is answered after the upgrade with its close
 * code.
 */
const connectLive = (engine: Engine["Service"], principal: Principal) =>
  engine.live.connect(principal).pipe(
    Effect.catchIf((e): e is ListenRefused => !isApiError(e), (refused) => Effect.succeed(refused))
  )

/** The close code and reason of a connection refused by a cap. */
const capClose = ({ cap, limit }: ListenRefused): readonly [number, string] =>
  cap === "server"
    ? [SERVER_FULL_CLOSE, `this server holds its maximum of ${limit} WebSocket connections; try again later`]
    : [KEY_FULL_CLOSE, `this API key holds its maximum of ${limit} WebSocket connections`]

/**
 * The handlers core calls for one connection, over whichever socket carries it. Writing to
 * an open socket returns at once (it only queues bytes), as `deliver` must; past
 * WS_BUFFER_BYTES unsent the connection is closed as a slow consumer. `close` closes once.
 */
const liveHandlers = (io: {
  readonly send: (text: string) => void
  readonly close: (code: number, reason: string) => void
  readonly unsent: () => number
}): LiveHandlers & { readonly close: (code: number, reason: string) => void } => {
  let closing = false
  const close = (code: number, reason: string) => {
    if (closing) return
    closing = true
    io.close(code, reason)
  }
  return {
    close,
    deliver: (frame) => {
      if (closing) return
      if (io.unsent() > WS_BUFFER_BYTES) return close(SLOW_CONSUMER_CLOSE, "slow consumer: too many events waiting")
      io.send(frame)
    },
    keyEnded: () => close(KEY_ENDED_CLOSE, "the API key was revoked or changed")
  }
}

/** The bytes a request's TCP socket holds unsent, where the server is Node's; 0 elsewhere. */
const unsentBytes = (request: HttpServerRequest.HttpServerRequest): () => number => {
  const socket = (request.source as { readonly socket?: { readonly writableLength?: unknown } } | undefined)?.socket
  return () => typeof socket?.writableLength === "number" ? socket.writableLength : 0
}

/** The router's route: an upgrade through Effect's adapter, or a request that is not one. */
const handler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const connecting = yield* connectLive(yield* Engine, yield* admitMember(request))
  const socket = yield* request.upgrade
  // Acquiring the reader sends the 101; only then may the writer be used.
  const read = yield* Socket.readerString(socket)
  const writer = yield* socket.writer
  const unsent = unsentBytes(request)
  const handlers = liveHandlers({
    send: (text) => void Effect.runSyncExit(writer.write(text)),
    close: (code, reason) => void Effect.runSyncExit(writer.write(new Socket.CloseEvent(code, reason))),
    unsent
  })
  if ("cap" in connecting) {
    handlers.close(...capClose(connecting))
    // Frames the client sends meanwhile are ignored until its close answer ends the read.
    return yield* Effect.forever(read)
  }
  yield* connecting.start(handlers)
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
export const WebSocketRoute = Layer.merge(HttpRouter.add("GET", ROUTE, handler), HttpRouter.add("GET", "/v0", handler))

/** An HTTP answer written on a socket that is not upgraded: the refusal before the upgrade. */
const writeRefusal = (socket: Duplex, path: string, requestId: string, error: ApiError | undefined) => {
  const status = error === undefined ? 500 : statusOf(error)
  const body = JSON.stringify(error === undefined ? internalErrorBody : errorBody(error))
  const headers: Record<string, string> = {
    ...guardHeaders(path),
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "x-request-id": requestId,
    connection: "close",
    ...(error !== undefined && "retryAfterSeconds" in error && error.retryAfterSeconds !== undefined ? { "retry-after": String(error.retryAfterSeconds) } : {})
  }
  if (!socket.writable) return void socket.destroy()
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body}`)
}

/**
 * A frame's bytes, encoded once for every connection it goes to: core hands the same text to
 * each listener in turn, and `ws` given a string measures and encodes it again per socket.
 */
let lastFrame: string | undefined
let lastBytes: Buffer = Buffer.alloc(0)
const bytesOf = (frame: string): Buffer => {
  if (frame !== lastFrame) {
    lastBytes = Buffer.from(frame, "utf8")
    lastFrame = frame
  }
  return lastBytes
}
/** Bytes sent as a text frame (a Buffer would otherwise go out as binary). */
const TEXT_FRAME = { binary: false }

/**
 * One connection taken on Node's upgrade event: the handlers core calls, over a `ws` socket
 * once the handshake is done. Its own object, made apart from the request, so a connection
 * holds neither the request nor the fiber that admitted it.
 */
class LiveSocket implements LiveHandlers {
  ws: WebSocket | undefined
  private closing = false
  /** Replies to the client's frames go out in the order the frames came. */
  private replies: Promise<void> | undefined
  constructor(private readonly socket: Duplex) {}
  close(code: number, reason: string) {
    if (this.closing) return
    this.closing = true
    this.ws?.close(code, reason)
  }
  deliver(frame: string) {
    if (this.closing || this.ws === undefined) return
    if ((this.socket as { readonly writableLength?: number }).writableLength! > WS_BUFFER_BYTES) {
      return this.close(SLOW_CONSUMER_CLOSE, "slow consumer: too many events waiting")
    }
    this.ws.send(bytesOf(frame), TEXT_FRAME)
  }
  keyEnded() {
    this.close(KEY_ENDED_CLOSE, "the API key was revoked or changed")
  }
  /** A frame from the client, answered by `reply` (core's subscribe) in order. */
  received(reply: () => Promise<string>) {
    const send = () =>
      reply().then((text) => {
        if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(text)
      })
    this.replies = this.replies === undefined ? send() : this.replies.then(send)
  }
}

/** Errors of an upgraded socket: a protocol error closes it, and "close" follows. */
const ignore = () => {}

/**
 * The WebSocket on Node's upgrade event (node.ts): `upgrade(request, socket, head)` is true
 * when it takes the request (`GET /v0/websocket` or `/v0` asking for a WebSocket), false to
 * leave it to Effect's adapter. It admits in one fiber as the route does, answers a refusal
 * on the socket, and otherwise completes the handshake with `ws` (no compression: a deflate
 * context per connection would cost more memory than the frames save).
 *
 * The connection's listener lives in a scope of its own, closed when the socket closes. It
 * is opened outside the request's context: a scoped resource keeps the context it was
 * acquired in for its release, and a request's context, once read often enough, holds its
 * own copy of every service.
 */
export const makeDirectWebSocket = Effect.gen(function*() {
  const services = yield* Effect.context<Engine | Settings>()
  const engine = Context.get(services, Engine)
  const runFork = Effect.runForkWith(services)
  const runPromise = Effect.runPromiseWith(services)
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false, maxPayload: DEFAULT_BODY_LIMIT })

  const open = (socket: Duplex, principal: Principal) =>
    Effect.gen(function*() {
      const live = new LiveSocket(socket)
      const scope = yield* Scope.make()
      if (socket.destroyed) runFork(Scope.close(scope, Exit.void))
      else socket.once("close", () => void runFork(Scope.close(scope, Exit.void)))
      const connecting = yield* connectLive(engine, principal).pipe(
        Effect.tap((c) => "cap" in c ? Effect.void : c.start(live)),
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      return { live, connecting }
    })

  const upgraded = (ws: WebSocket, live: LiveSocket, connecting: LiveConnection | ListenRefused) => {
    live.ws = ws
    ws.on("error", ignore)
    if ("cap" in connecting) return live.close(...capClose(connecting))
    ws.on("message", (data: Buffer) => {
      const text = data.toString("utf8")
      live.received(() => runPromise(Effect.map(connecting.subscribe(text), (frame) => JSON.stringify(frame))))
    })
  }

  const accept = (request: IncomingMessage, socket: Duplex, head: Buffer, path: string) =>
    Effect.gen(function*() {
      const requestId = yield* engine.requestId
      const started = yield* Clock.currentTimeMillis
      const wire = fromNode(request)
      const facts = { route: ROUTE as string | undefined, organizationId: undefined as string | undefined }
      const opened = yield* admit(wire, path).pipe(
        Effect.andThen(admitMember(wire)),
        Effect.provideService(RequestId, requestId),
        Effect.provideService(RequestFacts, facts),
        Effect.flatMap((principal) => open(socket, principal)),
        Effect.catch((error: ApiError) => Effect.succeed({ error })),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.map(failureAnswer(requestId, cause), (error) => ({ error }))
        )
      )
      if ("connecting" in opened) {
        const { live, connecting } = opened
        wss.handleUpgrade(request, socket, head, (ws) => upgraded(ws, live, connecting))
      } else {
        writeRefusal(socket, path, requestId, opened.error)
      }
      const status = "connecting" in opened ? 101 : opened.error === undefined ? 500 : statusOf(opened.error)
      yield* recordRequest(requestId, request.method ?? "GET", facts.route ?? ROUTE, status, started, facts.organizationId)
    })

  /** Node's upgrade listener: true when the WebSocket takes the request. */
  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const path = pathOf(request.url ?? "/")
    if (request.method !== "GET" || (path !== ROUTE && path !== "/v0") || request.headers.upgrade?.toLowerCase() !== "websocket") return false
    runFork(accept(request, socket, head, path))
    return true
  }
  return { upgrade }
})
