/**
 * The MCP tool catalogue, derived from core's operation catalogue: every operation with a
 * `tool` name is a tool whose description is the operation's summary and whose input schema
 * is the JSON Schema of the operation's input (core's inputJsonSchema) plus its path
 * parameters. Nothing here is written per tool, so a new operation becomes a tool by
 * naming it in core.
 *
 * A tool call's arguments are one flat object; `splitArguments` hands the path-parameter
 * names to the operation as route parameters and the rest as its input, exactly as a REST
 * request would carry them in the path and the body or query.
 */
import { inputJsonSchema, type JsonSchema, type ObjectJsonSchema, type Operation, operations, outputJsonSchema, type validationError } from "@inbox/core"
import { camelSchema, toOperationNames } from "./naming.ts"
import { ALIASES, renamesOf } from "./toolkit.ts"

export type { JsonSchema }

export type ToolInputSchema = ObjectJsonSchema

export interface Tool {
  readonly name: string
  readonly description: string
  readonly inputSchema: ToolInputSchema
  readonly outputSchema?: JsonSchema
  readonly annotations: { readonly readOnlyHint: boolean }
}

export interface ToolEntry {
  /** As tools/list advertises it: camelCase argument names (naming.ts). */
  readonly tool: Tool
  /** The arguments as the operation names them (snake_case), which calls are renamed to. */
  readonly operationSchema: ToolInputSchema
  readonly operation: Operation
  /** Argument names that are path parameters of the operation's routes. */
  readonly pathParams: ReadonlyArray<string>
  /** Argument names (snake_case) that travel as request headers on REST, to header name. */
  readonly headerArgs: Readonly<Record<string, string>>
}

const describeParam = (name: string): string =>
  name.endsWith("_id") ? `Id of the ${name.slice(0, -3).replaceAll("_", " ")}.` : name

const permissionNote = (op: Operation): string =>
  op.access.kind === "member" ? ` Needs the ${op.access.permission} permission.` : ""

// structuredContent is an object; an output schema that is not one is left out.
const objectOutput = (op: Operation): JsonSchema | undefined => {
  const output = outputJsonSchema(op)
  if (output === undefined || output.schema["type"] !== "object") return undefined
  return Object.keys(output.definitions).length > 0 ? { ...output.schema, $defs: output.definitions } : output.schema
}

const toolOf = (op: Operation, name: string): ToolEntry => {
  const input = inputJsonSchema(op)
  const params = op.params
  const paramProperties = Object.fromEntries(
    params.map((p) => [p.name, { type: "string", description: describeParam(p.name) }])
  )
  const headerArgs = Object.fromEntries(Object.keys(op.headers?.fields ?? {}).map((h) => [h.replaceAll("-", "_"), h]))
  const headerProperties = Object.fromEntries(Object.keys(headerArgs).map((a) => [a, { type: "string", description: `Sent as the ${headerArgs[a]} header on REST.` }]))
  const required = [...params.filter((p) => p.required).map((p) => p.name), ...(input.required ?? [])]
  const output = objectOutput(op)
  const operationSchema: ToolInputSchema = {
    ...input,
    properties: { ...paramProperties, ...headerProperties, ...input.properties },
    ...(required.length > 0 ? { required } : {})
  }
  return {
    operation: op,
    operationSchema,
    pathParams: params.map((p) => p.name),
    headerArgs,
    tool: {
      name,
      description: `${op.summary}${permissionNote(op)}`,
      inputSchema: camelSchema(operationSchema),
      ...(output === undefined ? {} : { outputSchema: output }),
      annotations: { readOnlyHint: !op.mutates }
    }
  }
}

/** Every tool of the catalogue, before the toolkit's merges. */
const catalogueTools: ReadonlyArray<ToolEntry> = operations.flatMap((op) =>
  "tool" in op.mcp ? [toolOf(op, op.mcp.tool)] : []
)

const byName = (name: string) => {
  const found = catalogueTools.find((t) => t.tool.name === name)
  if (found === undefined) throw new Error(`mcp: no tool ${name}`)
  return found
}

/**
 * Tools that take a second form under one name, as AgentMail's toolkit has it: the form is
 * chosen by an argument (`thread_id` without `message_id` for an attachment by thread;
 * `reply_all: true` for a reply to everyone). The advertised schema offers both.
 */
interface Merge {
  readonly tool: string
  readonly other: string
  /** Whether a call (snake_case arguments) is the other form; the arguments it then takes. */
  readonly pick: (args: Record<string, unknown>) => Record<string, unknown> | undefined
  /** The merged schema's extra properties and its required names. */
  readonly extra: Readonly<Record<string, JsonSchema>>
  readonly required: ReadonlyArray<string>
}

const MERGES: ReadonlyArray<Merge> = [
  {
    tool: "get_attachment",
    other: "get_thread_attachment",
    pick: (args) => (args["thread_id"] !== undefined && args["message_id"] === undefined ? args : undefined),
    extra: { thread_id: { type: "string", description: "Id of the thread: the attachment of any of its messages (give message_id or thread_id)." } },
    required: ["attachment_id"]
  },
  {
    tool: "reply_to_message",
    other: "reply_all_to_message",
    pick: (args) => {
      if (args["reply_all"] !== true) return undefined
      const { reply_all: _, ...rest } = args
      return rest
    },
    extra: { reply_all: { type: "boolean", description: "Reply to everyone on the message (as reply_all_to_message)." } },
    required: ["inbox_id", "message_id"]
  }
]

const merged = (entry: ToolEntry): ToolEntry => {
  const merge = MERGES.find((m) => m.tool === entry.tool.name)
  if (merge === undefined) return entry
  const other = byName(merge.other)
  const operationSchema: ToolInputSchema = {
    ...entry.operationSchema,
    properties: { ...other.operationSchema.properties, ...entry.operationSchema.properties, ...merge.extra },
    required: [...merge.required]
  }
  return { ...entry, operationSchema, tool: { ...entry.tool, inputSchema: camelSchema(operationSchema) } }
}

/** The toolkit's names served as another of our tools (agent_verify as verify_human). */
const aliasOf = (alias: string, ours: ToolEntry): ToolEntry => ({
  ...ours,
  tool: { ...ours.tool, name: alias, description: `AgentMail's toolkit name for ${ours.tool.name}. ${ours.tool.description}` }
})

/** Every tool, in catalogue order, then the toolkit's alias names. */
export const toolCatalogue: ReadonlyArray<ToolEntry> = [
  ...catalogueTools.map(merged),
  ...Object.entries(ALIASES).map(([alias, ours]) => aliasOf(alias, merged(byName(ours))))
]

/**
 * The entry a call runs and its arguments as the operation names them: camelCase and the
 * toolkit's other names renamed (naming.ts), and a merged tool's second form chosen.
 */
export const resolveCall = (
  entry: ToolEntry,
  args: { readonly [key: string]: unknown }
): { readonly entry: ToolEntry; readonly args: { readonly [key: string]: unknown } } | { readonly error: ReturnType<typeof validationError> } => {
  const named = toOperationNames(entry.operationSchema, args, renamesOf(entry.tool.name))
  if ("error" in named) return named
  const merge = MERGES.find((m) => m.tool === entry.tool.name || ALIASES[entry.tool.name] === m.tool)
  const picked = merge?.pick({ ...named.args })
  if (merge !== undefined && picked !== undefined) return { entry: byName(merge.other), args: picked }
  return { entry, args: named.args }
}

/** The tools a session may see: read-only sessions see only operations that change nothing. */
export const visibleTools = (readOnly: boolean): ReadonlyArray<ToolEntry> =>
  readOnly ? toolCatalogue.filter((t) => !t.operation.mutates) : toolCatalogue

export const listTools = (readOnly: boolean): ReadonlyArray<Tool> => visibleTools(readOnly).map((t) => t.tool)

/** A tool by name, or undefined when it does not exist or is hidden from this session. */
export const findTool = (name: string, readOnly: boolean): ToolEntry | undefined =>
  visibleTools(readOnly).find((t) => t.tool.name === name)

/** Splits flat tool arguments into route parameters and operation input. */
export const splitArguments = (
  entry: ToolEntry,
  args: { readonly [key: string]: unknown }
): {
  readonly params: { readonly [name: string]: unknown }
  readonly headers: { readonly [name: string]: unknown }
  readonly input: { readonly [name: string]: unknown }
} => {
  const params: Record<string, unknown> = {}
  const headers: Record<string, unknown> = {}
  const input: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(args)) {
    const header = Object.hasOwn(entry.headerArgs, key) ? entry.headerArgs[key] : undefined
    if (entry.pathParams.includes(key)) params[key] = value
    else if (header !== undefined) headers[header] = value
    else input[key] = value
  }
  return { params, headers, input }
}
