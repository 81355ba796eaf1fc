/**
 * The direct path (direct.ts) answers catalogue operations from Node's request event, and the
 * router app keeps every operation route for what the direct path leaves to it. Both must
 * answer alike: the same status, headers and body for the same request. Each request below
 * is sent to both, in process: the test app (direct path first, as Node's server does) and
 * the router app alone.
 */
import { assert, it, layer } from "@effect/vitest"
import { type EngineServices } from "@inbox/core/internal"
import { AppRoutes, makeDirectPath } from "@inbox/http"
import { engineLayer, newOrganization, pglite, TEST_HOST, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"

interface Sent {
  readonly method: string
  readonly path: string
  readonly key?: string
  readonly body?: string
  readonly headers?: Record<string, string>
}

const webRequest = (s: Sent) =>
  new Request(`http://${TEST_HOST}${s.path}`, {
    method: s.method,
    headers: {
      ...(s.key === undefined ? {} : { authorization: `Bearer ${s.key}` }),
      ...(s.body === undefined ? {} : { "content-type": "application/json" }),
      ...s.headers
    },
    ...(s.body === undefined ? {} : { body: s.body })
  })

/** Status, headers but the request id, and body: what a client can tell apart. */
const seen = async (response: Response) => {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== "x-request-id") headers[name] = value
  })
  assert.match(response.headers.get("x-request-id") ?? "", /^req_/)
  return { status: response.status, headers, body: await response.text() }
}

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite))), { timeout: "120 seconds" })("the direct path", (it) => {
  it.effect("answers every kind of operation request exactly as the router app does", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const context = yield* Effect.context<EngineServices>()
      const router = HttpRouter.toWebHandler(AppRoutes.pipe(Layer.provide(HttpServer.layerServices)), { disableLogger: true })
      const routerFetch = (request: Request) => router.handler(request, context as never)
      const org = yield* newOrganization()
      const other = yield* newOrganization({ ownerEmail: "other@example.com" })
      const created = yield* app.request("POST", "/v0/inboxes", { key: org.key, json: { username: "direct", display_name: "Direct" } })
      assert.strictEqual(created.status, 200)
      const inboxId = created.body.inbox_id as string
      const spare = yield* Effect.forEach(["spare-a", "spare-b"], (username) =>
        Effect.map(app.request("POST", "/v0/inboxes", { key: org.key, json: { username } }), (r) => r.body.inbox_id as string))

      const cases: ReadonlyArray<readonly [string, Sent, Sent?]> = [
        ["a read", { method: "GET", path: `/v0/inboxes/${inboxId}`, key: org.key }],
        ["a read with an encoded path parameter", { method: "GET", path: `/v0/inboxes/${encodeURIComponent(inboxId)}`, key: org.key }],
        ["a list with a query", { method: "GET", path: "/v0/inboxes?limit=1", key: org.key }],
        ["the key in the query", { method: "GET", path: `/v0/inboxes/${inboxId}?api_key=${org.key}` }],
        ["no key: 401", { method: "GET", path: `/v0/inboxes/${inboxId}` }],
        ["another organization's inbox: 404", { method: "GET", path: `/v0/inboxes/${inboxId}`, key: other.key }],
        ["a malformed query: 400", { method: "GET", path: "/v0/inboxes?limit=0x10", key: org.key }],
        ["an invalid body: 400 with errors", { method: "POST", path: "/v0/inboxes", key: org.key, body: JSON.stringify({ username: 5 }) }],
        ["a body that is not JSON: 400", { method: "POST", path: "/v0/inboxes", key: org.key, body: "{" }],
        ["an update", { method: "PATCH", path: `/v0/inboxes/${inboxId}`, key: org.key, body: JSON.stringify({ display_name: "Renamed" }) }],
        [
          "a delete: empty 204",
          { method: "DELETE", path: `/v0/inboxes/${spare[0]}`, key: org.key },
          { method: "DELETE", path: `/v0/inboxes/${spare[1]}`, key: org.key }
        ]
      ]
      for (const [name, sent, toRouter] of cases) {
        const direct = yield* Effect.promise(() => app.fetch(webRequest(sent)).then(seen))
        const routed = yield* Effect.promise(() => routerFetch(webRequest(toRouter ?? sent)).then(seen))
        assert.deepStrictEqual(direct, routed, name)
      }
      yield* Effect.promise(() => router.dispose())
    }))

  it.effect("takes operation routes and leaves downloads, unknown paths and preflights to the router app", () =>
    Effect.gen(function*() {
      const direct = yield* makeDirectPath
      const takes = direct.takes
      assert.isTrue(takes("GET", "/v0/inboxes/a@example.com"))
      assert.isTrue(takes("POST", "/v0/pods"))
      assert.isFalse(takes("GET", "/v0/inboxes/a@example.com/messages/m1/raw/download"))
      assert.isFalse(takes("GET", "/v0/no-such-route"))
      assert.isFalse(takes("OPTIONS", "/v0/inboxes"))
      assert.isFalse(takes("HEAD", "/v0/inboxes"))
      assert.isFalse(takes("GET", "/health"))
    }))
})
