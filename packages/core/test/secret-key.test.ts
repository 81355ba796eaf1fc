/**
 * The key that seals DKIM private keys and webhook secrets at rest (docs/domains.md):
 * INBOX_SECRET_KEY when set; with the embedded database and no key set, one
 * generated once into the data folder (`secret.key`, mode 0600) and read back on every
 * start; with PostgreSQL and no key set, none (several processes share no folder).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Settings } from "../src/settings/Settings.ts"

const secretKeyOf = (env: Record<string, string>) =>
  Effect.gen(function*() {
    return (yield* Settings).secretKey
  }).pipe(Effect.provide(Settings.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))))

describe("the secret key", () => {
  it.effect("with the embedded database and none set, one is generated once into the data folder, mode 0600, and read back on every start", () =>
    Effect.gen(function*() {
      const dir = join(mkdtempSync(join(tmpdir(), "secret-key-")), "data")
      const first = yield* secretKeyOf({ INBOX_DATA_DIR: dir })
      assert.match(first ?? "", /^[0-9a-f]{64}$/)
      const file = join(dir, "secret.key")
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)
      assert.strictEqual(readFileSync(file, "utf8").trim(), first)
      assert.strictEqual(yield* secretKeyOf({ INBOX_DATA_DIR: dir }), first, "the same key on the next start")
    }))

  it.effect("INBOX_SECRET_KEY wins, and nothing is written; with PostgreSQL and none set there is no key and no file", () =>
    Effect.gen(function*() {
      const dir = join(mkdtempSync(join(tmpdir(), "secret-key-")), "data")
      assert.strictEqual(yield* secretKeyOf({ INBOX_DATA_DIR: dir, INBOX_SECRET_KEY: "set-by-the-operator" }), "set-by-the-operator")
      assert.isUndefined(yield* secretKeyOf({ INBOX_DATA_DIR: dir, INBOX_DATABASE_URL: "postgres://nowhere.invalid/db" }))
      assert.isFalse(existsSync(join(dir, "secret.key")))
    }))
})
