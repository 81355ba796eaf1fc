/**
 * JSON Schemas of an operation's input and output, for every description derived from the
 * catalogue (MCP tool schemas, the OpenAPI document, CLI flags). Core's decoder refuses
 * unknown fields, so an input schema says `additionalProperties: false`.
 */
import { Schema } from "effect"
import type { Operation } from "./Operation.ts"

export type JsonSchema = { readonly [key: string]: unknown }

export interface ObjectJsonSchema {
  readonly type: "object"
  readonly properties: { readonly [name: string]: JsonSchema }
  readonly required?: ReadonlyArray<string>
  readonly additionalProperties: false
  readonly $defs?: { readonly [name: string]: JsonSchema }
}

const isRecord = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const cache = new WeakMap<Operation, ObjectJsonSchema>()

/** The input fields alone (no path parameters); an input with no fields is an empty object. */
export const inputJsonSchema = (op: Operation): ObjectJsonSchema => {
  const cached = cache.get(op)
  if (cached !== undefined) return cached
  const document = Schema.toJsonSchemaDocument(op.input, { onExcessProperty: "error" })
  const schema = document.schema
  const properties = isRecord(schema) && isRecord(schema["properties"]) ? schema["properties"] : {}
  const required = isRecord(schema) && Array.isArray(schema["required"])
    ? schema["required"].filter((r): r is string => typeof r === "string")
    : []
  const result: ObjectJsonSchema = {
    type: "object",
    properties: properties as ObjectJsonSchema["properties"],
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
    ...(Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {})
  }
  cache.set(op, result)
  return result
}

const outputCache = new WeakMap<Operation, { readonly schema: JsonSchema; readonly definitions: Record<string, JsonSchema> } | undefined>()

/** The JSON Schema of a JSON or list output (with its definitions), or undefined for empty and download outputs. */
export const outputJsonSchema = (op: Operation) => {
  if (outputCache.has(op)) return outputCache.get(op)
  const output = op.output
  const result = output.kind === "json" || output.kind === "list"
    ? (() => {
      const document = Schema.toJsonSchemaDocument(output.schema)
      return { schema: document.schema as JsonSchema, definitions: document.definitions as Record<string, JsonSchema> }
    })()
    : undefined
  outputCache.set(op, result)
  return result
}
