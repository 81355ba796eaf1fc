/**
 * The MCP protocol, transport-independent: one JSON-RPC 2.0 message in, at most one
 * response out. The HTTP endpoint (packages/http) and the stdio server both call
 * `handleMessage` / `handlePayload`; they only frame bytes and resolve the principal.
 *
 * The server is stateless: `initialize` negotiates a version and describes the server but
 * opens no session, so every `tools/call` stands alone, as the hosted endpoint needs. A tool
 * call runs the catalogue operation through the engine (`Engine.run`) with the caller's principal, so
 * permissions, plan limits and isolation are those of the same REST request. Domain errors
 * are tool results (`isError: true`, the JSON error body as text) so a model can read and
 * correct them; protocol mistakes are JSON-RPC errors; defects are -32603 with nothing of
 * the internals.
 */
import {
  type CallContext,
  Engine,
  errorBody,
  type FieldIssue,
  type Principal,
  validationError
} from "@inbox/core"
import { Effect } from "effect"
import { findTool, listTools, resolveCall, splitArguments, type ToolEntry } from "./tools.ts"

export const SERVER_NAME = "inbox-engine"
export const SERVER_VERSION = "0.1.0"

/**
 * The versions the official SDK (1.32) speaks, newest first; a client asking for another
 * version is offered the newest. Nothing in 2025-11-25 changes what a stateless tools-only
 * server answers, so one implementation serves them all.
 */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"] as const
export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]

const isSupportedVersion = (v: unknown): boolean => SUPPORTED_PROTOCOL_VERSIONS.some((s) => s === v)

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Implementation-defined server error: the HTTP endpoint's answer to GET and DELETE. */
  ServerError: -32000
} as const

export type JsonRpcId = string | number

export interface JsonRpcSuccess {
  readonly jsonrpc: "2.0"
  readonly id: JsonRpcId
  readonly result: unknown
}

export interface JsonRpcFailure {
  readonly jsonrpc: "2.0"
  readonly id: JsonRpcId | null
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown }
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure

export interface Session {
  readonly principal: Principal
  /** Hides (and refuses) every tool whose operation sends or changes data. */
  readonly readOnly: boolean
  readonly context: CallContext
}

export const rpcResult = (id: JsonRpcId, result: unknown): JsonRpcSuccess => ({ jsonrpc: "2.0", id, result })

export const rpcError = (id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcFailure => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})

const INSTRUCTIONS = "Tools to create and manage email inboxes. A refused call comes back as a tool result with " +
  "isError set and a JSON error body; its `code` says what went wrong and `fix`, when present, how to proceed."

type Json = { readonly [key: string]: unknown }

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const isId = (u: unknown): u is JsonRpcId => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

/**
 * structuredContent must be an object; empty-body successes (204 on REST) answer
 * `{ ok: true, success: true }`: `success` is what AgentMail's toolkit answers for them.
 */
const structured = (result: unknown): Json =>
  result === undefined ? { ok: true, success: true } : isRecord(result) ? result : { result }

const toolSuccess = (result: unknown) => {
  const content = structured(result)
  return { content: [{ type: "text", text: JSON.stringify(content) }], structuredContent: content }
}

const toolFailure = (body: unknown) => ({ content: [{ type: "text", text: JSON.stringify(body) }], isError: true })

/** Path parameters and headers travel as text on REST, so anything but a string is a validation error. */
const textIssues = (values: Json): ReadonlyArray<FieldIssue> =>
  Object.entries(values).flatMap(([name, value]) =>
    typeof value === "string" ? [] : [{ path: [name.replaceAll("-", "_")], message: "Expected a string" }]
  )

const callTool = (id: JsonRpcId, params: Json, session: Session) =>
  Effect.gen(function*() {
    const name = params["name"]
    const args = params["arguments"] ?? {}
    if (typeof name !== "string") return rpcError(id, ErrorCode.InvalidParams, "tools/call needs a tool name")
    const found = findTool(name, session.readOnly)
    if (found === undefined) return rpcError(id, ErrorCode.InvalidParams, `Unknown tool: ${name}`)
    if (!isRecord(args)) return rpcError(id, ErrorCode.InvalidParams, "tools/call arguments must be an object")
    const resolved = resolveCall(found, args)
    if ("error" in resolved) return rpcResult(id, toolFailure(errorBody(resolved.error)))
    const entry = resolved.entry
    // A read-only session never reaches a changing form through a merged tool.
    if (session.readOnly && entry.operation.mutates) return rpcError(id, ErrorCode.InvalidParams, `Unknown tool: ${name}`)
    const { params: routeParams, headers, input } = splitArguments(entry, resolved.args)
    const issues = [...textIssues(routeParams), ...textIssues(headers)]
    if (issues.length > 0) return rpcResult(id, toolFailure(errorBody(validationError(issues))))
    const result = yield* (yield* Engine).run(entry.operation, {
      principal: session.principal,
      params: routeParams as Record<string, string>,
      headers: headers as Record<string, string>,
      input,
      context: session.context
    }).pipe(
      Effect.map(toolSuccess),
      Effect.catch((error) => Effect.succeed(toolFailure(errorBody(error))))
    )
    return rpcResult(id, result)
  })

const initialize = (id: JsonRpcId, params: Json) => {
  const requested = params["protocolVersion"]
  const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.find((v) => v === requested) ?? LATEST_PROTOCOL_VERSION
  return rpcResult(id, {
    protocolVersion,
    capabilities: { tools: { listChanged: false } },
    serverInfo: { name: SERVER_NAME, version: SERVER_VERSION },
    instructions: INSTRUCTIONS
  })
}

const dispatch = (id: JsonRpcId, method: string, params: Json, session: Session) => {
  switch (method) {
    case "initialize":
      return Effect.succeed(initialize(id, params))
    case "ping":
      return Effect.succeed(rpcResult(id, {}))
    case "tools/list":
      return Effect.succeed(rpcResult(id, { tools: listTools(session.readOnly) }))
    case "tools/call":
      return callTool(id, params, session)
    default:
      return Effect.succeed(rpcError(id, ErrorCode.MethodNotFound, `Method not found: ${method}`))
  }
}

/**
 * Answers one parsed JSON-RPC message. Notifications and responses (messages without an
 * id, or with a result or error) get no answer: `undefined`.
 */
export const handleMessage = (
  message: unknown,
  session: Session
): Effect.Effect<JsonRpcResponse | undefined, never, Engine> => {
  if (!isRecord(message)) return Effect.succeed(rpcError(null, ErrorCode.InvalidRequest, "Invalid Request: expected a JSON-RPC 2.0 object"))
  const rawId = message["id"]
  const id = isId(rawId) ? rawId : null
  const method = message["method"]
  if (message["jsonrpc"] !== "2.0") {
    return Effect.succeed(rpcError(id, ErrorCode.InvalidRequest, "Invalid Request: jsonrpc must be \"2.0\""))
  }
  if (method === undefined && ("result" in message || "error" in message)) return Effect.succeed(undefined)
  if (typeof method !== "string") return Effect.succeed(rpcError(id, ErrorCode.InvalidRequest, "Invalid Request: method must be a string"))
  if (!("id" in message)) return Effect.succeed(undefined)
  if (id === null) return Effect.succeed(rpcError(null, ErrorCode.InvalidRequest, "Invalid Request: id must be a string or a number"))
  const params = message["params"] ?? {}
  if (!isRecord(params)) return Effect.succeed(rpcError(id, ErrorCode.InvalidParams, "Invalid params: expected an object"))
  return dispatch(id, method, params, session).pipe(
    Effect.catchDefect((defect) =>
      Effect.logError("MCP request failed", defect).pipe(
        Effect.as(rpcError(id, ErrorCode.InternalError, "Internal error", { request_id: session.context.requestId }))
      )
    ),
    Effect.annotateLogs({ request_id: session.context.requestId, mcp_method: method })
  )
}

/**
 * Answers a parsed request body. A JSON-RPC batch (an array) is refused with one -32600
 * error: MCP 2025-06-18 removed batches and no official SDK sends them, and refusing them
 * keeps one request one call, so a batch cannot run many tool calls under one count of
 * the per-key request limit. (2025-03-26 asked servers to accept batches; a client of that
 * version that sends one gets this clear error and can send the calls one by one.)
 */
export const handlePayload = (
  payload: unknown,
  session: Session
): Effect.Effect<JsonRpcResponse | undefined, never, Engine> =>
  Array.isArray(payload)
    ? Effect.succeed(rpcError(null, ErrorCode.InvalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per request"))
    : handleMessage(payload, session)

/**
 * The check of the MCP-Protocol-Version header a client sends after initialize (2025-06-18
 * and later): absent is fine (older clients do not send it), an unsupported value is refused
 * with this error, which the HTTP endpoint answers with status 400.
 */
export const protocolVersionHeaderError = (value: string | undefined): JsonRpcFailure | undefined =>
  value === undefined || isSupportedVersion(value)
    ? undefined
    : rpcError(null, ErrorCode.InvalidRequest, `Unsupported MCP-Protocol-Version ${JSON.stringify(value)}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}`)

/** The answer to a body that is not JSON at all. */
export const parseError = (): JsonRpcFailure => rpcError(null, ErrorCode.ParseError, "Parse error")
