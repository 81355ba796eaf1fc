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
import { inputJsonSchema, type ObjectJsonSchema, type Operation, operations, pathParams } from "@inbox/core"

export type { JsonSchema } from "@inbox/core"

export type ToolInputSchema = ObjectJsonSchema

export interface Tool {
  readonly name: string
  readonly description: string
  readonly inputSchema: ToolInputSchema
  readonly annotations: { readonly readOnlyHint: boolean }
}

export interface ToolEntry {
  readonly tool: Tool
  readonly operation: Operation
  /** Argument names that are path parameters of the operation's routes. */
  readonly pathParams: ReadonlyArray<string>
}

const describeParam = (name: string): string =>
  name.endsWith("_id") ? `Id of the ${name.slice(0, -3).replaceAll("_", " ")}.` : name

const toolOf = (op: Operation, name: string): ToolEntry => {
  const input = inputJsonSchema(op)
  const params = pathParams(op)
  const paramProperties = Object.fromEntries(
    params.map((p) => [p.name, { type: "string", description: describeParam(p.name) }])
  )
  const required = [...params.filter((p) => p.required).map((p) => p.name), ...(input.required ?? [])]
  return {
    operation: op,
    pathParams: params.map((p) => p.name),
    tool: {
      name,
      description: op.summary,
      inputSchema: {
        ...input,
        properties: { ...paramProperties, ...input.properties },
        ...(required.length > 0 ? { required } : {})
      },
      annotations: { readOnlyHint: !op.mutates }
    }
  }
}

/** Every tool, in catalogue order. */
export const toolCatalogue: ReadonlyArray<ToolEntry> = operations.flatMap((op) =>
  op.tool === undefined ? [] : [toolOf(op, op.tool)]
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
): { readonly params: { readonly [name: string]: unknown }; readonly input: { readonly [name: string]: unknown } } => {
  const params: Record<string, unknown> = {}
  const input: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(args)) {
    if (entry.pathParams.includes(key)) params[key] = value
    else input[key] = value
  }
  return { params, input }
}
