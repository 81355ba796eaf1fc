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
import { inputJsonSchema, type JsonSchema, type ObjectJsonSchema, type Operation, operations, outputJsonSchema } from "@inbox/core"

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
  readonly tool: Tool
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
  return {
    operation: op,
    pathParams: params.map((p) => p.name),
    headerArgs,
    tool: {
      name,
      description: `${op.summary}${permissionNote(op)}`,
      inputSchema: {
        ...input,
        properties: { ...paramProperties, ...headerProperties, ...input.properties },
        ...(required.length > 0 ? { required } : {})
      },
      ...(output === undefined ? {} : { outputSchema: output }),
      annotations: { readOnlyHint: !op.mutates }
    }
  }
}

/** Every tool, in catalogue order. */
export const toolCatalogue: ReadonlyArray<ToolEntry> = operations.flatMap((op) =>
  "tool" in op.mcp ? [toolOf(op, op.mcp.tool)] : []
)

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
