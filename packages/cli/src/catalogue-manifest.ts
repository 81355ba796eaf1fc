/**
 * Writes the CLI's manifest (manifest.ts) from core's catalogue and settings registry: run
 * at build time and by `pnpm --filter @inbox/cli generate`, never by inboxctl itself (it
 * imports all of core).
 */
import { defaultText, inputJsonSchema, type JsonSchema, type Operation, operations, type Setting, SETTINGS } from "@inbox/core"
import type { FieldKind, ManifestCommand, ManifestField, ManifestSetting } from "./manifest.ts"

const variants = (schema: JsonSchema): ReadonlyArray<JsonSchema> =>
  Array.isArray(schema["anyOf"]) ? schema["anyOf"] as ReadonlyArray<JsonSchema> : [schema]

const kindOf = (schema: JsonSchema): FieldKind => {
  const types = variants(schema).map((v) => v["type"])
  return types.includes("array")
    ? "list"
    : types.includes("object")
    ? "map"
    : types.includes("boolean")
    ? "boolean"
    : types.includes("integer") || types.includes("number")
    ? "number"
    : "string"
}

const fieldsOf = (op: Operation): ReadonlyArray<ManifestField> => {
  const schema = inputJsonSchema(op)
  return Object.entries(schema.properties).map(([name, property]) => {
    const choices = variants(property).flatMap((v) => Array.isArray(v["enum"]) ? v["enum"].map(String) : [])
    return {
      name,
      kind: kindOf(property),
      required: schema.required?.includes(name) ?? false,
      nullable: variants(property).some((v) => v["type"] === "null"),
      ...(choices.length > 0 ? { choices } : {})
    }
  })
}

export const makeManifest = (ops: ReadonlyArray<Operation> = operations): ReadonlyArray<ManifestCommand> =>
  ops.flatMap((op) =>
    "command" in op.cli
      ? [{
        operation: op.name,
        command: op.cli.command,
        aliases: op.cli.aliases ?? [],
        summary: op.summary,
        access: op.access.kind,
        output: op.output.kind,
        params: op.params.map((p) => ({ name: p.name, required: p.required })),
        headers: Object.keys(op.headers?.fields ?? {}),
        fields: fieldsOf(op),
        arguments: op.cli.arguments ?? []
      }]
      : []
  )

/** Each setting as its flag, the default in its help. */
export const makeSettings = (settings: ReadonlyArray<Setting> = SETTINGS): ReadonlyArray<ManifestSetting> =>
  settings.map((s) => {
    const shown = defaultText(s)
    return { env: s.env, flag: s.flag, scope: s.scope, help: shown === undefined ? s.help : `${s.help} (default ${shown})` }
  })

/** The defaults the CLI needs before it loads core (where a server's socket is; the Node flags serve restarts with). */
const CLIENT_DEFAULTS = ["INBOX_DATA_DIR", "INBOX_NODE_FLAGS"] as const

/** The text of manifest.generated.ts. */
export const manifestSource = (
  manifest: ReadonlyArray<ManifestCommand> = makeManifest(),
  settings: ReadonlyArray<Setting> = SETTINGS
): string =>
  [
    "// Generated from core's catalogue and settings by packages/cli/generate.ts: do not edit (a test checks it is fresh).",
    "import type { ManifestCommand, ManifestSetting } from \"./manifest.ts\"",
    "",
    // One command a line: a catalogue change reads as the lines of the commands it changed.
    `export const MANIFEST: ReadonlyArray<ManifestCommand> = [\n${manifest.map((m) => `  ${JSON.stringify(m)}`).join(",\n")}\n]`,
    "",
    `export const SETTING_FLAGS: ReadonlyArray<ManifestSetting> = [\n${makeSettings(settings).map((s) => `  ${JSON.stringify(s)}`).join(",\n")}\n]`,
    "",
    `export const SETTING_DEFAULTS = ${
      JSON.stringify(Object.fromEntries(CLIENT_DEFAULTS.map((env) => [env, String(settings.find((s) => s.env === env)?.default ?? "")])))
    } as const`,
    ""
  ].join("\n")
