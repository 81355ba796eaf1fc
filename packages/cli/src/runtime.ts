/**
 * Running one inboxctl command: storage and engine from the INBOX_* environment, the
 * caller's key resolved to a principal, errors printed as one `error:` line, and the exit
 * code. Exit codes: 0 success; 1 the command failed (any spec error code, a data folder in
 * use, an unexpected error); 2 usage (unknown flag, missing argument); 130 interrupted.
 * A command that opens storage here does so because no server answered (program.ts asks one
 * first). A second process on an embedded data folder is still refused by core's storage
 * layer (the folder lock); when a server answers by then, the command goes to it (client.ts),
 * otherwise inboxctl reports `error: data_folder_in_use: ...`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import {
  type ApiError,
  type CallContext,
  DataFolderInUse,
  Engine,
  isApiError,
  type Principal,
  Unauthorized
} from "@inbox/core"
import { Cause, Config, ConfigProvider, Data, Effect, Exit, Option } from "effect"
import { inServer, writeErr } from "./ambient.ts"
import { forward } from "./client.ts"
import { errorLines } from "./output.ts"

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const

/** A failure that is not one of the spec's error codes (the CLI's own). */
export class CliError extends Data.TaggedError("CliError")<{ readonly code: string; readonly message: string }> {}

export const CLI_CONTEXT: CallContext = { clientIp: "cli", requestId: "cli" }

/** The embedded folder is locked by core's storage layer; here its refusal becomes a CLI error line. */
export const storageInUse = (e: DataFolderInUse) => new CliError({ code: e.code, message: e.message })

/** Runs `use` on the engine over live ports (INBOX_* settings), or on the server's when run inside it. */
export const withEngine = <A, E>(use: Effect.Effect<A, E, Engine>): Effect.Effect<A, E | CliError> =>
  Effect.suspend(() => {
    const server = inServer()
    if (server !== undefined) return Effect.provide(use, server.services)
    return Effect.provide(use, Engine.layerConfig).pipe(Effect.catchIf(isDataFolderInUse, (e) => Effect.fail(storageInUse(e))))
  })

const isDataFolderInUse = (u: unknown): u is DataFolderInUse => u instanceof DataFolderInUse

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

export const authenticate = (key: string): Effect.Effect<Principal, ApiError, Engine> =>
  Engine.use((engine) => engine.admit({ kind: "key", key }, CLI_CONTEXT)).pipe(
    Effect.catchTag("Unauthorized", (e) => Effect.fail(new Unauthorized({ message: e.message, fix: "Pass a valid key with --api-key or INBOX_API_KEY." })))
  )

/** The command ran in the server, which wrote its output; this is its exit code. */
class Forwarded extends Data.TaggedError("Forwarded")<{ readonly code: number }> {}

/** A command's exit code, its error (or defect) written as one `error:` line. */
const exitCodeOf = (effect: Effect.Effect<void, ApiError | CliError | Forwarded>): Effect.Effect<number> =>
  effect.pipe(
    Effect.as<number>(EXIT.ok),
    Effect.catch((error) =>
      Effect.sync(() => {
        if (error instanceof Forwarded) return error.code
        writeErr(`${report(error)}\n`)
        return EXIT.failed
      })
    ),
    Effect.catchDefect((defect) => Effect.sync(() => (writeErr(`error: internal_error: ${defectMessage(defect)}\n`), EXIT.failed)))
  )

/** The `error:` lines of a failed command. */
export const report = (error: ApiError | CliError): string =>
  isApiError(error) ? errorLines(error) : `error: ${error.code}: ${error.message}`

const defectMessage = (defect: unknown): string =>
  defect instanceof Error ? defect.message : typeof defect === "string" ? defect : "an unexpected error occurred"

/**
 * Runs a command as the process's main fiber (SIGINT/SIGTERM interrupt it and run its
 * finalizers) and exits with the command's code. The exit is explicit so a handle some
 * library leaves open cannot keep a finished command alive. A signal that stops a command
 * exits 130, except SIGTERM with `terminateIsSuccess` (serve): SIGTERM is how a supervisor
 * stops a server, and by the time the process exits its finalizers have drained it.
 */
export const runCommand = (effect: Effect.Effect<void, ApiError | CliError>, options: { readonly terminateIsSuccess?: boolean } = {}): void => {
  const server = inServer()
  if (server !== undefined) {
    // Inside a server for another inboxctl: its settings, its output buffers, no exit.
    server.finished = Effect.runPromise(exitCodeOf(effect).pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: server.env }))
    ))
    return
  }
  let terminated = false
  if (options.terminateIsSuccess === true) process.once("SIGTERM", () => (terminated = true))
  const program = exitCodeOf(effect.pipe(
    // The data folder is held: a running server with a local channel runs the command instead.
    Effect.catchIf(
      (e): e is CliError => e instanceof CliError && e.code === "data_folder_in_use",
      (e) =>
        Effect.flatMap(Effect.promise(() => forward(process.argv.slice(2))), (code): Effect.Effect<never, CliError | Forwarded> =>
          code === undefined ? Effect.fail(e) : Effect.fail(new Forwarded({ code })))
    )
  ))
  NodeRuntime.runMain(program, {
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      const code = Exit.isSuccess(exit)
        ? (typeof exit.value === "number" ? exit.value : EXIT.ok)
        : Cause.hasInterruptsOnly(exit.cause) ? (terminated ? EXIT.ok : 130) : EXIT.failed
      onExit(code)
      process.exit(code)
    }
  })
}
