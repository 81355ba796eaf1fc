/** The embedded storage: its data folder lock, and reopening a folder keeps the data. */
import { assert, describe, it } from "@effect/vitest"
import { Database, LOCK_FILE } from "@inbox/core/internal"
import { storages } from "@inbox/testkit"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const withFolder = <A, E>(use: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "inbox-db-"))),
    use,
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

describe("embedded storage", () => {
  it.live("locks its data folder: a second open is refused with data_folder_in_use until the first closes", () =>
    withFolder((dir) =>
      Effect.gen(function*() {
        const db = Database.layerPglite({ dataDir: dir })
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(db)
          assert.strictEqual(readFileSync(join(dir, LOCK_FILE), "utf8").trim(), String(process.pid))
          const second = yield* Effect.scoped(Layer.build(db)).pipe(Effect.flip)
          assert.strictEqual(second.code, "data_folder_in_use")
          assert.include(second.message, dir)
        }))
        // Closed: the lock is gone and the folder opens again, with its data.
        const count = yield* Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inbox_migrations`
        }).pipe(Effect.provide(db)))
        assert.isAbove(count[0]?.n ?? 0, 0)
      })), 120_000)

  it.live("reports the migrations it applied: all on a new folder, none on reopening", () =>
    withFolder((dir) =>
      Effect.gen(function*() {
        const applied = Effect.scoped(Effect.map(Layer.build(Database.layerPglite({ dataDir: dir })), (ctx) =>
          Context.get(ctx, Database.Migrations).applied.map((m) => m.name)))
        const first = yield* applied
        assert.include(first, "foundation")
        assert.deepStrictEqual(yield* applied, [])
      })), 120_000)

  it.live("takes over a lock left by a process that died", () =>
    withFolder((dir) =>
      Effect.gen(function*() {
        // pid 2^22 + 1 is above Linux's pid_max default, so no live process holds it.
        writeFileSync(join(dir, LOCK_FILE), "4194305\n")
        yield* Effect.scoped(Layer.build(Database.layerPglite({ dataDir: dir })))
      })), 120_000)

  const sharedBuffers = (env: Record<string, string>) =>
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql<{ shared_buffers: string }>`SHOW shared_buffers`)[0]?.shared_buffers
    }).pipe(Effect.provide(Database.layerConfig.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))))))

  it.live("starts with 32MB of shared buffers, or INBOX_EMBEDDED_SHARED_BUFFERS, leaving the folder's postgresql.conf as it was", () =>
    withFolder((dir) =>
      Effect.gen(function*() {
        assert.strictEqual(yield* sharedBuffers({ INBOX_DATA_DIR: dir }), "32MB")
        const conf = readFileSync(join(dir, "postgresql.conf"), "utf8")
        assert.strictEqual(yield* sharedBuffers({ INBOX_DATA_DIR: dir, INBOX_EMBEDDED_SHARED_BUFFERS: "48MB" }), "48MB")
        assert.strictEqual(readFileSync(join(dir, "postgresql.conf"), "utf8"), conf)
      })), 120_000)

  it.live("refuses to start with an INBOX_EMBEDDED_SHARED_BUFFERS that is not a size", () =>
    withFolder((dir) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(sharedBuffers({ INBOX_DATA_DIR: dir, INBOX_EMBEDDED_SHARED_BUFFERS: "lots" }))
        assert.isTrue(exit._tag === "Failure")
        assert.include(String(exit), "INBOX_EMBEDDED_SHARED_BUFFERS must be a size")
      })), 120_000)
})

describe("migration files", () => {
  it("split into statements at top-level semicolons only: strings, comments and dollar-quoted bodies stay whole", () => {
    const text = [
      "-- a comment; with a semicolon",
      "CREATE TABLE t (a text DEFAULT 'x;y');",
      "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$",
      "BEGIN NEW.a := 'b'; RETURN NEW; END;",
      "$$;",
      "/* block; comment */ CREATE FUNCTION g() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$",
      ";"
    ].join("\n")
    const statements = Database.splitStatements(text)
    assert.strictEqual(statements.length, 3)
    assert.include(statements[0], "'x;y'")
    assert.include(statements[1], "NEW.a := 'b'; RETURN NEW; END;")
    assert.include(statements[2], "SELECT 1;")
  })
})

for (const storage of storages()) {
  describe(`migrations on ${storage.name}`, () => {
    it.live("a migration that defines a plpgsql trigger function runs whole, and the trigger works", () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "inbox-migrations-"))
        writeFileSync(join(dir, "0001_trigger.sql"), [
          "CREATE TABLE notes (body text NOT NULL, shouted text);",
          "-- uppercases the body on insert; the function body holds semicolons",
          "CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$",
          "BEGIN",
          "  NEW.shouted := upper(NEW.body);",
          "  RETURN NEW;",
          "END;",
          "$$;",
          "CREATE TRIGGER notes_shout BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION shout();"
        ].join("\n"))
        const migrations = Database.loadMigrations(dir)
        rmSync(dir, { recursive: true, force: true })
        const rows = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          for (const name of Object.keys(migrations).sort()) yield* (migrations[name] ?? Effect.void)
          yield* sql`INSERT INTO notes (body) VALUES ('quiet; please')`
          return yield* sql<{ shouted: string }>`SELECT shouted FROM notes`
        }).pipe(Effect.provide(storage.layer), Effect.orDie)
        assert.deepStrictEqual(rows.map((r) => r.shouted), ["QUIET; PLEASE"])
      }), 120_000)

    it.live("a statement's text and parameters are not kept once it has run (effect/sql's compiler caches nothing)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const compiler = Database.compilerOf(sql)
        assert.isDefined(compiler, "effect/sql's statements no longer carry their compiler")
        const body = "a delivery's body ".repeat(100)
        const statement = sql<{ n: number }>`SELECT length(${body})::int AS n`
        assert.deepStrictEqual(yield* statement, [{ n: body.length }])
        for (const cache of Database.STATEMENT_CACHES) {
          const kept = compiler![cache] as { get(key: unknown): unknown } | undefined
          assert.isDefined(kept, `effect/sql's compiler no longer has ${cache}`)
          assert.isUndefined(kept!.get(statement), `${cache} kept the statement`)
        }
      }).pipe(Effect.provide(storage.layer), Effect.orDie), 120_000)
  })
}
