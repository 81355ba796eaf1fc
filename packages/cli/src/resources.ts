/**
 * The commands of catalogue operations, derived from core's catalogue: every operation with
 * a `cli` face becomes `inboxctl <group> <action>` (its `cli.command`), running the
 * operation through the engine (`Engine.run`) with the principal of `--api-key`, on the engine itself
 * (no HTTP). Required path parameters become positional arguments, optional ones a flag
 * named after the resource (`--pod`), named headers and every input field a flag named
 * after it (`display_name` is `--display-name`), typed from the input's JSON Schema:
 * numbers, comma-separated lists, repeatable `key=value` maps, and `--no-<field>` to clear a
 * field that accepts null. The output kind says how to print: a table for lists, aligned
 * fields for one resource, a line for an empty success. Only the presentation is here.
 */
import { writeOut } from "./ambient.ts"
import { type ApiError, type Credential, type Download, Engine, inputJsonSchema, type JsonSchema, type Operation, operations } from "@inbox/core"
import { type Command, InvalidArgumentError, Option } from "commander"
import { Effect, Stream } from "effect"
import { fields, isSeries, json, listing, print, seriesLines } from "./output.ts"
import { apiKeyFrom, authenticate, CLI_CONTEXT, type CliError, runCommand, withEngine } from "./runtime.ts"

/** Descriptions of the command groups (presentation only; the commands come from the catalogue). */
export const GROUPS: Readonly<Record<string, string>> = {
  org: "Organizations (operator): create one with its first key, issue a recovery key, assign a plan",
  outbox: "The local outbox (operator): mail kept when INBOX_SMTP_URL is unset, as verification codes in development",
  pod: "Pods: isolated groups of inboxes",
  inbox: "Inboxes: email addresses that receive and send mail",
  key: "API keys of the organization",
  agent: "Agent accounts: attach and verify the human owner",
  lists: "Allow and block lists of the organization, a pod (--pod) or an inbox (--inbox)",
  suppressions: "Suppressed addresses: sends to them are refused",
  events: "Events: what happened, newest first (of one inbox with --inbox)",
  webhooks: "Webhooks: signed deliveries of events to your URLs (a pod's with --pod, an inbox's with --inbox)",
  domains: "Custom domains: add, publish the DNS records (zone-file), verify"
}

type Kind = "string" | "number" | "boolean" | "list" | "map"

interface Field {
  readonly name: string
  readonly kind: Kind
  readonly option: Option
  /** `--no-<field>`, for a field that accepts null: clears it. */
  readonly clear?: Option
}

const variants = (schema: JsonSchema): ReadonlyArray<JsonSchema> =>
  Array.isArray(schema["anyOf"]) ? schema["anyOf"] as ReadonlyArray<JsonSchema> : [schema]

const kindOf = (schema: JsonSchema): Kind => {
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

const flagOf = (field: string) => field.replaceAll("_", "-")

const collectPair = (value: string, previous: Record<string, string> | undefined): Record<string, string> => {
  const at = value.indexOf("=")
  if (at <= 0) throw new InvalidArgumentError("Expected key=value.")
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) }
}

const inputFields = (op: Operation): ReadonlyArray<Field> => {
  const schema = inputJsonSchema(op)
  return Object.entries(schema.properties).map(([name, property]) => {
    const kind = kindOf(property)
    const label = name.replaceAll("_", " ")
    const option = kind === "boolean"
      ? new Option(`--${flagOf(name)}`, label)
      : kind === "map"
      ? new Option(`--${flagOf(name)} <key=value>`, `${label} entry (repeatable)`).argParser(collectPair)
      : kind === "list"
      ? new Option(`--${flagOf(name)} <a,b,...>`, `${label} (comma-separated)`)
      : new Option(`--${flagOf(name)} <${kind === "number" ? "n" : "value"}>`, label)
    const choices = variants(property).flatMap((v) => Array.isArray(v["enum"]) ? v["enum"].map(String) : [])
    if (choices.length > 0) option.choices(choices)
    if (schema.required?.includes(name)) option.makeOptionMandatory()
    const nullable = variants(property).some((v) => v["type"] === "null")
    return nullable ? { name, kind, option, clear: new Option(`--no-${flagOf(name)}`, `clear ${label}`) } : { name, kind, option }
  })
}

const convert = (kind: Kind, value: unknown): unknown => {
  if (value === false) return null // --no-<field>
  if (typeof value !== "string") return value
  switch (kind) {
    case "number":
      return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value
    case "list":
      return value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
    default:
      return value
  }
}

/**
 * Extra options of one catalogue command and what runs after its operation answered, with
 * the same key (`domains verify --wait`, program.ts). The operation itself stays the one
 * place of its rules.
 */
export interface CommandExtension {
  readonly options: ReadonlyArray<Option>
  readonly after: (context: {
    readonly params: Readonly<Record<string, string>>
    readonly opts: Readonly<Record<string, unknown>>
    readonly key: string | undefined
  }) => Effect.Effect<void, ApiError | CliError>
}

const addAction = (parent: Command, action: string, op: Operation, extension?: CommandExtension) => {
  const face = op.cli
  if (!("command" in face)) return
  const positional = op.params.filter((p) => p.required).map((p) => p.name)
  const optional = op.params.filter((p) => !p.required).map((p) => ({
    name: p.name,
    option: new Option(`--${flagOf(p.name.replace(/_id$/, ""))} <${p.name}>`, `${p.name.replaceAll("_", " ")} (path parameter)`)
  }))
  const headers = Object.keys(op.headers?.fields ?? {}).map((name) => ({ name, option: new Option(`--${name} <value>`, `${name} header`) }))
  const input = inputFields(op)
  const command = parent.command(action).description(op.summary)
  for (const name of positional) command.argument(`<${name}>`)
  for (const p of [...optional, ...headers]) command.addOption(p.option)
  for (const field of input) {
    command.addOption(field.option)
    if (field.clear !== undefined) command.addOption(field.clear)
  }
  if (op.access.kind === "member") command.option("--api-key <key>", "API key (default: INBOX_API_KEY)")
  command.option("--json", "print the operation's JSON")
  for (const option of extension?.options ?? []) command.addOption(option)
  command.action((...args: ReadonlyArray<unknown>) => {
    const ids = args.slice(0, positional.length).map(String)
    const opts = command.opts<Record<string, unknown>>()
    const routeParams: Record<string, string> = Object.fromEntries(positional.map((name, i) => [name, ids[i] ?? ""]))
    for (const p of optional) {
      const value = opts[p.option.attributeName()]
      if (typeof value === "string") routeParams[p.name] = value
    }
    const headerValues: Record<string, string> = {}
    for (const h of headers) {
      const value = opts[h.option.attributeName()]
      if (typeof value === "string") headerValues[h.name] = value
    }
    const body = Object.fromEntries(
      input.flatMap((f) => {
        const value = opts[f.option.attributeName()]
        return value === undefined ? [] : [[f.name, convert(f.kind, value)]]
      })
    )
    runCommand(Effect.gen(function*() {
      const key = op.access.kind === "member" ? yield* apiKeyFrom(typeof opts["apiKey"] === "string" ? opts["apiKey"] : undefined) : undefined
      const result = yield* withEngine(Effect.gen(function*() {
        // The operator's own operations run as the operator on this machine; the rest with the key.
        const credential: Credential = op.access.kind === "local" || op.access.kind === "operator"
          ? { kind: "local" }
          : key === undefined
          ? { kind: "anonymous" }
          : { kind: "principal", principal: yield* authenticate(key) }
        const result = yield* (yield* Engine).run(op, { credential, params: routeParams, input: body, headers: headerValues, context: CLI_CONTEXT })
        // A download streams from its store (the database, for PostgreSQL), so its bytes
        // are written while the engine and its connections are still open.
        if (op.output.kind === "download") yield* writeBytes(result as Download)
        return result
      }))
      if (op.output.kind !== "download") yield* show(op, result, opts["json"] === true, ids)
      if (extension !== undefined) yield* extension.after({ params: routeParams, opts, key })
    }))
  })
}

const show = (op: Operation, result: unknown, asJson: boolean, ids: ReadonlyArray<string>) => {
  const face = op.cli
  const columns = "command" in face ? face.columns : undefined
  if (asJson) {
    if (result === undefined) return Effect.void
    const picked = "command" in face && face.jsonFields !== undefined
      ? Object.fromEntries(face.jsonFields.map((f) => [f, (result as Record<string, unknown>)[f]]))
      : result
    return print(json(picked))
  }
  switch (op.output.kind) {
    case "empty":
      return print(`Done: ${face && "command" in face ? face.command : op.name}${ids.length > 0 ? ` ${ids.join(" ")}` : ""}.`)
    case "list":
      return print(listing(result as Record<string, unknown>, columns ?? [], op.output.plural.replaceAll("_", " ")))
    default: {
      // Metrics series (usage, rates) read best as sparklines; --json keeps the points.
      if (isSeries(result)) return print(seriesLines(result))
      const value = result as Record<string, unknown>
      return Effect.andThen(
        print(fields(value)),
        "api_key" in value ? print("\nKeep the api_key now: it is shown only once.") : Effect.void
      )
    }
  }
}

/** A download's bytes go to stdout as they stream (redirect them to a file). */
const writeBytes = (download: Download) =>
  Stream.runForEach(download.body, (chunk) =>
    Effect.callback<void>((resume) => {
      writeOut(chunk, () => resume(Effect.void))
    }))

/** Adds every catalogue operation that has a CLI face, grouped by its first word. */
export const addCatalogueCommands = (program: Command, extensions: Readonly<Record<string, CommandExtension>> = {}) => {
  const groups = new Map<string, Command>()
  for (const op of operations) {
    if (!("command" in op.cli)) continue
    const [group = "", ...rest] = op.cli.command.split(" ")
    if (rest.length === 0) {
      addAction(program, group, op, extensions[op.name])
      continue
    }
    let parent = groups.get(group)
    if (parent === undefined) {
      parent = program.command(group).description(GROUPS[group] ?? group)
      groups.set(group, parent)
    }
    addAction(parent, rest.join(" "), op, extensions[op.name])
  }
}
