/**
 * The CLI reference (docs/cli.md), written from the command tree itself: every command that
 * help shows, its arguments, options and description, so the page says exactly what inboxctl
 * accepts. generate.ts writes it; a test fails when the page is stale.
 */
import type { Command } from "commander"
import { CONTAINER_FLAGS, GROUPS } from "./resources.ts"
import type { ManifestCommand } from "./manifest.ts"

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")

const visible = (command: Command): ReadonlyArray<Command> =>
  command.commands.filter((c) => !(c as unknown as { _hidden: boolean })._hidden && c.name() !== "help")

const path = (command: Command): string => {
  const names: Array<string> = []
  for (let c: Command | null = command; c !== null && c.parent !== null; c = c.parent) names.unshift(c.name())
  return names.join(" ")
}

const section = (command: Command): ReadonlyArray<string> => {
  const help = command.createHelp()
  const args = help.visibleArguments(command)
  const options = help.visibleOptions(command).filter((o) => o.long !== "--help")
  return [
    `### inboxctl ${path(command)}`,
    "",
    command.description(),
    "",
    "```",
    `inboxctl ${path(command)} ${command.usage()}`,
    "```",
    ...(args.length === 0 && options.length === 0 ? [] : ["", "| argument or option | meaning |", "|---|---|"]),
    ...args.map((a) => `| \`${help.argumentTerm(a)}\` | ${cell(help.argumentDescription(a) || "(required)")} |`),
    ...options.map((o) => `| \`${cell(help.optionTerm(o))}\` | ${cell(`${help.optionDescription(o)}${o.mandatory ? " (required)" : ""}`)} |`),
    ""
  ]
}

const leaves = (command: Command): ReadonlyArray<Command> =>
  visible(command).flatMap((c) => visible(c).length === 0 ? [c] : leaves(c))

export const cliReference = (program: Command, manifest: ReadonlyArray<ManifestCommand>): string => {
  const formers = manifest.flatMap((m) => m.aliases.map((alias) => `\`${alias}\` → \`${m.command}\``))
  return [
    "# inboxctl reference",
    "",
    "Generated from the operation catalogue and the command tree by `pnpm docs`",
    "(packages/cli/generate.ts); `packages/cli/test/docs.test.ts` fails when this page is stale.",
    "",
    "## How commands are named",
    "",
    "- A resource's commands are a group named by the resource's plural, as in the API's paths:",
    `  ${Object.keys(GROUPS).filter((g) => g !== "org" && g !== "outbox").map((g) => `\`${g}\``).join(", ")}.`,
    "  The operator's own commands (no API key; the machine's operator) are `org` (organizations),",
    "  `outbox`, `inbound`, `suppressions add`, and the server's: `serve`, `migrate`, `ready`, `backup`,",
    "  `restore`, `move-to-postgres`, `mcp`.",
    "- The action follows: `create`, `list`, `get`, `update`, `delete`, or the operation's own verb",
    "  (`messages send`, `messages reply`, `domains verify`, `api-keys revoke`).",
    "- The resource's own identity is positional: its id (`pods get <pod_id>`, `messages get <message_id>`),",
    "  the parts that name it (`lists get <direction> <type> <entry>`), and what it is created as",
    "  (`domains create <domain>`, `lists create ... <entry>`, `suppressions add <address>`).",
    `- Its containers are flags with one name each, required or optional as the API has them: ${Object.values(CONTAINER_FLAGS).map((f) => `\`--${f}\``).join(", ")}`,
    "  (`messages list --inbox <inbox_id>`, `threads list [--inbox <inbox_id> | --pod <pod_id>]`,",
    "  `suppressions add <address> --org <organization_id>`).",
    "- Every other input is a flag named after the API's field (`display_name` is `--display-name`):",
    "  lists comma-separated, maps as repeatable `--flag key=value`, `--no-<field>` clears a field that",
    "  accepts null.",
    "- Global options are accepted before or after the command.",
    "",
    "A command asks the running server first: with the embedded database, through the socket",
    "`inboxctl.sock` in the data folder; with PostgreSQL, through a socket named after the database",
    "URL in the user's own runtime folder. Only when no server answers does it open the storage",
    "itself. `--help` and usage errors load no part of the engine (start times: BENCHMARKS.md,",
    "\"inboxctl start\").",
    "",
    "## Global options",
    "",
    "| option | meaning |",
    "|---|---|",
    ...program.options.filter((o) => o.long !== "--version").map((o) => `| \`${cell(o.flags)}\` | ${cell(o.description)} |`),
    "",
    "Output is an aligned table by default and the API's JSON with `--json`. Exit codes: 0 success,",
    "1 the command failed (`error: <code>: <message>` on stderr, then `fix: ...`), 2 usage error,",
    "130 interrupted (`serve` stopped by SIGTERM exits 0 after its orderly shutdown; by SIGINT, 130).",
    "",
    "## Commands",
    "",
    ...leaves(program).flatMap(section),
    "## Former spellings",
    "",
    "Still accepted for one release, hidden from help: " + formers.join(", ") + "; and the flags",
    "`--pod-id`, `--inbox-id`, `--organization-id` of input fields, now `--pod`, `--inbox`, `--org`.",
    "`messages list INBOX` (the inbox positional) is not: it is `messages list --inbox INBOX`.",
    ""
  ].join("\n")
}
