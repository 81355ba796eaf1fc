/**
 * Running a catalogue operation from untrusted input: decode the input with the spec's
 * bad_request / validation_error rules, then run it. Every adapter goes through here, so a
 * tool call over MCP, a REST request and a CLI command refuse and answer alike.
 */
import { Effect } from "effect"
import type { Principal } from "../access/Principal.ts"
import type { EngineServices } from "../Engine.ts"
import { type ApiError, Unauthorized } from "../errors/errors.ts"
import { decodeInput } from "../shared/validation.ts"
import type { CallContext, Operation } from "./Operation.ts"

export interface RawCall {
  readonly principal: Principal | undefined
  readonly params: Readonly<Record<string, string | undefined>>
  /** Parsed JSON body or query object. */
  readonly input: unknown
  readonly context: CallContext
}

export const runOperation = (op: Operation, call: RawCall): Effect.Effect<unknown, ApiError, EngineServices> =>
  op.auth === "key" && call.principal === undefined
    ? Effect.fail(new Unauthorized({ message: "This operation needs an API key.", fix: "Send Authorization: Bearer am_..." }))
    : Effect.flatMap(
      decodeInput(op.input, call.input, op.routes[0]?.method === "GET" || op.routes[0]?.method === "DELETE" ? "query" : "body"),
      (input) => op.run({ principal: call.principal, params: call.params, input, context: call.context })
    ).pipe(Effect.withSpan(op.name))

export const findOperation = (operations: ReadonlyArray<Operation>, name: string): Operation | undefined =>
  operations.find((op) => op.name === name)
