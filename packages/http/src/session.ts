/**
 * The dashboard session on the wire: the `inbox_session` cookie (HttpOnly, SameSite=Lax,
 * Path=/, Secure when the public URL is https). The rules (expiry, CSRF, the role's
 * permissions) are core's (auth/Auth.ts, engine/credential.ts); this module only reads and
 * writes the header.
 */
import { type NewSession, Settings } from "@inbox/core"
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

const attributes = (publicUrl: string) => `Path=/; HttpOnly; SameSite=Lax${publicUrl.startsWith("https:") ? "; Secure" : ""}`

export const sessionCookie = (session: NewSession, nowMs: number) =>
  Settings.useSync((settings) =>
    `${SESSION_COOKIE}=${session.sessionId}; Max-Age=${Math.max(0, Math.floor((session.expiresAt.getTime() - nowMs) / 1000))}; ${attributes(settings.publicUrl)}`
  )

export const clearedCookie = Settings.useSync((settings) => `${SESSION_COOKIE}=; Max-Age=0; ${attributes(settings.publicUrl)}`)
