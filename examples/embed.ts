/**
 * Embedding the engine in another Node application: no HTTP server, no environment
 * variables. Build the engine on embedded storage, then run catalogue operations with
 * `Engine.call(operation, principal, request)`: the same decoding, permissions, scope and
 * limits as the REST API, and the same answers.
 *
 *   node --import tsx examples/embed.ts [data-dir]
 */
import { ApiKeyOperations, ApiKeys, Engine, InboxOperations, Organizations, type Principal } from "@inbox/core"
import { Effect } from "effect"

export const program = Effect.gen(function*() {
  // An operator creates a tenant; its principal is what an organization-level key resolves to.
  const { organization } = yield* (yield* Organizations).create({ ownerEmail: "ops@example.com", verified: true })
  const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }

  const support = yield* Engine.call(InboxOperations.createInbox, owner, { input: { username: "support", display_name: "Support" } })
  yield* Engine.call(InboxOperations.createInbox, owner, { input: { username: "billing" } })

  // Refused exactly as REST refuses it: 400 validation_error naming the field.
  const refused = yield* Engine.call(InboxOperations.createInbox, owner, { input: { display_name: "x".repeat(5000) } }).pipe(Effect.flip)

  // A key limited to the support inbox sees only that inbox, as over HTTP.
  const key = yield* Engine.call(ApiKeyOperations.createApiKey, owner, {
    input: { name: "support-bot", inbox_id: support.inbox_id, permissions: ["inbox_read"] }
  })
  const scoped = yield* (yield* ApiKeys).authenticate(key.api_key)
  const visible = yield* Engine.call(InboxOperations.listInboxes, scoped)
  const all = yield* Engine.call(InboxOperations.listInboxes, owner)

  return {
    all: all.inboxes.map((i) => i.email),
    visibleToKey: visible.inboxes.map((i) => i.email),
    refused: { code: refused.code, path: refused._tag === "ValidationError" ? refused.errors[0]?.path : undefined }
  }
})

export const runEmbedded = (dataDir?: string) =>
  program.pipe(
    Effect.provide(Engine.layerEmbedded({ baseDomain: "agents.example.com", ...(dataDir === undefined ? {} : { dataDir }) })),
    Effect.runPromise
  )

if (import.meta.url === `file://${process.argv[1]}`) {
  runEmbedded(process.argv[2]).then((result) => console.log(JSON.stringify(result, null, 2)))
}
