/**
 * A request as the HTTP layer reads it, whichever server carried it: Effect's request (the
 * router's routes, the in-process test app) or Node's IncomingMessage on the direct path
 * (direct.ts). Every reading rule (the key, the session cookie, the body, the client's
 * address, the Host check) is written once against this shape, so both carriers answer
 * alike.
 */
import { Context, Effect, Option } from "effect"
import { HttpIncomingMessage } from "effect/http"
import type { IncomingMessage } from "node:http"

export interface WireRequest {
  readonly method: string
  /** The target as sent, path and query (`/v0/inboxes?limit=2`). */
  readonly url: string
  /** The request target before any rewriting; absolute-form targets keep their authority. */
  readonly originalUrl: string
  /** Lower-case names; a repeated header is joined as Node joins it. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly remoteAddress: Option.Option<string>
  /** The whole body; over `HttpIncomingMessage.MaxBodySize` it fails. */
  readonly arrayBuffer: Effect.Effect<ArrayBuffer, unknown>
}

const EMPTY = new ArrayBuffer(0)

/**
 * Asked for each chunk of a body as it arrives, where the carrier reads chunk by chunk
 * (fromNode): false refuses the chunk and the rest of the body (`BodyRefused`). The default
 * admits everything.
 */
export const ChunkGate = Context.Reference<(bytes: number) => boolean>("inbox/http/ChunkGate", { defaultValue: () => () => true })

/** The body read stopped because ChunkGate refused a chunk. */
export class BodyRefused extends Error {
  override readonly name = "BodyRefused"
}

/**
 * Node's request as a WireRequest. The body is read when asked for, at most MaxBodySize
 * bytes: past it the read fails at once, without buffering the rest.
 */
export const fromNode = (request: IncomingMessage): WireRequest => {
  const url = request.url ?? "/"
  const address = request.socket.remoteAddress
  return {
    method: request.method ?? "GET",
    url,
    originalUrl: url,
    headers: request.headers as Record<string, string | undefined>,
    remoteAddress: address === undefined ? Option.none() : Option.some(address),
    // Built when asked for: most requests (every GET) never read a body.
    get arrayBuffer() {
      return readNode(request)
    }
  }
}

const readNode = (request: IncomingMessage): Effect.Effect<ArrayBuffer, unknown> =>
  Effect.flatMap(Effect.all([Effect.service(HttpIncomingMessage.MaxBodySize), Effect.service(ChunkGate)]), ([max, gate]) =>
    Effect.callback<ArrayBuffer, Error>((resume) => {
      const limit = max === undefined ? Number.POSITIVE_INFINITY : Number(max)
      const chunks: Array<Buffer> = []
      let size = 0
      const onData = (chunk: Buffer) => {
        size += chunk.byteLength
        if (size > limit) {
          cleanup()
          resume(Effect.fail(new Error("body too large")))
          return
        }
        if (!gate(chunk.byteLength)) {
          cleanup()
          resume(Effect.fail(new BodyRefused()))
          return
        }
        chunks.push(chunk)
      }
      const onEnd = () => {
        cleanup()
        if (size === 0) return resume(Effect.succeed(EMPTY))
        const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
        resume(Effect.succeed(whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength) as ArrayBuffer))
      }
      const onError = (error: Error) => {
        cleanup()
        resume(Effect.fail(error))
      }
      const cleanup = () => {
        request.off("data", onData)
        request.off("end", onEnd)
        request.off("error", onError)
      }
      if (request.readableEnded) return resume(Effect.succeed(EMPTY))
      request.on("data", onData)
      request.on("end", onEnd)
      request.on("error", onError)
      return Effect.sync(cleanup)
    }))

/** A web Request (the in-process test app) as a WireRequest; it has no peer address. */
export const fromWeb = (request: Request): WireRequest => {
  const url = new URL(request.url)
  const headers: Record<string, string> = {}
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  // A web Request carries its host in the URL only (Host is not a header it may set).
  headers["host"] ??= url.host
  return {
    method: request.method,
    url: url.pathname + url.search,
    originalUrl: url.pathname + url.search,
    headers,
    remoteAddress: Option.none(),
    arrayBuffer: Effect.flatMap(Effect.service(HttpIncomingMessage.MaxBodySize), (max) =>
      Effect.flatMap(Effect.promise(() => request.arrayBuffer()), (body) =>
        max !== undefined && body.byteLength > Number(max) ? Effect.fail(new Error("body too large")) : Effect.succeed(body)))
  }
}
