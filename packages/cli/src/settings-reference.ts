/**
 * The settings page (docs/settings.md), written from core's settings registry: each
 * setting's variable, flag, default and meaning, under its group. `pnpm docs` writes it; a
 * test (packages/cli/test/docs.test.ts) fails when the page is stale.
 */
import { type Setting, SETTINGS } from "@inbox/core"

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")

/** The flag without its value placeholder: `--port <port>` is `--port`. */
const flagName = (flag: string) => flag.split(" ")[0] ?? flag

/** A few words under a group's heading, where the table alone would leave a question. */
const GROUP_NOTES: Readonly<Record<string, string>> = {
  "Storage": "Flags of every command that opens storage, not only `serve`; where the bytes go is in [Storage](operating.md#storage).",
  "Mail servers": "Protocol servers beside HTTP, each off until its address is set ([Mail servers](mail-servers.md)).",
  "Retention": "What each purge deletes, and when: [Retention](operating.md#retention). A days setting of 0 keeps that kind forever.",
  "Billing providers": "Each provider is on only when all of its settings are set ([Billing](billing.md)).",
  "inboxctl": "Read by the command-line client itself, a global option of every command."
}

/** A default value reads as code; one worked out (`generated`, `system`) as words. */
const defaultCell = (s: Setting) =>
  s.default !== undefined ? `\`${s.default}\`` : s.shownDefault !== undefined ? cell(s.shownDefault) : "unset"

const row = (s: Setting) => `| \`${s.env}\` | \`${flagName(s.flag)}\` | ${defaultCell(s)} | ${cell(s.meaning ?? s.help)} |`

export const settingsReference = (settings: ReadonlyArray<Setting> = SETTINGS): string => {
  const groups = [...new Set(settings.map((s) => s.group))]
  return [
    "# Settings",
    "",
    "Generated from the settings registry (`packages/core/src/settings/registry.ts`) by `pnpm docs`;",
    "`packages/cli/test/docs.test.ts` fails when this page is stale.",
    "",
    "Every setting is an environment variable and also a flag of `inboxctl serve` (the storage",
    "settings and the API key are flags of every command). Migrations run at start (and with",
    "`inboxctl migrate`); `GET /health` answers `{\"status\":\"ok\"}` once they have.",
    "",
    ...groups.flatMap((group) => [
      `## ${group}`,
      "",
      ...(GROUP_NOTES[group] === undefined ? [] : [GROUP_NOTES[group], ""]),
      "| variable | flag | default | meaning |",
      "|---|---|---|---|",
      ...settings.filter((s) => s.group === group).map(row),
      ""
    ])
  ].join("\n")
}
