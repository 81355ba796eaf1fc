/**
 * Running one inboxctl command: storage and engine from the INBOX_* environment, the
 * caller's key resolved to a principal, errors printed as one `error:` line, and the exit
 * code. Exit codes: 0 success; 1 the command failed (any spec error code, a data folder in
 * use, an unexpected error); 2 usage (unknown flag, missing argument); 130 interrupted.
 *
 * Embedded PGlite opens its data folder without any lock of its own, and two processes
 * writing one folder corrupt it. So every inboxctl process that opens the folder (serve
 * included) first takes `inbox.lock` in it, holding its pid; a second process refuses to
 * start instead of sharing the folder. A lock left by a process that died is taken over.
 */
import { NodeRuntime } from "@effect/platform-node"
import {
  type ApiError,
  ApiKeys,
  type CallContext,
  Database,
  Engine,
  type EngineServices,
  isApiError,
  type Principal,
  Unauthorized
} from "@inbox/core"
import { Cause, Config, Data, Effect, Exit, Option } from "effect"
import type { SqlClient } from "effect/sql"
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { join } from "node:path"
import { errorLines } from "./output.ts"

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const

/** A failure that is not one of the spec's error codes (the CLI's own). */
export class CliError extends Data.TaggedError("CliError")<{ readonly code: string; readonly message: string }> {}

export const CLI_CONTEXT: CallContext = { clientIp: "cli", requestId: "cli" }

export const LOCK_FILE = "inbox.lock"

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const readPid = (path: string): number | undefined => {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8").trim(), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

const takeLock = (dir: string) =>
  Effect.suspend(() => {
    const path = join(dir, LOCK_FILE)
    mkdirSync(dir, { recursive: true })
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(path, "wx")
        writeSync(fd, `${process.pid}\n`)
        closeSync(fd)
        return Effect.succeed(path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") return Effect.die(error)
        const holder = readPid(path)
        if (holder !== undefined && holder !== process.pid && alive(holder)) {
          return Effect.fail(new CliError({
            code: "data_folder_in_use",
            message: `the data folder ${dir} is in use by process ${holder}; stop the server or use INBOX_DATABASE_URL`
          }))
        }
        try {
          unlinkSync(path)
        } catch {
          // Another process took the stale lock first; the next attempt sees its pid.
        }
      }
    }
    return Effect.fail(new CliError({ code: "data_folder_in_use", message: `could not lock the data folder ${dir}` }))
  })

const releaseLock = (path: string) =>
  Effect.sync(() => {
    if (readPid(path) === process.pid) unlinkSync(path)
  })

/** Locks the embedded data folder for this process's lifetime; nothing to do for PostgreSQL. */
export const lockStorage = Effect.gen(function*() {
  const url = yield* Config.option(Config.String("INBOX_DATABASE_URL"))
  if (Option.isSome(url)) return
  const dir = yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault("./.inbox"))
  if (/^[a-z]+:\/\//i.test(dir)) return
  yield* Effect.acquireRelease(takeLock(dir), releaseLock)
}).pipe(Effect.catchTag("ConfigError", Effect.die))

/** Runs `use` on the engine over live ports (INBOX_* settings). */
export const withEngine = <A, E>(use: Effect.Effect<A, E, EngineServices>): Effect.Effect<A, E | CliError> =>
  Effect.scoped(Effect.andThen(lockStorage, Effect.provide(use, Engine.layerConfig)))

/** Runs `use` on the migrated database alone. */
export const withDatabase = <A, E>(use: Effect.Effect<A, E, SqlClient.SqlClient>): Effect.Effect<A, E | CliError> =>
  Effect.scoped(Effect.andThen(lockStorage, Effect.provide(use, Database.layerConfig)))

/** The key from --api-key or INBOX_API_KEY; checked before any storage is opened. */
export const apiKeyFrom = (flag: string | undefined): Effect.Effect<string, Unauthorized> =>
  Effect.gen(function*() {
    const env = yield* Config.option(Config.String("INBOX_API_KEY")).pipe(Effect.orElseSucceed(() => Option.none()))
    const key = flag ?? Option.getOrUndefined(env)
    if (key === undefined || key === "") {
      return yield* new Unauthorized({ message: "No API key given.", fix: "Pass --api-key am_... or set INBOX_API_KEY." })
    }
    return key
  })

export const authenticate = (key: string): Effect.Effect<Principal, Unauthorized, ApiKeys> =>
  ApiKeys.use((keys) => keys.authenticate(key)).pipe(
    Effect.mapError((e) => new Unauthorized({ message: e.message, fix: "Pass a valid key with --api-key or INBOX_API_KEY." }))
  )

const report = (error: ApiError | CliError): string =>
  isApiError(error) ? errorLines(error) : `error: ${error.code}: ${error.message}`

const defectMessage = (defect: unknown): string =>
  defect instanceof Error ? defect.message : typeof defect === "string" ? defect : "an unexpected error occurred"

/**
 * Runs a command as the process's main fiber (SIGINT/SIGTERM interrupt it and run its
 * finalizers) and exits with the command's code. The exit is explicit so a handle some
 * library leaves open cannot keep a finished command alive.
 */
export const runCommand = (effect: Effect.Effect<void, ApiError | CliError>): void => {
  const program = effect.pipe(
    Effect.as<number>(EXIT.ok),
    Effect.catch((error) => Effect.sync(() => (process.stderr.write(`${report(error)}\n`), EXIT.failed))),
    Effect.catchDefect((defect) =>
      Effect.sync(() => (process.stderr.write(`error: internal_error: ${defectMessage(defect)}\n`), EXIT.failed))
    )
  )
  NodeRuntime.runMain(program, {
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      const code = Exit.isSuccess(exit)
        ? (typeof exit.value === "number" ? exit.value : EXIT.ok)
        : Cause.hasInterruptsOnly(exit.cause) ? 130 : EXIT.failed
      onExit(code)
      process.exit(code)
    }
  })
}
