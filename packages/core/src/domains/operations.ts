/** The custom-domain operations of the catalogue (spec: Domains). */
import { Effect, Stream } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { CreateDomainInput, Domain, Domains, DomainSummary, ListDomainsQuery, UpdateDomainInput } from "./Domains.ts"

const COLUMNS = ["domain_id", "status", "reason", "feedback_enabled", "subdomains_enabled", "tracking_enabled", "created_at"]

export const createDomain = operation({
  name: "domains.create",
  summary: "Add a custom domain. The answer lists the DNS records to publish; then call verify.",
  routes: [route.post("/v0/domains"), route.post("/v0/pods/:pod_id/domains")],
  access: { kind: "member", permission: "domain_create", scopes: ["organization", "pod"] },
  body: CreateDomainInput,
  output: Output.json(Domain),
  mutates: true,
  mcp: { tool: "create_domain" },
  cli: { command: "domains create", arguments: ["domain"], aliases: ["domains add"], columns: COLUMNS },
  run: ({ principal, input, params }) => Domains.use((d) => d.create(principal, input, params.pod_id))
})

export const listDomains = operation({
  name: "domains.list",
  summary: "List custom domains, newest first (summaries without status and records).",
  routes: [route.get("/v0/domains"), route.get("/v0/pods/:pod_id/domains")],
  access: { kind: "member", permission: "domain_read" },
  query: ListDomainsQuery,
  output: Output.list("domains", DomainSummary),
  mutates: false,
  mcp: { tool: "list_domains" },
  cli: { command: "domains list", columns: ["domain_id", "feedback_enabled", "subdomains_enabled", "tracking_enabled", "created_at"] },
  run: ({ principal, input, params }) =>
    Domains.use((d) => Effect.map(d.list(principal, input, params.pod_id), (page) => listBody("domains", page)))
})

export const getDomain = operation({
  name: "domains.get",
  summary: "Get a custom domain by id (its name) with its status and the status of each DNS record.",
  routes: [route.get("/v0/domains/:domain_id"), route.get("/v0/pods/:pod_id/domains/:domain_id")],
  access: { kind: "member", permission: "domain_read" },
  output: Output.json(Domain),
  mutates: false,
  mcp: { tool: "get_domain" },
  cli: { command: "domains get", columns: COLUMNS },
  run: ({ principal, params }) => Domains.use((d) => d.get(principal, params.domain_id, params.pod_id))
})

export const updateDomain = operation({
  name: "domains.update",
  summary: "Update a domain's feedback_enabled, subdomains_enabled or tracking_enabled.",
  routes: [route.patch("/v0/domains/:domain_id"), route.patch("/v0/pods/:pod_id/domains/:domain_id")],
  access: { kind: "member", permission: "domain_update" },
  body: UpdateDomainInput,
  output: Output.json(Domain),
  mutates: true,
  mcp: { tool: "update_domain" },
  cli: { command: "domains update", columns: COLUMNS },
  run: ({ principal, params, input }) => Domains.use((d) => d.update(principal, params.domain_id, input, params.pod_id))
})

export const deleteDomain = operation({
  name: "domains.delete",
  summary: "Delete a custom domain.",
  routes: [route.delete("/v0/domains/:domain_id"), route.delete("/v0/pods/:pod_id/domains/:domain_id")],
  access: { kind: "member", permission: "domain_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_domain" },
  cli: { command: "domains delete" },
  run: ({ principal, params }) => Domains.use((d) => d.delete(principal, params.domain_id, params.pod_id))
})

export const verifyDomain = operation({
  name: "domains.verify",
  summary: "Check the domain's DNS records now. Empty answer: get the domain for its new status.",
  routes: [route.post("/v0/domains/:domain_id/verify"), route.post("/v0/pods/:pod_id/domains/:domain_id/verify")],
  access: { kind: "member", permission: "domain_update" },
  output: Output.empty200,
  mutates: true,
  mcp: { tool: "verify_domain" },
  cli: { command: "domains verify" },
  run: ({ principal, params }) => Domains.use((d) => d.verify(principal, params.domain_id, params.pod_id))
})

export const domainZoneFile = operation({
  name: "domains.zone_file",
  summary: "The domain's DNS records as a zone file, one line per record, to import at a DNS host.",
  routes: [route.get("/v0/domains/:domain_id/zone-file"), route.get("/v0/pods/:pod_id/domains/:domain_id/zone-file")],
  access: { kind: "member", permission: "domain_read" },
  output: Output.download,
  mutates: false,
  mcp: { exclude: "a zone file is for DNS hosts; get_domain gives the same records as JSON" },
  cli: { command: "domains zone-file" },
  run: ({ principal, params }) =>
    Domains.use((d) =>
      Effect.map(d.zoneFile(principal, params.domain_id, params.pod_id), (text) => {
        const bytes = new TextEncoder().encode(text)
        return {
          contentType: "text/plain; charset=utf-8",
          size: bytes.length,
          headers: { "content-disposition": `attachment; filename="${params.domain_id.replace(/[^a-z0-9.-]/gi, "_")}.zone"` },
          body: Stream.make(bytes)
        }
      })
    )
})

export const domainOperations = [createDomain, listDomains, getDomain, updateDomain, deleteDomain, verifyDomain, domainZoneFile]
