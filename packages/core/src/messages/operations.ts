/** The message operations of the catalogue (spec: Messages, Attachment), and the inbox's correspondents (recipient suggestions). */
import { Effect, Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import {
  AttachmentInfo,
  BatchGetInput,
  BatchUpdateInput,
  hiddenLabelPermissions,
  includedHidden,
  MAX_BATCH,
  ListMessagesQuery,
  Messages,
  RawInfo,
  UpdateLabelsInput
} from "./Messages.ts"
import { Correspondents, CorrespondentsAnswer, CorrespondentsQuery } from "./Correspondents.ts"
import { labelsOf, Message, MessageSummary } from "./model.ts"

const COLUMNS = ["message_id", "timestamp", "from", "subject", "labels", "thread_id"]
const BASE = "/v0/inboxes/:inbox_id/messages"
/**
 * The spec's `{ count, messages }`, with the agentmail SDK's `limit` (the most one batch
 * takes) and, for updates, its `updates` (each message's id and labels after the change)
 * beside them (docs/client-compatibility.md).
 */
const Batch = Schema.Struct({ count: Schema.Number, limit: Schema.Number, messages: Schema.Array(MessageSummary) })
const BatchUpdated = Schema.Struct({
  ...Batch.fields,
  updates: Schema.Array(Schema.Struct({ message_id: Schema.String, labels: Schema.Array(Schema.String) }))
})

export const listMessages = operation({
  name: "messages.list",
  summary: "List an inbox's messages, newest first; filter by labels (all must match), from, to, subject, before and after.",
  routes: [route.get(BASE)],
  access: { kind: "member", permission: "message_read" },
  query: ListMessagesQuery,
  permissionsFor: (input) => hiddenLabelPermissions([...labelsOf(input.labels), ...includedHidden(input)]),
  output: Output.list("messages", MessageSummary),
  mutates: false,
  mcp: { tool: "list_messages" },
  cli: { command: "messages list", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Messages.use((m) => Effect.map(m.list(principal, params.inbox_id, input), (page) => listBody("messages", page)))
})

export const getMessage = operation({
  name: "messages.get",
  summary: "Get a message in full: text, html, extracted_text (the new content without quoted history), headers, attachments.",
  routes: [route.get(`${BASE}/:message_id`)],
  access: { kind: "member", permission: "message_read" },
  output: Output.json(Message),
  mutates: false,
  mcp: { tool: "get_message" },
  cli: { command: "messages get" },
  run: ({ principal, params }) => Messages.use((m) => m.get(principal, params.inbox_id, params.message_id))
})

export const updateMessage = operation({
  name: "messages.update",
  summary: "Add and remove labels on a message.",
  routes: [route.patch(`${BASE}/:message_id`)],
  access: { kind: "member", permission: "message_update" },
  body: UpdateLabelsInput,
  output: Output.json(Message),
  mutates: true,
  mcp: { tool: "update_message" },
  cli: { command: "messages update" },
  run: ({ principal, params, input }) => Messages.use((m) => m.update(principal, params.inbox_id, params.message_id, input))
})

export const deleteMessage = operation({
  name: "messages.delete",
  summary: "Delete a message.",
  routes: [route.delete(`${BASE}/:message_id`)],
  access: { kind: "member", permission: "message_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_message" },
  cli: { command: "messages delete" },
  run: ({ principal, params }) => Messages.use((m) => m.delete(principal, params.inbox_id, params.message_id))
})

export const batchGetMessages = operation({
  name: "messages.batchGet",
  summary: "Get up to 100 messages of an inbox by id (summary form), in the order given.",
  routes: [route.post(`${BASE}/batch-get`)],
  access: { kind: "member", permission: "message_read" },
  body: BatchGetInput,
  output: Output.json(Batch),
  mutates: false,
  mcp: { tool: "batch_get_messages" },
  cli: { command: "messages batch-get", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Messages.use((m) => Effect.map(m.batchGet(principal, params.inbox_id, input.message_ids), (batch) => ({ ...batch, limit: MAX_BATCH })))
})

export const batchUpdateMessages = operation({
  name: "messages.batchUpdate",
  summary: "Add and remove labels on up to 100 messages of an inbox.",
  routes: [route.post(`${BASE}/batch-update`)],
  access: { kind: "member", permission: "message_update" },
  body: BatchUpdateInput,
  output: Output.json(BatchUpdated),
  mutates: true,
  mcp: { tool: "batch_update_messages" },
  cli: { command: "messages batch-update", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Messages.use((m) =>
      Effect.map(m.batchUpdate(principal, params.inbox_id, input.message_ids, input), (batch) => ({
        ...batch,
        limit: MAX_BATCH,
        updates: batch.messages.map((message) => ({ message_id: message.message_id, labels: message.labels }))
      })))
})

export const getRawMessage = operation({
  name: "messages.raw",
  summary: "A short-lived download URL of the raw RFC 822 message, with its size.",
  routes: [route.get(`${BASE}/:message_id/raw`)],
  access: { kind: "member", permission: "message_read" },
  output: Output.json(RawInfo),
  mutates: false,
  mcp: { tool: "get_raw_message" },
  cli: { command: "messages raw-url" },
  run: ({ principal, params }) => Messages.use((m) => m.raw(principal, params.inbox_id, params.message_id))
})

export const downloadRawMessage = operation({
  name: "messages.rawDownload",
  summary: "The raw RFC 822 message.",
  routes: [route.get(`${BASE}/:message_id/raw/download`)],
  access: { kind: "member", permission: "message_read" },
  output: Output.download,
  mutates: false,
  mcp: { exclude: "bytes are not a tool result: get_raw_message gives a download URL" },
  cli: { command: "messages raw" },
  run: ({ principal, params }) => Messages.use((m) => m.rawDownload(principal, params.inbox_id, params.message_id))
})

export const getAttachment = operation({
  name: "messages.attachment",
  summary: "An attachment's metadata with a short-lived download URL.",
  routes: [route.get(`${BASE}/:message_id/attachments/:attachment_id`)],
  access: { kind: "member", permission: "message_read" },
  output: Output.json(AttachmentInfo),
  mutates: false,
  mcp: { tool: "get_attachment" },
  cli: { command: "messages attachment" },
  run: ({ principal, params }) => Messages.use((m) => m.attachment(principal, params.inbox_id, params.message_id, params.attachment_id))
})

export const downloadAttachment = operation({
  name: "messages.attachmentDownload",
  summary: "An attachment's bytes (`raw` and `download` are the same).",
  routes: [
    route.get(`${BASE}/:message_id/attachments/:attachment_id/raw`),
    route.get(`${BASE}/:message_id/attachments/:attachment_id/download`)
  ],
  access: { kind: "member", permission: "message_read" },
  output: Output.download,
  mutates: false,
  mcp: { exclude: "bytes are not a tool result: get_attachment gives a download URL" },
  cli: { command: "messages attachment-download" },
  run: ({ principal, params }) =>
    Messages.use((m) => m.attachmentDownload(principal, params.inbox_id, params.message_id, params.attachment_id))
})

export const listCorrespondents = operation({
  name: "messages.correspondents",
  summary: "Recipient suggestions: the inbox's past correspondents (senders of its mail, recipients of what it sent), most recent first; q matches the start of the address or of a word of the name, case-insensitively; limit 1-50 (10).",
  routes: [route.get("/v0/inboxes/:inbox_id/correspondents")],
  access: { kind: "member", permission: "message_read" },
  query: CorrespondentsQuery,
  output: Output.json(CorrespondentsAnswer),
  mutates: false,
  mcp: { tool: "list_correspondents" },
  cli: { command: "messages correspondents" },
  run: ({ principal, params, input }) => Correspondents.use((c) => c.suggest(principal, params.inbox_id, input))
})

export const messageOperations = [
  listMessages,
  getMessage,
  updateMessage,
  deleteMessage,
  batchGetMessages,
  batchUpdateMessages,
  getRawMessage,
  downloadRawMessage,
  getAttachment,
  downloadAttachment,
  listCorrespondents
]
