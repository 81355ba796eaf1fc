/**
 * The tool list of docs/mcp.md, written from the tool catalogue itself (tools.ts): each
 * tool's name, description, arguments as `tools/list` advertises them, the permission it
 * needs and whether it changes data, so the page says exactly what a client is offered.
 * `pnpm docs` writes it between the page's `tools` markers; packages/cli/test/docs.test.ts
 * fails when it is stale.
 */
import type { JsonSchema } from "@inbox/core"
import { TOOLKIT, toolkitNamesOf } from "./toolkit.ts"
import { toolCatalogue, type ToolEntry } from "./tools.ts"

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")

const variants = (schema: JsonSchema): ReadonlyArray<JsonSchema> =>
  Array.isArray(schema["anyOf"]) ? schema["anyOf"] as ReadonlyArray<JsonSchema> : [schema]

/** An argument's type in a few words: `string`, `integer`, `one of a, b`, `array of string`. */
const typeOf = (schema: JsonSchema): string => {
  const kinds = variants(schema).map((v) => {
    if (Array.isArray(v["enum"])) return `one of ${v["enum"].map(String).join(", ")}`
    if (v["const"] !== undefined) return JSON.stringify(v["const"])
    if (v["type"] === "array" && v["items"] !== undefined && typeof v["items"] === "object") {
      return `array of ${typeOf(v["items"] as JsonSchema)}`
    }
    return typeof v["type"] === "string" ? v["type"] : "object"
  })
  return [...new Set(kinds)].join(" or ")
}

const access = ({ operation }: ToolEntry): string =>
  operation.access.kind === "member" ? `\`${operation.access.permission}\`` : operation.access.kind === "public" ? "none" : operation.access.kind

const section = (entry: ToolEntry): ReadonlyArray<string> => {
  const { tool } = entry
  const required = new Set(tool.inputSchema.required ?? [])
  const args = Object.entries(tool.inputSchema.properties)
  return [
    `### ${tool.name}`,
    "",
    tool.description,
    "",
    `Permission: ${access(entry)}. ${tool.annotations.readOnlyHint ? "Read-only." : "Changes data."}`,
    "",
    ...(args.length === 0 ? ["No arguments.", ""] : [
      "| argument | type | required | description |",
      "|---|---|---|---|",
      ...args.map(([name, schema]) =>
        `| \`${name}\` | ${cell(typeOf(schema))} | ${required.has(name) ? "yes" : "no"} | ${cell(typeof schema["description"] === "string" ? schema["description"] : "")} |`
      ),
      ""
    ])
  ]
}

/** The toolkit tool a tool serves: its name, or `-` when the toolkit has none. */
const toolkitCell = (entry: ToolEntry): string => {
  const names = toolkitNamesOf(entry.tool.name)
  if (TOOLKIT.some((t) => t.name === entry.tool.name && t.ours !== entry.tool.name)) return `\`${entry.tool.name}\` (alias)`
  return names.length === 0 ? "-" : names.map((n) => `\`${n}\``).join(", ")
}

/** The generated block of docs/mcp.md: a table of every tool, then each tool's arguments. */
export const toolReference = (entries: ReadonlyArray<ToolEntry> = toolCatalogue): string =>
  [
    `${entries.length} tools, in the catalogue's order, then the names of AgentMail's toolkit served as one of them. ` +
    `The toolkit column names the toolkit tool each serves; ${TOOLKIT.filter((t) => t.outOfScope !== undefined).length} toolkit tools are out of scope: ` +
    TOOLKIT.filter((t) => t.outOfScope !== undefined).map((t) => `\`${t.name}\``).join(", ") +
    ` (${TOOLKIT.find((t) => t.outOfScope !== undefined)?.outOfScope}).`,
    "",
    "| tool | toolkit | permission | changes data |",
    "|---|---|---|---|",
    ...entries.map((e) => `| [\`${e.tool.name}\`](#${e.tool.name}) | ${toolkitCell(e)} | ${access(e)} | ${e.tool.annotations.readOnlyHint ? "no" : "yes"} |`),
    "",
    ...entries.flatMap(section)
  ].join("\n").trimEnd()
