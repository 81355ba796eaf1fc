/**
 * Request limits and the API key cache across processes (issue 11, "Request limits"):
 * two engines, each with its own connection pool and signal listener, on one PostgreSQL
 * schema stand for two server processes. PostgreSQL only: the embedded database is one
 * process by construction.
 */
import { assert, it, layer } from "@effect/vitest"
import { ApiKeys, Database, RATE_POLICIES, RateLimiter, reservationOf } from "@inbox/core/internal"
import { engineLayer, newOrganization, postgresSchema, POSTGRES_ENV, TestApp } from "@inbox/testkit"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const url = process.env[POSTGRES_ENV]
const settings = { rateLimits: true, requestsPerMinute: 50 }

if (url !== undefined && url !== "") {
  /** A second "process": its own engine on the first one's schema. */
  const otherProcess = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const schema = (yield* sql<{ s: string }>`SELECT current_schema() AS s`.pipe(Effect.orDie))[0]?.s ?? ""
    return yield* Layer.build(TestApp.layer.pipe(Layer.provideMerge(
      engineLayer(Database.layerPostgres({ url, searchPath: schema, maxConnections: 4 }), settings)
    )))
  })

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(postgresSchema(url), settings))), { timeout: "120 seconds" })(
    "request limits shared across processes (PostgreSQL)",
    (it) => {
      it.effect("a key's requests per minute hold across two processes racing: exactly the limit passes, the rest get 429 with Retry-After", () =>
        Effect.gen(function*() {
          const a = yield* TestApp
          const b = Context.get(yield* otherProcess, TestApp)
          const org = yield* newOrganization()
          const answers = yield* Effect.all(
            Array.from({ length: 80 }, (_, i) => (i % 2 === 0 ? a : b).request("GET", "/v0/pods", { key: org.key })),
            { concurrency: 16 }
          )
          assert.strictEqual(answers.filter((r) => r.status === 200).length, 50)
          const refused = answers.filter((r) => r.status === 429)
          assert.strictEqual(refused.length, 30)
          for (const r of refused) {
            assert.strictEqual(r.body.code, "rate_limited")
            assert.isAbove(Number(r.headers.get("retry-after")), 0)
          }
        }).pipe(Effect.scoped))

      it.effect("a large limit is reserved a share at a time, and still exactly the limit passes across two processes racing", () =>
        Effect.gen(function*() {
          const limiterA = yield* RateLimiter
          const limiterB = Context.get(yield* otherProcess, RateLimiter)
          const sql = yield* SqlClient.SqlClient
          const policy = { name: "large_limit_test", limit: 1005, windowSeconds: 60 }
          assert.strictEqual(reservationOf(policy.limit), 10)
          const outcomes = yield* Effect.all(
            Array.from({ length: 1200 }, (_, i) => Effect.exit((i % 2 === 0 ? limiterA : limiterB).take("caller", policy))),
            { concurrency: 16 }
          )
          assert.strictEqual(outcomes.filter((e) => e._tag === "Success").length, policy.limit)
          // Reserved ten at a time: the row counts what was asked for, far fewer asks than requests.
          const row = yield* sql<{ count: number }>`SELECT count FROM rate_counters WHERE key = 'large_limit_test:caller'`
          assert.isAtLeast(row[0]!.count, policy.limit)
        }).pipe(Effect.scoped))

      it.effect("sign-up stays limited per IP across processes", () =>
        Effect.gen(function*() {
          const limiterA = yield* RateLimiter
          const limiterB = Context.get(yield* otherProcess, RateLimiter)
          const policy = RATE_POLICIES.agentSignUpPerIp
          const outcomes = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) => Effect.exit((i % 2 === 0 ? limiterA : limiterB).take("203.0.113.9", policy))),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(outcomes.filter((e) => e._tag === "Success").length, policy.limit)
        }).pipe(Effect.scoped))

      it.effect("a key revoked on process A is refused on process B within 100 ms, though B had it cached", () =>
        Effect.gen(function*() {
          const a = yield* TestApp
          const other = yield* otherProcess
          const b = Context.get(other, TestApp)
          const keysB = Context.get(other, ApiKeys)
          const org = yield* newOrganization()
          const made = yield* a.request("POST", "/v0/api-keys", { key: org.key, json: { name: "doomed" } })
          const doomed = made.body.api_key as string
          assert.strictEqual((yield* b.request("GET", "/v0/pods", { key: doomed })).status, 200)
          const revoked = yield* a.request("DELETE", `/v0/api-keys/${made.body.api_key_id}`, { key: org.key })
          assert.strictEqual(revoked.status, 204)
          const start = yield* TestClock.withLive(Clock.currentTimeMillis)
          // B refuses as soon as the signal lands; polling B's service directly keeps the loop cheap.
          const refusedOnB = Effect.gen(function*() {
            while ((yield* Effect.exit(keysB.authenticate(doomed)))._tag === "Success") yield* Effect.sleep("2 millis")
          })
          yield* TestClock.withLive(refusedOnB.pipe(Effect.timeout("100 millis"), Effect.orDie))
          const elapsed = (yield* TestClock.withLive(Clock.currentTimeMillis)) - start
          assert.isBelow(elapsed, 100)
          const refused = yield* b.request("GET", "/v0/pods", { key: doomed })
          assert.strictEqual(refused.status, 401)
        }).pipe(Effect.scoped))
    }
  )
}
