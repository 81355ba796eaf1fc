/**
 * The dashboard's /auth endpoints. They are not catalogue operations: they set and clear the
 * session cookie and exist only for the browser (no MCP tool, no CLI command), so they are
 * routes of this adapter over core's Auth service, where every rule lives (auth/Auth.ts).
 * Each route here reads the cookie and body, applies core's CSRF rule, calls one service
 * method and writes the answer (README "Dashboard accounts (/auth)").
 *
 * Every answer is `Cache-Control: no-store`. Requests count against the client IP's request
 * limit like key-less /v0 requests.
 */
import { type ApiError, Auth, AuthModel, decodeInput, type EngineServices, isApiError, type Session, Unauthorized } from "@inbox/core"
import { Clock, Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse, json } from "./respond.ts"
import { clientIp, limitRequest, readJsonBody } from "./request.ts"
import { checkCsrf, clearedCookie, currentSession, sessionCookie, sessionIdOf } from "./session.ts"

const BODY_LIMIT = 16 * 1024
const NO_STORE = { "cache-control": "no-store" }

type Fields = Schema.Top & { readonly fields: Schema.Struct.Fields; readonly DecodingServices: never }

interface Context<I> {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly session: Session | undefined
  readonly input: I
  readonly ip: string
}

/**
 * One /auth route: `session: "required"` answers 401 without a live session; every route
 * applies the CSRF rule (with a session: token and same-origin Origin; without: a page on
 * another origin is still refused, so no site can sign a browser in or up).
 */
const authRoute = <S extends Fields | undefined>(
  method: "GET" | "POST",
  path: `/auth/${string}`,
  options: { readonly session: "required" | "optional"; readonly body?: S },
  handle: (context: Context<S extends Fields ? S["Type"] : Record<string, never>>) => Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError, EngineServices>
) =>
  HttpRouter.add(method, path, Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const ip = yield* clientIp(request)
    yield* limitRequest(undefined, ip)
    const session = yield* currentSession(request)
    if (options.session === "required" && session === undefined) {
      return yield* new Unauthorized({ message: "You are not signed in, or the session expired.", fix: "Sign in with POST /auth/sign-in." })
    }
    yield* checkCsrf(request, session)
    const body = method === "POST" ? yield* readJsonBody(request, BODY_LIMIT) : {}
    const input = options.body === undefined ? yield* decodeInput(EMPTY, body) : yield* decodeInput(options.body, body)
    const response = yield* handle({ request, session, input: input as never, ip })
    return HttpServerResponse.setHeaders(response, NO_STORE)
  }).pipe(Effect.scoped, Effect.catchIf(isApiError, (e: ApiError) => Effect.succeed(errorResponse(e, NO_STORE)))))

const EMPTY = Schema.Struct({})

const withCookie = (response: HttpServerResponse.HttpServerResponse, cookie: string) => HttpServerResponse.setHeader(response, "set-cookie", cookie)

/** The signed-in answer: `GET /auth/me`'s body with the new session's cookie. */
const signedIn = (created: { readonly sessionId: string; readonly csrfToken: string; readonly expiresAt: Date }) =>
  Effect.gen(function*() {
    const service = yield* Auth
    const session = yield* service.session(created.sessionId)
    if (session === undefined) return yield* Effect.die("a session just created is not live")
    return withCookie(json(200, yield* service.me(session)), yield* sessionCookie(created, yield* Clock.currentTimeMillis))
  })

const accepted = (message: string) => json(202, { status: "accepted", message })

const required = (session: Session | undefined): Session => {
  if (session === undefined) throw new Error("a required session is missing")
  return session
}

const routes = [
  authRoute("POST", "/auth/sign-up", { session: "optional", body: AuthModel.SignUpInput }, ({ input }) =>
    Effect.gen(function*() {
      yield* (yield* Auth).signUp(input)
      // The same answer whether or not the email already had an account.
      return accepted("If the address can be used, a message is on its way to it. Follow it, then sign in.")
    })),
  authRoute("POST", "/auth/verify-email", { session: "optional", body: AuthModel.TokenInput }, ({ input }) =>
    Effect.as(Auth.use((a) => a.verifyEmail(input.token)), json(200, { verified: true }))),
  authRoute("POST", "/auth/resend-verification", { session: "optional", body: AuthModel.EmailInput }, ({ input }) =>
    Effect.as(Auth.use((a) => a.resendVerification(input.email)), accepted("If the address has an unverified account, a new link is on its way."))),
  authRoute("POST", "/auth/sign-in", { session: "optional", body: AuthModel.SignInInput }, ({ input, ip, request }) =>
    Effect.gen(function*() {
      const service = yield* Auth
      const created = yield* service.signIn(input, ip)
      // Renewed on sign-in: a session the browser held before (perhaps planted) ends here.
      const previous = sessionIdOf(request)
      if (previous !== undefined) {
        const old = yield* service.session(previous)
        if (old !== undefined) yield* service.signOut(old)
      }
      return yield* signedIn(created)
    })),
  authRoute("POST", "/auth/sign-out", { session: "required" }, ({ session }) =>
    Effect.gen(function*() {
      yield* (yield* Auth).signOut(required(session))
      return withCookie(HttpServerResponse.empty({ status: 204 }), yield* clearedCookie)
    })),
  authRoute("GET", "/auth/me", { session: "required" }, ({ session }) =>
    Effect.map(Auth.use((a) => a.me(required(session))), (me) => json(200, me))),
  authRoute("POST", "/auth/organization", { session: "required", body: AuthModel.SwitchOrganizationInput }, ({ session, input }) =>
    Effect.gen(function*() {
      const service = yield* Auth
      yield* service.switchOrganization(required(session), input.organization_id)
      return json(200, { ...(yield* service.me(required(session))), organization_id: input.organization_id })
    })),
  authRoute("POST", "/auth/password-reset", { session: "optional", body: AuthModel.EmailInput }, ({ input }) =>
    Effect.as(Auth.use((a) => a.requestPasswordReset(input.email)), accepted("If the address has an account, a reset link is on its way."))),
  authRoute("POST", "/auth/password-reset/confirm", { session: "optional", body: AuthModel.ResetPasswordInput }, ({ input }) =>
    Effect.gen(function*() {
      yield* (yield* Auth).resetPassword(input.token, input.password)
      return withCookie(json(200, { reset: true }), yield* clearedCookie)
    })),
  authRoute("POST", "/auth/password", { session: "required", body: AuthModel.ChangePasswordInput }, ({ session, input, ip }) =>
    Effect.flatMap(Auth.use((a) => a.changePassword(required(session), input, ip)), signedIn)),
  authRoute("POST", "/auth/2fa/setup", { session: "required" }, ({ session }) =>
    Effect.map(Auth.use((a) => a.setupTwoFactor(required(session))), (setup) => json(200, setup))),
  authRoute("POST", "/auth/2fa/enable", { session: "required", body: AuthModel.CodeInput }, ({ session, input, ip }) =>
    Effect.map(Auth.use((a) => a.enableTwoFactor(required(session), input.code, ip)), (r) => json(200, { enabled: true, ...r }))),
  authRoute("POST", "/auth/2fa/disable", { session: "required", body: AuthModel.CodeInput }, ({ session, input, ip }) =>
    Effect.as(Auth.use((a) => a.disableTwoFactor(required(session), input.code, ip)), json(200, { enabled: false }))),
  authRoute("POST", "/auth/invitations", { session: "required", body: AuthModel.InviteInput }, ({ session, input }) =>
    Effect.map(Auth.use((a) => a.invite(required(session), input)), (invitation) => json(200, invitation))),
  authRoute("POST", "/auth/invitations/accept", { session: "required", body: AuthModel.TokenInput }, ({ session, input }) =>
    Effect.map(Auth.use((a) => a.acceptInvitation(required(session), input.token)), (r) => json(200, r)))
]

export const AuthRoutes = routes.reduce((all, route) => Layer.merge(all, route), Layer.empty as (typeof routes)[number])
