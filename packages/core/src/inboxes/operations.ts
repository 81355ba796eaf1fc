/** The inbox operations of the catalogue (spec: Inboxes). */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { CreateInboxInput, Inbox, Inboxes, ListInboxesQuery, UpdateInboxInput } from "./Inboxes.ts"

const COLUMNS = ["inbox_id", "email", "display_name", "status", "pod_id", "created_at"]

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

export const getInbox = operation({
  name: "inboxes.get",
  summary: "Get an inbox by id or email address.",
  routes: [route.get("/v0/inboxes/:inbox_id")],
  access: { kind: "member", permission: "inbox_read" },
  output: Output.json(Inbox),
  mutates: false,
  mcp: { tool: "get_inbox" },
  cli: { command: "inboxes get", aliases: ["inbox get"], columns: COLUMNS },
  run: ({ principal, params }) => Inboxes.use((i) => i.get(principal, params.inbox_id))
})

export const updateInbox = operation({
  name: "inboxes.update",
  summary: "Update an inbox's display_name, status (active or paused) or metadata.",
  routes: [route.patch("/v0/inboxes/:inbox_id")],
  access: { kind: "member", permission: "inbox_update" },
  body: UpdateInboxInput,
  output: Output.json(Inbox),
  mutates: true,
  mcp: { tool: "update_inbox" },
  cli: { command: "inboxes update", aliases: ["inbox update"], columns: COLUMNS },
  run: ({ principal, params, input }) => Inboxes.use((i) => i.update(principal, params.inbox_id, input))
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

export const inboxOperations = [createInbox, listInboxes, getInbox, updateInbox, deleteInbox]
