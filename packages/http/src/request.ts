/**
 * Reading a request the way the spec asks: the caller's credential (Bearer header,
 * `?api_key=` on /v0 routes, the session cookie), the JSON body with its content-type and
 * size rules, and the query string. Core admits the credential (engine/credential.ts).
 *
 * Body rules (400 bad_request): a content type other than JSON; a JSON content type with an
 * empty body; invalid JSON, or JSON nested past core's MAX_JSON_DEPTH (refused while
 * scanning, before anything walks it); a body over the route's limit. A body-less POST with
 * no content type is `{}`.
 */
import { BadRequest, type Credential, Engine, intakeFull, jsonBodyOf, type ServiceUnavailable, Settings } from "@inbox/core"
import { ByteSize, Effect, type Scope } from "effect"
import { HttpIncomingMessage } from "effect/http"
import { sessionIdOf } from "./session.ts"
import { BodyRefused, ChunkGate, type WireRequest } from "./wire.ts"

export const DEFAULT_BODY_LIMIT = 1024 * 1024

const bearer = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

export const searchParams = (request: WireRequest): URLSearchParams => {
  const q = request.url.indexOf("?")
  return new URLSearchParams(q === -1 ? "" : request.url.slice(q + 1))
}

/** The host the request addresses: its Host header, or the authority of an absolute-form target. */
export const hostOf = (request: WireRequest): string | undefined =>
  request.headers["host"] ?? (/^[a-z][a-z0-9+.-]*:\/\//i.test(request.originalUrl) ? URL.parse(request.originalUrl)?.host : undefined)

const ANONYMOUS: Credential = { kind: "anonymous" }

/**
 * Who the request says it is, for core to admit: on /auth always the browser (its session
 * cookie, if any, and what the CSRF rule reads); elsewhere the API key of the Bearer header
 * (or, on /v0, of `?api_key=`, which browsers' WebSockets need), else on /v0 the dashboard
 * session of the cookie, else nobody. A key wins over a cookie, so API-key requests never
 * meet the session's CSRF rule.
 */
export const credentialOf = (request: WireRequest, path: string): Credential => {
  const browser = (): Credential => ({
    kind: "session",
    sessionId: sessionIdOf(request),
    csrfToken: request.headers["x-csrf-token"],
    origin: request.headers["origin"],
    host: hostOf(request)
  })
  if (path.startsWith("/auth/")) return browser()
  const onV0 = path.startsWith("/v0/") || path === "/v0"
  const key = bearer(request.headers["authorization"]) ?? (onV0 ? searchParams(request).get("api_key") ?? undefined : undefined)
  if (key !== undefined) return { kind: "key", key }
  return onV0 && sessionIdOf(request) !== undefined ? browser() : ANONYMOUS
}

const isJson = (contentType: string) => {
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? ""
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"))
}

/**
 * The body as bytes, refused past `limit` (400 bad_request, or the route's own `tooLarge`);
 * the cap also stops a chunked body without a length.
 *
 * The bytes count against the engine's intake budget for as long as the caller's scope lasts (the
 * request's handling): a declared length is reserved before reading, a chunked body chunk by
 * chunk as it arrives (where the carrier reads so; otherwise its limit up front). Past the
 * budget the read stops: 503 service_unavailable with Retry-After.
 */
export const readBytes = <E = BadRequest>(
  request: WireRequest,
  limit: number,
  tooLarge: () => E | BadRequest = () => new BadRequest({ message: `The request body is larger than ${limit} bytes.` })
): Effect.Effect<Uint8Array, E | BadRequest | ServiceUnavailable, Engine | Scope.Scope> =>
  Effect.gen(function*() {
    const declared = Number(request.headers["content-length"] ?? "NaN")
    const known = Number.isFinite(declared) && declared >= 0
    if (known && declared > limit) return yield* Effect.fail(tooLarge())
    if (known && declared === 0) return new Uint8Array()
    const reserver = (yield* Engine).intake.reserver()
    yield* Effect.addFinalizer(() => Effect.sync(reserver.releaseAll))
    // Reserved before a byte is read: a refused client never makes the server hold its body.
    if (known && !reserver.take(declared)) return yield* intakeFull()
    let gated = known
    const gate = (bytes: number) => {
      gated = true
      return reserver.take(bytes)
    }
    const read = yield* request.arrayBuffer.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit + 1)),
      Effect.provideService(ChunkGate, known ? () => true : gate),
      Effect.mapError((e) => e instanceof BodyRefused ? intakeFull() : tooLarge())
    )
    const bytes = new Uint8Array(read)
    if (bytes.byteLength > limit) return yield* Effect.fail(tooLarge())
    // A carrier that hands the body over whole (no chunk was offered to the gate) counts it now.
    if (!gated && !reserver.take(bytes.byteLength)) return yield* intakeFull()
    return bytes
  })

const charsetOf = (contentType: string): string | undefined =>
  /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1]?.toLowerCase()

export const readJsonBody = (
  request: WireRequest,
  limit: number
): Effect.Effect<unknown, BadRequest | ServiceUnavailable, Engine | Scope.Scope> =>
  Effect.gen(function*() {
    const contentType = request.headers["content-type"]
    const bytes = yield* readBytes(request, limit)
    if (contentType === undefined || contentType.trim() === "") {
      if (bytes.byteLength === 0) return {}
      return yield* new BadRequest({ message: "A request body needs Content-Type: application/json." })
    }
    if (!isJson(contentType)) {
      return yield* new BadRequest({
        message: `Unsupported content type ${contentType}.`,
        fix: "Send JSON with Content-Type: application/json."
      })
    }
    const charset = charsetOf(contentType)
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      return yield* new BadRequest({ message: `Unsupported charset ${charset}.`, fix: "Send JSON in UTF-8." })
    }
    return yield* jsonBodyOf(bytes)
  })

/** Query parameters as an object; a repeated parameter keeps its last value. */
export const queryObject = (request: WireRequest, omit: ReadonlyArray<string>): Record<string, string> => {
  const result: Record<string, string> = {}
  if (!request.url.includes("?")) return result
  for (const [k, v] of searchParams(request)) if (!omit.includes(k)) result[k] = v
  return result
}

const normaliseIp = (ip: string): string => ip.trim().toLowerCase().replace(/^::ffff:(?=\d+\.)/, "")

/**
 * The client's address for limits: the socket's peer, unless that peer is one of
 * INBOX_TRUSTED_PROXIES; then the nearest address in X-Forwarded-For that is not itself a
 * trusted proxy. A client cannot choose its own address by sending the header directly.
 */
export const clientIp = (request: WireRequest): Effect.Effect<string, never, Settings> =>
  Settings.useSync((settings) => clientIpWith(settings, request))

/** The same, with the settings at hand. */
export const clientIpWith = (settings: Settings["Service"], request: WireRequest): string => {
  const peer = request.remoteAddress._tag === "Some" ? normaliseIp(request.remoteAddress.value) : "local"
  if (settings.trustedProxies.length === 0 || !settings.trustedProxies.includes(peer)) return peer
  const forwarded = (request.headers["x-forwarded-for"] ?? "").split(",").map(normaliseIp).filter((s) => s.length > 0)
  for (let i = forwarded.length - 1; i >= 0; i--) {
    const hop = forwarded[i] ?? ""
    if (!settings.trustedProxies.includes(hop)) return hop
  }
  return peer
}
