/**
 * Upgrades: migrations are forward-only, and a server refuses to start on a database that a
 * newer version has migrated, saying so, rather than serve tables it does not know.
 */
import { assert, it } from "@effect/vitest"
import { Database } from "@inbox/core"
import { PGLITE_EXTENSIONS } from "../src/db/Database.ts"
import { PGlite } from "@electric-sql/pglite"
import { Cause, Effect, Exit, Layer } from "effect"

it.effect("refuses to start on a database migrated by a newer version, with a clear message", () =>
  Effect.gen(function*() {
    const db = yield* Effect.promise(() => PGlite.create("memory://", { extensions: PGLITE_EXTENSIONS }))
    yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped)
    // Opening it again is fine: nothing newer has touched it.
    yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped)
    yield* Effect.promise(() => db.exec("INSERT INTO inbox_migrations (migration_id, name, created_at) VALUES (9999, 'from_the_future', now())"))
    const exit = yield* Layer.build(Database.layerPgliteInstance(db)).pipe(Effect.scoped, Effect.exit)
    assert.isTrue(Exit.isFailure(exit))
    const message = Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : ""
    assert.match(message, /the database was migrated by a newer version \(migration 9999_from_the_future; this version knows up to \d{4}\): run that version or a newer one/)
    yield* Effect.promise(() => db.close())
  }), { timeout: 300_000 })
