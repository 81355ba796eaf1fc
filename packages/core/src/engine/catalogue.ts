/**
 * The catalogue: every operation of the engine, collected from the domains. Adapters derive
 * their REST routes, OpenAPI document, MCP tools and CLI commands from this list.
 *
 * Loading it checks what no single domain can: operation names, routes (method and path,
 * with parameters compared by position), MCP tool names and CLI commands are unique. A
 * clash is a startup defect.
 */
import { agentOperations } from "../agent/operations.ts"
import { apiKeyOperations } from "../apikeys/operations.ts"
import { authOperations } from "../auth/operations.ts"
import { operatorOperations } from "../operating/operations.ts"
import { inboundOperations } from "../inbound/operations.ts"
import { blobOperations } from "../blobs/operations.ts"
import { inboxOperations } from "../inboxes/operations.ts"
import { organizationOperations } from "../organizations/operations.ts"
import { messageOperations } from "../messages/operations.ts"
import { sendingOperations } from "../sending/operations.ts"
import { threadOperations } from "../threads/operations.ts"
import { listOperations } from "../lists/operations.ts"
import { planOperations } from "../plans/operations.ts"
import { podOperations } from "../pods/operations.ts"
import { suppressionOperations } from "../suppressions/operations.ts"
import { eventOperations } from "../events/operations.ts"
import { webhookOperations } from "../webhooks/operations.ts"
import { draftOperations } from "../drafts/operations.ts"
import { mailboxOperations } from "../mailboxes/operations.ts"
import { searchOperations } from "../search/operations.ts"
import { domainOperations } from "../domains/operations.ts"
import { metricsOperations } from "../metrics/operations.ts"
import { billingOperations } from "../billing/operations.ts"
import type { Effect } from "effect"
import type { Operation } from "../catalogue/Operation.ts"

const unique = (what: string, values: ReadonlyArray<string>) => {
  const seen = new Set<string>()
  for (const v of values) {
    if (seen.has(v)) throw new Error(`catalogue: ${what} ${v} is declared twice`)
    seen.add(v)
  }
}

export const collect = <S>(operations: ReadonlyArray<Operation<S>>): ReadonlyArray<Operation<S>> => {
  unique("operation", operations.map((op) => op.name))
  unique("route", operations.flatMap((op) => op.routes.map((r) => `${r.method} ${r.path.replace(/:[a-z_]+/g, ":")}`)))
  unique("MCP tool", operations.flatMap((op) => "tool" in op.mcp ? [op.mcp.tool] : []))
  unique("CLI command", operations.flatMap((op) => "command" in op.cli ? [op.cli.command, ...(op.cli.aliases ?? [])] : []))
  return operations
}

const all = [
  ...agentOperations,
  ...podOperations,
  ...inboxOperations,
  ...organizationOperations,
  ...apiKeyOperations,
  ...planOperations,
  ...sendingOperations,
  ...messageOperations,
  ...threadOperations,
  ...inboundOperations,
  ...blobOperations,
  ...listOperations,
  ...suppressionOperations,
  ...eventOperations,
  ...webhookOperations,
  ...draftOperations,
  ...mailboxOperations,
  ...searchOperations,
  ...domainOperations,
  ...metricsOperations,
  ...billingOperations,
  ...authOperations,
  ...operatorOperations
]

/** Every operation of the catalogue, with its own types. */
export type CatalogueOperation = (typeof all)[number]

/** What the catalogue's operations use, together: the services an engine must provide. */
export type CatalogueServices = ServicesOf<CatalogueOperation>

type ServicesOf<O> = O extends { readonly run: (call: never) => Effect.Effect<unknown, unknown, infer R> } ? R : never

/** An operation of this catalogue, its types erased but for the services it may use. */
export type CatalogueEntry = Operation<CatalogueServices>

export const operations: ReadonlyArray<CatalogueEntry> = collect<CatalogueServices>(all)

export const findOperation = (name: string): Operation<CatalogueServices> | undefined => operations.find((op) => op.name === name)
