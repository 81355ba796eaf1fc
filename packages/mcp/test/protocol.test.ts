/**
 * JSON-RPC framing of the MCP server, message by message: version negotiation (against the
 * official SDK's own list), the error codes for malformed and unknown requests,
 * notifications, refused batches, defects, and the
 * stdio framing. Tool behaviour itself is covered through the SDK client in mcp.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import {
  LATEST_PROTOCOL_VERSION as SDK_LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS as SDK_SUPPORTED_PROTOCOL_VERSIONS
} from "@modelcontextprotocol/sdk/types.js"
import { ApiKeys, Engine, Organizations } from "@inbox/core/internal"
import { engineLayer, pglite } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { PassThrough } from "node:stream"
import {
  handleMessage,
  handlePayload,
  type JsonRpcResponse,
  protocolVersionHeaderError,
  runStdio,
  type Session,
  SUPPORTED_PROTOCOL_VERSIONS
} from "../src/index.ts"

const session = Effect.gen(function*() {
  const { organization } = yield* (yield* Organizations).create({ ownerEmail: "owner@example.com", verified: true })
  const keys = yield* ApiKeys
  const principal = yield* keys.authenticate((yield* keys.issue(organization.id, { name: "t" })).api_key)
  return { principal, readOnly: false, context: { clientIp: "127.0.0.1", requestId: "req-1" } } satisfies Session
})

const errorCode = (response: JsonRpcResponse | undefined) =>
  response !== undefined && "error" in response ? response.error.code : undefined

const resultOf = (response: JsonRpcResponse | undefined): Record<string, unknown> => {
  if (response === undefined || !("result" in response)) throw new Error(`expected a result, got ${JSON.stringify(response)}`)
  return response.result as Record<string, unknown>
}

layer(engineLayer(pglite), { timeout: "120 seconds" })("MCP JSON-RPC framing", (it) => {
  it.effect("initialize echoes every protocol version the official SDK speaks and offers the newest otherwise", () =>
    Effect.gen(function*() {
      const s = yield* session
      for (const version of SDK_SUPPORTED_PROTOCOL_VERSIONS) {
        const answer = yield* handleMessage({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "c", version: "1" } } }, s)
        assert.strictEqual(resultOf(answer)["protocolVersion"], version)
      }
      assert.deepStrictEqual([...SUPPORTED_PROTOCOL_VERSIONS], [...SDK_SUPPORTED_PROTOCOL_VERSIONS])
      const future = yield* handleMessage({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "2099-01-01" } }, s)
      assert.strictEqual(resultOf(future)["protocolVersion"], SDK_LATEST_PROTOCOL_VERSION)
      assert.deepStrictEqual(resultOf(future)["capabilities"], { tools: { listChanged: false } })
      assert.deepStrictEqual((resultOf(future)["serverInfo"] as { name: string }).name, "inbox-engine")
    }))

  it.effect("ping answers an empty result with the request's id", () =>
    Effect.gen(function*() {
      const answer = yield* handleMessage({ jsonrpc: "2.0", id: "abc", method: "ping" }, yield* session)
      assert.deepStrictEqual(answer, { jsonrpc: "2.0", id: "abc", result: {} })
    }))

  it.effect("notifications and responses get no answer", () =>
    Effect.gen(function*() {
      const s = yield* session
      assert.isUndefined(yield* handleMessage({ jsonrpc: "2.0", method: "notifications/initialized" }, s))
      assert.isUndefined(yield* handleMessage({ jsonrpc: "2.0", method: "notifications/unknown" }, s))
      assert.isUndefined(yield* handleMessage({ jsonrpc: "2.0", id: 9, result: {} }, s))
    }))

  it.effect("an unknown method is -32601 and a malformed request is -32600", () =>
    Effect.gen(function*() {
      const s = yield* session
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: 1, method: "resources/list" }, s)), -32601)
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "1.0", id: 1, method: "ping" }, s)), -32600)
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: 1, method: 7 }, s)), -32600)
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: null, method: "ping" }, s)), -32600)
      assert.strictEqual(errorCode(yield* handleMessage("ping", s)), -32600)
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: 1, method: "tools/call", params: [1] }, s)), -32602)
    }))

  it.effect("an unknown tool and non-object arguments are -32602", () =>
    Effect.gen(function*() {
      const s = yield* session
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "send_rocket" } }, s)), -32602)
      assert.strictEqual(errorCode(yield* handleMessage({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_inboxes", arguments: [] } }, s)), -32602)
    }))

  it.effect("a path parameter that is not a string is a validation_error naming it", () =>
    Effect.gen(function*() {
      const answer = yield* handleMessage({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_inbox", arguments: { inbox_id: 42 } } }, yield* session)
      const result = resultOf(answer)
      assert.strictEqual(result["isError"], true)
      const body = JSON.parse((result["content"] as Array<{ text: string }>)[0]?.text ?? "")
      assert.strictEqual(body.code, "validation_error")
      assert.deepStrictEqual(body.errors[0].path, ["inbox_id"])
    }))

  it.effect("a NUL in a tool argument or path parameter is a validation_error naming it, as on REST", () =>
    Effect.gen(function*() {
      const s = yield* session
      const call = (name: string, args: object) =>
        Effect.map(handleMessage({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, s), (answer) => {
          const result = resultOf(answer)
          assert.strictEqual(result["isError"], true)
          return JSON.parse((result["content"] as Array<{ text: string }>)[0]?.text ?? "")
        })
      const inName = yield* call("create_pod", { name: "a\u0000b" })
      assert.strictEqual(inName.code, "validation_error")
      assert.deepStrictEqual(inName.errors[0].path, ["name"])
      const inPath = yield* call("get_inbox", { inbox_id: "inbox_\u0000" })
      assert.strictEqual(inPath.code, "validation_error")
      assert.deepStrictEqual(inPath.errors[0].path, ["inbox_id"])
    }))

  it.effect("a JSON-RPC batch is refused with one -32600 error and none of its calls runs", () =>
    Effect.gen(function*() {
      const s = yield* session
      const answer = yield* handlePayload([
        { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "create_inbox", arguments: { username: "batch" } } },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_inboxes", arguments: {} } }
      ], s)
      assert.strictEqual(errorCode(answer), -32600)
      assert.isNull(answer?.id)
      assert.include(JSON.stringify(answer), "batches are not supported")
      const listed = yield* handleMessage({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "list_inboxes", arguments: {} } }, s)
      assert.deepStrictEqual((resultOf(listed)["structuredContent"] as { inboxes: ReadonlyArray<unknown> }).inboxes, [])
      assert.strictEqual(errorCode(yield* handlePayload([], s)), -32600)
      assert.strictEqual(errorCode(yield* handlePayload([{ jsonrpc: "2.0", method: "notifications/initialized" }], s)), -32600)
    }))

  it.effect("an MCP-Protocol-Version header the server does not speak is refused; absent or supported passes", () =>
    Effect.sync(() => {
      assert.isUndefined(protocolVersionHeaderError(undefined))
      for (const v of SUPPORTED_PROTOCOL_VERSIONS) assert.isUndefined(protocolVersionHeaderError(v))
      assert.strictEqual(protocolVersionHeaderError("1999-01-01")?.error.code, -32600)
    }))

  it.effect("a defect answers -32603 without internals", () =>
    Effect.gen(function*() {
      const s = yield* session
      const engine = yield* Engine
      const broken = Layer.succeed(Engine, Engine.of({ ...engine, run: () => Effect.die(new Error("connection string postgres://secret")) }))
      const answer = yield* handleMessage({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "list_inboxes" } }, s).pipe(
        Effect.provide(broken)
      )
      assert.strictEqual(errorCode(answer), -32603)
      assert.notInclude(JSON.stringify(answer), "secret")
    }))

  it.effect("stdio answers one JSON line per request, -32700 for a line that is not JSON, and ends with its input", () =>
    Effect.gen(function*() {
      const { principal } = yield* session
      const input = new PassThrough()
      const output = new PassThrough()
      const lines: Array<string> = []
      output.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter((l) => l !== "")))
      input.end([
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
        "{not json",
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        "",
        JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })
      ].join("\n") + "\n")
      yield* runStdio(principal, { input, output })
      const answers = lines.map((l) => JSON.parse(l) as JsonRpcResponse)
      assert.deepStrictEqual(answers[0], { jsonrpc: "2.0", id: 1, result: {} })
      assert.strictEqual(errorCode(answers[1]), -32700)
      assert.strictEqual(answers[2]?.id, 2)
      assert.strictEqual(answers.length, 3)
    }))
})
