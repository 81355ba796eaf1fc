/**
 * The operator's commands that are not operations of the catalogue: `serve`, `migrate`,
 * `inbound` (which reads a file for the forwarder's operation) and `mcp` (which takes a key
 * but speaks MCP on stdio, here when no server answered: local.ts serves it otherwise). The
 * operator's other commands (`org create`, `org key`, `org plan`, `suppressions add`,
 * `outbox`, `ready`) are the catalogue's local operations, added like every resource
 * command (resources.ts).
 */
import { Engine, LOCAL, Migrations, settingDefault } from "@inbox/core"
import { readFileSync } from "node:fs"
import { runStdio } from "@inbox/mcp"
import type { Command } from "commander"
import { Config, Effect, Option } from "effect"
import { callerPath } from "./ambient.ts"
import { json, print, table } from "./output.ts"
import { apiKeyFrom, authenticate, CLI_CONTEXT, CliError, storageInUse, withEngine } from "./runtime.ts"

/** The server, with the local channel running commands built by `program` (program.ts's buildProgram). */
export const serve = (program: () => Command) => Effect.gen(function*() {
  // Loaded on demand: the other commands never need the HTTP stack.
  const { launchServerWith } = yield* Effect.promise(() => import("@inbox/http"))
  const { localChannel } = yield* Effect.promise(() => import("./local.ts"))
  yield* launchServerWith(localChannel(program)).pipe(
    Effect.catchTag("DataFolderInUse", (e) => Effect.fail(storageInUse(e))),
    // The port is taken or the address is not ours: one line, not a stack trace.
    Effect.catchTag("ServeError", (e) =>
      Effect.fail(new CliError({ code: "listen_failed", message: e.cause instanceof Error ? e.cause.message : String(e.cause) })))
  )
})

const describeStorage = Effect.gen(function*() {
  const url = yield* Config.option(Config.String("INBOX_DATABASE_URL"))
  if (Option.isSome(url)) {
    const parsed = URL.canParse(url.value) ? new URL(url.value) : undefined
    return parsed === undefined ? "PostgreSQL" : `PostgreSQL ${parsed.host}${parsed.pathname}`
  }
  return `PGlite data folder ${yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR")))}`
}).pipe(Effect.orDie)

/** Opening the database applies pending migrations, and says which. */
export const migrate = Effect.gen(function*() {
  const where = yield* describeStorage
  const { applied, listed } = yield* withEngine(Effect.gen(function*() {
    // What opening the database applied (inside a running server: nothing, it migrated at start).
    const opened = yield* Effect.serviceOption(Migrations)
    const applied = opened._tag === "Some" ? opened.value.applied : []
    const listed = yield* (yield* Engine).call("operator.listMigrations", {}, LOCAL, CLI_CONTEXT)
    return { applied, listed }
  }))
  const rows = listed.applied
  const name = (id: number, n: string) => `${String(id).padStart(4, "0")}_${n}`
  yield* print(`database: ${where}`)
  for (const m of applied) yield* print(`applied: ${name(m.id, m.name)}`)
  const latest = rows.at(-1)
  yield* print(
    applied.length === 0
      ? `up to date: ${rows.length} migration${rows.length === 1 ? "" : "s"}${latest === undefined ? "" : `, latest ${name(latest.id, latest.name)}`}`
      : `done: ${applied.length} applied, ${rows.length} in total`
  )
})

/**
 * Delivers a local .eml file as the forwarder would (the same path as POST /inbound/raw,
 * without its secret: the operator holds the storage itself).
 */
export const inbound = (options: { readonly file: string; readonly to: ReadonlyArray<string>; readonly json: boolean }) =>
  Effect.gen(function*() {
    const raw = yield* Effect.try({
      try: () => new Uint8Array(readFileSync(callerPath(options.file))),
      catch: (e) => new CliError({ code: "unreadable_file", message: e instanceof Error ? e.message : String(e) })
    })
    // The forwarder's operation, as the operator on this machine: no secret needed.
    const result = yield* withEngine(Engine.use((engine) => engine.call("inbound.raw", { to: options.to.join(","), raw }, LOCAL, CLI_CONTEXT)))
    if (options.json) return yield* print(json(result))
    yield* print(result.delivered.length === 0 ? "Delivered to no inbox." : table(result.delivered, ["address", "message_id", "thread_id", "duplicate"]))
    if (result.skipped.length > 0) yield* print(`Skipped (not hosted here): ${result.skipped.join(", ")}`)
  })

export const mcp = (options: { readonly apiKey?: string; readonly readOnly: boolean }) =>
  Effect.gen(function*() {
    // Stdout carries the protocol: anything a library prints goes to stderr instead.
    console.log = console.error
    console.info = console.error
    console.debug = console.error
    const key = yield* apiKeyFrom(options.apiKey)
    yield* withEngine(Effect.gen(function*() {
      const principal = yield* authenticate(key)
      yield* runStdio(principal, { readOnly: options.readOnly })
    }))
  })
