/**
 * The hosted tool endpoint, /mcp: stateless JSON-RPC 2.0 over POST, answered by the MCP
 * package with the caller's key as principal, so permissions, plan limits and isolation
 * are those of the REST API.
 *
 * HTTP rules of the spec: the key only in the Authorization header (401 with
 * `WWW-Authenticate: Bearer` otherwise); GET and DELETE are 405 with JSON-RPC error -32000
 * (there is no session stream to open or close); a body over 256 KB is 400 bad_request;
 * `?read_only=1` hides tools that change data (`read_only` is read strictly: once, `1` or
 * `true`, `0` or `false`; anything else is 400 bad_request, so a value we could misread
 * never opens the writing tools); responses carry `Cache-Control: no-store`
 * and no CORS headers. A message with no id (a notification) is answered 202 with no body.
 *
 * Streamable HTTP rules: a message the server cannot accept (not JSON-RPC, a batch: any
 * error answered with id null) is answered with status 400 and that JSON-RPC error; an
 * unsupported MCP-Protocol-Version header is 400 as well. The Host and Origin checks that
 * keep DNS-rebinding pages away run before this handler (guard.ts).
 */
import { type ApiError, BadRequest, Engine, isApiError } from "@inbox/core"
import { handlePayload, protocolVersionHeaderError } from "@inbox/mcp"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RequestId } from "./context.ts"
import { clientIp, credentialOf, readJsonBody, searchParams } from "./request.ts"
import { errorResponse, json } from "./respond.ts"

export const MCP_BODY_LIMIT = 256 * 1024

const NO_STORE = { "cache-control": "no-store" }

const methodNotAllowed = json(405, {
  jsonrpc: "2.0",
  error: { code: -32000, message: "Method not allowed: this MCP endpoint is stateless; send JSON-RPC with POST." },
  id: null
}, { ...NO_STORE, allow: "POST" })

const READ_ONLY: Readonly<Record<string, boolean>> = { "1": true, "true": true, "0": false, "false": false }

/** The `read_only` parameter: absent is false; once with a known value; anything else is refused. */
const readOnlyOf = (params: URLSearchParams): Effect.Effect<boolean, BadRequest> => {
  const values = params.getAll("read_only")
  if (values.length === 0) return Effect.succeed(false)
  const value = values.length === 1 && Object.hasOwn(READ_ONLY, values[0]!) ? READ_ONLY[values[0]!] : undefined
  return value !== undefined
    ? Effect.succeed(value)
    : Effect.fail(new BadRequest({
      message: values.length > 1 ? "read_only is given more than once." : `read_only=${JSON.stringify(values[0]!.slice(0, 20))} is not a known value.`,
      fix: "Send read_only=1 to hide the tools that change data, or leave it out."
    }))
}

const post = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requestId = yield* RequestId
  const ip = yield* clientIp(request)
  // Admitted and counted once per POST; each tool call then runs as this member.
  const principal = yield* (yield* Engine).admit(credentialOf(request, "/mcp"), { clientIp: ip, requestId })
  const versionError = protocolVersionHeaderError(request.headers["mcp-protocol-version"])
  if (versionError !== undefined) return json(400, versionError, NO_STORE)
  const readOnly = yield* readOnlyOf(searchParams(request))
  const body = yield* readJsonBody(request, MCP_BODY_LIMIT)
  const session = { principal, readOnly, context: { clientIp: ip, requestId } }
  const answer = yield* handlePayload(body, session)
  if (answer === undefined) {
    return HttpServerResponse.empty({ status: 202, headers: NO_STORE })
  }
  return json("error" in answer && answer.id === null ? 400 : 200, answer, NO_STORE)
}).pipe(
  Effect.scoped,
  Effect.catchIf(isApiError, (e: ApiError) =>
    Effect.succeed(errorResponse(e, e.code === "unauthorized" ? { ...NO_STORE, "www-authenticate": "Bearer" } : NO_STORE)))
)

export const McpRoutes = Layer.mergeAll(
  HttpRouter.add("POST", "/mcp", post),
  HttpRouter.add("GET", "/mcp", Effect.succeed(methodNotAllowed)),
  HttpRouter.add("DELETE", "/mcp", Effect.succeed(methodNotAllowed)),
  HttpRouter.add("OPTIONS", "/mcp", Effect.succeed(methodNotAllowed))
)
