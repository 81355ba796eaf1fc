/**
 * The inboxctl command tree (commander), built without loading the engine: the resource
 * commands from the catalogue's manifest (resources.ts), the rest written here. `--help`
 * and a usage error therefore cost commander and the manifest. A command that runs loads
 * what it needs then: most first ask a running server to run them (client.ts) and load the
 * engine only when none answers; `serve`, `restore`, `move-to-postgres` and `events tail`
 * run here.
 *
 * Global options (storage, `--api-key`, `--json`) are the program's, accepted before or
 * after the command. Settings flags (core's settings registry, through the manifest) set the
 * INBOX_* variable of the same meaning before a command runs, so flags and environment are
 * one mechanism.
 */
import { Command } from "commander"
import type { Effect } from "effect"
import { inServer } from "./ambient.ts"
import { forward, forwardMcp } from "./client.ts"
import type { ManifestCommand, ManifestSetting } from "./manifest.ts"
import { MANIFEST, SETTING_DEFAULTS, SETTING_FLAGS } from "./manifest.generated.ts"
import { runWithNodeFlags } from "./node-flags.ts"
import { addCatalogueCommands, type Invocation } from "./resources.ts"

const envName = (flag: string) => flag.replace(/^--/, "").replace(/ .*$/, "")

/** Copies the given settings flags of a command into their environment variables. */
const applySettings = (
  command: Command,
  settings: ReadonlyArray<{ readonly flag: string; readonly env: string }>
) => {
  // Inside a server for another inboxctl (local.ts): the settings are that caller's, passed along.
  if (inServer() !== undefined) return
  const opts = command.opts<Record<string, unknown>>()
  for (const setting of settings) {
    const option = command.options.find((o) => o.long === `--${envName(setting.flag)}`)
    const value = option === undefined ? undefined : opts[option.attributeName()]
    if (value === true) process.env[setting.env] = "1"
    else if (typeof value === "string") process.env[setting.env] = value
  }
}

/** A command's work, loaded on demand (it imports the engine). */
interface Job {
  readonly effect: Effect.Effect<void, unknown>
  readonly terminateIsSuccess?: boolean
}

/**
 * Runs a command: first through a running server when `server` says so (its exit code is
 * ours), else here, loading the engine's side. Inside a server, always here.
 */
const launch = async (server: "first" | "never", load: () => Promise<Job>): Promise<void> => {
  if (server === "first" && inServer() === undefined) {
    const code = await forward(process.argv.slice(2))
    if (code !== undefined) process.exit(code)
  }
  const [{ runCommand }, job] = await Promise.all([import("./runtime.ts"), load()])
  runCommand(job.effect as Parameters<typeof runCommand>[0], job.terminateIsSuccess === true ? { terminateIsSuccess: true } : {})
}

const runInvocation = (invocation: Invocation) =>
  launch("first", async () => ({ effect: (await import("./invoke.ts")).invoke(invocation) }))

const settingHelp = (s: ManifestSetting) => `${s.help} [${s.env}]`

export const buildProgram = (
  manifest: ReadonlyArray<ManifestCommand> = MANIFEST,
  settings: ReadonlyArray<ManifestSetting> = SETTING_FLAGS
): Command => {
  const storage = settings.filter((s) => s.scope === "storage")
  const serve = settings.filter((s) => s.scope === "serve")
  const program = new Command("inboxctl")
    .description("Operate the inbox engine: run the server, administer organizations, manage resources, speak MCP.")
    .version("0.1.0")
    .showHelpAfterError("(add --help for usage)")
    .configureHelp({ showGlobalOptions: true })
    // Usage errors exit 2 (main.ts); this must precede the subcommands, which inherit it.
    .exitOverride()
  // The global options: the storage settings, `--api-key` and `--json`.
  for (const setting of [...storage, ...settings.filter((s) => s.scope === "client")]) program.option(setting.flag, settingHelp(setting))
  program.option("--json", "print the answer as JSON (resource commands, inbound, events tail)")
  program.hook("preAction", (root) => applySettings(root, storage))

  const serveCommand = program.command("serve").description("Run the HTTP server until interrupted (migrates first).")
  for (const setting of serve) serveCommand.option(setting.flag, settingHelp(setting))
  serveCommand.action(() => {
    applySettings(serveCommand, serve)
    if (inServer() === undefined) runWithNodeFlags(process.env["INBOX_NODE_FLAGS"] ?? SETTING_DEFAULTS.INBOX_NODE_FLAGS)
    return launch("never", async () => ({ effect: (await import("./admin.ts")).serve(() => buildProgram(manifest, settings)), terminateIsSuccess: true }))
  })

  program.command("migrate")
    .description("Apply pending database migrations, print what happened, and exit.")
    .action(() => launch("first", async () => ({ effect: (await import("./admin.ts")).migrate })))

  const inboundCommand = program.command("inbound")
    .description("Deliver a local .eml file to hosted inboxes, as the mail forwarder does (POST /inbound/raw).")
    .argument("<file>", "an RFC 822 message")
    .requiredOption("--to <addresses>", "recipient addresses, comma-separated")
  inboundCommand.action((file: string, opts: { to: string }) => {
    const to = opts.to.split(",").map((a) => a.trim()).filter((a) => a.length > 0)
    const json = inboundCommand.optsWithGlobals()["json"] === true
    return launch("first", async () => ({ effect: (await import("./admin.ts")).inbound({ file, to, json }) }))
  })

  addCatalogueCommands(program, manifest, runInvocation)

  // Beside the catalogue's `events list`: following a running server's WebSocket.
  const events = program.commands.find((c) => c.name() === "events") ?? program.command("events")
  const tail = events.command("tail")
    .description("Follow the events of a running server over its WebSocket, one line each (--json: the whole event as one JSON line); Ctrl-C stops.")
    .option("--url <url>", "the server (default: INBOX_PUBLIC_URL, else http://127.0.0.1:INBOX_PORT)")
    .option("--event-types <types>", "only these event types, comma-separated")
    .option("--inbox-ids <ids>", "only these inboxes, comma-separated")
    .option("--pod-ids <ids>", "only these pods, comma-separated")
  tail.action(() => {
    const opts = tail.optsWithGlobals<{ apiKey?: string; url?: string; eventTypes?: string; inboxIds?: string; podIds?: string; json?: boolean }>()
    return launch("never", async () => {
      const { eventsTail, listOf } = await import("./tail.ts")
      const eventTypes = listOf(opts.eventTypes)
      const inboxIds = listOf(opts.inboxIds)
      const podIds = listOf(opts.podIds)
      return {
        effect: eventsTail({
          ...(opts.apiKey === undefined ? {} : { apiKey: opts.apiKey }),
          ...(opts.url === undefined ? {} : { url: opts.url }),
          ...(eventTypes === undefined ? {} : { eventTypes }),
          ...(inboxIds === undefined ? {} : { inboxIds }),
          ...(podIds === undefined ? {} : { podIds }),
          ...(opts.json === true ? { json: true } : {})
        })
      }
    })
  })

  const mcpCommand = program.command("mcp")
    .description("Serve MCP over stdio (newline-delimited JSON-RPC) with the tools of the given key; through the running server when there is one.")
    .option("--read-only", "offer only tools that change nothing")
  mcpCommand.action(async () => {
    const opts = mcpCommand.optsWithGlobals<{ apiKey?: string; readOnly?: boolean }>()
    const readOnly = opts.readOnly === true
    if (inServer() === undefined) {
      const code = await forwardMcp({ apiKey: opts.apiKey, readOnly })
      if (code !== undefined) process.exit(code)
    }
    return launch("never", async () => ({ effect: (await import("./admin.ts")).mcp({ ...(opts.apiKey === undefined ? {} : { apiKey: opts.apiKey }), readOnly }) }))
  })

  program.command("backup")
    .description("Write the embedded database and its blobs to one file (consistent; while the server runs, through it).")
    .argument("<file>", "the backup file to write (a tar archive)")
    .action((file: string) => launch("first", async () => ({ effect: (await import("./operating.ts")).backupCommand(file) })))
  program.command("restore")
    .description("Restore a backup into an empty data folder (--data-dir / INBOX_DATA_DIR), checking every checksum.")
    .argument("<file>", "a file written by `inboxctl backup`")
    .action((file: string) => launch("never", async () => ({ effect: (await import("./operating.ts")).restoreCommand(file) })))
  program.command("move-to-postgres")
    .description("Copy the embedded installation (rows and blobs) to the empty PostgreSQL database of --database-url (blobs to --blob-url when given), then verify counts and checksums.")
    .action(() => launch("never", async () => ({ effect: (await import("./operating.ts")).moveCommand })))

  return program
}
