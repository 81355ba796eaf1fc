/**
 * A browser for the /auth tests: it keeps the session cookie the server sets, sends the CSRF
 * token and a same-origin Origin on state-changing requests (as the dashboard does), and
 * comes from its own client IP (the tests trust the harness as a proxy, so X-Forwarded-For
 * names the client) so attempt limits of one test never reach another.
 */
import { type OutgoingMail } from "@inbox/core/internal"
import { CapturedMail, TEST_HOST, TestApp, type TestResponse } from "@inbox/testkit"
import { Clock, Effect } from "effect"
import { TOTP } from "otpauth"

export const ORIGIN = `http://${TEST_HOST}`

let clients = 0
let emails = 0

export const uniqueEmail = (name = "person") => `${name}-${Date.now().toString(36)}-${emails++}@example.org`

export interface Browser {
  readonly ip: string
  cookie: string | undefined
  csrf: string | undefined
  request(method: string, path: string, json?: unknown, headers?: Record<string, string>): Effect.Effect<TestResponse, never, TestApp>
}

/** A browser whose pages are on `origin` (the harness's own, by plain http, unless given). */
export const browser = (origin = ORIGIN): Browser => {
  const ip = `10.${(clients >> 16) & 255}.${(clients >> 8) & 255}.${clients++ & 255}`
  const self: Browser = {
    ip,
    cookie: undefined,
    csrf: undefined,
    request: (method, path, json, headers = {}) =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const res = yield* app.request(method, path, {
          ...(json === undefined ? {} : { json }),
          headers: {
            "x-forwarded-for": ip,
            ...(self.cookie === undefined ? {} : { cookie: self.cookie }),
            ...(method === "GET" ? {} : { origin, ...(self.csrf === undefined ? {} : { "x-csrf-token": self.csrf }) }),
            ...headers
          }
        })
        const setCookie = res.headers.get("set-cookie")
        if (setCookie !== null) {
          const value = setCookie.split(";")[0] ?? ""
          self.cookie = value.endsWith("=") ? undefined : value
        }
        if (typeof res.body?.csrf_token === "string") self.csrf = res.body.csrf_token
        return res
      })
  }
  return self
}

const textOf = (mail: OutgoingMail) =>
  Buffer.from(mail.raw).toString("utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "=")

/** The mails captured so far to `address`. */
export const mailsTo = (address: string) =>
  Effect.gen(function*() {
    const all = yield* (yield* CapturedMail).all
    return all.filter((m) => m.envelope.to.includes(address.toLowerCase())).map(textOf)
  })

/** The token of the newest mailed link to `path` for `address`. */
export const mailedToken = (address: string, path: string) =>
  Effect.gen(function*() {
    const texts = yield* mailsTo(address)
    for (const text of [...texts].reverse()) {
      const match = new RegExp(`/${path}\\?token=([0-9a-f]{64})`).exec(text)
      if (match?.[1] !== undefined) return match[1]
    }
    return yield* Effect.die(`no ${path} link mailed to ${address}`)
  })

/** The authenticator's current code for `secret`, at the test clock's time plus `offsetSeconds`. */
export const totpCode = (secret: string, offsetSeconds = 0) =>
  Effect.map(Clock.currentTimeMillis, (ms) => new TOTP({ secret, digits: 6, period: 30, algorithm: "SHA1" }).generate({ timestamp: ms + offsetSeconds * 1000 }))

/** Signs up, verifies by the mailed link and signs in: a browser with a session and its own organization (open sign-up). */
export const signedInOwner = (email = uniqueEmail("owner"), password = "correct horse battery", origin = ORIGIN) =>
  Effect.gen(function*() {
    const b = browser(origin)
    const up = yield* b.request("POST", "/auth/sign-up", { email, password })
    if (up.status !== 202) return yield* Effect.die(`sign-up failed: ${up.text}`)
    const token = yield* mailedToken(email, "verify-email")
    yield* b.request("POST", "/auth/verify-email", { token })
    const signIn = yield* b.request("POST", "/auth/sign-in", { email, password })
    if (signIn.status !== 200) return yield* Effect.die(`sign-in failed: ${signIn.text}`)
    return { browser: b, email, password, organizationId: signIn.body.organization_id as string }
  })
