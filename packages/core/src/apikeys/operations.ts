/**
 * The API key operations of the catalogue (spec: API keys). Besides the spec's routes, each
 * also answers under `/v0/pods/:pod_id` and `/v0/inboxes/:inbox_id` (the keys of that pod or
 * inbox; creation there scopes the new key to it), and a key can be read and renamed or given
 * other permissions (`GET`/`PATCH /v0/api-keys/:api_key_id`): the agentmail SDK's methods
 * (docs/client-compatibility.md).
 */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { ApiKey, ApiKeys, CreateApiKeyInput, CreatedApiKey, CreateScopedApiKeyInput, ListApiKeysQuery, UpdateApiKeyInput } from "./ApiKeys.ts"

const COLUMNS = ["api_key_id", "name", "prefix", "scope", "pod_id", "inbox_id", "permissions", "created_at"]

const SECRET_ONCE = "a key's secret does not belong in a model's context; create keys with REST, the CLI or the dashboard"
const NO_SECRETS = "key management stays with people: REST, the CLI or the dashboard"

const place = (params: { readonly pod_id?: string | undefined; readonly inbox_id?: string | undefined }) => ({
  podId: params.pod_id,
  inboxId: params.inbox_id
})

export const createApiKey = operation({
  name: "apiKeys.create",
  summary: "Create an API key, optionally scoped to a pod or inbox and limited to named permissions. The secret is shown once.",
  routes: [route.post("/v0/api-keys")],
  access: { kind: "member", permission: "api_key_create" },
  body: CreateApiKeyInput,
  output: Output.json(CreatedApiKey),
  mutates: true,
  mcp: { exclude: SECRET_ONCE },
  cli: { command: "api-keys create", aliases: ["key create"], columns: [...COLUMNS, "api_key"] },
  run: ({ principal, input }) => ApiKeys.use((k) => k.create(principal, input))
})

export const createScopedApiKey = operation({
  name: "apiKeys.createIn",
  summary: "Create an API key scoped to the pod or inbox of the path, optionally limited to named permissions. The secret is shown once.",
  routes: [route.post("/v0/pods/:pod_id/api-keys"), route.post("/v0/inboxes/:inbox_id/api-keys")],
  access: { kind: "member", permission: "api_key_create" },
  body: CreateScopedApiKeyInput,
  output: Output.json(CreatedApiKey),
  mutates: true,
  mcp: { exclude: SECRET_ONCE },
  cli: { command: "api-keys create-in", columns: [...COLUMNS, "api_key"] },
  run: ({ principal, params, input }) => ApiKeys.use((k) => k.create(principal, input, place(params)))
})

export const listApiKeys = operation({
  name: "apiKeys.list",
  summary: "List API keys (without secrets), newest first: every key the caller sees, or a pod's or an inbox's.",
  routes: [route.get("/v0/api-keys"), route.get("/v0/pods/:pod_id/api-keys"), route.get("/v0/inboxes/:inbox_id/api-keys")],
  access: { kind: "member", permission: "api_key_read" },
  query: ListApiKeysQuery,
  output: Output.list("api_keys", ApiKey),
  mutates: false,
  mcp: { exclude: NO_SECRETS },
  cli: { command: "api-keys list", aliases: ["key list"], columns: COLUMNS },
  run: ({ principal, params, input }) =>
    ApiKeys.use((k) => Effect.map(k.list(principal, input, place(params)), (page) => listBody("api_keys", page)))
})

export const getApiKey = operation({
  name: "apiKeys.get",
  summary: "Get an API key (without its secret).",
  routes: [route.get("/v0/api-keys/:api_key_id")],
  access: { kind: "member", permission: "api_key_read" },
  output: Output.json(ApiKey),
  mutates: false,
  mcp: { exclude: NO_SECRETS },
  cli: { command: "api-keys get", columns: COLUMNS },
  run: ({ principal, params }) => ApiKeys.use((k) => k.get(principal, params.api_key_id))
})

export const updateApiKey = operation({
  name: "apiKeys.update",
  summary: "Rename an API key or give it other permissions (within the caller's own); it takes effect on the key's next request.",
  routes: [
    route.patch("/v0/api-keys/:api_key_id"),
    route.patch("/v0/pods/:pod_id/api-keys/:api_key_id"),
    route.patch("/v0/inboxes/:inbox_id/api-keys/:api_key_id")
  ],
  access: { kind: "member", permission: "api_key_update" },
  body: UpdateApiKeyInput,
  output: Output.json(ApiKey),
  mutates: true,
  mcp: { exclude: NO_SECRETS },
  cli: { command: "api-keys update", columns: COLUMNS },
  run: ({ principal, params, input }) => ApiKeys.use((k) => k.update(principal, params.api_key_id, input, place(params)))
})

export const revokeApiKey = operation({
  name: "apiKeys.revoke",
  summary: "Revoke an API key immediately.",
  routes: [
    route.delete("/v0/api-keys/:api_key_id"),
    route.delete("/v0/pods/:pod_id/api-keys/:api_key_id"),
    route.delete("/v0/inboxes/:inbox_id/api-keys/:api_key_id")
  ],
  access: { kind: "member", permission: "api_key_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { exclude: NO_SECRETS },
  cli: { command: "api-keys revoke", aliases: ["key revoke"] },
  run: ({ principal, params }) => ApiKeys.use((k) => k.revoke(principal, params.api_key_id, place(params)))
})

export const apiKeyOperations = [createApiKey, createScopedApiKey, listApiKeys, getApiKey, updateApiKey, revokeApiKey]
