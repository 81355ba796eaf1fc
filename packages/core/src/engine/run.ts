/**
 * Running a catalogue operation from untrusted input. Every adapter (REST, MCP, the CLI,
 * the mail servers) and every embedding application goes through here, so they admit,
 * refuse and answer alike. The order is fixed and is docs/api.md's ("Order of checks"):
 * 1. the caller, from its credential alone (credential.ts): an API key, a dashboard
 *    session (with the CSRF rule), the operator's secret or signature headers, the operator
 *    on this machine, or nobody; the request is counted against its key's or its IP's
 *    limit, a refused one against its IP's;
 * 2. access: a member operation without a member is 401; a scope that may never do it (by
 *    any route, or by the route called), or a missing permission, is 403
 *    missing_permission; an operator route without its secret is 401 (503 not_configured
 *    when the server has none);
 * 3. the body is read (an adapter reading from a socket hands over `body` to be run only
 *    now, so a refused caller never makes the server read or hold what it sends), and a
 *    provider's signature over it is checked;
 * 4. validation: path parameters, named headers and the body or query are decoded, and any
 *    request that can never succeed is 400 before anything is read or written; then the
 *    permissions this particular input needs (`permissionsFor`: 403 missing_permission);
 * 5. the operation runs; conflicts, limits and not-found come from there.
 * An unreachable database, met anywhere on the way, is the operation's 503
 * service_unavailable (db/Availability.ts), not a defect.
 */
import { Effect, Exit, Schema } from "effect"
import { holds, missingPermission, type Principal, scopeTooNarrow } from "../access/Principal.ts"
import type { ApiKeys } from "../apikeys/ApiKeys.ts"
import type { Auth } from "../auth/Auth.ts"
import { admitOperator, verifyOperatorBody } from "../catalogue/operator.ts"
import { Availability } from "../db/Availability.ts"
import { type Anonymous, type CallContext, type LocalOperator, type Operation, type Operator, routeOf } from "../catalogue/Operation.ts"
import { type ApiError, Forbidden, Unauthorized, type ValidationError } from "../errors/errors.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { Settings } from "../settings/Settings.ts"
import { Id } from "../shared/fields.ts"
import { traced } from "../shared/span.ts"
import { decodeInput, issuesOf, validationError } from "../shared/validation.ts"
import { admitMember, admitSession, countRequest, type Credential, credentialOf } from "./credential.ts"

export type { Credential }

export interface RawCall {
  /** Who calls: an API key, a session, the local operator, a principal already admitted, or nobody (the default). */
  readonly credential?: Credential
  /** A member already admitted (the same as `credential: { kind: "principal" }`). */
  readonly principal?: Principal | undefined
  readonly params?: Readonly<Record<string, string | undefined>>
  /** Parsed JSON body or query object. */
  readonly input?: unknown
  /** Request headers, lower-case names. */
  readonly headers?: Readonly<Record<string, string | undefined>>
  /** The body as bytes, for operations that take it raw. */
  readonly raw?: Uint8Array
  /**
   * The body not yet read: run once access is granted, it gives `input` (a JSON body, or
   * the query) and `raw`, in place of the two fields above.
   */
  readonly body?: Effect.Effect<{ readonly input?: unknown; readonly raw?: Uint8Array }, ApiError>
  readonly context: CallContext
}

/** What running an operation needs besides the operation's own services: the caller's admission. */
export type AdmissionServices = ApiKeys | Auth | RateLimiter | Settings

const ANONYMOUS: Anonymous = { kind: "anonymous" }
const LOCAL: LocalOperator = { kind: "local" }

const decodeId = Schema.decodeUnknownExit(Id)

/** A request that changes something, for the CSRF rule: any route but a GET. */
const stateChanging = (op: Operation<unknown>) => op.routes.length === 0 || op.routes[0]?.method !== "GET"

const admit = (op: Operation<unknown>, call: RawCall, credential: Credential): Effect.Effect<unknown, ApiError, AdmissionServices> => {
  const access = op.access
  const context = call.context
  switch (access.kind) {
    case "public":
      return Effect.as(countRequest(credential, undefined, context), ANONYMOUS as unknown)
    case "local":
      return credential.kind === "local"
        ? Effect.succeed<unknown>(LOCAL)
        : Effect.fail(new Forbidden({ message: "Only the operator on this machine may do this (inboxctl, or an application embedding the engine)." }))
    case "operator": {
      if (credential.kind === "local") return Effect.succeed<unknown>({ kind: "operator", credential: "local" } satisfies Operator)
      const operator: Operator = { kind: "operator", credential: access.credential }
      return countRequest(credential, undefined, context).pipe(
        Effect.andThen(admitOperator(access.credential, call.headers ?? {})),
        Effect.as(operator as unknown)
      )
    }
    case "session":
      return Effect.map(admitSession(credential, { required: access.session === "required", stateChanging: stateChanging(op) }, context), (s) => s as unknown)
    case "member":
      return Effect.flatMap(admitMember(credential, { stateChanging: stateChanging(op) }, context), (principal) => {
        context.onAdmit?.(principal.organizationId)
        const scopes = routeOf(op, call.params ?? {})?.scopes ?? access.scopes
        if (scopes !== undefined && !scopes.includes(principal.scope.type)) return Effect.fail(scopeTooNarrow(principal, scopes))
        if (!holds(principal, access.permission)) return Effect.fail(missingPermission(access.permission))
        return Effect.succeed<unknown>(principal)
      })
  }
}

// Every request decodes its path parameters: synchronously, with no fiber work unless one is refused.
const decodeParams = (
  op: Operation<unknown>,
  given: Readonly<Record<string, string | undefined>>
): Effect.Effect<Record<string, string | undefined>, ValidationError> => {
  const params: Record<string, string | undefined> = {}
  for (const p of op.params) {
    const value = given[p.name]
    if (value === undefined) {
      if (p.required) return Effect.fail(validationError([{ path: [p.name], message: "Missing key" }]))
      continue
    }
    const decoded = decodeId(value)
    if (Exit.isFailure(decoded)) {
      return Effect.mapError(Effect.failCause(decoded.cause), (e) => validationError(issuesOf(e.issue).map((i) => ({ ...i, path: [p.name] }))))
    }
    params[p.name] = decoded.value
  }
  return Effect.succeed(params)
}

const decodeHeaders = (op: Operation<unknown>, headers: Readonly<Record<string, string | undefined>>) => {
  const schema = op.headers
  if (schema === undefined) return Effect.succeed({})
  const picked: Record<string, string> = {}
  for (const name of Object.keys(schema.fields)) {
    const value = headers[name]
    if (value !== undefined) picked[name] = value
  }
  return decodeInput(schema, picked, "headers")
}

/** The permissions this input needs besides the operation's own (`permissionsFor`). */
const checkInputPermissions = (op: Operation<unknown>, principal: unknown, input: unknown) => {
  if (op.permissionsFor === undefined) return Effect.void
  for (const permission of op.permissionsFor(input as never)) {
    if (!holds(principal as never, permission)) return Effect.fail(missingPermission(permission))
  }
  return Effect.void
}

/**
 * `f` after `effect`. A check that had nothing to refuse answers with an exit already (an
 * `Effect.succeed`); then `f` runs at once, without a fiber step, and most requests take that
 * way at every check below.
 */
const then = <A, E, R, B, E2, R2>(effect: Effect.Effect<A, E, R>, f: (a: A) => Effect.Effect<B, E2, R2>): Effect.Effect<B, E | E2, R | R2> =>
  Exit.isExit(effect) ? (Exit.isSuccess(effect) ? f(effect.value as A) : effect as Exit.Exit<never, E>) : Effect.flatMap(effect, f)

/** Steps 3 to 5 for an admitted caller, with the body read. */
const admitted = <Services>(op: Operation<Services>, call: RawCall, principal: unknown, body: { readonly input?: unknown; readonly raw?: Uint8Array }) => {
  const raw = body.raw ?? new Uint8Array()
  const verified = op.access.kind === "operator" && (principal as Operator).credential !== "local"
    ? verifyOperatorBody(op.access.credential, call.headers ?? {}, raw)
    : Effect.void
  return then(verified, () =>
    then(decodeParams(op, call.params ?? {}), (params) =>
      then(decodeHeaders(op, call.headers ?? {}), (headers) => {
        const method = op.routes[0]?.method
        const where = op.query !== undefined || method === "GET" || method === "DELETE" ? "query" : "body"
        return then(decodeInput(op.input, body.input, where), (input) =>
          then(checkInputPermissions(op, principal, input), () => op.run({ principal, params, input, headers, raw, context: call.context })))
      })))
}

export const runOperation = <Services>(op: Operation<Services>, call: RawCall): Effect.Effect<unknown, ApiError, Services | AdmissionServices | Availability> =>
  traced(op.name)(
    Effect.flatMap(admit(op, call, credentialOf(call)), (principal) =>
      call.body === undefined
        ? admitted(op, call, principal, call)
        : Effect.flatMap(call.body, (body) => admitted(op, call, principal, body))).pipe(
        Effect.catchCause((cause) =>
          Effect.flatMap(Availability.use((a) => a.unavailable(cause)), (unavailable) =>
            unavailable === undefined ? Effect.failCause(cause) : Effect.fail(unavailable))
        )
      ) as Effect.Effect<unknown, ApiError, Services | AdmissionServices | Availability>
  )

/** The engine's answer to a member operation called without anyone: what adapters show. */
export const needsKey = () => new Unauthorized({ message: "This operation needs an API key.", fix: "Send Authorization: Bearer am_..." })
