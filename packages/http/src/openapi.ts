/**
 * The OpenAPI 3.1 document of the REST API, derived from core's operation catalogue like
 * the routes themselves: one path item per route, its parameters, its JSON body or query
 * schema, named headers, the success answer from the operation's output Schema, and the
 * error answers. `x-permission` names the permission each operation needs (the spec leaves
 * the route to permission map to us). Served at GET /openapi.json (no key).
 */
import { inputJsonSchema, type JsonSchema, type Operation, operations, outputJsonSchema, WIRE } from "@inbox/core"

const hasBody = (method: string) => method === "POST" || method === "PATCH"

const ErrorBody: JsonSchema = {
  type: "object",
  required: ["name", "code", "message"],
  properties: {
    name: { type: "string", enum: [...new Set(WIRE.map((w) => w.name)), "InternalError"] },
    code: { type: "string", enum: [...new Set(WIRE.map((w) => w.code)), "internal_error"] },
    message: { type: "string" },
    fix: { type: "string" },
    errors: { type: "array", items: { type: "object" } }
  }
}

// Schema documents put shared definitions under `#/$defs/...`; in OpenAPI they live in components.
const definitions: Record<string, JsonSchema> = {}
const relocate = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(relocate)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) =>
    k === "$ref" && typeof v === "string" ? [k, v.replace(/^#\/\$defs\//, "#/components/schemas/")] : [k, relocate(v)]
  ))
}
const collectDefinitions = (defs: Record<string, unknown> | undefined) => {
  for (const [name, schema] of Object.entries(defs ?? {})) definitions[name] = relocate(schema) as JsonSchema
}

const errorStatuses = (op: Operation): ReadonlyArray<string> => {
  const statuses = new Set(["400", "429", "500"])
  if (op.access.kind === "member") ["401", "403", "404"].forEach((s) => statuses.add(s))
  if (op.access.kind === "operator") ["401", "503"].forEach((s) => statuses.add(s))
  if (op.params.length > 0) statuses.add("404")
  return [...statuses].sort()
}

const success = (op: Operation) => {
  switch (op.output.kind) {
    case "empty":
      return op.output.status === 200 ? { "200": { description: "Done; empty body." } } : { "204": { description: "Done; no body." } }
    case "download":
      return { "200": { description: "The bytes.", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } } }
    default: {
      const output = outputJsonSchema(op)
      collectDefinitions(output?.definitions)
      // A 202 (work started, or a mail on its way) is documented as 202, so typed clients read its body.
      const status = "status" in op.output && op.output.status !== undefined ? String(op.output.status) : "200"
      return { [status]: { description: status === "202" ? "Accepted." : "Success.", content: { "application/json": { schema: relocate(output?.schema ?? {}) } } } }
    }
  }
}

const operationObject = (op: Operation, method: string, path: string) => {
  const input = inputJsonSchema(op)
  collectDefinitions(input.$defs as Record<string, unknown> | undefined)
  const { $defs: _, ...inputSchema } = input
  const params = op.params.filter((p) => path.includes(`:${p.name}`))
  const query = hasBody(method) && op.raw === undefined
    ? []
    : Object.entries(input.properties).map(([name, schema]) => ({
      name,
      in: "query",
      required: input.required?.includes(name) ?? false,
      schema: relocate(schema)
    }))
  const headers = Object.keys(op.headers?.fields ?? {}).map((name) => ({ name, in: "header", required: false, schema: { type: "string" } }))
  const requestBody = op.raw !== undefined
    ? { requestBody: { required: true, content: { "message/rfc822": { schema: { type: "string", format: "binary" } } } } }
    : hasBody(method)
    ? { requestBody: { required: false, content: { "application/json": { schema: relocate(inputSchema) } } } }
    : {}
  const errors = Object.fromEntries(errorStatuses(op).map((status) => [status, { $ref: "#/components/responses/Error" }]))
  return {
    operationId: op.routes.length > 1 ? `${op.name}.${op.routes.findIndex((r) => r.path === path)}` : op.name,
    summary: op.summary,
    ...(op.access.kind === "member" ? { "x-permission": op.access.permission } : {}),
    parameters: [
      ...params.map((p) => ({ name: p.name, in: "path", required: true, schema: { type: "string" } })),
      ...query,
      ...headers
    ],
    ...requestBody,
    responses: { ...success(op), ...errors },
    security: op.access.kind === "member" ? [{ bearer: [] }] : []
  }
}

const paths: Record<string, Record<string, unknown>> = {}
for (const op of operations) {
  for (const route of op.routes) {
    const key = route.path.replace(/:([a-z_]+)/g, "{$1}")
    paths[key] = { ...paths[key], [route.method.toLowerCase()]: operationObject(op, route.method, route.path) }
  }
}

export const openApiDocument = {
  openapi: "3.1.0",
  info: { title: "inbox-engine", version: "0.1.0", description: "Email inboxes for applications and AI agents." },
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key, am_..." } },
    schemas: { Error: ErrorBody, ...definitions },
    responses: {
      Error: { description: "An error body.", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }
    }
  },
  paths
}
