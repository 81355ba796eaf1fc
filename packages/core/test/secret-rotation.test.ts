/**
 * Rotating INBOX_SECRET_KEY (docs/domains.md, key rotation): with the old key in
 * INBOX_SECRET_KEY_PREVIOUS, the engine's start re-seals every DKIM key sealed under the old
 * key under the new one, so the domain keeps signing after the old key is dropped. Webhook
 * header values stored plain (by migration 0034 from the rows before it, or by a server
 * without a key) are sealed by the next start with a key. Runs the startup layer itself
 * over the test's database, on every storage.
 */
import { assert, layer } from "@effect/vitest"
import { Database, Domains, Organizations, type Principal, Settings, Webhooks } from "@inbox/core/internal"
import { engineLayer, storages } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { open } from "../src/domains/dkim.ts"
import { openHeaderValues } from "../src/webhooks/headers.ts"
import { AUTH_SEALED } from "../src/auth/Auth.ts"
import { DOMAIN_SEALED } from "../src/domains/Domains.ts"
import { resealing } from "../src/shared/SecretRotation.ts"
import { WEBHOOK_SEALED } from "../src/webhooks/sealed.ts"

const OLD = "old-secret-key"
const NEW = "new-secret-key"

/** The engine's startup re-sealing, as a process started with these keys runs it (fresh: not the test engine's memoised build). */
const start = (keys: { readonly secretKey: string; readonly previousSecretKey?: string }) =>
  Layer.build(Layer.fresh(resealing([...DOMAIN_SEALED, ...WEBHOOK_SEALED, ...AUTH_SEALED])).pipe(Layer.provide(Layer.succeed(Settings, Settings.make(keys))))).pipe(Effect.scoped)

const storedKey = (name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ dkim_private_key: string }>`SELECT dkim_private_key FROM domains WHERE id = ${name}`.pipe(Effect.orDie)
    return rows[0]!.dkim_private_key
  })

const newDomain = (name: string) =>
  Effect.gen(function*() {
    const { organization } = yield* (yield* Organizations).create({ ownerEmail: `owner@${name}`, verified: true, plan: "scale" })
    const principal: Principal = { organizationId: organization.id, scope: { type: "organization" } }
    yield* (yield* Domains).create(principal, { domain: name }).pipe(Effect.orDie)
    return yield* storedKey(name)
  })

for (const storage of storages()) {
  layer(engineLayer(storage.layer, { secretKey: OLD }), { timeout: "120 seconds" })(`INBOX_SECRET_KEY rotation (${storage.name})`, (it) => {
    it.effect("a DKIM key sealed under the previous key opens with the new key only, after a start with INBOX_SECRET_KEY_PREVIOUS", () =>
      Effect.gen(function*() {
        const sealed = yield* newDomain("rotate.example")
        const pem = yield* open(OLD, "rotate.example", sealed)
        assert.include(pem, "PRIVATE KEY")
        assert.isUndefined(yield* open(NEW, "rotate.example", sealed))

        yield* start({ secretKey: NEW, previousSecretKey: OLD })
        const resealed = yield* storedKey("rotate.example")
        assert.notStrictEqual(resealed, sealed)
        assert.notInclude(resealed, "PRIVATE KEY")
        assert.strictEqual(yield* open(NEW, "rotate.example", resealed), pem)
        assert.isUndefined(yield* open(OLD, "rotate.example", resealed))

        // A second start with both keys still set changes nothing: the row already opens with the new key.
        yield* start({ secretKey: NEW, previousSecretKey: OLD })
        assert.strictEqual(yield* storedKey("rotate.example"), resealed)
      }))

    it.effect("webhook header values of before migration 0034 are moved by it as plain JSON, sealed by the next start with a key, and re-sealed by a rotation", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: "owner@hooks.example", verified: true, plan: "scale" })
        const principal: Principal = { organizationId: organization.id, scope: { type: "organization" } }
        const hook = yield* Webhooks.use((w) => w.create(principal, {}, { url: "https://93.184.215.14/hook" })).pipe(Effect.orDie)
        const values = () =>
          sql<{ header_names: ReadonlyArray<string>; header_values: string }>`SELECT header_names, header_values FROM webhooks WHERE id = ${hook.webhook_id}`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows[0]!)
          )
        // The table as the schema before 0034 left it, with a credential in plain text, then the migration.
        yield* sql`ALTER TABLE webhooks DROP COLUMN header_names, DROP COLUMN header_values, ADD COLUMN headers jsonb NOT NULL DEFAULT '{}'`
        yield* sql`UPDATE webhooks SET headers = '{"authorization": "Bearer legacy-9c1", "x-tenant": "t"}' WHERE id = ${hook.webhook_id}`
        yield* Database.loadMigrations()["0034_webhook_header_values"]!.pipe(Effect.orDie)
        const moved = yield* values()
        assert.deepStrictEqual([...moved.header_names], ["authorization", "x-tenant"])
        assert.deepStrictEqual(JSON.parse(moved.header_values), { authorization: "Bearer legacy-9c1", "x-tenant": "t" })
        assert.deepStrictEqual(yield* openHeaderValues(undefined, hook.webhook_id, moved.header_values), { authorization: "Bearer legacy-9c1", "x-tenant": "t" })

        yield* start({ secretKey: OLD })
        const sealed = (yield* values()).header_values
        assert.match(sealed, /^v1:/)
        assert.notInclude(sealed, "legacy-9c1")
        assert.deepStrictEqual(yield* openHeaderValues(OLD, hook.webhook_id, sealed), { authorization: "Bearer legacy-9c1", "x-tenant": "t" })
        yield* start({ secretKey: OLD })
        assert.strictEqual((yield* values()).header_values, sealed, "a sealed value is sealed once")

        yield* start({ secretKey: NEW, previousSecretKey: OLD })
        const resealed = (yield* values()).header_values
        assert.notStrictEqual(resealed, sealed)
        assert.deepStrictEqual(yield* openHeaderValues(NEW, hook.webhook_id, resealed), { authorization: "Bearer legacy-9c1", "x-tenant": "t" })
        assert.isUndefined(yield* openHeaderValues(OLD, hook.webhook_id, resealed))
      }))

    it.effect("a start without INBOX_SECRET_KEY_PREVIOUS, or with a previous key that never sealed it, leaves a key as it was", () =>
      Effect.gen(function*() {
        const sealed = yield* newDomain("kept.example")
        yield* start({ secretKey: NEW })
        assert.strictEqual(yield* storedKey("kept.example"), sealed)
        yield* start({ secretKey: NEW, previousSecretKey: "some-other-key" })
        assert.strictEqual(yield* storedKey("kept.example"), sealed)
        assert.isDefined(yield* open(OLD, "kept.example", sealed))
      }))
  })
}
