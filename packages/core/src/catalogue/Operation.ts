/**
 * One catalogue of operations. Each operation is declared once: its name, the routes that
 * reach it, where its input comes from, the permission-free facts adapters need (does it
 * change data? does it need a key?), and the function that runs it on the engine. The REST
 * routes and the MCP tools are derived from this list, so they cannot drift apart.
 *
 * Operations answer with the JSON body the spec shows (or nothing, for empty-body
 * successes); every rule, including permissions and scope, runs inside `run`.
 */
import type { Effect, Schema } from "effect"
import type { Principal } from "../access/Principal.ts"
import type { EngineServices } from "../Engine.ts"
import type { ApiError } from "../errors/errors.ts"

export type Method = "GET" | "POST" | "PATCH" | "DELETE"

export interface Route {
  readonly method: Method
  /** Path with `:name` parameters, e.g. `/v0/pods/:pod_id/inboxes`. */
  readonly path: string
}

export interface CallContext {
  readonly clientIp: string
  readonly requestId: string
}

export interface Call<I> {
  /** Present for every operation with `auth: "key"`. */
  readonly principal: Principal | undefined
  readonly params: Readonly<Record<string, string | undefined>>
  readonly input: I
  readonly context: CallContext
}

export type InputSchema = Schema.Top & { readonly fields: Schema.Struct.Fields; readonly DecodingServices: never }

export interface Operation<S extends InputSchema = InputSchema> {
  readonly name: string
  readonly summary: string
  readonly auth: "key" | "none"
  readonly routes: ReadonlyArray<Route>
  /** Body fields for POST and PATCH; query fields for GET and DELETE. */
  readonly input: S
  /** True when the operation sends or changes data (hidden from read-only MCP). */
  readonly mutates: boolean
  /** The MCP tool name, when the operation is offered as a tool. */
  readonly tool?: string
  /** Largest accepted JSON body in bytes (default 1 MiB). */
  readonly bodyLimit?: number
  /** Successful status; 204 answers with no body. */
  readonly status?: 200 | 204
  readonly run: (call: Call<S["Type"]>) => Effect.Effect<unknown, ApiError, EngineServices>
}

export const operation = <S extends InputSchema>(op: Operation<S>): Operation => op as unknown as Operation

/** Path parameter names across all of an operation's routes, with whether every route has them. */
export const pathParams = (op: Operation): ReadonlyArray<{ readonly name: string; readonly required: boolean }> => {
  const perRoute = op.routes.map((r) => new Set([...r.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1] ?? "")))
  const all = new Set(perRoute.flatMap((s) => [...s]))
  return [...all].map((name) => ({ name, required: perRoute.every((s) => s.has(name)) }))
}
