/** The embedded storage: its data folder lock, and reopening a folder keeps the data. */
import { assert, describe, it } from "@effect/vitest"
import { Database, LOCK_FILE } from "@inbox/core"
import { Context, Effect, Layer } from "effect"
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
})
