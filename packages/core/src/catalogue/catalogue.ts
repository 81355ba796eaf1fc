/**
 * The operations of the engine, in one list. Adapters derive their routes and tools from
 * this array; see Operation.ts for the shape.
 */
import { Effect, Schema } from "effect"
import { AttachHumanInput, Agents, SignUpInput, VerifyInput } from "../agent/Agents.ts"
import { ApiKeys, CreateApiKeyInput, ListApiKeysQuery } from "../apikeys/ApiKeys.ts"
import { CreateInboxInput, Inboxes, ListInboxesQuery, UpdateInboxInput } from "../inboxes/Inboxes.ts"
import { CreatePodInput, ListQuery, Pods } from "../pods/Pods.ts"
import { PLAN_IDS, PLANS } from "../plans/plans.ts"
import { listBody } from "../shared/pagination.ts"
import { type Call, operation, type Operation } from "./Operation.ts"
import type { Principal } from "../access/Principal.ts"

const Empty = Schema.Struct({})

/** runOperation refuses `auth: "key"` operations without a principal; this narrows the type once. */
const principalOf = (call: Call<unknown>): Principal => {
  if (call.principal === undefined) throw new Error(`operation called without a principal`)
  return call.principal
}
const param = (call: Call<unknown>, name: string): string => call.params[name] ?? ""

export const operations: ReadonlyArray<Operation> = [
  // Agent onboarding
  operation({
    name: "agent.signUp",
    summary: "Create an organization, an inbox and an API key for an agent; a human receives a verification code.",
    auth: "none",
    routes: [{ method: "POST", path: "/v0/agent/sign-up" }],
    input: SignUpInput,
    mutates: true,
    run: (call) => Agents.use((a) => a.signUp(call.input, call.context.clientIp))
  }),
  operation({
    name: "agent.attachHuman",
    summary: "Attach (or replace) the human owner of an agent account and email them a 6-digit code.",
    auth: "key",
    routes: [{ method: "POST", path: "/v0/agent/attach-human" }],
    input: AttachHumanInput,
    mutates: true,
    run: (call) => Agents.use((a) => a.attachHuman(principalOf(call), call.input))
  }),
  operation({
    name: "agent.verify",
    summary: "Submit the human's 6-digit code to verify the agent account and unlock sending.",
    auth: "key",
    routes: [{ method: "POST", path: "/v0/agent/verify" }],
    input: VerifyInput,
    mutates: true,
    run: (call) => Agents.use((a) => a.verify(principalOf(call), call.input))
  }),

  // Pods
  operation({
    name: "pods.create",
    summary: "Create a pod (an isolated group of inboxes).",
    auth: "key",
    routes: [{ method: "POST", path: "/v0/pods" }],
    input: CreatePodInput,
    mutates: true,
    tool: "create_pod",
    run: (call) => Pods.use((p) => p.create(principalOf(call), call.input))
  }),
  operation({
    name: "pods.list",
    summary: "List pods, newest first.",
    auth: "key",
    routes: [{ method: "GET", path: "/v0/pods" }],
    input: ListQuery,
    mutates: false,
    tool: "list_pods",
    run: (call) => Pods.use((p) => Effect.map(p.list(principalOf(call), call.input), (page) => listBody("pods", page)))
  }),
  operation({
    name: "pods.get",
    summary: "Get a pod.",
    auth: "key",
    routes: [{ method: "GET", path: "/v0/pods/:pod_id" }],
    input: Empty,
    mutates: false,
    tool: "get_pod",
    run: (call) => Pods.use((p) => p.get(principalOf(call), param(call, "pod_id")))
  }),
  operation({
    name: "pods.delete",
    summary: "Delete an empty pod. The default pod cannot be deleted.",
    auth: "key",
    routes: [{ method: "DELETE", path: "/v0/pods/:pod_id" }],
    input: Empty,
    mutates: true,
    status: 204,
    tool: "delete_pod",
    run: (call) => Pods.use((p) => p.delete(principalOf(call), param(call, "pod_id")))
  }),

  // Inboxes
  operation({
    name: "inboxes.create",
    summary: "Create an inbox with its own email address. username is random when omitted.",
    auth: "key",
    routes: [{ method: "POST", path: "/v0/inboxes" }, { method: "POST", path: "/v0/pods/:pod_id/inboxes" }],
    input: CreateInboxInput,
    mutates: true,
    tool: "create_inbox",
    run: (call) => Inboxes.use((i) => i.create(principalOf(call), call.input, call.params["pod_id"]))
  }),
  operation({
    name: "inboxes.list",
    summary: "List inboxes, newest first.",
    auth: "key",
    routes: [{ method: "GET", path: "/v0/inboxes" }, { method: "GET", path: "/v0/pods/:pod_id/inboxes" }],
    input: ListInboxesQuery,
    mutates: false,
    tool: "list_inboxes",
    run: (call) =>
      Inboxes.use((i) =>
        Effect.map(i.list(principalOf(call), call.input, call.params["pod_id"]), (page) => listBody("inboxes", page)))
  }),
  operation({
    name: "inboxes.get",
    summary: "Get an inbox by id or email address.",
    auth: "key",
    routes: [{ method: "GET", path: "/v0/inboxes/:inbox_id" }],
    input: Empty,
    mutates: false,
    tool: "get_inbox",
    run: (call) => Inboxes.use((i) => i.get(principalOf(call), param(call, "inbox_id")))
  }),
  operation({
    name: "inboxes.update",
    summary: "Update an inbox's display_name, status (active or paused) or metadata.",
    auth: "key",
    routes: [{ method: "PATCH", path: "/v0/inboxes/:inbox_id" }],
    input: UpdateInboxInput,
    mutates: true,
    tool: "update_inbox",
    run: (call) => Inboxes.use((i) => i.update(principalOf(call), param(call, "inbox_id"), call.input))
  }),
  operation({
    name: "inboxes.delete",
    summary: "Delete an inbox and all its data.",
    auth: "key",
    routes: [{ method: "DELETE", path: "/v0/inboxes/:inbox_id" }, { method: "DELETE", path: "/v0/pods/:pod_id/inboxes/:inbox_id" }],
    input: Empty,
    mutates: true,
    status: 204,
    tool: "delete_inbox",
    run: (call) =>
      Inboxes.use((i) => i.delete(principalOf(call), param(call, "inbox_id"), call.params["pod_id"]))
  }),

  // API keys
  operation({
    name: "apiKeys.create",
    summary: "Create an API key, optionally scoped to a pod or inbox and limited to named permissions. The secret is shown once.",
    auth: "key",
    routes: [{ method: "POST", path: "/v0/api-keys" }],
    input: CreateApiKeyInput,
    mutates: true,
    run: (call) => ApiKeys.use((k) => k.create(principalOf(call), call.input))
  }),
  operation({
    name: "apiKeys.list",
    summary: "List API keys (without secrets), newest first.",
    auth: "key",
    routes: [{ method: "GET", path: "/v0/api-keys" }],
    input: ListApiKeysQuery,
    mutates: false,
    run: (call) =>
      ApiKeys.use((k) => Effect.map(k.list(principalOf(call), call.input), (page) => listBody("api_keys", page)))
  }),
  operation({
    name: "apiKeys.revoke",
    summary: "Revoke an API key immediately.",
    auth: "key",
    routes: [{ method: "DELETE", path: "/v0/api-keys/:api_key_id" }],
    input: Empty,
    mutates: true,
    status: 204,
    run: (call) => ApiKeys.use((k) => k.revoke(principalOf(call), param(call, "api_key_id")))
  }),

  // Plans
  operation({
    name: "plans.list",
    summary: "The public plan list.",
    auth: "none",
    routes: [{ method: "GET", path: "/public/plans" }],
    input: Empty,
    mutates: false,
    run: () => Effect.succeed({ plans: PLAN_IDS.map((id) => PLANS[id]) })
  })
]
