/**
 * AgentMail's MCP toolkit against our tools, through the official MCP SDK client: every
 * toolkit tool in scope is listed under the toolkit's name, and an agent written for the
 * toolkit works end to end with its tool names and camelCase argument names (toolkit.ts,
 * docs/mcp.md). The snake_case names stay accepted; one argument under both is refused.
 */
import { assert, layer } from "@effect/vitest"
import { Agents, ApiKeys, type Engine, Organizations, type Principal } from "@inbox/core/internal"
import { engineLayer, lastCode, storages } from "@inbox/testkit"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { handleMessage, TOOLKIT } from "../src/index.ts"

const connect = (principal: Principal) =>
  Effect.gen(function*() {
    const run = Effect.runPromiseWith(yield* Effect.context<Engine>())
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
    let n = 0
    serverTransport.onmessage = (message) => {
      const context = { clientIp: "127.0.0.1", requestId: `req-${++n}` }
      void run(handleMessage(message, { principal, readOnly: false, context })).then((answer) =>
        answer === undefined ? undefined : serverTransport.send(JSONRPCMessageSchema.parse(answer))
      )
    }
    const client = new Client({ name: "toolkit-test", version: "1.0.0" })
    yield* Effect.acquireRelease(Effect.promise(() => client.connect(clientTransport)), () => Effect.promise(() => client.close()))
    return client
  })

const structured = (result: object) => ("structuredContent" in result ? result.structuredContent : {}) as Record<string, any>
const text = (result: object) => ("content" in result ? JSON.stringify(result.content) : "")

const IN_SCOPE = TOOLKIT.filter((t) => t.ours !== undefined).map((t) => t.name)

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "120 seconds", excludeTestServices: true })(`AgentMail's toolkit tools on ${storage.name}`, (it) => {
    it.effect("every toolkit tool in scope is listed under its name with camelCase arguments; the five app tools are out of scope with a reason", () =>
      Effect.gen(function*() {
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: "owner@example.com", verified: true })
        const keys = yield* ApiKeys
        const client = yield* connect(yield* keys.authenticate((yield* keys.issue(organization.id, { name: "t" })).api_key))
        const { tools } = yield* Effect.promise(() => client.listTools())
        const names = new Set(tools.map((t) => t.name))
        assert.strictEqual(TOOLKIT.length, 37)
        assert.strictEqual(IN_SCOPE.length, 32)
        for (const name of IN_SCOPE) assert.isTrue(names.has(name), name)
        for (const t of TOOLKIT.filter((t) => t.ours === undefined)) {
          assert.isFalse(names.has(t.name), t.name)
          assert.isString(t.outOfScope, t.name)
        }
        const attachment = tools.find((t) => t.name === "get_attachment")
        assert.includeMembers(Object.keys(attachment?.inputSchema.properties ?? {}), ["inboxId", "threadId", "messageId", "attachmentId"])
        const reply = tools.find((t) => t.name === "reply_to_message")
        assert.include(Object.keys(reply?.inputSchema.properties ?? {}), "replyAll")
      }).pipe(Effect.scoped))

    it.effect("an agent written for the toolkit works end to end with its tool and argument names", () =>
      Effect.gen(function*() {
        const human = `human-${Date.now().toString(36)}@example.org`
        const agent = yield* (yield* Agents).signUp({ username: `kit-${Date.now().toString(36)}`, human_email: human }, "127.0.0.1")
        const client = yield* connect(yield* (yield* ApiKeys).authenticate(agent.api_key))
        const called = new Set<string>()
        const call = (name: string, args: Record<string, unknown> = {}) =>
          Effect.gen(function*() {
            const result = yield* Effect.promise(() => client.callTool({ name, arguments: args }))
            assert.notStrictEqual(result.isError, true, `${name}: ${text(result)}`)
            called.add(name)
            return structured(result)
          })

        // Onboarding first: an agent account sends once its human verifies it.
        yield* call("agent_attach_human", { humanEmail: human })
        yield* call("agent_verify", { otpCode: yield* lastCode(human) })
        const me = yield* call("auth_me")
        assert.strictEqual(me["organization_id"], agent.organization_id)

        const tag = Date.now().toString(36)
        const a = yield* call("create_inbox", { username: `kit-a-${tag}`, displayName: "Kit A", clientId: `kit-a-${tag}` })
        assert.strictEqual(a["display_name"], "Kit A")
        const b = yield* call("create_inbox", { username: `kit-b-${tag}` })
        yield* call("list_inboxes", { limit: 10 })
        const found = yield* call("search_inboxes", { q: `kit-a-${tag}` })
        assert.deepStrictEqual(found["inboxes"].map((i: { inbox_id: string }) => i.inbox_id), [a["inbox_id"]])
        yield* call("get_inbox", { inboxId: a["inbox_id"] })
        yield* call("update_inbox", { inboxId: a["inbox_id"], displayName: "Kit A2" })

        const sent = yield* call("send_message", {
          inboxId: a["inbox_id"],
          to: [b["email"]],
          subject: "Toolkit hello",
          text: "From the toolkit",
          labels: ["kit-sent"],
          attachments: [{ filename: "n.txt", contentType: "text/plain", content: Buffer.from("notes").toString("base64") }]
        })
        // The toolkit's labels are on the sent message, beside sent.
        const sentCopy = yield* call("get_message", { inboxId: a["inbox_id"], messageId: sent["message_id"] })
        assert.sameMembers(sentCopy["labels"], ["sent", "kit-sent"])
        const listed = yield* call("list_messages", { inboxId: b["inbox_id"], limit: 10 })
        const received = listed["messages"][0] as { message_id: string; thread_id: string }
        const full = yield* call("get_message", { inboxId: b["inbox_id"], messageId: received.message_id })
        assert.strictEqual(full["attachments"][0]["content_type"], "text/plain")
        const attachment = yield* call("get_attachment", { inboxId: b["inbox_id"], threadId: received.thread_id, attachmentId: full["attachments"][0]["attachment_id"] })
        assert.strictEqual(attachment["filename"], "n.txt")
        yield* call("list_threads", { inboxId: b["inbox_id"] })
        // The toolkit's thread filters: lists of substrings, all of which must match.
        const subjects = (result: Record<string, any>) => result["threads"].map((t: { subject: string }) => t.subject)
        assert.deepStrictEqual(subjects(yield* call("list_threads", { inboxId: b["inbox_id"], senders: [a["email"].toUpperCase()], recipients: [b["email"]], ascending: true })), ["Toolkit hello"])
        assert.deepStrictEqual(subjects(yield* call("list_threads", { inboxId: b["inbox_id"], senders: [a["email"], "nobody"] })), [])
        yield* call("search_threads", { inboxId: b["inbox_id"], q: "toolkit" })
        yield* call("search_messages", { inboxId: b["inbox_id"], q: "toolkit" })
        yield* call("get_thread", { inboxId: b["inbox_id"], threadId: received.thread_id })
        yield* call("update_message", { inboxId: b["inbox_id"], messageId: received.message_id, addLabels: ["seen"], removeLabels: ["unread"] })
        yield* call("update_thread", { inboxId: b["inbox_id"], threadId: received.thread_id, addLabels: ["kit"] })
        const reply = yield* call("reply_to_message", { inboxId: b["inbox_id"], messageId: received.message_id, text: "Got it" })
        assert.strictEqual(reply["thread_id"], received.thread_id)
        yield* call("reply_to_message", { inboxId: b["inbox_id"], messageId: received.message_id, text: "To all", replyAll: true })
        yield* call("forward_message", { inboxId: b["inbox_id"], messageId: received.message_id, to: [human], text: "FYI" })

        const draft = yield* call("create_draft", { inboxId: b["inbox_id"], to: [human], subject: "Later", text: "Draft", inReplyTo: received.message_id })
        assert.strictEqual(draft["reply_to_message_id"], received.message_id)
        yield* call("list_drafts", { inboxId: b["inbox_id"] })
        yield* call("get_draft", { inboxId: b["inbox_id"], draftId: draft["draft_id"] })
        yield* call("update_draft", { inboxId: b["inbox_id"], draftId: draft["draft_id"], subject: "Sooner", sendAt: "2100-01-01T00:00:00.000Z" })
        yield* call("send_draft", { inboxId: b["inbox_id"], draftId: draft["draft_id"] })
        const doomed = yield* call("create_draft", { inboxId: b["inbox_id"], text: "bin", clientId: `bin-${tag}` })
        assert.strictEqual((yield* call("create_draft", { inboxId: b["inbox_id"], clientId: `bin-${tag}` }))["draft_id"], doomed["draft_id"])
        yield* call("delete_draft", { inboxId: b["inbox_id"], draftId: doomed["draft_id"] })

        const list = { inboxId: b["inbox_id"], direction: "receive", listType: "block" }
        const entry = yield* call("create_list_entry", { ...list, entry: "spam.example", reason: "spam" })
        assert.deepInclude(entry, { entry: "spam.example", list_type: "block", inbox_id: b["inbox_id"] })
        yield* call("list_list_entries", list)
        yield* call("get_list_entry", { ...list, entry: "spam.example" })
        yield* call("delete_list_entry", { ...list, entry: "spam.example" })

        // A delete answers the toolkit's { success: true }.
        assert.isTrue((yield* call("delete_thread", { inboxId: b["inbox_id"], threadId: received.thread_id }))["success"])
        yield* call("delete_inbox", { inboxId: a["inbox_id"] })
        assert.deepStrictEqual([...called].sort(), [...IN_SCOPE].sort())

        // The REST API's snake_case names still work; the same argument under both is refused.
        yield* call("get_inbox", { inbox_id: b["inbox_id"] })
        const twice = yield* Effect.promise(() => client.callTool({ name: "get_inbox", arguments: { inbox_id: b["inbox_id"], inboxId: b["inbox_id"] } }))
        assert.strictEqual(twice.isError, true)
        assert.include(text(twice), "validation_error")
        // Maps keep the caller's own keys: metadata's are not renamed.
        const meta = yield* call("update_inbox", { inboxId: b["inbox_id"], metadata: { cost_center: "x1" } })
        assert.deepStrictEqual(meta["metadata"], { cost_center: "x1" })
      }).pipe(Effect.scoped))
  })
}
