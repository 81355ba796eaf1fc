/**
 * Who is calling: the credential an adapter read off the wire, turned into the caller an
 * operation runs for. The rules are the spec's and ours (docs/api.md), kept here once so REST,
 * /auth, MCP, the WebSocket, the CLI and embedding applications admit alike:
 *
 * - an API key (`Authorization: Bearer`, or `?api_key=` on /v0): 401 unauthorized when
 *   unknown or revoked; its requests count against the key's limit;
 * - a dashboard session (the cookie): for a member operation, the person in their current
 *   organization with their role's permissions (401 when the session is gone, 403
 *   email_not_verified while their address is not verified); for an /auth operation, the
 *   session itself. A state-changing request of a browser must carry the session's CSRF
 *   token and come from a page of this server (403 csrf_failed); without a session a page
 *   of another origin is still refused, so no site can sign a browser in or up;
 * - the operator on this machine (`local`): inboxctl and embedding applications, for the
 *   operator's own operations; never counted against a limit;
 * - a principal already admitted (an MCP tool call inside an admitted request, an
 *   embedding application that resolved its key once): run as is, not counted again;
 * - nobody: counted against the client IP's limit.
 *
 * A request refused for its credential counts against its client IP's limit, so guessing
 * keys runs into 429 like any other flood.
 */
import { Effect } from "effect"
import type { Principal } from "../access/Principal.ts"
import type { Session } from "../access/Session.ts"
import { ApiKeys } from "../apikeys/ApiKeys.ts"
import { Auth } from "../auth/Auth.ts"
import type { CallContext } from "../catalogue/Operation.ts"
import { type CsrfFailed, type EmailNotVerified, type RateLimited, Unauthorized } from "../errors/errors.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { Settings } from "../settings/Settings.ts"

export type Credential =
  | { readonly kind: "anonymous" }
  | { readonly kind: "key"; readonly key: string }
  /**
   * A browser: its session cookie's value if it sent one, and what the CSRF rule reads
   * (the `x-csrf-token` header, `Origin`, and the host the request addressed).
   */
  | {
    readonly kind: "session"
    readonly sessionId: string | undefined
    readonly csrfToken?: string | undefined
    readonly origin?: string | undefined
    readonly host?: string | undefined
  }
  | { readonly kind: "local" }
  | { readonly kind: "principal"; readonly principal: Principal }

const ANONYMOUS: Credential = { kind: "anonymous" }

/** The credential of a raw call: its own, or the principal it names, or nobody. */
export const credentialOf = (call: { readonly credential?: Credential | undefined; readonly principal?: Principal | undefined }): Credential =>
  call.credential ?? (call.principal === undefined ? ANONYMOUS : { kind: "principal", principal: call.principal })

/** Counts a request against its key's limit, or its IP's; the operator's own and admitted principals are not counted. */
export const countRequest = (credential: Credential, keyId: string | undefined, context: CallContext): Effect.Effect<void, RateLimited, RateLimiter> =>
  credential.kind === "local" || credential.kind === "principal" ? Effect.void : RateLimiter.use((limiter) => limiter.request(keyId, context.clientIp))

/** A refused credential still counts, against the client IP: past its limit the refusal is 429. */
const refusedCounts = <A, E, R>(credential: Credential, context: CallContext, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.catch((e) => Effect.andThen(countRequest(credential, undefined, context), Effect.fail(e))))

const notSignedIn = () => new Unauthorized({ message: "The session is missing, expired or ended.", fix: "Sign in again with POST /auth/sign-in." })

const csrf = (session: Session | undefined, credential: Credential & { readonly kind: "session" }, stateChanging: boolean) =>
  Auth.use((auth) =>
    auth.checkCsrf(session, {
      method: stateChanging ? "POST" : "GET",
      csrfToken: credential.csrfToken,
      origin: credential.origin,
      host: credential.host
    })
  )

/**
 * The member a credential stands for, counted: a key's principal, a session's person in
 * their organization, or an admitted principal. Nobody (or the local operator) is 401.
 */
export const admitMember = (
  credential: Credential,
  request: { readonly stateChanging: boolean },
  context: CallContext
): Effect.Effect<Principal, Unauthorized | CsrfFailed | EmailNotVerified | RateLimited, ApiKeys | Auth | RateLimiter | Settings> => {
  switch (credential.kind) {
    case "principal":
      return Effect.succeed(credential.principal)
    case "key":
      return refusedCounts(credential, context, ApiKeys.use((keys) => keys.authenticate(credential.key))).pipe(
        Effect.tap((principal) => countRequest(credential, principal.keyId, context))
      )
    case "session":
      return refusedCounts(
        credential,
        context,
        Effect.gen(function*() {
          const auth = yield* Auth
          const session = credential.sessionId === undefined ? undefined : yield* auth.session(credential.sessionId)
          const principal = session === undefined ? undefined : yield* auth.principalOf(session)
          if (principal === undefined) return yield* notSignedIn()
          yield* csrf(session, credential, request.stateChanging)
          return principal
        })
      ).pipe(Effect.tap(() => countRequest(credential, undefined, context)))
    case "anonymous":
    case "local":
      return refusedCounts(
        credential,
        context,
        Effect.fail(new Unauthorized({ message: "This operation needs an API key.", fix: "Send Authorization: Bearer am_..." }))
      )
  }
}

/**
 * The session of an /auth operation, counted against the client IP: the browser's live
 * session (401 when `required` and there is none), held to the CSRF rule. Any other
 * credential has no session.
 */
export const admitSession = (
  credential: Credential,
  request: { readonly required: boolean; readonly stateChanging: boolean },
  context: CallContext
): Effect.Effect<Session | undefined, Unauthorized | CsrfFailed | RateLimited, Auth | RateLimiter | Settings> =>
  Effect.gen(function*() {
    yield* countRequest(credential, undefined, context)
    const session = credential.kind === "session" && credential.sessionId !== undefined
      ? yield* Auth.use((auth) => auth.session(credential.sessionId!))
      : undefined
    if (request.required && session === undefined) {
      return yield* new Unauthorized({ message: "You are not signed in, or the session expired.", fix: "Sign in with POST /auth/sign-in." })
    }
    if (credential.kind === "session") yield* csrf(session, credential, request.stateChanging)
    return session
  })
