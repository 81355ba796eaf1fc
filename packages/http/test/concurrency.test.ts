/**
 * Races, run on PostgreSQL only: PGlite is one connection, which serialises every request,
 * so a race there could never fail. These run when INBOX_TEST_DATABASE_URL is set (CI sets
 * it); the storage layer's pool has several connections, and the requests below are fired
 * together.
 */
import { assert, it, layer } from "@effect/vitest"
import {
  CapturedMail,
  deliverMail,
  engineLayer,
  lastCode,
  newOrganization,
  postgresSchema,
  POSTGRES_ENV,
  TEST_INBOUND_SECRET,
  TestApp
} from "@inbox/testkit"
import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const url = process.env[POSTGRES_ENV]

if (url !== undefined && url !== "") {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(postgresSchema(url), { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "300 seconds" })(
    "races on PostgreSQL",
    (it) => {
      it.effect("deleting a pod while an inbox is created in it: the create wins and the delete is 409 pod_not_empty, or the delete wins and the create is 404; never a 500", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "scale" })
          const outcomes = new Set<string>()
          for (let round = 0; round < 20; round++) {
            const pod = (yield* app.request("POST", "/v0/pods", { key, json: { name: `race ${round}` } })).body.pod_id as string
            const [created, deleted] = yield* Effect.all([
              app.request("POST", `/v0/pods/${pod}/inboxes`, { key, json: {} }),
              app.request("DELETE", `/v0/pods/${pod}`, { key })
            ], { concurrency: "unbounded" })
            const outcome = `${created.status}/${deleted.status}`
            assert.include(["200/409", "404/204"], outcome, `${created.text} ${deleted.text}`)
            outcomes.add(outcome)
          }
          assert.isAbove(outcomes.size, 0)
        }))

      it.effect("parallel guesses of the agent code cannot pass the limit of 10 attempts", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = (yield* app.request("POST", "/v0/agent/sign-up", { json: { username: "racer", human_email: "racer@example.org" } })).body
          const code = yield* lastCode("racer@example.org")
          const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
          const answers = yield* Effect.all(
            Array.from({ length: 30 }, () => app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: wrong } })),
            { concurrency: "unbounded" }
          )
          const counted = answers.filter((r) => r.body.code === "validation_error").length
          assert.strictEqual(counted, 10)
          assert.strictEqual(answers.filter((r) => r.status === 429).length, 20)
          for (const r of answers.filter((r) => r.status === 429)) assert.isNotNull(r.headers.get("retry-after"))
          // The limit holds for the right code too.
          const right = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })
          assert.strictEqual(right.status, 429)
        }))

      it.effect("concurrent creates with one client_id make one pod and one inbox", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "scale" })
          const pods = yield* Effect.all(
            Array.from({ length: 8 }, () => app.request("POST", "/v0/pods", { key, json: { name: "same", client_id: "pod-once" } })),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual([...new Set(pods.map((r) => r.status))], [200])
          assert.strictEqual(new Set(pods.map((r) => r.body.pod_id)).size, 1)
          const inboxes = yield* Effect.all(
            Array.from({ length: 8 }, () => app.request("POST", "/v0/inboxes", { key, json: { client_id: "inbox-once" } })),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual([...new Set(inboxes.map((r) => r.status))], [200])
          assert.strictEqual(new Set(inboxes.map((r) => r.body.inbox_id)).size, 1)
        }))

      it.effect("two concurrent sends with one Idempotency-Key send once and answer the same", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "scale" })
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body.inbox_id as string
          const before = (yield* CapturedMail.use((c) => c.all)).length
          const running = yield* Effect.forkChild(Effect.all(
            Array.from({ length: 5 }, () =>
              app.request("POST", `/v0/inboxes/${inbox}/messages/send`, {
                key,
                json: { to: "race@example.net", text: "once" },
                headers: { "idempotency-key": "race-key" }
              })),
            { concurrency: "unbounded" }
          ))
          // The waiting requests poll the key on the engine's clock: move it along while they run.
          let answers = yield* Fiber.await(running).pipe(Effect.timeoutOption("1 millis"), TestClock.withLive)
          while (answers._tag === "None") {
            yield* TestClock.adjust("100 millis")
            answers = yield* Fiber.await(running).pipe(Effect.timeoutOption("20 millis"), TestClock.withLive)
          }
          if (answers.value._tag !== "Success") return yield* Effect.die(answers.value)
          const result = answers.value.value
          assert.deepStrictEqual([...new Set(result.map((a) => a.status))], [200])
          assert.strictEqual(new Set(result.map((a) => a.body.message_id)).size, 1)
          assert.strictEqual((yield* CapturedMail.use((c) => c.all)).length, before + 1)
        }))

      it.effect("the same message delivered concurrently is stored once; a reply and its parent arriving together end in one thread", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "scale" })
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body as { inbox_id: string; email: string }
          const copies = yield* Effect.all(
            Array.from({ length: 6 }, () => deliverMail(inbox.email, { messageId: "<dup@example.org>" })),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual([...new Set(copies.map((c) => c.status))], [200])
          assert.strictEqual(new Set(copies.map((c) => c.body.delivered[0].message_id)).size, 1)
          assert.strictEqual(copies.filter((c) => !c.body.delivered[0].duplicate).length, 1)
          for (let round = 0; round < 10; round++) {
            const [parent, child] = yield* Effect.all([
              deliverMail(inbox.email, { messageId: `<p${round}@example.org>` }),
              deliverMail(inbox.email, { messageId: `<c${round}@example.org>`, inReplyTo: `<p${round}@example.org>` })
            ], { concurrency: "unbounded" })
            assert.strictEqual(parent.body.delivered[0].thread_id, child.body.delivered[0].thread_id, `round ${round}`)
            const thread = yield* app.request("GET", `/v0/threads/${parent.body.delivered[0].thread_id}`, { key })
            assert.strictEqual(thread.body.message_count, 2)
            assert.strictEqual(thread.body.messages.length, 2)
          }
        }))

      it.effect("replies to one parent delivered together with it end in one thread; the metrics count every message once", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization({ plan: "scale" })
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body as { inbox_id: string; email: string }
          for (let round = 0; round < 3; round++) {
            const parent = `<list${round}@example.org>`
            // Replies share the parent's lock (they do not wait for each other); the parent holds it alone.
            const answers = yield* Effect.all([
              deliverMail(inbox.email, { messageId: parent }),
              ...Array.from({ length: 8 }, (_, i) => deliverMail(inbox.email, { messageId: `<r${round}.${i}@example.org>`, inReplyTo: parent }))
            ], { concurrency: "unbounded" })
            assert.deepStrictEqual([...new Set(answers.map((a) => a.status))], [200])
            const ids = new Set(answers.map((a) => a.body.delivered[0].message_id as string))
            const listed = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages?limit=100`, { key })
            const threads = new Set(listed.body.messages.filter((m: { message_id: string }) => ids.has(m.message_id)).map((m: { thread_id: string }) => m.thread_id))
            assert.strictEqual(threads.size, 1, `round ${round}: ${[...threads].join(", ")}`)
            const thread = yield* app.request("GET", `/v0/threads/${[...threads][0]}`, { key })
            assert.strictEqual(thread.body.message_count, 9)
          }
          // Counters are split in shards per connection (migration 0017); the sums stay exact.
          const usage = yield* app.request("GET", "/v0/metrics/usage?usage_types=message_count,thread_count&limit=1", { key })
          assert.strictEqual(usage.status, 200, usage.text)
          assert.strictEqual(usage.body.message_count[0].value, 27)
          assert.strictEqual(usage.body.thread_count[0].value, 3)
        }))

      it.effect("metric folds running at once on several connections, while changes keep coming, count every change once", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { organizationId } = yield* newOrganization({ plan: "scale" })
          const at = new Date()
          const append = (n: number) =>
            sql`SELECT metric_add(${organizationId}, NULL, NULL, 'message.received', ${at}, 1) FROM generate_series(1, ${n})`
          const fold = sql`SELECT metric_fold(40)`
          yield* append(300)
          yield* Effect.all([
            ...Array.from({ length: 6 }, () => Effect.repeat(fold, { times: 4 })),
            ...Array.from({ length: 4 }, () => Effect.repeat(append(25), { times: 3 }))
          ], { concurrency: "unbounded" })
          yield* Effect.repeat(sql`SELECT metric_fold(100000)`, { times: 1 })
          const counted = yield* sql<{ n: string }>`SELECT sum(value)::text AS n FROM metric_counts
            WHERE scope_id = ${organizationId} AND metric = 'message.received' AND resolution = 0`
          assert.strictEqual(Number(counted[0]!.n), 300 + 4 * 4 * 25)
          const minutes = yield* sql<{ n: string }>`SELECT sum(value)::text AS n FROM metric_counts
            WHERE scope_id = ${organizationId} AND metric = 'message.received' AND resolution = 60`
          assert.strictEqual(Number(minutes[0]!.n), 300 + 4 * 4 * 25)
        }))

      it.effect("concurrent inbox creates cannot pass the plan's limit", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const answers = yield* Effect.all(
            Array.from({ length: 8 }, () => app.request("POST", "/v0/inboxes", { key, json: {} })),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(answers.filter((r) => r.status === 200).length, 3)
          assert.strictEqual(answers.filter((r) => r.status === 402).length, 5)
        }))
    }
  )
}
