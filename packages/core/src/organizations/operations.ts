/**
 * The caller and its organization, as the agentmail SDK asks for them (`auth.me`,
 * `organizations.get`): features of AgentMail's API the spec does not describe, served
 * through the catalogue like the rest (docs/client-compatibility.md). `auth.me` answers
 * every member, whatever its permission list, since it tells a key only about itself;
 * the organization's counts and limits need an organization-level key.
 */
import { Effect, Schema } from "effect"
import { Billing } from "../billing/Billing.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { iso, Timestamp } from "../shared/time.ts"
import { Organizations } from "./Organizations.ts"

export const Identity = Schema.Struct({
  scope_type: Schema.Literals(["organization", "pod", "inbox"]),
  scope_id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.optionalKey(Schema.String),
  inbox_id: Schema.optionalKey(Schema.String),
  api_key_id: Schema.optionalKey(Schema.String)
})

export const Organization = Schema.Struct({
  organization_id: Schema.String,
  inbox_count: Schema.Number,
  domain_count: Schema.Number,
  inbox_limit: Schema.Number,
  domain_limit: Schema.Number,
  created_at: Timestamp,
  updated_at: Timestamp
})

export const authMe = operation({
  name: "identity.me",
  summary: "Who the caller is: its scope (organization, pod or inbox), the organization, and the key.",
  routes: [route.get("/v0/auth/me")],
  access: { kind: "member", permission: "any" },
  output: Output.json(Identity),
  mutates: false,
  mcp: { tool: "auth_me" },
  cli: { command: "auth me" },
  run: ({ principal }) => {
    const scope = principal.scope
    return Effect.succeed({
      scope_type: scope.type,
      scope_id: scope.type === "inbox" ? scope.inboxId : scope.type === "pod" ? scope.podId : principal.organizationId,
      organization_id: principal.organizationId,
      ...(scope.type === "organization" ? {} : { pod_id: scope.podId }),
      ...(scope.type === "inbox" ? { inbox_id: scope.inboxId } : {}),
      ...(principal.keyId === undefined ? {} : { api_key_id: principal.keyId })
    })
  }
})

export const getOrganization = operation({
  name: "organizations.get",
  summary: "The caller's organization: its inbox and domain counts and the plan's limits on them.",
  routes: [route.get("/v0/organizations")],
  access: { kind: "member", permission: "any", scopes: ["organization"] },
  output: Output.json(Organization),
  mutates: false,
  mcp: { tool: "get_organization" },
  cli: { command: "org info" },
  run: ({ principal }) =>
    Effect.gen(function*() {
      const organization = yield* Organizations.use((o) => o.get(principal.organizationId)).pipe(Effect.orDie)
      const { limits, usage } = yield* Billing.use((b) => b.usage(principal.organizationId))
      return {
        organization_id: organization.id,
        inbox_count: usage.inboxes,
        domain_count: usage.domains,
        inbox_limit: limits.inboxes,
        domain_limit: limits.domains,
        created_at: iso(organization.created_at),
        updated_at: iso(organization.updated_at)
      }
    })
})

export const organizationOperations = [authMe, getOrganization]
