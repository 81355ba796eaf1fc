/**
 * Node's HTTP server as the engine runs it, with the limits a server on the internet needs:
 *
 * - headers must arrive within INBOX_HEADERS_TIMEOUT seconds (default 10) and the whole
 *   request within INBOX_REQUEST_TIMEOUT (default 30); Node checks every second, not every
 *   30 (its default), so a slow client is cut near the limit rather than up to 30 s late;
 *   an idle keep-alive connection is closed after 5 seconds;
 * - at most INBOX_MAX_CONNECTIONS (default 1000) HTTP connections at once, beside the
 *   WebSockets (INBOX_MAX_WEBSOCKETS, capped by core); Node closes any connection beyond
 *   both as soon as it opens;
 * - at most 100 header lines are read (Node ignores the rest) and 16 KB of headers (Node's
 *   limit; over it, 431).
 *
 * What Node refuses before a request reaches the app (a malformed request line or header,
 * headers over the limit, a timeout) is answered here, on the socket, with the spec's error
 * body and an `x-request-id`, instead of Node's empty default answer: 400 bad_request, 431
 * headers_too_large, 408 request_timeout.
 *
 * Shutdown: when the listener is closed (Effect's adapter calls `server.close()` on SIGTERM)
 * the server stops taking requests at once, not when the last keep-alive connection goes:
 * answers still to be written say `Connection: close`, idle connections are closed (and each
 * one that becomes idle), and a request that arrives anyway on an open connection is
 * answered 503 service_unavailable with `Connection: close`, never served. The requests under
 * way finish (within INBOX_SHUTDOWN_TIMEOUT, server.ts).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { type ApiError, BadRequest, Engine, errorBody, HeadersTooLarge, RequestTimeout, ServiceUnavailable, SETTING_DEFAULTS, settingDefault, statusOf } from "@inbox/core"
import { Config, type Duration, Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Socket } from "node:net"
import type { Duplex } from "node:stream"
import { makeDirectPath } from "./direct.ts"
import { makeDirectWebSocket } from "./websocket.ts"

export interface NodeServerOptions {
  readonly headersTimeoutSeconds: number
  readonly requestTimeoutSeconds: number
  readonly maxConnections: number
  /**
   * WebSocket connections the process holds at most (INBOX_MAX_WEBSOCKETS; core's
   * LiveEvents enforces it). Node counts an upgraded socket as a connection: the socket cap
   * is both together, so subscribers at their cap still leave `maxConnections` to HTTP.
   */
  readonly maxWebSockets?: number
  /** Heartbeat of WebSocket connections (default WS_PING_INTERVAL_SECONDS); tests shorten it. */
  readonly pingIntervalMs?: number
}

export const NODE_SERVER_DEFAULTS: NodeServerOptions = {
  headersTimeoutSeconds: settingDefault("INBOX_HEADERS_TIMEOUT"),
  requestTimeoutSeconds: settingDefault("INBOX_REQUEST_TIMEOUT"),
  maxConnections: settingDefault("INBOX_MAX_CONNECTIONS"),
  maxWebSockets: SETTING_DEFAULTS.maxWebSockets
}

export const KEEP_ALIVE_TIMEOUT_SECONDS = 5
export const MAX_HEADERS_COUNT = 100
export const WS_PING_INTERVAL_SECONDS = 30

/** A WebSocket ping frame from a server: FIN + opcode 0x9, unmasked, no payload. */
const PING_FRAME = Buffer.from([0x89, 0x00])

/** What the heartbeat last saw of one socket. */
interface Beat {
  read: number
  written: number
  pinged: boolean
}

/**
 * Pings each upgraded socket when it has been quiet for an interval, destroys it when it
 * stayed quiet after a ping. Progress is read from the socket's byte counters, so no
 * listener competes with `ws` for the data. One timer walks every socket (a timer and its
 * closures per socket cost memory per connection); a socket is checked one to two intervals
 * after it was last heard, so a peer that never answers is gone within three.
 */
const heartbeat = (intervalMs: number) => {
  const beats = new Map<Socket, Beat>()
  let timer: ReturnType<typeof setInterval> | undefined
  const sweep = () => {
    for (const [socket, beat] of beats) {
      if (socket.destroyed) {
        beats.delete(socket)
        continue
      }
      // Nothing written yet: the 101 has not gone out, and a frame before it would corrupt the handshake.
      if (socket.bytesWritten === 0) continue
      const heard = socket.bytesRead !== beat.read
      if (beat.pinged && !heard) {
        beats.delete(socket)
        socket.destroy()
        continue
      }
      beat.pinged = false
      if (!heard || socket.bytesWritten === beat.written) {
        socket.write(PING_FRAME)
        beat.pinged = !heard
      }
      beat.read = socket.bytesRead
      beat.written = socket.bytesWritten
    }
    if (beats.size === 0) {
      clearInterval(timer)
      timer = undefined
    }
  }
  return (socket: Socket) => {
    beats.set(socket, { read: socket.bytesRead, written: socket.bytesWritten, pinged: false })
    if (timer === undefined) {
      timer = setInterval(sweep, intervalMs)
      timer.unref()
    }
  }
}

/** The options from INBOX_HEADERS_TIMEOUT, INBOX_REQUEST_TIMEOUT and INBOX_MAX_CONNECTIONS. */
export const nodeServerOptionsConfig = Config.all({
  headersTimeoutSeconds: Config.Int("INBOX_HEADERS_TIMEOUT").pipe(Config.withDefault(NODE_SERVER_DEFAULTS.headersTimeoutSeconds)),
  requestTimeoutSeconds: Config.Int("INBOX_REQUEST_TIMEOUT").pipe(Config.withDefault(NODE_SERVER_DEFAULTS.requestTimeoutSeconds)),
  maxConnections: Config.Int("INBOX_MAX_CONNECTIONS").pipe(Config.withDefault(NODE_SERVER_DEFAULTS.maxConnections)),
  maxWebSockets: Config.Int("INBOX_MAX_WEBSOCKETS").pipe(Config.withDefault(SETTING_DEFAULTS.maxWebSockets))
})

const refusalFor = (code: string | undefined, options: NodeServerOptions): ApiError => {
  switch (code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new RequestTimeout({
        message: `The request did not arrive in time (headers within ${options.headersTimeoutSeconds} s, all of it within ${options.requestTimeoutSeconds} s).`
      })
    case "HPE_HEADER_OVERFLOW":
      return new HeadersTooLarge({ message: "The request headers are larger than 16 KB.", fix: "Send fewer or shorter headers." })
    default:
      return new BadRequest({ message: "The request is not valid HTTP." })
  }
}

const SHUTTING_DOWN = new ServiceUnavailable({
  message: "The server is shutting down.",
  fix: "Send the request again: it reaches another server, or this one when it is back.",
  retryAfterSeconds: 1
})

/** Hooks of the shutdown, for the server's log. */
export interface DrainHooks {
  /** The listener closed; `inFlight` requests are still being answered. */
  readonly onDrain?: (inFlight: number) => void
}

/** A whole HTTP/1.1 response, as bytes for a socket Node has given up parsing. */
const rawResponse = (error: ApiError, requestId: string): string => {
  const body = JSON.stringify(errorBody(error))
  const status = statusOf(error)
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "content-type: application/json",
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    "cache-control: no-store",
    "x-content-type-options: nosniff",
    "connection: close",
    ...("retryAfterSeconds" in error && error.retryAfterSeconds !== undefined ? [`retry-after: ${error.retryAfterSeconds}`] : []),
    "",
    body
  ].join("\r\n")
}

const SLOT = Symbol("inbox/openSlot")
type Slotted = ServerResponse & { [SLOT]?: number | undefined }

/**
 * Stops `server` taking requests once `server.close()` is called (the module's "Shutdown").
 * `refused(response)` is what the request listener does first with each request: true when
 * it was refused here.
 */
const drainOnClose = (server: Server, requestId: () => string, hooks: DrainHooks) => {
  // The responses under way, in an array whose slots are reused (each response knows its
  // slot), not a Set: a Set that gains and loses an entry per request reallocates its table,
  // and V8 links each old table to its successor, so once one table is promoted every later
  // one survives the young generation's collections (bench/PROFILE.md, "What the scavenges
  // keep").
  const open: Array<ServerResponse> = []
  let draining = false
  const closeIdle = () => setImmediate(() => server.closeIdleConnections())
  const close = server.close.bind(server)
  server.close = ((callback?: (error?: Error) => void) => {
    if (!draining) {
      draining = true
      // Node decides Connection: keep-alive or close when it writes the headers.
      for (const response of open) if (!response.headersSent) response.shouldKeepAlive = false
      hooks.onDrain?.(open.length)
    }
    const closed = close(callback)
    server.closeIdleConnections()
    return closed
  }) as Server["close"]
  const forget = (response: ServerResponse) => {
    const slot = (response as Slotted)[SLOT]
    if (slot === undefined) return
    const last = open.pop()!
    if (last !== response) {
      open[slot] = last
      ;(last as Slotted)[SLOT] = slot
    }
    ;(response as Slotted)[SLOT] = undefined
  }
  const refused = (response: ServerResponse): boolean => {
    if (draining) {
      const error = SHUTTING_DOWN
      const body = JSON.stringify(errorBody(error))
      response.shouldKeepAlive = false
      response.writeHead(statusOf(error), {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        "x-request-id": requestId(),
        "cache-control": "no-store",
        "retry-after": String(error.retryAfterSeconds)
      })
      response.end(body)
      return true
    }
    // Counted once, should both of Node's events name the same response.
    if ((response as Slotted)[SLOT] === undefined) (response as Slotted)[SLOT] = open.push(response) - 1
    // An answer whose headers said keep-alive before the close leaves its connection idle.
    response.once("close", () => {
      forget(response)
      if (draining) closeIdle()
    })
    return false
  }
  return { refused, draining: () => draining }
}

/**
 * Node's server with the limits above; `requestId` names each refusal written here.
 * `direct`, when given, sees every request first and answers the ones it takes
 * (direct.ts); the rest go on to the listeners Effect's adapter registers.
 */
export const makeNodeServer = (
  options: NodeServerOptions,
  requestId: () => string,
  direct?: (request: IncomingMessage, response: ServerResponse) => boolean,
  hooks: DrainHooks = {},
  webSocket?: (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean
): Server => {
  const requestTimeout = Math.max(1, options.requestTimeoutSeconds) * 1000
  const server = createServer({
    requestTimeout,
    // Node refuses a headers timeout longer than the request timeout.
    headersTimeout: Math.min(Math.max(1, options.headersTimeoutSeconds) * 1000, requestTimeout),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    connectionsCheckingInterval: 1000
  })
  const drain = drainOnClose(server, requestId, hooks)
  // Effect's adapter adds its own "request" listener; the shutdown's refusal and the direct
  // path must run before it and, when they take a request, instead of it, which a second
  // listener cannot do.
  const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event === "request" || event === "checkContinue") {
      const response = args[1] as ServerResponse
      if (drain.refused(response)) return true
      if (event === "request" && direct?.(args[0] as IncomingMessage, response) === true) return true
    } else if (event === "upgrade") {
      const [request, socket, head] = args as [IncomingMessage, Socket, Buffer]
      if (drain.draining()) {
        socket.end(rawResponse(SHUTTING_DOWN, requestId()))
        return true
      }
      if (request.headers.upgrade?.toLowerCase() === "websocket") upgradedWebSocket(socket)
      // The WebSocket's own path (websocket.ts) takes its upgrades instead of Effect's adapter.
      if (webSocket?.(request, socket, head) === true) return true
    }
    return emit(event, ...args)
  }) as Server["emit"]
  server.maxHeadersCount = MAX_HEADERS_COUNT
  // Node's own cap covers every socket; HTTP's share is counted here, so WebSockets (and
  // sockets of refused ones, while they close) never take a connection from HTTP.
  const httpCap = Math.max(1, options.maxConnections)
  server.maxConnections = httpCap + Math.max(0, options.maxWebSockets ?? 0)
  let httpSockets = 0
  const upgraded = new WeakSet<Duplex>()
  server.on("connection", (socket: Socket) => {
    if (httpSockets >= httpCap) {
      socket.destroy()
      return
    }
    httpSockets++
    socket.once("close", () => {
      if (!upgraded.has(socket)) httpSockets--
    })
  })
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way cannot be followed by another one on the same bytes.
    const current = (socket as { _httpMessage?: { readonly headersSent?: boolean } })._httpMessage
    if (!socket.writable || error.code === "ECONNRESET" || current?.headersSent === true) {
      socket.destroy()
      return
    }
    socket.end(rawResponse(refusalFor(error.code, options), requestId()))
  })
  // A WebSocket leaves HTTP's count and is pinged while it lives.
  const beat = heartbeat(options.pingIntervalMs ?? WS_PING_INTERVAL_SECONDS * 1000)
  const upgradedWebSocket = (socket: Socket) => {
    if (upgraded.has(socket)) return
    upgraded.add(socket)
    httpSockets--
    beat(socket)
  }
  return server
}

/** Node's server listening at `listen`, with x-request-ids from the engine; its shutdown is logged. */
export const layerNodeServer = (
  listen: { readonly port: number; readonly host: string; readonly gracefulShutdownTimeout?: Duration.Duration },
  options: NodeServerOptions
) =>
  Layer.unwrap(Effect.gen(function*() {
    const engine = yield* Engine
    const direct = yield* makeDirectPath
    const webSocket = yield* makeDirectWebSocket
    const log = Effect.runForkWith(yield* Effect.context<never>())
    const hooks: DrainHooks = {
      onDrain: (inFlight) => void log(Effect.logInfo("HTTP server closed to new requests").pipe(Effect.annotateLogs({ requests_in_flight: inFlight })))
    }
    return NodeHttpServer.layer(() => makeNodeServer(options, () => Effect.runSync(engine.requestId), direct.listener, hooks, webSocket.upgrade), listen)
  }))
