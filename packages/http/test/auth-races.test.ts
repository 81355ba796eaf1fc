/**
 * /auth races, on PostgreSQL only (PGlite is one connection and serialises every request, so
 * a race there could never fail). They run when INBOX_TEST_DATABASE_URL is set.
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, postgresSchema, POSTGRES_ENV, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { browser, mailedToken, mailsTo, signedInOwner, uniqueEmail } from "./auth-helpers.ts"

const url = process.env[POSTGRES_ENV]

const app = (signup: "open" | "invite") =>
  TestApp.layer.pipe(Layer.provideMerge(engineLayer(postgresSchema(url ?? ""), { trustedProxies: ["local"], signup })))

if (url !== undefined && url !== "") {
  layer(app("open"), { timeout: "300 seconds" })("/auth races on PostgreSQL", (it) => {
    it.effect("wrong passwords fired together cannot pass the account limit: at most ten are checked, the rest are 429 too_many_attempts", () =>
      Effect.gen(function*() {
        const { email } = yield* signedInOwner()
        const answers = yield* Effect.all(
          Array.from({ length: 16 }, (_, i) => browser().request("POST", "/auth/sign-in", { email, password: `parallel guess ${i}` })),
          { concurrency: "unbounded" }
        )
        const codes = answers.map((a) => a.body.code as string)
        assert.strictEqual(codes.filter((c) => c === "invalid_credentials").length, 10, codes.join(","))
        assert.strictEqual(codes.filter((c) => c === "too_many_attempts").length, 6, codes.join(","))
      }))

    it.effect("a password reset link used by requests fired together works once", () =>
      Effect.gen(function*() {
        const { email } = yield* signedInOwner()
        yield* browser().request("POST", "/auth/password-reset", { email })
        const token = yield* mailedToken(email, "reset-password")
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, (_, i) => browser().request("POST", "/auth/password-reset/confirm", { token, password: `new password ${i}` })),
          { concurrency: "unbounded" }
        )
        const statuses = answers.map((a) => a.status).sort()
        assert.deepStrictEqual(statuses, [200, 400, 400, 400, 400, 400])
      }))

    it.effect("verification links used together create the organization the sign-up is owed once", () =>
      Effect.gen(function*() {
        const email = uniqueEmail("twice")
        const b = browser()
        yield* b.request("POST", "/auth/sign-up", { email, password: "correct horse battery" })
        for (let i = 0; i < 4; i++) yield* b.request("POST", "/auth/resend-verification", { email })
        const tokens = (yield* mailsTo(email)).flatMap((text) => [...text.matchAll(/\/verify-email\?token=([0-9a-f]{64})/g)].map((m) => m[1] ?? ""))
        assert.strictEqual(tokens.length, 5)
        const answers = yield* Effect.all(tokens.map((token) => browser().request("POST", "/auth/verify-email", { token })), { concurrency: "unbounded" })
        assert.deepStrictEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200])
        const owned = yield* SqlClient.SqlClient.use((sql) => sql`SELECT 1 FROM organizations WHERE owner_email = ${email}`)
        assert.strictEqual(owned.length, 1)
      }))
  })

  layer(app("invite"), { timeout: "300 seconds" })("/auth first account race on PostgreSQL", (it) => {
    it.effect("people signing up together on a fresh server: exactly one owns the first organization, the others are 403 forbidden", () =>
      Effect.gen(function*() {
        const answers = yield* Effect.all(
          Array.from({ length: 5 }, () => browser().request("POST", "/auth/sign-up", { email: uniqueEmail("first"), password: "correct horse battery" })),
          { concurrency: "unbounded" }
        )
        const statuses = answers.map((a) => a.status).sort()
        assert.deepStrictEqual(statuses, [202, 403, 403, 403, 403], answers.map((a) => a.text).join("\n"))
      }))
  })
}
