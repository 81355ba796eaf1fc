/** GET /openapi.json: the REST API described from the same catalogue that makes the routes. */
import { assert, it, layer } from "@effect/vitest"
import { operations } from "@inbox/core/internal"
import { engineLayer, newOrganization, pglite, TestApp } from "@inbox/testkit"
import SwaggerParser from "@apidevtools/swagger-parser"
import { Effect, Layer } from "effect"

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite))), { timeout: "120 seconds" })("OpenAPI document", (it) => {
  it.effect("describes every route of the catalogue with unique operationIds, without a key", () =>
    Effect.gen(function*() {
      const res = yield* (yield* TestApp).request("GET", "/openapi.json")
      assert.strictEqual(res.status, 200)
      assert.strictEqual(res.body.openapi, "3.1.0")
      const described = Object.entries(res.body.paths as Record<string, Record<string, { operationId: string }>>)
        .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      const routes = operations.flatMap((op) => op.routes.map((r) => `${r.method} ${r.path.replace(/:([a-z_]+)/g, "{$1}")}`))
      assert.sameMembers(described, routes)
      const ids = Object.values(res.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap((item) => Object.values(item).map((o) => o.operationId))
      assert.strictEqual(new Set(ids).size, ids.length)
    }))

  it.effect("is a valid OpenAPI 3.1 document by a maintained validator, resolving every $ref", () =>
    Effect.gen(function*() {
      const doc = (yield* (yield* TestApp).request("GET", "/openapi.json")).body
      const validated = yield* Effect.promise(() => SwaggerParser.validate(structuredClone(doc)))
      assert.strictEqual((validated as { openapi?: string }).openapi, "3.1.0")
      // A broken document is refused: the validator is not a formality.
      const broken = structuredClone(doc)
      broken.paths["/v0/pods"].get.responses["200"].content["application/json"].schema = { $ref: "#/components/schemas/Nope" }
      const refused = yield* Effect.promise(() => SwaggerParser.validate(broken).then(() => false, () => true))
      assert.isTrue(refused)
    }))

  it.effect("lists the dashboard's /auth paths with their request and answer schemas, without a key", () =>
    Effect.gen(function*() {
      const doc = (yield* (yield* TestApp).request("GET", "/openapi.json")).body
      const auth = Object.keys(doc.paths).filter((p) => p.startsWith("/auth/"))
      assert.includeMembers(auth, ["/auth/sign-up", "/auth/sign-in", "/auth/sign-out", "/auth/me", "/auth/verify-email", "/auth/password-reset",
        "/auth/password-reset/confirm", "/auth/password", "/auth/2fa/setup", "/auth/2fa/enable", "/auth/2fa/disable", "/auth/invitations",
        "/auth/invitations/accept", "/auth/members"])
      const signIn = doc.paths["/auth/sign-in"].post
      assert.includeMembers(Object.keys(signIn.requestBody.content["application/json"].schema.properties), ["email", "password", "totp_code"])
      assert.deepStrictEqual(signIn.security, [])
      const me = doc.paths["/auth/me"].get.responses["200"].content["application/json"].schema
      assert.includeMembers(Object.keys(me.properties), ["user", "organizations", "csrf_token"])
      assert.includeMembers(Object.keys(doc.paths["/auth/members"].get.responses["200"].content["application/json"].schema.properties), ["members", "invitations"])
    }))

  it.effect("names the permission of every member operation as x-permission", () =>
    Effect.gen(function*() {
      const doc = (yield* (yield* TestApp).request("GET", "/openapi.json")).body
      for (const op of operations) {
        for (const route of op.routes) {
          const entry = doc.paths[route.path.replace(/:([a-z_]+)/g, "{$1}")][route.method.toLowerCase()]
          assert.strictEqual(entry["x-permission"], op.access.kind === "member" ? op.access.permission : undefined, op.name)
        }
      }
    }))

  it.effect("gives path parameters, query fields for lists and JSON bodies for creates", () =>
    Effect.gen(function*() {
      const doc = (yield* (yield* TestApp).request("GET", "/openapi.json")).body
      const list = doc.paths["/v0/pods/{pod_id}/inboxes"].get
      assert.deepStrictEqual(list.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`), ["path:pod_id", "query:limit", "query:page_token", "query:ascending"])
      const create = doc.paths["/v0/inboxes"].post
      assert.includeMembers(Object.keys(create.requestBody.content["application/json"].schema.properties), ["username", "domain", "display_name", "client_id", "metadata"])
      assert.deepStrictEqual(doc.paths["/public/plans"].get.security, [])
      assert.property(doc.paths["/v0/inboxes/{inbox_id}"].delete.responses, "204")
    }))

  it.effect("every described route answers (no 404 route-not-found) when called", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const { key } = yield* newOrganization()
      const doc = (yield* app.request("GET", "/openapi.json")).body
      for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
        for (const method of Object.keys(item)) {
          const concrete = path.replace(/\{[a-z_]+\}/g, "x_missing")
          const res = yield* app.request(method.toUpperCase(), concrete, { key })
          assert.notStrictEqual(res.body?.message, "No such route.", `${method} ${path}`)
        }
      }
    }))
})
