/**
 * The resource commands (`pod`, `inbox`, `key`), derived from core's operation catalogue:
 * each subcommand runs one operation through `runOperation` with the principal of
 * `--api-key`, on the engine itself (no HTTP). Required path parameters become positional
 * arguments, optional ones a flag named after the resource (`--pod`), and every input
 * field a flag named after the field (`display_name` is `--display-name`), typed from the
 * input's JSON Schema: numbers, comma-separated lists, repeatable `key=value` maps, and
 * `--no-<field>` to clear a field that accepts null. Only the presentation is written here.
 */
import { findOperation, inputJsonSchema, type JsonSchema, type Operation, operations, pathParams, runOperation } from "@inbox/core"
import { type Command, InvalidArgumentError, Option } from "commander"
import { Effect } from "effect"
import { fields, json, listing, print } from "./output.ts"
import { apiKeyFrom, authenticate, CLI_CONTEXT, runCommand, withEngine } from "./runtime.ts"

interface Action {
  readonly name: string
  readonly operation: string
  /** Human output of an empty-body success, followed by the ids it acted on. */
  readonly done?: string
}

interface Resource {
  readonly command: string
  readonly description: string
  readonly noun: string
  readonly columns: ReadonlyArray<string>
  readonly actions: ReadonlyArray<Action>
}

export const RESOURCES: ReadonlyArray<Resource> = [
  {
    command: "pod",
    description: "Pods: isolated groups of inboxes",
    noun: "pods",
    columns: ["pod_id", "name", "client_id", "created_at"],
    actions: [
      { name: "create", operation: "pods.create" },
      { name: "list", operation: "pods.list" },
      { name: "get", operation: "pods.get" },
      { name: "delete", operation: "pods.delete", done: "Deleted pod" }
    ]
  },
  {
    command: "inbox",
    description: "Inboxes: email addresses that receive and send mail",
    noun: "inboxes",
    columns: ["inbox_id", "email", "display_name", "status", "pod_id", "created_at"],
    actions: [
      { name: "create", operation: "inboxes.create" },
      { name: "list", operation: "inboxes.list" },
      { name: "get", operation: "inboxes.get" },
      { name: "update", operation: "inboxes.update" },
      { name: "delete", operation: "inboxes.delete", done: "Deleted inbox" }
    ]
  },
  {
    command: "key",
    description: "API keys of the organization",
    noun: "API keys",
    columns: ["api_key_id", "name", "prefix", "scope", "pod_id", "inbox_id", "permissions", "created_at"],
    actions: [
      { name: "create", operation: "apiKeys.create" },
      { name: "list", operation: "apiKeys.list" },
      { name: "revoke", operation: "apiKeys.revoke", done: "Revoked API key" }
    ]
  }
]

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

const addAction = (parent: Command, resource: Resource, action: Action) => {
  const op = findOperation(operations, action.operation)
  if (op === undefined) throw new Error(`inboxctl: no operation ${action.operation} in the catalogue`)
  const params = pathParams(op)
  const positional = params.filter((p) => p.required).map((p) => p.name)
  const optional = params.filter((p) => !p.required).map((p) => ({ name: p.name, option: new Option(`--${flagOf(p.name.replace(/_id$/, ""))} <${p.name}>`, `${p.name.replaceAll("_", " ")} (path parameter)`) }))
  const input = inputFields(op)
  const command = parent.command(action.name).description(op.summary)
  for (const name of positional) command.argument(`<${name}>`)
  for (const p of optional) command.addOption(p.option)
  for (const field of input) {
    command.addOption(field.option)
    if (field.clear !== undefined) command.addOption(field.clear)
  }
  command.option("--api-key <key>", "API key (default: INBOX_API_KEY)").option("--json", "print the operation's JSON")
  command.action((...args: ReadonlyArray<unknown>) => {
    const ids = args.slice(0, positional.length).map(String)
    const opts = command.opts<Record<string, unknown>>()
    const routeParams: Record<string, string> = Object.fromEntries(positional.map((name, i) => [name, ids[i] ?? ""]))
    for (const p of optional) {
      const value = opts[p.option.attributeName()]
      if (typeof value === "string") routeParams[p.name] = value
    }
    const body = Object.fromEntries(
      input.flatMap((f) => {
        const value = opts[f.option.attributeName()]
        return value === undefined ? [] : [[f.name, convert(f.kind, value)]]
      })
    )
    runCommand(Effect.gen(function*() {
      const key = yield* apiKeyFrom(typeof opts["apiKey"] === "string" ? opts["apiKey"] : undefined)
      const result = yield* withEngine(Effect.gen(function*() {
        const principal = yield* authenticate(key)
        return yield* runOperation(op, { principal, params: routeParams, input: body, context: CLI_CONTEXT })
      }))
      if (opts["json"] === true) {
        if (result !== undefined) yield* print(json(result))
      } else if (result === undefined || result === null) {
        yield* print(`${action.done ?? "Done"} ${ids.join(" ")}`.trim() + ".")
      } else if (typeof result === "object" && Object.values(result).some(Array.isArray) && "count" in result) {
        yield* print(listing(result as Record<string, unknown>, resource.columns, resource.noun))
      } else if (typeof result === "object") {
        yield* print(fields(result as Record<string, unknown>))
        if ("api_key" in result) yield* print("\nKeep the api_key now: it is shown only once.")
      } else {
        yield* print(String(result))
      }
    }))
  })
}

export const addResourceCommands = (program: Command) => {
  for (const resource of RESOURCES) {
    const parent = program.command(resource.command).description(resource.description)
    for (const action of resource.actions) addAction(parent, resource, action)
  }
}
