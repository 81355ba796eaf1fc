/**
 * The MCP tools as a real client sees them: the official SDK Client talks to
 * `handleMessage` through the SDK's in-memory transport, on every storage. The tool calls
 * run the same catalogue operations as REST, so these tests check the protocol framing
 * and that scope and errors come through unchanged. The real clock runs (no TestClock): the
 * SDK client keeps its own timers.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Agents, ApiKeys, type Engine, Inboxes, Organizations, type Principal, Suppressions } from "@inbox/core/internal"
import { engineLayer, lastCode, newOrganization, storages } from "@inbox/testkit"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { ErrorCode, JSONRPCMessageSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { ALIASES, handleMessage, type JsonSchema, toolCatalogue } from "../src/index.ts"

/** A verified organization and the principal of a fresh organization-level key. */
const organization = Effect.gen(function*() {
  const { organization } = yield* (yield* Organizations).create({ ownerEmail: "owner@example.com", verified: true })
  const keys = yield* ApiKeys
  const key = yield* keys.issue(organization.id, { name: "test" })
  return { organizationId: organization.id, principal: yield* keys.authenticate(key.api_key) }
})

/** An SDK client connected to handleMessage for this principal; closed with the test's scope. */
const connect = (principal: Principal, readOnly = false) =>
  Effect.gen(function*() {
    const run = Effect.runPromiseWith(yield* Effect.context<Engine>())
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    let n = 0
    serverTransport.onmessage = (message) => {
      const context = { clientIp: "127.0.0.1", requestId: `req-${++n}` }
      void run(handleMessage(message, { principal, readOnly, context })).then((answer) =>
        // Parsing with the SDK's own schema checks that every answer is valid JSON-RPC.
        answer === undefined ? undefined : serverTransport.send(JSONRPCMessageSchema.parse(answer))
      )
    }
    const client = new Client({ name: "inbox-test", version: "1.0.0" })
    yield* Effect.acquireRelease(
      Effect.promise(() => client.connect(clientTransport)),
      () => Effect.promise(() => client.close())
    )
    return client
  })

/** The structured result of a successful call and the parsed JSON text of any call. */
const structured = (result: object) =>
  ("structuredContent" in result ? result.structuredContent : {}) as Record<string, unknown>
const textBody = (result: object) =>
  JSON.parse(("content" in result ? result.content as ReadonlyArray<{ readonly text: string }> : [])[0]?.text ?? "null") as Record<string, unknown>

/**
 * Paths in `value` that `schema` does not declare (an object key outside `properties`), so
 * a result field the output Schema forgot is caught even though the published schema lets
 * clients accept additions. Follows `$ref` into `$defs`, arrays and `anyOf`.
 */
const undeclared = (value: unknown, schema: JsonSchema, defs: Record<string, JsonSchema>, path = "$"): Array<string> => {
  const ref = schema["$ref"]
  if (typeof ref === "string") return undeclared(value, defs[ref.replace("#/$defs/", "")] ?? {}, defs, path)
  const anyOf = schema["anyOf"]
  if (Array.isArray(anyOf)) {
    const options = (anyOf as Array<JsonSchema>).map((s) => undeclared(value, s, defs, path))
    return options.find((o) => o.length === 0) ?? options[0] ?? []
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => undeclared(v, (schema["items"] ?? {}) as JsonSchema, defs, `${path}[${i}]`))
  if (typeof value !== "object" || value === null) return []
  const properties = schema["properties"] as Record<string, JsonSchema> | undefined
  if (properties === undefined) return []
  return Object.entries(value).flatMap(([k, v]) =>
    properties[k] === undefined ? [`${path}.${k}`] : undeclared(v, properties[k], defs, `${path}.${k}`)
  )
}

const rejection = (promise: () => Promise<unknown>) =>
  Effect.promise(() => promise().then(() => undefined, (error: unknown) => error))

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "120 seconds", excludeTestServices: true })(`MCP tools on ${storage.name}`, (it) => {
    it.effect("initialize names the server inbox-engine and offers tools", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        assert.strictEqual(client.getServerVersion()?.name, "inbox-engine")
        assert.deepStrictEqual(client.getServerCapabilities()?.tools, { listChanged: false })
      }).pipe(Effect.scoped))

    it.effect("tools/list shows create_inbox and list_inboxes with their input schemas, argument names in camelCase", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const { tools } = yield* Effect.promise(() => client.listTools())
        const byName = new Map(tools.map((t) => [t.name, t]))
        const create = byName.get("create_inbox")
        const list = byName.get("list_inboxes")
        const get = byName.get("get_inbox")
        assert.isDefined(create)
        assert.isDefined(list)
        assert.isDefined(get)
        assert.strictEqual(create.inputSchema.type, "object")
        // AgentMail's toolkit convention: camelCase names advertised (snake_case still accepted).
        assert.includeMembers(Object.keys(create.inputSchema.properties ?? {}), ["username", "domain", "displayName", "clientId", "metadata", "podId"])
        // podId only appears on one of create_inbox's routes, so it is optional.
        assert.notInclude(create.inputSchema.required ?? [], "podId")
        assert.includeMembers(get.inputSchema.required ?? [], ["inboxId"])
        assert.includeMembers(Object.keys(list.inputSchema.properties ?? {}), ["limit", "pageToken"])
        for (const tool of tools) {
          for (const name of Object.keys(tool.inputSchema.properties ?? {})) assert.notInclude(name, "_", `${tool.name}.${name}`)
        }
        assert.strictEqual(create.annotations?.readOnlyHint, false)
        assert.strictEqual(list.annotations?.readOnlyHint, true)
      }).pipe(Effect.scoped))

    it.effect("read_only hides every tool that sends or changes data and refuses calling it", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal, true)
        const { tools } = yield* Effect.promise(() => client.listTools())
        const names = tools.map((t) => t.name)
        assert.include(names, "list_inboxes")
        assert.notInclude(names, "create_inbox")
        assert.isTrue(tools.every((t) => t.annotations?.readOnlyHint === true))
        const error = yield* rejection(() => client.callTool({ name: "create_inbox", arguments: { username: "hidden" } }))
        assert.instanceOf(error, McpError)
        assert.strictEqual(error.code, ErrorCode.InvalidParams)
      }).pipe(Effect.scoped))

    it.effect("create_inbox then list_inboxes returns the new inbox", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const created = yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: { username: "helpdesk", display_name: "Help desk" } }))
        assert.notStrictEqual(created.isError, true, JSON.stringify(created.content))
        const inbox = structured(created)
        assert.strictEqual(inbox["email"], "helpdesk@inbox.localhost")
        assert.deepStrictEqual(textBody(created), inbox)
        const listed = yield* Effect.promise(() => client.callTool({ name: "list_inboxes", arguments: {} }))
        const inboxes = structured(listed)["inboxes"] as ReadonlyArray<{ inbox_id: string }>
        assert.deepStrictEqual(inboxes.map((i) => i.inbox_id), [inbox["inbox_id"]])
        assert.strictEqual(structured(listed)["count"], 1)
      }).pipe(Effect.scoped))

    it.effect("a reserved username comes back as a tool error with code reserved_username", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const result = yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: { username: "admin" } }))
        assert.strictEqual(result.isError, true)
        const body = textBody(result)
        assert.strictEqual(body["code"], "reserved_username")
        assert.strictEqual(body["name"], "UnprocessableError")
      }).pipe(Effect.scoped))

    it.effect("a field the operation does not allow is a tool error with code bad_request", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const result = yield* Effect.promise(() => client.callTool({ name: "create_pod", arguments: { name: "p", colour: "red" } }))
        assert.strictEqual(result.isError, true)
        assert.strictEqual(textBody(result)["code"], "bad_request")
      }).pipe(Effect.scoped))

    it.effect("an inbox-scoped key lists only its inbox and cannot see another", () =>
      Effect.gen(function*() {
        const { organizationId, principal } = yield* organization
        const inboxes = yield* Inboxes
        const mine = yield* inboxes.create(principal, { username: "mine" })
        const other = yield* inboxes.create(principal, { username: "other" })
        const keys = yield* ApiKeys
        const scoped = yield* keys.authenticate((yield* keys.issue(organizationId, { name: "scoped", inboxId: mine.inbox_id })).api_key)
        const client = yield* connect(scoped)
        const listed = yield* Effect.promise(() => client.callTool({ name: "list_inboxes", arguments: {} }))
        const ids = (structured(listed)["inboxes"] as ReadonlyArray<{ inbox_id: string }>).map((i) => i.inbox_id)
        assert.deepStrictEqual(ids, [mine.inbox_id])
        const hidden = yield* Effect.promise(() => client.callTool({ name: "get_inbox", arguments: { inbox_id: other.inbox_id } }))
        assert.strictEqual(hidden.isError, true)
        assert.strictEqual(textBody(hidden)["code"], "not_found")
        const create = yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: {} }))
        assert.strictEqual(textBody(create)["code"], "missing_permission")
      }).pipe(Effect.scoped))

    it.effect("an agent sends with send_message, reads with list_messages and get_thread, and answers with reply_to_message", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const a = structured(yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: { username: `mcp-a-${Date.now()}` } })))
        const b = structured(yield* Effect.promise(() => client.callTool({ name: "create_inbox", arguments: { username: `mcp-b-${Date.now()}` } })))
        const sent = yield* Effect.promise(() =>
          client.callTool({ name: "send_message", arguments: { inbox_id: a["inbox_id"], to: b["email"], subject: "From one agent", text: "Hello there" } }))
        assert.notStrictEqual(sent.isError, true, JSON.stringify(sent))
        const listed = structured(yield* Effect.promise(() => client.callTool({ name: "list_messages", arguments: { inbox_id: b["inbox_id"] } })))
        const messages = listed["messages"] as ReadonlyArray<{ message_id: string; thread_id: string; subject: string }>
        assert.deepStrictEqual(messages.map((m) => m.subject), ["From one agent"])
        const thread = structured(yield* Effect.promise(() => client.callTool({ name: "get_thread", arguments: { thread_id: messages[0]?.thread_id } })))
        assert.strictEqual(thread["message_count"], 1)
        const reply = yield* Effect.promise(() =>
          client.callTool({ name: "reply_to_message", arguments: { inbox_id: b["inbox_id"], message_id: messages[0]?.message_id, text: "Hi back" } }))
        assert.strictEqual(structured(reply)["thread_id"], messages[0]?.thread_id)
        const readOnly = yield* connect(principal, true)
        const names = (yield* Effect.promise(() => readOnly.listTools())).tools.map((t) => t.name)
        assert.includeMembers(names, ["list_messages", "get_message", "list_threads", "get_thread", "get_attachment"])
        for (const changing of ["send_message", "reply_to_message", "forward_message", "update_message", "update_thread", "delete_thread"]) {
          assert.notInclude(names, changing)
        }
      }).pipe(Effect.scoped))

    it.effect("every tool's result conforms to its outputSchema: the SDK client validates each, and no field is undeclared", () =>
      Effect.gen(function*() {
        const agent = yield* (yield* Agents).signUp({ username: `out-${Date.now().toString(36)}`, human_email: "schema@example.org" }, "127.0.0.1")
        const principal = yield* (yield* ApiKeys).authenticate(agent.api_key)
        let client = yield* connect(principal)
        // listTools compiles every outputSchema into the validator callTool then applies.
        const { tools } = yield* Effect.promise(() => client.listTools())
        const schemas = new Map(tools.map((t) => [t.name, t.outputSchema as JsonSchema | undefined]))
        const called = new Set<string>()
        const call = (name: string, args: Record<string, unknown> = {}) =>
          Effect.gen(function*() {
            const result = yield* Effect.promise(() => client.callTool({ name, arguments: args }))
            assert.notStrictEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`)
            called.add(name)
            const schema = schemas.get(name)
            const content = structured(result)
            if (schema !== undefined) {
              assert.deepStrictEqual(undeclared(content, schema, (schema["$defs"] ?? {}) as Record<string, JsonSchema>), [], name)
            } else {
              assert.deepStrictEqual(content, { ok: true, success: true }, `${name} has no outputSchema, so it must be an empty success`)
            }
            return content
          })
        const pod = yield* call("create_pod", { name: "schema pod", client_id: "schema-pod" })
        yield* call("get_pod", { pod_id: pod["pod_id"] })
        yield* call("list_pods")
        const inbox = yield* call("create_inbox", { pod_id: pod["pod_id"], display_name: "Schema", metadata: { team: "a" } })
        yield* call("get_inbox", { inbox_id: inbox["inbox_id"] })
        yield* call("update_inbox", { inbox_id: inbox["inbox_id"], status: "paused" })
        yield* call("list_inboxes", { limit: 1 })
        yield* call("list_plans")
        yield* call("get_usage_metrics", { inbox_id: inbox["inbox_id"], usage_types: ["message_count"] })
        yield* call("get_event_metrics", { event_types: ["message.sent"] })
        yield* call("get_event_series", { inbox_id: inbox["inbox_id"], event_types: ["message.sent"], period: 3600, limit: 3 })
        yield* call("get_rate_metrics", { period: 86400, limit: 7 })
        yield* call("get_billing")
        yield* call("get_billing_usage")
        // No payment provider is configured here: the tools answer the error REST answers.
        for (const [name, args, code] of [
          ["start_checkout", { plan: "pro", interval: "monthly" }, "billing_not_configured"],
          ["open_billing_portal", {}, "no_subscription"],
          ["cancel_subscription", {}, "no_subscription"]
        ] as const) {
          const result = yield* Effect.promise(() => client.callTool({ name, arguments: args }))
          assert.strictEqual(result.isError, true, name)
          assert.include(JSON.stringify(result.content), code, name)
          called.add(name)
        }
        yield* call("attach_human", { human_email: "schema@example.org" })
        yield* call("verify_human", { otp_code: yield* lastCode("schema@example.org") })
        // Mail: a message to the agent's own inbox (delivered locally), read, labelled, answered, forwarded.
        const own = yield* call("get_inbox", { inbox_id: agent.inbox_id })
        const sent = yield* call("send_message", {
          inbox_id: agent.inbox_id,
          to: own["email"],
          subject: "schema",
          text: "hello",
          attachments: [{ filename: "a.txt", content: Buffer.from("attached").toString("base64") }]
        })
        const listed = yield* call("list_messages", { inbox_id: agent.inbox_id, labels: ["received"] })
        const received = (listed["messages"] as ReadonlyArray<{ message_id: string; thread_id: string }>)[0]
        const full = yield* call("get_message", { inbox_id: agent.inbox_id, message_id: received?.message_id })
        const attachment = (full["attachments"] as ReadonlyArray<{ attachment_id: string }>)[0]
        yield* call("get_attachment", { inbox_id: agent.inbox_id, message_id: received?.message_id, attachment_id: attachment?.attachment_id })
        yield* call("get_thread_attachment", { thread_id: received?.thread_id, attachment_id: attachment?.attachment_id })
        yield* call("auth_me")
        yield* call("get_organization")
        yield* call("search_inboxes", { q: "out" })
        yield* call("get_raw_message", { inbox_id: agent.inbox_id, message_id: received?.message_id })
        yield* call("update_message", { inbox_id: agent.inbox_id, message_id: received?.message_id, add_labels: ["seen-by-schema"] })
        yield* call("batch_get_messages", { inbox_id: agent.inbox_id, message_ids: [sent["message_id"], received?.message_id] })
        yield* call("batch_update_messages", { inbox_id: agent.inbox_id, message_ids: [received?.message_id], remove_labels: ["unread"] })
        // The message came from this inbox itself, so a reply needs a recipient besides it.
        yield* call("reply_to_message", { inbox_id: agent.inbox_id, message_id: received?.message_id, to: "someone@example.net", text: "reply" })
        yield* call("reply_all_to_message", { inbox_id: agent.inbox_id, message_id: received?.message_id, cc: "other@example.net", text: "reply all" })
        yield* call("forward_message", { inbox_id: agent.inbox_id, message_id: received?.message_id, to: "someone@example.net" })
        yield* call("list_threads", { inbox_id: agent.inbox_id })
        yield* call("get_thread", { thread_id: received?.thread_id })
        yield* call("update_thread", { thread_id: received?.thread_id, add_labels: ["done"] })
        yield* call("list_events", { inbox_id: agent.inbox_id, limit: 5 })
        const hook = yield* call("create_webhook", { inbox_id: agent.inbox_id, url: "https://93.184.215.14/mcp", headers: { "x-a": "1" } })
        yield* call("list_webhooks", { inbox_id: agent.inbox_id })
        yield* call("get_webhook", { webhook_id: hook["webhook_id"] })
        yield* call("update_webhook", { webhook_id: hook["webhook_id"], event_types: ["message.sent"] })
        yield* call("get_webhook_headers", { webhook_id: hook["webhook_id"] })
        yield* call("update_webhook_headers", { webhook_id: hook["webhook_id"], remove: ["x-a"] })
        // A message sent now is an event the webhook wants: a delivery to read and send again.
        yield* call("send_message", { inbox_id: agent.inbox_id, to: "someone@example.net", subject: "hooked", text: "hooked" })
        const deliveries = yield* call("list_webhook_deliveries", { webhook_id: hook["webhook_id"] })
        const delivery = (deliveries["deliveries"] as ReadonlyArray<{ delivery_id: string }>)[0]
        assert.isDefined(delivery, "the sent message's delivery")
        yield* call("get_webhook_delivery", { webhook_id: hook["webhook_id"], delivery_id: delivery?.delivery_id })
        yield* call("redeliver_webhook_delivery", { webhook_id: hook["webhook_id"], delivery_id: delivery?.delivery_id })
        yield* call("test_webhook", { webhook_id: hook["webhook_id"] })
        yield* call("delete_webhook", { webhook_id: hook["webhook_id"] })
        yield* call("delete_message", { inbox_id: agent.inbox_id, message_id: sent["message_id"] })
        yield* call("delete_thread", { thread_id: received?.thread_id })
        // Lists at the organization's level and at an inbox's, and a suppression to lift.
        yield* call("create_list_entry", { direction: "send", type: "block", entry: "blocked.example", reason: "schema" })
        yield* call("create_list_entry", { inbox_id: inbox["inbox_id"], direction: "receive", type: "allow", entry: "friend@example.org" })
        yield* call("list_list_entries", { direction: "send", type: "block" })
        yield* call("get_list_entry", { inbox_id: inbox["inbox_id"], direction: "receive", type: "allow", entry: "friend@example.org" })
        yield* call("delete_list_entry", { direction: "send", type: "block", entry: "blocked.example" })
        yield* (yield* Suppressions).add(principal.organizationId, { address: "gone@example.net", reason: "bounce" })
        yield* call("list_suppressions")
        yield* call("delete_suppression", { address: "gone@example.net" })
        yield* call("delete_inbox", { inbox_id: inbox["inbox_id"] })
        yield* call("delete_pod", { pod_id: pod["pod_id"] })
        // Drafts: made, read, changed, sent (consumed), and one deleted.
        const draft = yield* call("create_draft", {
          inbox_id: agent.inbox_id,
          to: "someone@example.net",
          subject: "draft",
          text: "later",
          attachments: [{ filename: "plan.txt", content: Buffer.from("plan").toString("base64") }]
        })
        yield* call("get_draft", { draft_id: draft["draft_id"] })
        const suggested = yield* call("list_correspondents", { inbox_id: agent.inbox_id, q: "some" })
        assert.isAbove(suggested["count"] as number, 0)
        for (const c of suggested["correspondents"] as Array<{ address: string }>) assert.match(c.address, /^some/)
        yield* call("get_draft_attachment", { draft_id: draft["draft_id"], attachment_id: (draft["attachments"] as Array<{ attachment_id: string }>)[0]!.attachment_id })
        yield* call("list_drafts", { inbox_id: agent.inbox_id })
        yield* call("update_draft", { inbox_id: agent.inbox_id, draft_id: draft["draft_id"], subject: null, send_at: "2100-01-01T00:00:00.000Z" })
        yield* call("send_draft", { inbox_id: agent.inbox_id, draft_id: draft["draft_id"] })
        const doomed = yield* call("create_draft", { inbox_id: agent.inbox_id })
        yield* call("delete_draft", { inbox_id: agent.inbox_id, draft_id: doomed["draft_id"] })
        yield* call("search_messages", { inbox_id: agent.inbox_id, q: "schema" })
        yield* call("search_threads", { q: "schema" })
        // Custom domains need a paid plan (Free has 0): an organization on Pro.
        const pro = yield* newOrganization({ plan: "pro" })
        client = yield* connect(yield* (yield* ApiKeys).authenticate(pro.key))
        const domain = yield* call("create_domain", { domain: `mcp-${Date.now().toString(36)}.example.com` })
        yield* call("get_domain", { domain_id: domain["domain_id"] })
        yield* call("list_domains")
        yield* call("update_domain", { domain_id: domain["domain_id"], tracking_enabled: true })
        yield* call("verify_domain", { domain_id: domain["domain_id"] })
        yield* call("delete_domain", { domain_id: domain["domain_id"] })
        // A tool added to the catalogue must join this test.
        // The toolkit's alias names run the same operations (toolkit.test.ts calls them).
        assert.deepStrictEqual([...called].sort(), toolCatalogue.map((t) => t.tool.name).filter((n) => !(n in ALIASES)).sort())
        for (const entry of toolCatalogue) {
          const json = entry.operation.output.kind === "json" || entry.operation.output.kind === "list"
          assert.strictEqual(schemas.get(entry.tool.name) !== undefined, json, `${entry.tool.name} outputSchema`)
        }
      }).pipe(Effect.scoped))

    it.effect("delete_pod answers ok for an empty-body success", () =>
      Effect.gen(function*() {
        const { principal } = yield* organization
        const client = yield* connect(principal)
        const pod = yield* Effect.promise(() => client.callTool({ name: "create_pod", arguments: { name: "temp" } }))
        const deleted = yield* Effect.promise(() => client.callTool({ name: "delete_pod", arguments: { pod_id: structured(pod)["pod_id"] } }))
        assert.deepStrictEqual(structured(deleted), { ok: true, success: true })
      }).pipe(Effect.scoped))
  })
}

describe("tool catalogue", () => {
  it("derives one tool per catalogue operation that names a tool", async () => {
    const { toolCatalogue } = await import("../src/tools.ts")
    const names = toolCatalogue.map((t) => t.tool.name)
    assert.includeMembers(names, [
      "create_inbox", "list_inboxes", "get_inbox", "update_inbox", "delete_inbox", "create_pod", "list_pods", "get_pod", "delete_pod",
      "send_message", "reply_to_message", "forward_message", "list_messages", "get_message", "update_message",
      "list_threads", "get_thread", "update_thread", "delete_thread", "get_attachment"
    ])
    assert.strictEqual(new Set(names).size, names.length)
  })
})
