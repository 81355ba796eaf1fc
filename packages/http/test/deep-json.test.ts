/**
 * Deeply nested JSON (issue 24): a body nested past MAX_JSON_DEPTH arrays and objects is 400
 * bad_request on every JSON route (REST, /auth, /mcp, the operator's provider events after
 * their signature), refused while the text is scanned: the scan stops one level past the
 * limit and nothing walks the body afterwards. The work is counted (`jsonWork`), not timed.
 */
import { assert, it, layer } from "@effect/vitest"
import { jsonWork, MAX_JSON_DEPTH, operations, signWebhook } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp, type TestResponse } from "@inbox/testkit"
import { Clock, Effect, Layer } from "effect"
import { browser, ORIGIN, signedInOwner } from "./auth-helpers.ts"
import { TEST_PROVIDER_SECRET } from "./operation-fixtures.ts"

const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

/** As deep as `limit` bytes allow, in arrays. */
const deepest = (limit: number) => nested(Math.floor(limit / 2))

const DEFAULT_LIMIT = 1024 * 1024
const AUTH_LIMIT = 16 * 1024
const MCP_LIMIT = 256 * 1024

/** Sends `body` with `send` and returns the answer with the JSON work it cost. */
const counted = <R>(send: Effect.Effect<TestResponse, never, R>) =>
  Effect.gen(function*() {
    const before = { ...jsonWork }
    const res = yield* send
    return { res, levels: jsonWork.levelsScanned - before.levelsScanned, walked: jsonWork.nodesWalked - before.nodesWalked }
  })

/** `besideBody`: nodes of the flat query and header objects, decoded before a raw body is read as JSON. */
const expectRefusedAtOnce = (what: string, outcome: { res: TestResponse; levels: number; walked: number }, besideBody = 0) => {
  assert.strictEqual(outcome.res.status, 400, `${what}: ${outcome.res.text}`)
  assert.strictEqual(outcome.res.body.code, "bad_request", what)
  assert.include(outcome.res.body.message, `more than ${MAX_JSON_DEPTH} levels`, what)
  assert.strictEqual(outcome.levels, MAX_JSON_DEPTH + 1, `${what}: levels scanned`)
  assert.strictEqual(outcome.walked, besideBody, `${what}: nodes walked after the scan`)
}

const JSON_HEADERS = { "content-type": "application/json" }

/** Every REST route that takes a JSON body, with a placeholder id in each path parameter. */
const jsonRoutes = operations.flatMap((op) =>
  // /auth's own test is below: it needs a browser's session for some routes.
  op.raw !== undefined || op.query !== undefined || op.access.kind === "session"
    ? []
    : op.routes.filter((r) => r.method === "POST" || r.method === "PATCH").map((r) => ({
      op,
      method: r.method,
      path: r.path.replace(/:([a-z_]+)/g, "x1")
    }))
)

const AUTH_POSTS = [
  "/auth/sign-up",
  "/auth/verify-email",
  "/auth/resend-verification",
  "/auth/sign-in",
  "/auth/organization",
  "/auth/password-reset",
  "/auth/password-reset/confirm",
  "/auth/password",
  "/auth/2fa/enable",
  "/auth/2fa/disable",
  "/auth/invitations",
  "/auth/invitations/accept"
]

for (const storage of storages()) {
  layer(
    TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { providerEventsSecret: TEST_PROVIDER_SECRET, signup: "open" }))),
    { timeout: "180 seconds" }
  )(`deeply nested JSON (${storage.name})`, (it) => {
    it.effect("a REST body one level past the limit, and one as deep as the route's size limit allows, is 400 bad_request before any walk", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization({ plan: "scale" })
        assert.isAbove(jsonRoutes.length, 20)
        // Just within the limit is parsed and walked as usual.
        const within = yield* counted(app.request("POST", "/v0/pods", { key, headers: JSON_HEADERS, body: `{"name":${nested(MAX_JSON_DEPTH - 1)}}` }))
        assert.strictEqual(within.res.body.code, "validation_error", within.res.text)
        assert.isAbove(within.walked, 0)
        for (const route of jsonRoutes) {
          for (const body of [nested(MAX_JSON_DEPTH + 1), deepest(route.op.bodyLimit ?? DEFAULT_LIMIT)]) {
            expectRefusedAtOnce(`${route.method} ${route.path}`, yield* counted(app.request(route.method, route.path, { key, headers: JSON_HEADERS, body })))
          }
        }
      }))

    it.effect("every /auth body nested past the limit is 400 bad_request before any walk, with and without a session", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const anonymous = browser()
        for (const path of AUTH_POSTS) {
          for (const body of [nested(MAX_JSON_DEPTH + 1), deepest(AUTH_LIMIT)]) {
            for (const who of [owner.browser, anonymous]) {
              const outcome = yield* counted(TestApp.use((app) =>
                app.request("POST", path, {
                  headers: {
                    ...JSON_HEADERS,
                    "x-forwarded-for": who.ip,
                    origin: ORIGIN,
                    ...(who.cookie === undefined ? {} : { cookie: who.cookie }),
                    ...(who.csrf === undefined ? {} : { "x-csrf-token": who.csrf })
                  },
                  body
                })
              ))
              // A route that needs a session answers 401 for the anonymous browser before reading anything.
              if (outcome.res.status === 401) {
                assert.strictEqual(who, anonymous, `${path}: ${outcome.res.text}`)
                assert.strictEqual(outcome.levels, 0)
                continue
              }
              expectRefusedAtOnce(path, outcome)
            }
          }
        }
      }))

    it.effect("an /mcp message nested past the limit is 400 bad_request before any walk", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { key } = yield* newOrganization()
        const rpc = (inner: string) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_pod","arguments":{"name":${inner}}}}`
        for (const body of [rpc(nested(MAX_JSON_DEPTH)), deepest(MCP_LIMIT)]) {
          expectRefusedAtOnce("/mcp", yield* counted(app.request("POST", "/mcp", { key, headers: { ...JSON_HEADERS, accept: "application/json, text/event-stream" }, body })))
        }
      }))

    it.effect("signed provider events nested past the limit are 400 bad_request before any walk", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        for (const body of [nested(MAX_JSON_DEPTH + 1), deepest(256 * 1024)]) {
          const id = `deep_${body.length}`
          const timestamp = String(Math.floor((yield* Clock.currentTimeMillis) / 1000))
          const headers = {
            ...JSON_HEADERS,
            "webhook-id": id,
            "webhook-timestamp": timestamp,
            "webhook-signature": signWebhook(TEST_PROVIDER_SECRET, id, timestamp, Buffer.from(body))
          }
          // The empty query (one node) and the named headers ({ "webhook-id" }: two) are decoded first.
          expectRefusedAtOnce("/inbound/mail-provider-events", yield* counted(app.request("POST", "/inbound/mail-provider-events", { headers, body })), 3)
        }
      }))
  })
}
