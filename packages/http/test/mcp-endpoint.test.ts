/**
 * The hosted tool endpoint /mcp, driven by the official MCP SDK client over its
 * Streamable HTTP transport, plus the HTTP rules of the spec's "Hosted tool endpoint" row.
 */
import { assert, it, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

const connectWith = (fetch: (r: Request) => Promise<Response>, key: string, query = "") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`http://inbox.test/mcp${query}`), {
        fetch: (url, init) => fetch(new Request(url, init)),
        requestInit: { headers: { authorization: `Bearer ${key}` } }
      })
      const client = new Client({ name: "endpoint-test", version: "1.0.0" })
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

const connect = (fetch: (r: Request) => Promise<Response>, key: string, query = "") =>
  Effect.map(connectWith(fetch, key, query), ({ client }) => client)

const rpc = (method: string, params: unknown = {}) => ({ jsonrpc: "2.0", id: 1, method, params })

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `POST /mcp (${storage.name})`,
    (it) => {
      it.effect("the MCP SDK client initializes, lists tools, creates and lists inboxes", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const client = yield* connect(app.fetch, key)
          const tools = yield* Effect.promise(() => client.listTools())
          const names = tools.tools.map((t) => t.name)
          assert.includeMembers(names, ["create_inbox", "list_inboxes"])
          const created = yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: { username: "mcp.http" } }))
          assert.notStrictEqual(created.isError, true)
          const listed = yield* Effect.promise(() => client.callTool({ name: "list_inboxes", arguments: {} }))
          const body = JSON.parse((listed.content as Array<{ text: string }>)[0]?.text ?? "{}")
          assert.deepStrictEqual(body.inboxes.map((i: { email: string }) => i.email), ["mcp.http@inbox.localhost"])
        }).pipe(Effect.scoped))

      it.effect("the MCP SDK client negotiates its newest protocol version, and later requests carry it in MCP-Protocol-Version", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const seen: Array<string | null> = []
          const recording = (r: Request) => (seen.push(r.headers.get("mcp-protocol-version")), app.fetch(r))
          const { client, transport } = yield* connectWith(recording, key)
          assert.strictEqual(transport.protocolVersion, LATEST_PROTOCOL_VERSION)
          assert.strictEqual(LATEST_PROTOCOL_VERSION, "2025-11-25")
          yield* Effect.promise(() => client.ping())
          assert.strictEqual(seen.at(-1), LATEST_PROTOCOL_VERSION)
        }).pipe(Effect.scoped))

      it.effect("an unsupported MCP-Protocol-Version header is 400 with a JSON-RPC error", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const res = yield* app.request("POST", "/mcp", { key, json: rpc("ping"), headers: { "mcp-protocol-version": "1999-01-01" } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.error.code, -32600)
          assert.include(res.body.error.message, "2025-11-25")
        }))

      it.effect("a JSON-RPC batch is refused with 400 and -32600, and none of its tool calls runs", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const batch = [1, 2, 3].map((id) => ({ ...rpc("tools/call", { name: "create_pod", arguments: { name: `batch ${id}` } }), id }))
          const res = yield* app.request("POST", "/mcp", { key, json: batch })
          assert.strictEqual(res.status, 400)
          assert.isFalse(Array.isArray(res.body))
          assert.strictEqual(res.body.error.code, -32600)
          assert.isNull(res.body.id)
          const pods = yield* app.request("GET", "/v0/pods", { key })
          assert.strictEqual(pods.body.count, 1, "only the default pod exists")
        }))

      it.effect("?read_only=1 hides every tool that sends or changes data", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const client = yield* connect(app.fetch, key, "?read_only=1")
          const names = (yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)
          assert.include(names, "list_inboxes")
          assert.notInclude(names, "create_inbox")
          assert.notInclude(names, "delete_inbox")
          const res = yield* app.request("POST", "/mcp?read_only=1", { key, json: rpc("tools/call", { name: "create_inbox", arguments: {} }) })
          assert.strictEqual(res.body.error.code, -32602)
        }).pipe(Effect.scoped))

      it.effect("read_only is read strictly: repeated, empty or unknown values are 400 bad_request and no tool runs; 0 and false show every tool", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const create = (query: string) => app.request("POST", `/mcp${query}`, { key, json: rpc("tools/call", { name: "create_inbox", arguments: { username: `ro${query.length}` } }) })
          for (const query of ["?read_only=1&read_only=0", "?read_only=0&read_only=1", "?read_only=yes", "?read_only=TRUE", "?read_only=", "?read_only", "?read_only=1%00"]) {
            const res = yield* create(query)
            assert.strictEqual(res.status, 400, query)
            assert.strictEqual(res.body.code, "bad_request", query)
          }
          const listed = yield* app.request("GET", "/v0/inboxes", { key })
          assert.strictEqual(listed.body.count, 0, "no refused call created an inbox")
          for (const query of ["?read_only=0", "?read_only=false"]) {
            const tools = yield* app.request("POST", `/mcp${query}`, { key, json: rpc("tools/list") })
            assert.include(tools.body.result.tools.map((t: { name: string }) => t.name), "create_inbox", query)
          }
          const hidden = yield* app.request("POST", "/mcp?read_only=true", { key, json: rpc("tools/list") })
          assert.notInclude(hidden.body.result.tools.map((t: { name: string }) => t.name), "create_inbox")
        }))

      it.effect("a missing or invalid key is 401 with WWW-Authenticate: Bearer", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          for (const key of [undefined, "am_bogus"]) {
            const res = yield* app.request("POST", "/mcp", { json: rpc("tools/list"), ...(key === undefined ? {} : { key }) })
            assert.strictEqual(res.status, 401)
            assert.strictEqual(res.headers.get("www-authenticate"), "Bearer")
            assert.strictEqual(res.body.code, "unauthorized")
          }
        }))

      it.effect("/mcp accepts the key in the header only, not ?api_key=", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const res = yield* app.request("POST", `/mcp?api_key=${key}`, { json: rpc("tools/list") })
          assert.strictEqual(res.status, 401)
        }))

      it.effect("GET and DELETE are 405 with JSON-RPC error -32000", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const method of ["GET", "DELETE"]) {
            const res = yield* app.request(method, "/mcp", { key })
            assert.strictEqual(res.status, 405)
            assert.strictEqual(res.body.jsonrpc, "2.0")
            assert.strictEqual(res.body.error.code, -32000)
          }
        }))

      it.effect("a body over 256 KB is refused with 400 bad_request", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const big = rpc("tools/call", { name: "create_inbox", arguments: { display_name: "x".repeat(256 * 1024) } })
          const res = yield* app.request("POST", "/mcp", { key, json: big })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
        }))

      it.effect("responses are never cached and carry no CORS headers", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const res = yield* app.request("POST", "/mcp", { key, json: rpc("tools/list"), headers: { origin: "http://inbox.test" } })
          assert.strictEqual(res.status, 200)
          assert.strictEqual(res.headers.get("cache-control"), "no-store")
          for (const [name] of res.headers) assert.notMatch(name, /^access-control-/)
          const preflight = yield* app.request("OPTIONS", "/mcp", { headers: { origin: "https://evil.example", "access-control-request-method": "POST" } })
          assert.isNull(preflight.headers.get("access-control-allow-origin"))
        }))

      it.effect("a tool call runs with the caller's key: a scoped key's plan, permissions and isolation apply", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: { username: "seen.one" } })).body
          yield* app.request("POST", "/v0/inboxes", { key, json: { username: "hidden.one" } })
          const scoped = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "s", inbox_id: inbox.inbox_id } })).body.api_key
          const list = yield* app.request("POST", "/mcp", { key: scoped, json: rpc("tools/call", { name: "list_inboxes", arguments: {} }) })
          const body = JSON.parse(list.body.result.content[0].text)
          assert.deepStrictEqual(body.inboxes.map((i: { email: string }) => i.email), ["seen.one@inbox.localhost"])
          const create = yield* app.request("POST", "/mcp", { key: scoped, json: rpc("tools/call", { name: "create_inbox", arguments: {} }) })
          assert.isTrue(create.body.result.isError)
          assert.strictEqual(JSON.parse(create.body.result.content[0].text).code, "missing_permission")
          // The plan limit applies as over REST: 2 inboxes exist, a third is fine, a fourth is 402.
          yield* app.request("POST", "/mcp", { key, json: rpc("tools/call", { name: "create_inbox", arguments: {} }) })
          const over = yield* app.request("POST", "/mcp", { key, json: rpc("tools/call", { name: "create_inbox", arguments: {} }) })
          assert.strictEqual(JSON.parse(over.body.result.content[0].text).code, "plan_limit_exceeded")
        }))

      it.effect("a notification is answered 202 with no body", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const res = yield* app.request("POST", "/mcp", { key, json: { jsonrpc: "2.0", method: "notifications/initialized" } })
          assert.strictEqual(res.status, 202)
          assert.strictEqual(res.text, "")
        }))
    }
  )
}
