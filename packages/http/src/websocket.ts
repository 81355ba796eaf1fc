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
 * A slow consumer is bounded: at most WS_BUFFER frames wait for one connection; beyond
 * that it is closed with code 4008 ("slow consumer") rather than holding memory, and it
 * catches up through the events list after reconnecting.
 */
import { type ApiError, holds, isApiError, LiveEvents, missingPermission, type Subscription } from "@inbox/core"
import { Effect, Latch, Layer, Queue } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Socket } from "effect/socket"
import { errorResponse } from "./respond.ts"
import { authenticateAndLimit, searchParams } from "./request.ts"
import { checkWebSocketCsrf } from "./session.ts"

export const WS_BUFFER = 1000
export const SLOW_CONSUMER_CLOSE = 4008

const handler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const principal = yield* authenticateAndLimit(request, { allowQueryKey: true, allowSession: true })
  if (principal.session !== undefined) yield* checkWebSocketCsrf(request, searchParams(request).get("csrf_token") ?? undefined)
  if (!holds(principal, "message_read")) return yield* missingPermission("message_read")
  const live = yield* LiveEvents
  const socket = yield* request.upgrade
  // Acquiring the reader sends the 101; only then may the writer be used.
  const read = yield* Socket.readerString(socket)
  const writer = yield* socket.writer
  let subscription: Subscription | undefined
  const outbox = yield* Queue.dropping<string>(WS_BUFFER)
  const overflow = yield* Latch.make()
  yield* live.listen(principal, () => subscription, (frame) => {
    if (!Queue.offerUnsafe(outbox, frame)) overflow.openUnsafe()
  })
  yield* Effect.gen(function*() {
    const frames = yield* Queue.takeBetween(outbox, 1, 100)
    yield* writer.writeAll(frames as [string, ...Array<string>])
  }).pipe(Effect.forever, Effect.forkScoped)
  yield* overflow.await.pipe(
    Effect.andThen(writer.write(new Socket.CloseEvent(SLOW_CONSUMER_CLOSE, "slow consumer: too many events waiting"))),
    Effect.forkScoped
  )
  yield* Effect.gen(function*() {
    for (const frame of yield* read) {
      const { subscription: next, reply } = yield* live.subscribe(principal, frame)
      if (next !== undefined) subscription = next
      yield* writer.write(JSON.stringify(reply))
    }
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
