/**
 * Running a catalogue operation from untrusted input. Every adapter (REST, MCP, the CLI)
 * and every embedding application goes through here, so they admit, refuse and answer
 * alike. The order is fixed and is the README's:
 * 1. access, from the headers alone: a member operation without a principal is 401; a
 *    scope that may never do it (by any route, or by the route called), or a missing
 *    permission, is 403 missing_permission; an operator route checks its secret (503
 *    not_configured when the server has none, 401 when wrong);
 * 2. the body is read (an adapter reading from a socket hands over `body` to be run only
 *    now, so a refused caller never makes the server read or hold what it sends), and a
 *    provider's signature over it is checked;
 * 3. validation: path parameters, named headers and the body or query are decoded, and any
 *    request that can never succeed is 400 before anything is read or written;
 * 4. the operation runs; conflicts, limits and not-found come from there.
 */
import { Effect, Exit, Schema } from "effect"
import { holds, missingPermission, type Principal, scopeTooNarrow } from "../access/Principal.ts"
import { type ApiError, Unauthorized, type ValidationError } from "../errors/errors.ts"
import { Id } from "../shared/fields.ts"
import type { Settings } from "../settings/Settings.ts"
import { traced } from "../shared/span.ts"
import { decodeInput, issuesOf, validationError } from "../shared/validation.ts"
import { admitOperator, verifyOperatorBody } from "../catalogue/operator.ts"
import { type Anonymous, type CallContext, type Operation, routeOf } from "../catalogue/Operation.ts"

export interface RawCall {
  /** The organization member calling, for member operations (absent: 401). */
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

const ANONYMOUS: Anonymous = { kind: "anonymous" }

const decodeId = Schema.decodeUnknownExit(Id)

const admit = (op: Operation<unknown>, call: RawCall) => {
  const access = op.access
  switch (access.kind) {
    case "public":
      return Effect.succeed<unknown>(ANONYMOUS)
    case "operator":
      return Effect.as(admitOperator(access.credential, call.headers ?? {}), { kind: "operator", credential: access.credential } as unknown)
    case "member": {
      const principal = call.principal
      if (principal === undefined) {
        return Effect.fail(new Unauthorized({ message: "This operation needs an API key.", fix: "Send Authorization: Bearer am_..." }))
      }
      const scopes = routeOf(op, call.params ?? {})?.scopes ?? access.scopes
      if (scopes !== undefined && !scopes.includes(principal.scope.type)) {
        return Effect.fail(scopeTooNarrow(principal, scopes))
      }
      if (!holds(principal, access.permission)) return Effect.fail(missingPermission(access.permission))
      return Effect.succeed<unknown>(principal)
    }
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

export const runOperation = <Services>(op: Operation<Services>, call: RawCall): Effect.Effect<unknown, ApiError, Services | Settings> =>
  traced(op.name)(Effect.gen(function*() {
    const principal = yield* admit(op, call)
    const body = call.body === undefined ? call : yield* call.body
    const raw = body.raw ?? new Uint8Array()
    if (op.access.kind === "operator") yield* verifyOperatorBody(op.access.credential, call.headers ?? {}, raw)
    const params = yield* decodeParams(op, call.params ?? {})
    const headers = yield* decodeHeaders(op, call.headers ?? {})
    const method = op.routes[0]?.method
    const input = yield* decodeInput(op.input, body.input, op.query !== undefined || method === "GET" || method === "DELETE" ? "query" : "body")
    return yield* op.run({ principal, params, input, headers, raw, context: call.context })
  }))
