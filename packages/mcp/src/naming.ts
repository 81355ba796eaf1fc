/**
 * The MCP surface takes AgentMail's toolkit convention: every tool advertises camelCase
 * argument names (`inboxId`, `pageToken`, `displayName`, and inside objects such as an
 * attachment's `contentType`), while the operations underneath keep the REST API's
 * snake_case. A call may use either spelling: `toOperationNames` renames what the schema
 * declares back to snake_case before the operation validates it, so an unknown name is
 * still refused by the operation, and maps whose keys are the caller's own (metadata,
 * custom headers) are left alone: only declared properties are renamed.
 */
import type { JsonSchema } from "@inbox/core"
import { type FieldIssue, validationError } from "@inbox/core"

export const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

type Json = { readonly [key: string]: unknown }
const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const SUBSCHEMA_LISTS = ["anyOf", "oneOf", "allOf"] as const

/** The schema with every declared property name, and `required`, in camelCase. */
export const camelSchema = <S extends object>(input: S): S => {
  const schema = input as JsonSchema
  const out: Record<string, unknown> = { ...schema }
  if (isRecord(schema["properties"])) {
    out["properties"] = Object.fromEntries(
      Object.entries(schema["properties"]).map(([name, sub]) => [camel(name), isRecord(sub) ? camelSchema(sub as JsonSchema) : sub])
    )
    if (Array.isArray(schema["required"])) out["required"] = (schema["required"] as ReadonlyArray<string>).map(camel)
  }
  if (isRecord(schema["items"])) out["items"] = camelSchema(schema["items"] as JsonSchema)
  for (const list of SUBSCHEMA_LISTS) {
    if (Array.isArray(schema[list])) out[list] = (schema[list] as ReadonlyArray<JsonSchema>).map(camelSchema)
  }
  if (isRecord(schema["$defs"])) {
    out["$defs"] = Object.fromEntries(Object.entries(schema["$defs"]).map(([n, d]) => [n, camelSchema(d as JsonSchema)]))
  }
  return out as S
}

/** The object properties a schema declares, across its variants, `$ref`s resolved. */
const propertiesOf = (schema: JsonSchema, defs: Json): Record<string, JsonSchema> => {
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) {
    const target = defs[ref.slice("#/$defs/".length)]
    return isRecord(target) ? propertiesOf(target as JsonSchema, defs) : {}
  }
  const own = isRecord(schema["properties"]) ? schema["properties"] as Record<string, JsonSchema> : {}
  const fromVariants = SUBSCHEMA_LISTS.flatMap((list) =>
    Array.isArray(schema[list]) ? (schema[list] as ReadonlyArray<JsonSchema>).map((v) => propertiesOf(v, defs)) : []
  )
  return Object.assign({}, ...fromVariants, own)
}

const itemsOf = (schema: JsonSchema, defs: Json): JsonSchema | undefined => {
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) {
    const target = defs[ref.slice("#/$defs/".length)]
    return isRecord(target) ? itemsOf(target as JsonSchema, defs) : undefined
  }
  if (isRecord(schema["items"])) return schema["items"] as JsonSchema
  for (const list of SUBSCHEMA_LISTS) {
    for (const v of Array.isArray(schema[list]) ? schema[list] as ReadonlyArray<JsonSchema> : []) {
      const items = itemsOf(v, defs)
      if (items !== undefined) return items
    }
  }
  return undefined
}

/**
 * `value` with the names `schema` declares (snake_case) given in either spelling, renamed to
 * snake_case; `renames` adds other names for top-level arguments. The same argument under
 * two spellings is a validation error naming it.
 */
export const toOperationNames = (
  root: object,
  value: Json,
  renames: Readonly<Record<string, string>> = {}
): { readonly args: Json } | { readonly error: ReturnType<typeof validationError> } => {
  const schema = root as JsonSchema
  const defs = isRecord(schema["$defs"]) ? schema["$defs"] as Json : {}
  const issues: Array<FieldIssue> = []
  const walk = (s: JsonSchema, v: unknown, path: ReadonlyArray<string>, extra: Readonly<Record<string, string>>): unknown => {
    if (Array.isArray(v)) {
      const items = itemsOf(s, defs)
      return items === undefined ? v : v.map((item, i) => walk(items, item, [...path, String(i)], {}))
    }
    if (!isRecord(v)) return v
    const properties = propertiesOf(s, defs)
    const byCamel = new Map(Object.keys(properties).map((name) => [camel(name), name]))
    if (byCamel.size === 0) return v
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(v)) {
      const name = Object.hasOwn(properties, key) ? key : extra[key] ?? byCamel.get(key) ?? key
      if (Object.hasOwn(out, name)) {
        issues.push({ path: [...path, name], message: `Given twice (as ${name} and ${key}); give one` })
        continue
      }
      const sub = properties[name]
      out[name] = sub === undefined ? item : walk(sub, item, [...path, name], {})
    }
    return out
  }
  const args = walk(schema, value, [], renames) as Json
  return issues.length > 0 ? { error: validationError(issues) } : { args }
}
