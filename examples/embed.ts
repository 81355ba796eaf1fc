/**
 * Embedding the engine in another Node application: no HTTP server, no environment
 * variables. Build the engine on embedded storage, then call operations directly with a
 * principal, exactly as the REST API does for a request.
 *
 *   node --import tsx examples/embed.ts [data-dir]
 */
import { ApiKeys, Engine, Inboxes, Organizations, type Principal } from "@inbox/core"
import { Effect } from "effect"

export const program = Effect.gen(function*() {
  // An operator creates a tenant; its principal is what an organization-level key resolves to.
  const { organization } = yield* (yield* Organizations).create({ ownerEmail: "ops@example.com", verified: true })
  const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }

  const inboxes = yield* Inboxes
  const support = yield* inboxes.create(owner, { username: "support", display_name: "Support" })
  yield* inboxes.create(owner, { username: "billing" })

  // A key limited to the support inbox sees only that inbox, as over HTTP.
  const key = yield* (yield* ApiKeys).create(owner, { name: "support-bot", inbox_id: support.inbox_id, permissions: ["inbox_read"] })
  const scoped = yield* (yield* ApiKeys).authenticate(key.api_key)
  const visible = yield* inboxes.list(scoped, {})

  return { all: (yield* inboxes.list(owner, {})).items.map((i) => i.email), visibleToKey: visible.items.map((i) => i.email) }
})

export const runEmbedded = (dataDir?: string) =>
  program.pipe(
    Effect.provide(Engine.layerEmbedded({ baseDomain: "agents.example.com", ...(dataDir === undefined ? {} : { dataDir }) })),
    Effect.runPromise
  )

if (import.meta.url === `file://${process.argv[1]}`) {
  runEmbedded(process.argv[2]).then((result) => console.log(JSON.stringify(result, null, 2)))
}
