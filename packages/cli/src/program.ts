/**
 * The inboxctl command tree (commander). Settings flags set the INBOX_* variable of the
 * same meaning before a command runs, so flags and environment are one mechanism; the
 * resource commands come from the operation catalogue (resources.ts).
 */
import { Command } from "commander"
import { inbound, mcp, migrate, SERVE_SETTINGS, serve, STORAGE_SETTINGS } from "./admin.ts"
import { inServer } from "./ambient.ts"
import { verifyWait } from "./domains.ts"
import { backupCommand, moveCommand, restoreCommand } from "./operating.ts"
import { addCatalogueCommands } from "./resources.ts"
import { runCommand } from "./runtime.ts"
import { eventsTail, listOf } from "./tail.ts"

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

export const buildProgram = (): Command => {
  const program = new Command("inboxctl")
    .description("Operate the inbox engine: run the server, administer organizations, manage resources, speak MCP.")
    .version("0.1.0")
    .showHelpAfterError("(add --help for usage)")
    .configureHelp({ showGlobalOptions: true })
    // Usage errors exit 2 (main.ts); this must precede the subcommands, which inherit it.
    .exitOverride()
  for (const setting of STORAGE_SETTINGS) program.option(setting.flag, `${setting.help} [${setting.env}]`)
  program.hook("preAction", (root) => applySettings(root, STORAGE_SETTINGS))

  const serveCommand = program.command("serve").description("Run the HTTP server until interrupted (migrates first).")
  for (const setting of SERVE_SETTINGS) serveCommand.option(setting.flag, `${setting.help} [${setting.env}]`)
  serveCommand.action(() => {
    applySettings(serveCommand, SERVE_SETTINGS)
    runCommand(serve, { terminateIsSuccess: true })
  })

  program.command("migrate")
    .description("Apply pending database migrations, print what happened, and exit.")
    .action(() => runCommand(migrate))

  program.command("inbound")
    .description("Deliver a local .eml file to hosted inboxes, as the mail forwarder does (POST /inbound/raw).")
    .argument("<file>", "an RFC 822 message")
    .requiredOption("--to <addresses>", "recipient addresses, comma-separated")
    .option("--json", "print the delivery result as JSON")
    .action((file: string, opts: { to: string; json?: boolean }) =>
      runCommand(inbound({ file, to: opts.to.split(",").map((a) => a.trim()).filter((a) => a.length > 0), ...(opts.json === true ? { json: true } : {}) }))
    )

  addCatalogueCommands(program, { "domains.verify": verifyWait })

  // Beside the catalogue's `events list`: following a running server's WebSocket.
  const events = program.commands.find((c) => c.name() === "events") ?? program.command("events")
  events.command("tail")
    .description("Follow the events of a running server over its WebSocket, one line each (--json: the whole event as one JSON line); Ctrl-C stops.")
    .option("--api-key <key>", "API key (default: INBOX_API_KEY); needs message_read")
    .option("--url <url>", "the server (default: INBOX_PUBLIC_URL, else http://127.0.0.1:INBOX_PORT)")
    .option("--event-types <types>", "only these event types, comma-separated")
    .option("--inbox-ids <ids>", "only these inboxes, comma-separated")
    .option("--pod-ids <ids>", "only these pods, comma-separated")
    .option("--json", "print each event as one JSON line")
    .action((opts: { apiKey?: string; url?: string; eventTypes?: string; inboxIds?: string; podIds?: string; json?: boolean }) => {
      const eventTypes = listOf(opts.eventTypes)
      const inboxIds = listOf(opts.inboxIds)
      const podIds = listOf(opts.podIds)
      return runCommand(eventsTail({
        ...(opts.apiKey === undefined ? {} : { apiKey: opts.apiKey }),
        ...(opts.url === undefined ? {} : { url: opts.url }),
        ...(eventTypes === undefined ? {} : { eventTypes }),
        ...(inboxIds === undefined ? {} : { inboxIds }),
        ...(podIds === undefined ? {} : { podIds }),
        ...(opts.json === true ? { json: true } : {})
      }))
    })

  program.command("mcp")
    .description("Serve MCP over stdio (newline-delimited JSON-RPC) with the tools of the given key.")
    .option("--api-key <key>", "API key whose permissions the tools run with (default: INBOX_API_KEY)")
    .option("--read-only", "offer only tools that change nothing")
    .action((opts: { apiKey?: string; readOnly?: boolean }) => runCommand(mcp(opts)))

  program.command("backup")
    .description("Write the embedded database and its blobs to one file (consistent; while the server runs, through it).")
    .argument("<file>", "the backup file to write (a tar archive)")
    .action((file: string) => runCommand(backupCommand(file)))
  program.command("restore")
    .description("Restore a backup into an empty data folder (--data-dir / INBOX_DATA_DIR), checking every checksum.")
    .argument("<file>", "a file written by `inboxctl backup`")
    .action((file: string) => runCommand(restoreCommand(file)))
  program.command("move-to-postgres")
    .description("Copy the embedded installation (rows and blobs) to the empty PostgreSQL database of --database-url (blobs to --blob-url when given), then verify counts and checksums.")
    .action(() => runCommand(moveCommand))

  return program
}
