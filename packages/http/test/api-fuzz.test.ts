/**
 * The catalogue, fuzzed (issue 24): requests generated from every operation's own input
 * schema, valid and hostile (testkit api-fuzz.ts), answered in process on PGlite and
 * PostgreSQL. None may be a 500. `pnpm fuzz:api` runs many more against a real server.
 *
 * And unpaired UTF-16 surrogates, which PostgreSQL refuses in JSON: one request per
 * operation with `"\ud800"` in every string field is never a 5xx, and where the fields come
 * in a JSON body it is 400 validation_error naming one of them.
 */
import { assert, it, layer } from "@effect/vitest"
import { operations } from "@inbox/core/internal"
import {
  acceptable,
  buildFuzzWorld,
  engineLayer,
  type FuzzClient,
  newOrganization,
  runFuzz,
  storages,
  surrogateRequest,
  TEST_INBOUND_SECRET,
  TestApp
} from "@inbox/testkit"
import { Clock, Effect, Layer } from "effect"
import { TEST_PROVIDER_SECRET } from "./operation-fixtures.ts"

/** Requests per database in CI; `pnpm fuzz:api` takes a count and a seed. */
const COUNT = 1000
const SEED = 24

const inProcess = Effect.map(TestApp, (app): FuzzClient => (request) =>
  Effect.runPromise(app.request(request.method, request.path, {
    headers: { ...request.headers },
    ...(request.body === undefined ? {} : { body: typeof request.body === "string" ? request.body : Buffer.from(request.body) })
  })))

for (const storage of storages()) {
  layer(
    TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { providerEventsSecret: TEST_PROVIDER_SECRET, inboundSecret: TEST_INBOUND_SECRET }))),
    { timeout: "600 seconds" }
  )(`the catalogue fuzzed (${storage.name})`, (it) => {
    it.effect("an unpaired surrogate in every string field of every operation is never a 5xx; in a JSON body it is 400 validation_error naming the field", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization({ plan: "scale" })
        let named = 0
        for (const op of operations) {
          if (op.access.kind !== "member") continue
          const request = surrogateRequest(op, key)
          const res = yield* app.request(request.method, request.path, { headers: { ...request.headers }, ...(request.body === undefined ? {} : { body: request.body as string }) })
          assert.isBelow(res.status, 500, `${op.name}: ${res.text}`)
          if (request.body !== undefined && request.fields.length > 0) {
            assert.strictEqual(res.status, 400, `${op.name}: ${res.text}`)
            assert.strictEqual(res.body.code, "validation_error", `${op.name}: ${res.text}`)
            assert.include(request.fields, res.body.errors[0].path[0], `${op.name}: ${res.text}`)
            assert.include(res.body.errors[0].message, "surrogate", op.name)
            named++
          }
        }
        assert.isAbove(named, 20)
      }))

    it.effect(`${COUNT} requests generated from the catalogue's input schemas, valid and hostile, across every operation: none is a 500`, () =>
      Effect.gen(function*() {
        const client = yield* inProcess
        const { key } = yield* newOrganization({ plan: "scale" })
        const foreign = yield* newOrganization({ plan: "scale" })
        const seconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const world = yield* Effect.promise(() =>
          buildFuzzWorld(client, { key, foreignKey: foreign.key, inboundSecret: TEST_INBOUND_SECRET, providerSecret: TEST_PROVIDER_SECRET, now: () => seconds })
        )
        const outcome = yield* Effect.promise(() => runFuzz(client, world, { seed: SEED, count: COUNT }))
        assert.strictEqual(outcome.requests, COUNT)
        // The run reached past validation: some requests succeeded (any 2xx: a delete's 204 and a
        // sign-up's 202 count; each /auth operation that needs a session, which the fuzz never
        // has, is a share of requests that can only be 401), some were refused.
        const succeeded = [...outcome.statuses].filter(([status]) => status >= 200 && status < 300).reduce((n, [, c]) => n + c, 0)
        assert.isAbove(succeeded, COUNT / 20, JSON.stringify([...outcome.statuses]))
        assert.isAbove(outcome.statuses.get(400) ?? 0, COUNT / 20)
        assert.deepStrictEqual(
          outcome.failures.slice(0, 5).map((f) => ({ op: f.request.op, method: f.request.method, path: f.request.path.slice(0, 200), status: f.status, body: JSON.stringify(f.body).slice(0, 300) })),
          []
        )
        assert.isTrue(acceptable(503, { code: "not_configured" }) && !acceptable(500, { code: "internal_error" }))
      }))
  })
}
