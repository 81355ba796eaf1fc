/** The API key operations of the catalogue (spec: API keys). */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { ApiKey, ApiKeys, CreateApiKeyInput, CreatedApiKey, ListApiKeysQuery } from "./ApiKeys.ts"

const COLUMNS = ["api_key_id", "name", "prefix", "scope", "pod_id", "inbox_id", "permissions", "created_at"]

export const createApiKey = operation({
  name: "apiKeys.create",
  summary: "Create an API key, optionally scoped to a pod or inbox and limited to named permissions. The secret is shown once.",
  routes: [route.post("/v0/api-keys")],
  access: { kind: "member", permission: "api_key_create" },
  body: CreateApiKeyInput,
  output: Output.json(CreatedApiKey),
  mutates: true,
  mcp: { exclude: "a key's secret does not belong in a model's context; create keys with REST, the CLI or the dashboard" },
  cli: { command: "api-keys create", aliases: ["key create"], columns: [...COLUMNS, "api_key"] },
  run: ({ principal, input }) => ApiKeys.use((k) => k.create(principal, input))
})

export const listApiKeys = operation({
  name: "apiKeys.list",
  summary: "List API keys (without secrets), newest first.",
  routes: [route.get("/v0/api-keys")],
  access: { kind: "member", permission: "api_key_read" },
  query: ListApiKeysQuery,
  output: Output.list("api_keys", ApiKey),
  mutates: false,
  mcp: { exclude: "key management stays with people: REST, the CLI or the dashboard" },
  cli: { command: "api-keys list", aliases: ["key list"], columns: COLUMNS },
  run: ({ principal, input }) => ApiKeys.use((k) => Effect.map(k.list(principal, input), (page) => listBody("api_keys", page)))
})

export const revokeApiKey = operation({
  name: "apiKeys.revoke",
  summary: "Revoke an API key immediately.",
  routes: [route.delete("/v0/api-keys/:api_key_id")],
  access: { kind: "member", permission: "api_key_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { exclude: "key management stays with people: REST, the CLI or the dashboard" },
  cli: { command: "api-keys revoke", aliases: ["key revoke"] },
  run: ({ principal, params }) => ApiKeys.use((k) => k.revoke(principal, params.api_key_id))
})

export const apiKeyOperations = [createApiKey, listApiKeys, revokeApiKey]
