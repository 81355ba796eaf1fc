/**
 * The shape of one operation of the catalogue, and the typed builder every domain uses to
 * declare its operations (`pods/operations.ts`, `inboxes/operations.ts`, ...).
 *
 * An entry says everything an adapter needs, so REST routes, the OpenAPI document, MCP
 * tools and CLI commands are derived from it and never written again:
 * - `routes`: method and path; path parameters are typed from the path text, so `run`
 *   sees `params.pod_id` as `string` when every route has it and `string | undefined` when
 *   only some do, and a misspelled name does not compile;
 * - where the input comes from: a `body` or `query` Struct, named `headers`, `raw` bytes;
 * - `output`: a JSON Schema (`json`), a list envelope of items (`list`), bytes with headers
 *   (`download`), or nothing (`empty`, 204 on REST);
 * - `access`: who may call it (an organization member: API key or session; a person's
 *   dashboard session, for /auth; the operator, by a shared secret or on this machine; the
 *   local operator alone; anyone) and the permission it needs, with `permissionsFor` the
 *   permissions a given input needs besides. `runOperation` enforces them once, before
 *   `run`, and hands `run` a principal of the matching type;
 * - `mutates`, and how it appears as an MCP tool and a CLI command, or why it does not.
 */
import { type Effect, Schema } from "effect"
import type { Permission } from "../access/permissions.ts"
import type { Principal, Scope } from "../access/Principal.ts"
import type { NewSession, Session } from "../access/Session.ts"
import type { ApiError } from "../errors/errors.ts"
import type { Download } from "../shared/download.ts"

export type { Download }


export type Method = "GET" | "POST" | "PATCH" | "DELETE"

export interface Route<P extends string = string> {
  readonly method: Method
  /** Path with `:name` parameters, e.g. `/v0/pods/:pod_id/inboxes`. */
  readonly path: P
  /**
   * Key scopes that may call the operation by this path, where the path itself names a
   * level a narrower key never manages (the organization's own lists, say): a narrower key
   * is 403 missing_permission here, like `access.scopes`. Default: the operation's scopes.
   */
  readonly scopes?: ReadonlyArray<Scope["type"]>
}

export interface RouteOptions {
  readonly scopes?: ReadonlyArray<Scope["type"]>
}

export const route = {
  get: <const P extends string>(path: P, options: RouteOptions = {}): Route<P> => ({ method: "GET", path, ...options }),
  post: <const P extends string>(path: P, options: RouteOptions = {}): Route<P> => ({ method: "POST", path, ...options }),
  patch: <const P extends string>(path: P, options: RouteOptions = {}): Route<P> => ({ method: "PATCH", path, ...options }),
  delete: <const P extends string>(path: P, options: RouteOptions = {}): Route<P> => ({ method: "DELETE", path, ...options })
}

type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}` ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}` ? Name
  : never

type InEvery<K extends string, R> = false extends (R extends Route<infer P> ? (K extends ParamNames<P> ? true : false) : never) ? false
  : true

/** Path parameters of a set of routes: required when every route has one, optional otherwise. */
export type ParamsOf<R extends Route> = {
  readonly [K in ParamNames<R["path"]>]: InEvery<K, R> extends true ? string : string | undefined
}

/** Permissions an operation can require: the 43 grantable ones, and billing's two implicit ones. */
/** `any`: every member may (the caller's own identity), whatever its permission list. */
export type RequiredPermission = Permission | "billing_read" | "billing_manage" | "any"

/**
 * The operator's shared secrets that admit a caller to an operator route. A payment
 * provider's signature (`billing_signature`) follows the provider's own scheme, which only
 * its implementation knows: the operation checks it first thing (billing/Provider.ts).
 */
export type OperatorCredential = "inbound_secret" | "provider_signature" | "billing_signature"

export type Access =
  /** No credentials: `run` gets the anonymous caller. */
  | { readonly kind: "public" }
  /** A member of an organization (API key or dashboard session), holding `permission`, in one of `scopes`. */
  | {
    readonly kind: "member"
    readonly permission: RequiredPermission
    /** Key scopes that may ever do this; a narrower one is 403 missing_permission. Default: all. */
    readonly scopes?: ReadonlyArray<Scope["type"]>
  }
  /**
   * A person's dashboard session (the /auth routes): `required`, 401 without a live one;
   * `optional`, `run` gets undefined without one. Either way a browser's state-changing
   * request must come from a page of this server (the CSRF rule). Not an MCP tool or CLI
   * command: a session belongs to a browser.
   */
  | { readonly kind: "session"; readonly session: "required" | "optional" }
  /**
   * The operator's forwarder or mail provider, proved by a shared secret or signature; or
   * the operator on this machine (the `local` credential: inboxctl, an embedding app).
   */
  | { readonly kind: "operator"; readonly credential: OperatorCredential }
  /** The operator on this machine only: inboxctl and embedding applications (no route). */
  | { readonly kind: "local" }

export interface Anonymous {
  readonly kind: "anonymous"
}
export interface Operator {
  readonly kind: "operator"
  /** How the operator proved itself: a route's secret or signature, or being on this machine. */
  readonly credential: OperatorCredential | "local"
}
export interface LocalOperator {
  readonly kind: "local"
}

export type PrincipalOf<A extends Access> = A extends { readonly kind: "member" } ? Principal
  : A extends { readonly kind: "operator" } ? Operator
  : A extends { readonly kind: "local" } ? LocalOperator
  : A extends { readonly kind: "session"; readonly session: "required" } ? Session
  : A extends { readonly kind: "session" } ? Session | undefined
  : Anonymous

/** A Struct of input fields (body or query). */
export type InputSchema = Schema.Top & { readonly fields: Schema.Struct.Fields; readonly DecodingServices: never }

export type Output =
  | {
    readonly kind: "json"
    readonly schema: Schema.Top
    readonly status?: 200 | 202
    /** The status by the answer itself (a probe: 503 when not ready). */
    readonly statusOf?: (result: never) => number
  }
  | { readonly kind: "list"; readonly plural: string; readonly item: Schema.Top; readonly schema: Schema.Top }
  | { readonly kind: "empty"; readonly status?: 200 }
  | { readonly kind: "download" }
  /** A JSON body, and a session the browser now holds (sign-in) or no longer holds (`end`). */
  | { readonly kind: "session"; readonly schema: Schema.Top; readonly status?: 204 }

/** What a session output's `run` returns; `body` is undefined for a 204. */
export interface SessionResult<A> {
  readonly body: A
  readonly session: NewSession | "end" | undefined
}

type OutputType<O extends Output> = O extends { readonly kind: "session"; readonly schema: infer S extends Schema.Top } ? SessionResult<S["Type"]>
  : O extends { readonly kind: "json" | "list"; readonly schema: infer S extends Schema.Top } ? S["Type"]
  : O extends { readonly kind: "download" } ? Download
  : void

/** How the operation appears to MCP clients and to `inboxctl`, or why it does not. */
export type ToolFace = { readonly tool: string } | { readonly exclude: string }
export type CliFace = {
  /**
   * Words after `inboxctl`: the resource's plural group and the action, e.g. `inboxes create`
   * (the naming rule is docs/cli.md's).
   */
  readonly command: string
  /**
   * Input fields given as positional arguments after the path parameters, where a field is
   * the resource's own identity (`domains create DOMAIN`, `org plan ORG`); every other field is a flag.
   */
  readonly arguments?: ReadonlyArray<string>
  /** Former spellings of the command, still accepted but hidden from help. */
  readonly aliases?: ReadonlyArray<string>
  /** Table columns of a list or of one resource, for the human-readable output. */
  readonly columns?: ReadonlyArray<string>
  /** The fields `--json` prints, where a documented contract names them (default: the whole answer). */
  readonly jsonFields?: ReadonlyArray<string>
} | { readonly exclude: string }

export interface CallContext {
  readonly clientIp: string
  readonly requestId: string
  /** Told the organization of the member admitted, for the adapter's own records (the request log). */
  readonly onAdmit?: (organizationId: string) => void
}

export interface Call<P, I, H, Pr> {
  readonly principal: Pr
  readonly params: P
  /** The decoded body (POST, PATCH) or query (GET, DELETE); `{}` when the operation has none. */
  readonly input: I
  readonly headers: H
  /** The request body as bytes, for operations with `raw`. */
  readonly raw: Uint8Array
  readonly context: CallContext
}

export interface OperationSpec<
  R extends Route,
  A extends Access,
  B extends InputSchema | undefined,
  Q extends InputSchema | undefined,
  H extends InputSchema | undefined,
  O extends Output,
  Services
> {
  readonly name: string
  readonly summary: string
  readonly routes: ReadonlyArray<R>
  readonly access: A
  readonly body?: B
  readonly query?: Q
  /** Named request headers (lower-case names), decoded like fields. */
  readonly headers?: H
  /** The body is bytes (a raw message), not JSON. */
  readonly raw?: { readonly maxBytes: number }
  /** Largest accepted JSON body in bytes (default 1 MiB). */
  readonly bodyLimit?: number
  readonly output: O
  /**
   * Permissions a particular input needs besides `access.permission` (an opt-in event type,
   * a hidden label): checked by runOperation after decoding, 403 missing_permission naming
   * the first one the caller lacks. Member operations only.
   */
  readonly permissionsFor?: (
    input: B extends InputSchema ? B["Type"] : Q extends InputSchema ? Q["Type"] : Record<string, never>
  ) => ReadonlyArray<RequiredPermission>
  /** True when the operation sends or changes data (hidden from read-only MCP sessions). */
  readonly mutates: boolean
  readonly mcp: ToolFace
  readonly cli: CliFace
  readonly run: (
    call: Call<
      ParamsOf<R>,
      B extends InputSchema ? B["Type"] : Q extends InputSchema ? Q["Type"] : Record<string, never>,
      H extends InputSchema ? H["Type"] : Record<string, never>,
      PrincipalOf<A>
    >
  ) => Effect.Effect<OutputType<O>, ApiError, Services>
}

/** An operation as adapters see it: the spec with its types erased but for the services it uses. */
export interface Operation<Services = unknown> {
  readonly name: string
  readonly summary: string
  readonly routes: ReadonlyArray<Route>
  readonly access: Access
  readonly body?: InputSchema
  readonly query?: InputSchema
  readonly headers?: InputSchema
  readonly raw?: { readonly maxBytes: number }
  readonly bodyLimit?: number
  readonly output: Output
  readonly permissionsFor?: (input: never) => ReadonlyArray<RequiredPermission>
  readonly mutates: boolean
  readonly mcp: ToolFace
  readonly cli: CliFace
  readonly run: (call: Call<Record<string, string | undefined>, unknown, unknown, unknown>) => Effect.Effect<unknown, ApiError, Services>
  /** The input fields (body or query), or an empty Struct. */
  readonly input: InputSchema
  /** Path parameter names across all routes, with whether every route has them. */
  readonly params: ReadonlyArray<{ readonly name: string; readonly required: boolean }>
}

/** A typed operation: an `Operation` that remembers its name, what its callers send and get, and the services it uses. */
export interface TypedOperation<Name extends string, Params, Input, Output, Services, Headers = Record<never, never>> extends Operation<Services> {
  readonly name: Name
  readonly "~types"?: { readonly params: Params; readonly input: Input; readonly output: Output; readonly headers: Headers }
}

export const paramNames = (path: string): ReadonlyArray<string> => [...path.matchAll(/:([a-z_]+)/g)].map((m) => m[1] ?? "")

/**
 * The route a call came by: the one whose path parameters are exactly those given (REST
 * passes its matched route's; MCP and the CLI pass the parameters a caller named), or
 * undefined for a mix no route has.
 */
export const routeOf = (op: Operation, params: Readonly<Record<string, string | undefined>>): Route | undefined => {
  const given = Object.keys(params).filter((name) => params[name] !== undefined)
  return op.routes.find((r) => {
    const names = paramNames(r.path)
    return names.length === given.length && names.every((name) => given.includes(name))
  })
}

const EmptyFields = Schema.Struct({})

/**
 * Declares an operation. Structural mistakes (a body on a GET, a raw body with a JSON body,
 * a route without a leading slash) throw here, when the catalogue module loads: a startup
 * defect, never a request that silently misbehaves.
 */
export const operation = <
  const N extends string,
  const R extends Route,
  const A extends Access,
  B extends InputSchema | undefined = undefined,
  Q extends InputSchema | undefined = undefined,
  H extends InputSchema | undefined = undefined,
  const O extends Output = Output,
  Services = never
>(
  spec: OperationSpec<R, A, B, Q, H, O, Services> & { readonly name: N }
): TypedOperation<
  N,
  ParamsOf<R>,
  B extends InputSchema ? B["Encoded"] : Q extends InputSchema ? Q["Encoded"] : Record<never, never>,
  OutputType<O>,
  Services,
  H extends InputSchema ? H["Encoded"] : Record<never, never>
> => {
  const fail = (why: string) => {
    throw new Error(`operation ${spec.name}: ${why}`)
  }
  if (spec.routes.length === 0 && spec.access.kind !== "local") fail("has no route")
  if (spec.routes.length > 0 && spec.access.kind === "local") fail("a local operation has no route")
  if (spec.access.kind === "session" && ("tool" in spec.mcp || "command" in spec.cli)) fail("a session operation is no MCP tool or CLI command")
  if (spec.permissionsFor !== undefined && spec.access.kind !== "member") fail("permissionsFor is for member operations")
  const methods = new Set(spec.routes.map((r) => r.method))
  if (methods.size > 1) fail("routes of one operation share one method")
  const method = spec.routes[0]?.method
  for (const r of spec.routes) if (!r.path.startsWith("/")) fail(`route ${r.path} does not start with /`)
  if (spec.body !== undefined && (method === "GET" || method === "DELETE")) fail("a GET or DELETE cannot have a body")
  if (spec.body !== undefined && spec.query !== undefined) fail("give a body or a query, not both")
  if (spec.raw !== undefined && spec.body !== undefined) fail("a raw body and a JSON body exclude each other")
  const perRoute = spec.routes.map((r) => new Set(paramNames(r.path)))
  const all = [...new Set(perRoute.flatMap((s) => [...s]))]
  const params = all.map((name) => ({ name, required: perRoute.every((s) => s.has(name)) }))
  const input = (spec.body ?? spec.query ?? EmptyFields) as InputSchema
  for (const p of all) if (Object.hasOwn(input.fields, p)) fail(`path parameter ${p} is also an input field`)
  if ("command" in spec.cli) {
    for (const a of spec.cli.arguments ?? []) if (!Object.hasOwn(input.fields, a)) fail(`CLI argument ${a} is no input field`)
  }
  return { ...(spec as unknown as Operation<Services>), input, params } as never
}

/** Outputs: a JSON resource, a list envelope, a download, or nothing. */
export const Output = {
  json: <S extends Schema.Top>(schema: S, options: { readonly statusOf?: (result: S["Type"]) => number } = {}) => ({
    kind: "json" as const,
    schema,
    ...(options.statusOf === undefined ? {} : { statusOf: options.statusOf as (result: never) => number })
  }),
  /** A JSON resource answered 202 Accepted (work started, or a mail on its way). */
  accepted: <S extends Schema.Top>(schema: S) => ({ kind: "json" as const, schema, status: 202 as const }),
  /** A JSON body with the session the caller now holds, or ends (`SessionResult`). */
  session: <S extends Schema.Top>(schema: S) => ({ kind: "session" as const, schema }),
  /** A session ended with nothing to say: 204. */
  sessionEnded: { kind: "session" as const, schema: Schema.Undefined, status: 204 as const },
  /** The spec's list envelope, `{ count, limit, next_page_token?, <plural>: [] }`. */
  list: <const K extends string, S extends Schema.Top>(plural: K, item: S) => ({
    kind: "list" as const,
    plural,
    item,
    schema: Schema.Struct({
      count: Schema.Int,
      limit: Schema.Int,
      next_page_token: Schema.optionalKey(Schema.String),
      [plural]: Schema.Array(item)
    }) as unknown as Schema.Codec<ListEnvelope<K, S["Type"]>, ListEnvelope<K, S["Encoded"]>>
  }),
  empty: { kind: "empty" as const },
  /** Nothing, answered 200 rather than 204 where the spec says so (domain verify). */
  empty200: { kind: "empty" as const, status: 200 as const },
  download: { kind: "download" as const }
}

export type ListEnvelope<K extends string, A> =
  & { readonly count: number; readonly limit: number; readonly next_page_token?: string }
  & { readonly [P in K]: ReadonlyArray<A> }
