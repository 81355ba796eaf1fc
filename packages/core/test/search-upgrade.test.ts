/**
 * Migration 0025 on PGlite and PostgreSQL: search rows carry their message's hidden flag and
 * their inbox's and pod's terms, written by the trigger for new mail, kept by a label
 * change, and added by the migration to rows written before it, so an inbox's search by
 * the match index finds the mail of before the upgrade and still leaves spam out.
 */
import { assert, layer } from "@effect/vitest"
import { Database, Engine, Inbound, InboxOperations, MessageStore, Organizations, type Principal, Search, SearchBudget } from "@inbox/core/internal"
import { buildMail, engineLayer, storages } from "@inbox/testkit"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const MIGRATION = "0025_search_place_terms"

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "120 seconds" })(`search rows after migration 0025 (${storage.name})`, (it) => {
    it.effect("mail stored before the upgrade gets its hidden flag and its place's terms, and an inbox's search by the match index finds it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: "upgrade@example.com", verified: true })
        const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }
        const inbox = yield* Engine.use((engine) => engine.call("inboxes.create", { username: "upgraded" }, { kind: "principal", principal: owner }))
        const ids: Array<string> = []
        for (const subject of ["lantern one", "lantern two", "lantern three"]) {
          const raw = yield* Effect.promise(() => buildMail({ to: inbox.email, subject }))
          ids.push((yield* Inbound.use((i) => i.deliver({ raw, to: [inbox.email] }))).delivered[0]!.message_id)
        }
        yield* (yield* MessageStore).relabel(inbox.inbox_id, [ids[1]!], ["spam"], [])
        const rows = sql<{ id: string; hidden: boolean; terms: boolean }>`SELECT message_id AS id, hidden,
            search @@ (${`' inbox ${inbox.inbox_id}'`}::tsquery && ${`' pod ${inbox.pod_id}'`}::tsquery) AS terms
          FROM message_search WHERE inbox_id = ${inbox.inbox_id} ORDER BY message_id`
        const expected = [...ids].sort().map((id) => ({ id, hidden: id === ids[1], terms: true }))
        // New mail: the trigger writes both, and the label change the flag.
        assert.deepStrictEqual((yield* rows).map((r) => ({ ...r })), expected)

        // The rows as the schema before 0025 left them, then the migration again.
        yield* sql`DROP TRIGGER messages_search_hidden ON messages`
        yield* sql`DROP FUNCTION messages_search_hidden()`
        yield* sql`ALTER TABLE message_search DROP COLUMN hidden`
        yield* sql`UPDATE message_search SET search = ts_delete(search, ARRAY[' inbox ' || inbox_id, ' pod ' || pod_id])`
        const stripped = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM message_search
          WHERE inbox_id = ${inbox.inbox_id} AND search @@ ${`' inbox ${inbox.inbox_id}'`}::tsquery`
        assert.strictEqual(stripped[0]?.n, 0)
        yield* Database.loadMigrations()[MIGRATION]!
        assert.deepStrictEqual((yield* rows).map((r) => ({ ...r })), expected)

        // A one-row probe and walk send the search to the match index, which needs the terms.
        const found = (q: string) =>
          Search.use((s) => s.messages(owner, inbox.inbox_id, { q, limit: 10 })).pipe(
            Effect.map((page) => page.items.map((m) => m.message_id).sort()),
            Effect.provideService(SearchBudget, { candidates: 5, probe: 1, walk: 1 })
          )
        assert.deepStrictEqual(yield* found("lantern "), [ids[0]!, ids[2]!].sort())
        assert.deepStrictEqual(yield* found("lantern label:spam"), [ids[1]!])
      }))
  })
}
