/**
 * The draft operations of the catalogue (spec: Drafts): create, list and get (organization
 * and inbox level), an attachment by id (organization, pod and inbox level), update, delete,
 * and send now. Scheduling is `send_at` on create or update.
 */
import { Effect, Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { SendAnswer } from "../sending/Idempotency.ts"
import { SEND_BODY_LIMIT } from "../sending/operations.ts"
import { listBody } from "../shared/pagination.ts"
import { CreateDraftInput, Draft, DraftAttachmentInfo, Drafts, ListDraftsQuery, UpdateDraftInput } from "./Drafts.ts"

const BASE = "/v0/inboxes/:inbox_id/drafts"
const COLUMNS = ["draft_id", "inbox_id", "subject", "send_status", "send_at", "updated_at"]

export const createDraft = operation({
  name: "drafts.create",
  summary: "Create a draft with any send field (to, cc, bcc, subject, text, html, attachments, track_opens), send_at to schedule it, and reply_to_message_id (with reply_all) to make it a reply.",
  routes: [route.post(BASE)],
  access: { kind: "member", permission: "draft_create" },
  body: CreateDraftInput,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(Draft),
  mutates: true,
  mcp: { tool: "create_draft" },
  cli: { command: "drafts create", columns: COLUMNS },
  run: ({ principal, params, input }) => Drafts.use((d) => d.create(principal, params.inbox_id, input))
})

export const listDrafts = operation({
  name: "drafts.list",
  summary: "List drafts, newest first, in the organization, one pod or one inbox; each has its inbox_id.",
  routes: [route.get("/v0/drafts"), route.get("/v0/pods/:pod_id/drafts"), route.get(BASE)],
  access: { kind: "member", permission: "draft_read" },
  query: ListDraftsQuery,
  output: Output.list("drafts", Draft),
  mutates: false,
  mcp: { tool: "list_drafts" },
  cli: { command: "drafts list", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Drafts.use((d) => Effect.map(d.list(principal, params.inbox_id, input, params.pod_id), (page) => listBody("drafts", page)))
})

export const getDraft = operation({
  name: "drafts.get",
  summary: "Get a draft.",
  routes: [route.get("/v0/drafts/:draft_id"), route.get("/v0/pods/:pod_id/drafts/:draft_id"), route.get(`${BASE}/:draft_id`)],
  access: { kind: "member", permission: "draft_read" },
  output: Output.json(Draft),
  mutates: false,
  mcp: { tool: "get_draft" },
  cli: { command: "drafts get" },
  run: ({ principal, params }) => Drafts.use((d) => d.get(principal, params.inbox_id, params.draft_id, params.pod_id))
})

export const getDraftAttachment = operation({
  name: "drafts.attachment",
  summary: "An attachment of a draft, by its id: metadata with a short-lived download URL (or the url it was given by).",
  routes: [
    route.get("/v0/drafts/:draft_id/attachments/:attachment_id"),
    route.get("/v0/pods/:pod_id/drafts/:draft_id/attachments/:attachment_id"),
    route.get(`${BASE}/:draft_id/attachments/:attachment_id`)
  ],
  access: { kind: "member", permission: "draft_read" },
  output: Output.json(DraftAttachmentInfo),
  mutates: false,
  mcp: { tool: "get_draft_attachment" },
  cli: { command: "drafts attachment" },
  run: ({ principal, params }) => Drafts.use((d) => d.attachment(principal, params.inbox_id, params.draft_id, params.attachment_id, params.pod_id))
})

export const updateDraft = operation({
  name: "drafts.update",
  summary: "Change any draft field; null clears a field, and send_at: null unschedules. Refused with draft_sending while it is being sent.",
  routes: [route.patch(`${BASE}/:draft_id`)],
  access: { kind: "member", permission: "draft_update" },
  body: UpdateDraftInput,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(Draft),
  mutates: true,
  mcp: { tool: "update_draft" },
  cli: { command: "drafts update", columns: COLUMNS },
  run: ({ principal, params, input }) => Drafts.use((d) => d.update(principal, params.inbox_id, params.draft_id, input))
})

export const deleteDraft = operation({
  name: "drafts.delete",
  summary: "Delete a draft (and its schedule).",
  routes: [route.delete(`${BASE}/:draft_id`)],
  access: { kind: "member", permission: "draft_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_draft" },
  cli: { command: "drafts delete" },
  run: ({ principal, params }) => Drafts.use((d) => d.delete(principal, params.inbox_id, params.draft_id))
})

export const sendDraft = operation({
  name: "drafts.send",
  summary: "Send a draft now through the same rules as any send; the draft is consumed and the message and thread ids answered.",
  routes: [route.post(`${BASE}/:draft_id/send`)],
  access: { kind: "member", permission: "draft_send" },
  body: Schema.Struct({}),
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { tool: "send_draft" },
  cli: { command: "drafts send" },
  run: ({ principal, params }) => Drafts.use((d) => d.send(principal, params.inbox_id, params.draft_id))
})

export const draftOperations = [createDraft, listDrafts, getDraft, getDraftAttachment, updateDraft, deleteDraft, sendDraft]
