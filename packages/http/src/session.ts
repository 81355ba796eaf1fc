/**
 * The dashboard session on the wire: the `inbox_session` cookie (HttpOnly, SameSite=Lax,
 * Path=/, Secure when the public URL is https), and resolving it to core's Session. The
 * rules (expiry, CSRF, the role's permissions) are core's (auth/Auth.ts); this module only
 * reads and writes the header.
 */
import { Auth, type CsrfFailed, type EmailNotVerified, type NewSession, type Principal, type Session, Settings, Unauthorized } from "@inbox/core"
import { Effect } from "effect"
import type { WireRequest } from "./wire.ts"

export const SESSION_COOKIE = "inbox_session"

/** The session id the request's Cookie header carries, if any. */
export const sessionIdOf = (request: WireRequest): string | undefined => {
  const header = request.headers["cookie"]
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim()
      // Session ids are 64 hex characters; anything else is not one of ours and is not looked up.
      return /^[0-9a-f]{64}$/.test(value) ? value : undefined
    }
  }
  return undefined
}

/** The live session of the request, or undefined. */
export const currentSession = (request: WireRequest): Effect.Effect<Session | undefined, never, Auth> => {
  const id = sessionIdOf(request)
  return id === undefined ? Effect.succeed(undefined) : Auth.use((auth) => auth.session(id))
}

const attributes = (publicUrl: string) => `Path=/; HttpOnly; SameSite=Lax${publicUrl.startsWith("https:") ? "; Secure" : ""}`

export const sessionCookie = (session: NewSession, nowMs: number) =>
  Settings.useSync((settings) =>
    `${SESSION_COOKIE}=${session.sessionId}; Max-Age=${Math.max(0, Math.floor((session.expiresAt.getTime() - nowMs) / 1000))}; ${attributes(settings.publicUrl)}`
  )

export const clearedCookie = Settings.useSync((settings) => `${SESSION_COOKIE}=; Max-Age=0; ${attributes(settings.publicUrl)}`)

/** The host the request addresses: its Host header, or the authority of an absolute-form target. */
const hostOf = (request: WireRequest): string | undefined =>
  request.headers["host"] ?? (/^[a-z][a-z0-9+.-]*:\/\//i.test(request.originalUrl) ? URL.parse(request.originalUrl)?.host : undefined)

/** Core's CSRF rule for this request (a state-changing session request needs the token and a same-origin Origin). */
export const checkCsrf = (request: WireRequest, session: Session | undefined) =>
  Auth.use((auth) =>
    auth.checkCsrf(session, {
      method: request.method,
      csrfToken: request.headers["x-csrf-token"],
      origin: request.headers["origin"],
      host: hostOf(request)
    })
  )

/**
 * The principal of a /v0 request that carries a session cookie and no API key: the session's
 * person in their current organization with their role's permissions. 401 when the session is
 * unknown or expired (or the person is no longer a member); 403 csrf_failed as `checkCsrf` says;
 * 403 email_not_verified while the person's address is unverified (core's `principalOf`).
 */
export const sessionPrincipal = (
  request: WireRequest
): Effect.Effect<Principal, Unauthorized | CsrfFailed | EmailNotVerified, Auth | Settings> =>
  Effect.gen(function*() {
    const session = yield* currentSession(request)
    const principal = session === undefined ? undefined : yield* Auth.use((auth) => auth.principalOf(session))
    if (principal === undefined) {
      return yield* new Unauthorized({ message: "The session is missing, expired or ended.", fix: "Sign in again with POST /auth/sign-in." })
    }
    yield* checkCsrf(request, session)
    return principal
  })

/**
 * The CSRF rule for a WebSocket opened with the session cookie. The upgrade is a GET, which
 * the rule otherwise lets through, but the socket then streams the organization's mail
 * events: a page of another origin on the same site would receive the cookie (SameSite=Lax)
 * and could read them. So it is held to the rule of a state-changing request, with the token
 * in `?csrf_token=` since a browser cannot set headers on a WebSocket.
 */
export const checkWebSocketCsrf = (request: WireRequest, csrfToken: string | undefined) =>
  Effect.flatMap(currentSession(request), (session) =>
    session === undefined ? Effect.void : Auth.use((auth) =>
      auth.checkCsrf(session, { method: "POST", csrfToken, origin: request.headers["origin"], host: hostOf(request) })
    ))
