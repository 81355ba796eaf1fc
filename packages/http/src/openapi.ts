/**
 * The OpenAPI 3.1 document of the REST API, derived from core's operation catalogue like
 * the routes themselves: one path item per route, its parameters, its JSON body or query
 * schema, and the success and error answers. Served at GET /openapi.json (no key).
 */
import { inputJsonSchema, type Operation, operations, pathParams, WIRE } from "@inbox/core"

const hasBody = (method: string) => method === "POST" || method === "PATCH"

const ErrorBody = {
  type: "object",
  required: ["name", "code", "message"],
  properties: {
    name: { type: "string" },
    code: { type: "string", enum: Object.keys(WIRE) },
    message: { type: "string" },
    fix: { type: "string" },
    errors: { type: "array", items: { type: "object" } }
  }
}

const operationObject = (op: Operation, method: string, path: string) => {
  const input = inputJsonSchema(op)
  const params = pathParams(op).filter((p) => path.includes(`:${p.name}`))
  const query = hasBody(method)
    ? []
    : Object.entries(input.properties).map(([name, schema]) => ({
      name,
      in: "query",
      required: input.required?.includes(name) ?? false,
      schema
    }))
  return {
    operationId: op.routes.length > 1 ? `${op.name}.${op.routes.findIndex((r) => r.path === path)}` : op.name,
    summary: op.summary,
    parameters: [
      ...params.map((p) => ({ name: p.name, in: "path", required: true, schema: { type: "string" } })),
      ...query
    ],
    ...(hasBody(method) ? { requestBody: { required: false, content: { "application/json": { schema: input } } } } : {}),
    responses: {
      ...(op.status === 204
        ? { "204": { description: "Done; no body." } }
        : { "200": { description: "Success.", content: { "application/json": { schema: { type: "object" } } } } }),
      default: { description: "An error.", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }
    },
    ...(op.auth === "key" ? { security: [{ bearer: [] }] } : { security: [] })
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
    schemas: { Error: ErrorBody }
  },
  paths
}
