/**
 * The allow and block list operations of the catalogue (spec: Allow and block lists). Each
 * is reachable at the organization's lists, a pod's and an inbox's; the organization's
 * lists only with an organization key and a pod's only with an organization or pod key (a
 * narrower key is 403 missing_permission on those paths: its scope never manages them),
 * while a pod or inbox the key cannot see is 404 (Lists.ts).
 */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { CreateListEntryInput, entryParam, ListEntriesQuery, ListEntry, listPath, Lists } from "./Lists.ts"

const COLUMNS = ["entry", "direction", "list_type", "reason", "pod_id", "inbox_id", "created_at"]

const ORGANIZATION = { scopes: ["organization"] } as const
const POD = { scopes: ["organization", "pod"] } as const

const PATH_NOTE = "direction is send, receive or reply; type is allow or block. Give pod_id or inbox_id for a pod's or an inbox's list; neither is the organization's."

export const createListEntry = operation({
  name: "lists.create",
  summary: `Add an address or a domain to an allow or block list (reason only on block lists). ${PATH_NOTE}`,
  routes: [
    route.post("/v0/lists/:direction/:type", ORGANIZATION),
    route.post("/v0/pods/:pod_id/lists/:direction/:type", POD),
    route.post("/v0/inboxes/:inbox_id/lists/:direction/:type")
  ],
  access: { kind: "member", permission: "list_entry_create" },
  body: CreateListEntryInput,
  output: Output.json(ListEntry),
  mutates: true,
  mcp: { tool: "create_list_entry" },
  cli: { command: "lists create", arguments: ["entry"], aliases: ["lists add"], columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Effect.flatMap(listPath(params), (list) => Lists.use((l) => l.create(principal, list, input)))
})

export const listListEntries = operation({
  name: "lists.list",
  summary: `List the entries of an allow or block list, newest first. ${PATH_NOTE}`,
  routes: [
    route.get("/v0/lists/:direction/:type", ORGANIZATION),
    route.get("/v0/pods/:pod_id/lists/:direction/:type", POD),
    route.get("/v0/inboxes/:inbox_id/lists/:direction/:type")
  ],
  access: { kind: "member", permission: "list_entry_read" },
  query: ListEntriesQuery,
  output: Output.list("entries", ListEntry),
  mutates: false,
  mcp: { tool: "list_list_entries" },
  cli: { command: "lists list", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Effect.flatMap(listPath(params), (list) =>
      Lists.use((l) => Effect.map(l.list(principal, list, input), (page) => listBody("entries", page))))
})

export const getListEntry = operation({
  name: "lists.get",
  summary: `Get one entry of an allow or block list by its address or domain. ${PATH_NOTE}`,
  routes: [
    route.get("/v0/lists/:direction/:type/:entry", ORGANIZATION),
    route.get("/v0/pods/:pod_id/lists/:direction/:type/:entry", POD),
    route.get("/v0/inboxes/:inbox_id/lists/:direction/:type/:entry")
  ],
  access: { kind: "member", permission: "list_entry_read" },
  output: Output.json(ListEntry),
  mutates: false,
  mcp: { tool: "get_list_entry" },
  cli: { command: "lists get", columns: COLUMNS },
  run: ({ principal, params }) =>
    Effect.gen(function*() {
      const list = yield* listPath(params)
      const entry = yield* entryParam(params.entry)
      return yield* Lists.use((l) => l.get(principal, list, entry))
    })
})

export const deleteListEntry = operation({
  name: "lists.delete",
  summary: `Remove an address or a domain from an allow or block list. ${PATH_NOTE}`,
  routes: [
    route.delete("/v0/lists/:direction/:type/:entry", ORGANIZATION),
    route.delete("/v0/pods/:pod_id/lists/:direction/:type/:entry", POD),
    route.delete("/v0/inboxes/:inbox_id/lists/:direction/:type/:entry")
  ],
  access: { kind: "member", permission: "list_entry_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_list_entry" },
  cli: { command: "lists delete" },
  run: ({ principal, params }) =>
    Effect.gen(function*() {
      const list = yield* listPath(params)
      const entry = yield* entryParam(params.entry)
      return yield* Lists.use((l) => l.delete(principal, list, entry))
    })
})

export const listOperations = [createListEntry, listListEntries, getListEntry, deleteListEntry]
