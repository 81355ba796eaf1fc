/**
 * An exclusive lock on an embedded data folder.
 *
 * PGlite opens a data folder without any lock of its own (its postmaster.pid holds a fake
 * pid), and two processes writing one folder corrupt it. So the embedded storage layer
 * first creates `inbox.lock` in the folder with O_EXCL, holding its pid, and removes it
 * when the layer closes. A second process fails with DataFolderInUse instead of sharing the
 * folder; a lock left by a process that died is taken over.
 */
import { Effect, Schema } from "effect"
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { join } from "node:path"

export const LOCK_FILE = "inbox.lock"

export class DataFolderInUse extends Schema.TaggedError<DataFolderInUse>()("DataFolderInUse", {
  dir: Schema.String,
  pid: Schema.Number
}) {
  readonly code = "data_folder_in_use" as const
  override get message() {
    return `the data folder ${this.dir} is in use by process ${this.pid}; stop the server or use INBOX_DATABASE_URL`
  }
}

const alive = (pid: number): boolean =>
  Effect.runSync(Effect.try(() => process.kill(pid, 0)).pipe(
    Effect.as(true),
    // EPERM: the process exists but belongs to another user.
    Effect.catch((e) => Effect.succeed((e.cause as NodeJS.ErrnoException).code === "EPERM"))
  ))

const holderOf = (path: string): number | undefined => {
  const text = Effect.runSync(Effect.option(Effect.try(() => readFileSync(path, "utf8"))))
  const pid = text._tag === "Some" ? Number.parseInt(text.value.trim(), 10) : Number.NaN
  return Number.isInteger(pid) && pid > 0 ? pid : undefined
}

const create = (path: string) =>
  Effect.try({
    try: () => {
      const fd = openSync(path, "wx")
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
    },
    catch: (e) => e as NodeJS.ErrnoException
  })

const take = (dir: string): Effect.Effect<string, DataFolderInUse> =>
  Effect.gen(function*() {
    const path = join(dir, LOCK_FILE)
    yield* Effect.sync(() => mkdirSync(dir, { recursive: true }))
    for (let attempt = 0; attempt < 3; attempt++) {
      const created = yield* Effect.result(create(path))
      if (created._tag === "Success") return path
      if (created.failure.code !== "EEXIST") return yield* Effect.die(created.failure)
      const holder = holderOf(path)
      // Our own pid counts as a holder too: this process opening the folder twice would corrupt it.
      if (holder !== undefined && alive(holder)) {
        return yield* new DataFolderInUse({ dir, pid: holder })
      }
      // A stale lock: remove it and try again (another process may win the race; the next
      // attempt then sees its pid).
      yield* Effect.ignore(Effect.try(() => unlinkSync(path)))
    }
    return yield* new DataFolderInUse({ dir, pid: holderOf(join(dir, LOCK_FILE)) ?? 0 })
  })

const release = (path: string) =>
  Effect.ignore(Effect.try(() => {
    if (holderOf(path) === process.pid) unlinkSync(path)
  }))

/** Holds the folder's lock for the life of the enclosing scope. */
export const lockDataFolder = (dir: string) => Effect.acquireRelease(take(dir), release)
