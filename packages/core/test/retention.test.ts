/**
 * Retention (operating/Retention.ts) on PGlite and PostgreSQL, rows aged in SQL: trash older
 * than its age, Idempotency-Keys past 24 hours, spent jobs and old events are purged in
 * bounded batches, and nothing younger (nor a key whose request still runs, nor a queued
 * job) is touched; the schedule runs one purge job per slot and queues the next.
 */
import { assert, layer } from "@effect/vitest"
import { Engine, Inbound, InboxOperations, Jobs, MessageStore, Organizations, type Principal, Retention, RETENTION_JOB, RETRY_POLICIES } from "@inbox/core/internal"
import { buildMail, engineLayer, storages } from "@inbox/testkit"
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

const count = (query: string) =>
  SqlClient.SqlClient.use((sql) => sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM (${query}) q`)).pipe(
    Effect.map((rows) => rows[0]?.n ?? 0),
    Effect.orDie
  )

const deliver = (to: string, subject: string) =>
  Effect.gen(function*() {
    const raw = yield* Effect.promise(() => buildMail({ to, subject }))
    yield* Inbound.use((i) => i.deliver({ raw, to: [to] }))
  })

/** A key row as the send path leaves it; `createdAt` and `leaseUntil` are SQL expressions (test constants). */
const idempotencyKey = (organizationId: string, key: string, state: string, createdAt: string, leaseUntil: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql.unsafe(`INSERT INTO idempotency_keys (organization_id, key, route, request_hash, state, lease_until, created_at)
      VALUES ($1, $2, 'send', 'h', $3, ${leaseUntil}, ${createdAt})`, [organizationId, key, state])
  ).pipe(Effect.orDie)

for (const storage of storages()) {
  layer(Retention.layer({ trashDays: 30, jobsDays: 7, eventsDays: 90, batch: 2, intervalMinutes: 60 }).pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds", excludeTestServices: true })(
    `retention on ${storage.name}`,
    (it) => {
      it.effect("purges trash older than its age, Idempotency-Keys past 24 hours, spent jobs and old events, in batches, and keeps the rest", () =>
        Effect.gen(function*() {
          const retention = yield* Retention
          const jobs = yield* Jobs
          const store = yield* MessageStore
          const sql = yield* SqlClient.SqlClient
          const { organization } = yield* (yield* Organizations).create({ ownerEmail: "ops@example.com", verified: true })
          const owner: Principal = { organizationId: organization.id, scope: { type: "organization" } }
          const inbox = yield* Engine.use((engine) => engine.call("inboxes.create", { username: "kept" }, { kind: "principal", principal: owner }))
          for (const subject of ["one", "two", "three"]) yield* deliver(inbox.email, subject)
          const bySubject = new Map((yield* sql<{ id: string; subject: string }>`SELECT id, subject FROM messages WHERE inbox_id = ${inbox.inbox_id}`).map((r) => [r.subject, r.id]))
          const id = (s: string) => bySubject.get(s) ?? ""
          yield* store.relabel(inbox.inbox_id, [id("one"), id("two"), id("three")], ["trash"], [])
          // Ages are set on the rows: the purge reads the clock, as a server would weeks later.
          yield* sql`UPDATE messages SET updated_at = now() - interval '31 days' WHERE id IN (${id("one")}, ${id("two")})`
          yield* sql`UPDATE messages SET updated_at = now() - interval '29 days' WHERE id = ${id("three")}`
          yield* sql`UPDATE events SET created_at = now() - interval '91 days' WHERE organization_id = ${organization.id}`
          const oldEvents = yield* count(`SELECT 1 FROM events WHERE organization_id = '${organization.id}'`)
          assert.isAtLeast(oldEvents, 3)
          yield* deliver(inbox.email, "late")

          yield* idempotencyKey(organization.id, "old-done", "done", "now() - interval '25 hours'", "now() - interval '25 hours'")
          yield* idempotencyKey(organization.id, "old-running", "pending", "now() - interval '25 hours'", "now() + interval '1 minute'")
          yield* idempotencyKey(organization.id, "fresh", "done", "now() - interval '23 hours'", "now() - interval '23 hours'")

          yield* jobs.register({ kind: "t.spent", policy: RETRY_POLICIES.once, concurrency: 4, run: () => Effect.void })
          for (let n = 0; n < 3; n++) yield* jobs.enqueue({ kind: "t.spent", payload: { n } })
          assert.strictEqual(yield* jobs.runDue({ wait: true }), 3)
          yield* sql`UPDATE jobs SET updated_at = now() - interval '8 days' WHERE kind = 't.spent'`
          yield* jobs.enqueue({ kind: "t.spent", payload: { n: 4 } })
          assert.strictEqual(yield* jobs.runDue({ wait: true }), 1)
          yield* jobs.enqueue({ kind: "t.unhandled", payload: {} })
          yield* sql`UPDATE jobs SET updated_at = now() - interval '30 days', run_at = now() - interval '30 days' WHERE kind = 't.unhandled'`

          const purged = yield* retention.purge
          assert.deepStrictEqual(purged, { trash: 2, idempotencyKeys: 1, jobs: 3, events: oldEvents, unverifiedAccounts: 0 })
          assert.deepStrictEqual(
            (yield* sql<{ subject: string }>`SELECT subject FROM messages WHERE inbox_id = ${inbox.inbox_id} ORDER BY subject`).map((r) => r.subject),
            ["late", "three"]
          )
          assert.strictEqual(yield* count(`SELECT 1 FROM threads WHERE inbox_id = '${inbox.inbox_id}'`), 2, "the emptied threads went with their messages")
          assert.deepStrictEqual(
            (yield* sql<{ key: string }>`SELECT key FROM idempotency_keys WHERE organization_id = ${organization.id} ORDER BY key`).map((r) => r.key),
            ["fresh", "old-running"]
          )
          assert.strictEqual(yield* count(`SELECT 1 FROM jobs WHERE kind = 't.unhandled' AND state = 'queued'`), 1, "a queued job is never purged")
          assert.strictEqual(yield* count(`SELECT 1 FROM jobs WHERE kind = 't.spent'`), 1)
          assert.strictEqual(yield* count(`SELECT 1 FROM events WHERE organization_id = '${organization.id}'`), 1)
          assert.deepStrictEqual(yield* retention.purge, { trash: 0, idempotencyKeys: 0, jobs: 0, events: 0, unverifiedAccounts: 0 })

          // A batch never takes more than its limit.
          for (let n = 0; n < 3; n++) yield* jobs.enqueue({ kind: "t.spent", payload: { n } })
          assert.strictEqual(yield* jobs.runDue({ wait: true }), 3)
          const later = new Date((yield* Clock.currentTimeMillis) + 60_000)
          assert.deepStrictEqual([yield* jobs.purgeSpent(later, 2), yield* jobs.purgeSpent(later, 2)], [2, 2])
        }).pipe(Effect.orDie))

      it.effect("deletes dashboard accounts whose address was not verified within 7 days of sign-up, in batches, and frees the first-account place one held", () =>
        Effect.gen(function*() {
          const retention = yield* Retention
          const sql = yield* SqlClient.SqlClient
          const user = (id: string, verified: boolean, age: string) =>
            sql.unsafe(`INSERT INTO users (id, email, password_hash, email_verified_at, created_at, updated_at)
              VALUES ($1, $2, 'x', ${verified ? "now()" : "NULL"}, now() - interval '${age}', now())`, [id, `${id}@example.org`])
          for (const id of ["stale_1", "stale_2", "stale_3"]) yield* user(id, false, "8 days")
          yield* user("young", false, "6 days")
          yield* user("verified", true, "30 days")
          // From before accounts waited for their address: it owns an organization, which deleting it would strand.
          yield* user("holder", false, "30 days")
          const { organization } = yield* (yield* Organizations).create({ ownerEmail: "holder@example.org" })
          yield* sql`INSERT INTO memberships (organization_id, user_id, role, created_at) VALUES (${organization.id}, 'holder', 'owner', now())`
          yield* sql`INSERT INTO auth_first_account (user_id) VALUES ('stale_1')`

          const purged = yield* retention.purge
          assert.strictEqual(purged.unverifiedAccounts, 3)
          assert.deepStrictEqual(
            (yield* sql<{ id: string }>`SELECT id FROM users ORDER BY id`).map((r) => r.id),
            ["holder", "verified", "young"]
          )
          assert.strictEqual(yield* count(`SELECT 1 FROM auth_first_account`), 0, "another person may now be the first")
        }).pipe(Effect.orDie))

      it.effect("the schedule runs one purge job per slot and queues the next slot", () =>
        Effect.gen(function*() {
          const jobs = yield* Jobs
          const sql = yield* SqlClient.SqlClient
          const hour = 60 * 60_000
          const slot = Math.floor((yield* Clock.currentTimeMillis) / hour)
          // Two servers starting in one slot queue one job.
          yield* Layer.build(Retention.layerSchedule)
          yield* Layer.build(Retention.layerSchedule)
          const queued = () => sql<{ key: string; run_at: Date }>`SELECT key, run_at FROM jobs WHERE kind = ${RETENTION_JOB} AND state = 'queued' ORDER BY run_at`
          assert.deepStrictEqual((yield* queued()).map((r) => r.key), [`slot:${slot}`])
          assert.strictEqual(yield* jobs.runDue({ wait: true }), 1)
          const next = yield* queued()
          assert.deepStrictEqual(next.map((r) => [r.key, new Date(r.run_at).getTime()]), [[`slot:${slot + 1}`, (slot + 1) * hour]])
          assert.strictEqual(yield* count(`SELECT 1 FROM jobs WHERE kind = '${RETENTION_JOB}' AND state = 'done'`), 1)
        }).pipe(Effect.scoped, Effect.orDie))
    }
  )
}
