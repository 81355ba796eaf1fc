/**
 * Rotating INBOX_SECRET_KEY (README, "Custom domains", key rotation): with the old key in
 * INBOX_SECRET_KEY_PREVIOUS, the engine's start re-seals every DKIM key sealed under the old
 * key under the new one, so the domain keeps signing after the old key is dropped. Runs the
 * startup layer itself over the test's database, on every storage.
 */
import { assert, layer } from "@effect/vitest"
import { Domains, Organizations, type Principal, Settings } from "@inbox/core"
import { engineLayer, storages } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { open } from "../src/domains/dkim.ts"
import { SecretRotation } from "../src/shared/SecretRotation.ts"

const OLD = "old-secret-key"
const NEW = "new-secret-key"

/** The engine's startup re-sealing, as a process started with these keys runs it (fresh: not the test engine's memoised build). */
const start = (keys: { readonly secretKey: string; readonly previousSecretKey?: string }) =>
  Layer.build(Layer.fresh(SecretRotation.layer).pipe(Layer.provide(Layer.succeed(Settings, Settings.make(keys))))).pipe(Effect.scoped)

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
