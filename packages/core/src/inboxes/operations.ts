/** The inbox operations of the catalogue (spec: Inboxes). */
import { Effect } from "effect"
import { notFound, type Principal } from "../access/Principal.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { CreateInboxInput, Inbox, Inboxes, ListInboxesQuery, SearchInboxesQuery, UpdateInboxInput } from "./Inboxes.ts"

const COLUMNS = ["inbox_id", "email", "display_name", "status", "pod_id", "created_at"]

/** Under `/v0/pods/:pod_id`, the inbox must be one of that pod's (else 404, as deletion checks). */
const inPod = (principal: Principal, params: { readonly inbox_id: string; readonly pod_id?: string | undefined }) =>
  params.pod_id === undefined
    ? Effect.void
    : Inboxes.use((i) =>
      Effect.flatMap(i.find(principal, params.inbox_id), (row) =>
        row.pod_id === params.pod_id ? Effect.void : Effect.fail(notFound("Inbox", params.inbox_id))))

export const createInbox = operation({
  name: "inboxes.create",
  summary: "Create an inbox with its own email address. username is random when omitted.",
  routes: [route.post("/v0/inboxes"), route.post("/v0/pods/:pod_id/inboxes")],
  access: { kind: "member", permission: "inbox_create", scopes: ["organization", "pod"] },
  body: CreateInboxInput,
  output: Output.json(Inbox),
  mutates: true,
  mcp: { tool: "create_inbox" },
  cli: { command: "inboxes create", aliases: ["inbox create"], columns: COLUMNS },
  run: ({ principal, input, params }) => Inboxes.use((i) => i.create(principal, input, params.pod_id))
})

export const listInboxes = operation({
  name: "inboxes.list",
  summary: "List inboxes, newest first.",
  routes: [route.get("/v0/inboxes"), route.get("/v0/pods/:pod_id/inboxes")],
  access: { kind: "member", permission: "inbox_read" },
  query: ListInboxesQuery,
  output: Output.list("inboxes", Inbox),
  mutates: false,
  mcp: { tool: "list_inboxes" },
  cli: { command: "inboxes list", aliases: ["inbox list"], columns: COLUMNS },
  run: ({ principal, input, params }) =>
    Inboxes.use((i) => Effect.map(i.list(principal, input, params.pod_id), (page) => listBody("inboxes", page)))
})

export const searchInboxes = operation({
  name: "inboxes.search",
  summary: "Find inboxes, newest first, whose address, display name, id or client_id contains every word of q (case-insensitive).",
  routes: [route.get("/v0/inboxes/search"), route.get("/v0/pods/:pod_id/inboxes/search")],
  access: { kind: "member", permission: "inbox_read" },
  query: SearchInboxesQuery,
  output: Output.list("inboxes", Inbox),
  mutates: false,
  mcp: { tool: "search_inboxes" },
  cli: { command: "inboxes search", columns: COLUMNS },
  run: ({ principal, input, params }) =>
    Inboxes.use((i) => Effect.map(i.search(principal, input, params.pod_id), (page) => listBody("inboxes", page)))
})

export const getInbox = operation({
  name: "inboxes.get",
  summary: "Get an inbox by id or email address.",
  routes: [route.get("/v0/inboxes/:inbox_id"), route.get("/v0/pods/:pod_id/inboxes/:inbox_id")],
  access: { kind: "member", permission: "inbox_read" },
  output: Output.json(Inbox),
  mutates: false,
  mcp: { tool: "get_inbox" },
  cli: { command: "inboxes get", aliases: ["inbox get"], columns: COLUMNS },
  run: ({ principal, params }) =>
    Inboxes.use((i) => params.pod_id === undefined ? i.get(principal, params.inbox_id) : Effect.andThen(inPod(principal, params), i.get(principal, params.inbox_id)))
})

export const updateInbox = operation({
  name: "inboxes.update",
  summary: "Update an inbox's display_name, status (active or paused) or metadata.",
  routes: [route.patch("/v0/inboxes/:inbox_id"), route.patch("/v0/pods/:pod_id/inboxes/:inbox_id")],
  access: { kind: "member", permission: "inbox_update" },
  body: UpdateInboxInput,
  output: Output.json(Inbox),
  mutates: true,
  mcp: { tool: "update_inbox" },
  cli: { command: "inboxes update", aliases: ["inbox update"], columns: COLUMNS },
  run: ({ principal, params, input }) => Inboxes.use((i) => Effect.andThen(inPod(principal, params), i.update(principal, params.inbox_id, input)))
})

export const deleteInbox = operation({
  name: "inboxes.delete",
  summary: "Delete an inbox and all its data.",
  routes: [route.delete("/v0/inboxes/:inbox_id"), route.delete("/v0/pods/:pod_id/inboxes/:inbox_id")],
  access: { kind: "member", permission: "inbox_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_inbox" },
  cli: { command: "inboxes delete", aliases: ["inbox delete"] },
  run: ({ principal, params }) => Inboxes.use((i) => i.delete(principal, params.inbox_id, params.pod_id))
})

export const inboxOperations = [createInbox, listInboxes, searchInboxes, getInbox, updateInbox, deleteInbox]
