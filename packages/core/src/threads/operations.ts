/** The thread operations of the catalogue (spec: Threads), at organization, pod and inbox level. */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { notFound } from "../access/Principal.ts"
import { AttachmentInfo, hiddenLabelPermissions, includedHidden, Messages, UpdateLabelsInput } from "../messages/Messages.ts"
import { labelsOf, Thread, ThreadSummary } from "../messages/model.ts"
import { listBody } from "../shared/pagination.ts"
import { GetThreadQuery, ListThreadsQuery, Threads } from "./Threads.ts"

const COLUMNS = ["thread_id", "timestamp", "subject", "senders", "message_count", "labels"]

export const listThreads = operation({
  name: "threads.list",
  summary: "List threads, newest activity first, in the organization, a pod or an inbox.",
  routes: [route.get("/v0/threads"), route.get("/v0/pods/:pod_id/threads"), route.get("/v0/inboxes/:inbox_id/threads")],
  access: { kind: "member", permission: "thread_read" },
  query: ListThreadsQuery,
  permissionsFor: (input) => hiddenLabelPermissions([...labelsOf(input.labels), ...includedHidden(input)]),
  output: Output.list("threads", ThreadSummary),
  mutates: false,
  mcp: { tool: "list_threads" },
  cli: { command: "threads list", columns: COLUMNS },
  run: ({ principal, params, input }) =>
    Threads.use((t) =>
      Effect.map(t.list(principal, { podId: params.pod_id, inboxId: params.inbox_id }, input), (page) => listBody("threads", page)))
})

export const getThread = operation({
  name: "threads.get",
  summary: "Get a thread with every message (full form, oldest first) and its attachments; limit or page_token answer a page of its messages, newest first by page, with next_page_token for older ones.",
  routes: [route.get("/v0/threads/:thread_id"), route.get("/v0/pods/:pod_id/threads/:thread_id"), route.get("/v0/inboxes/:inbox_id/threads/:thread_id")],
  access: { kind: "member", permission: "thread_read" },
  query: GetThreadQuery,
  output: Output.json(Thread),
  mutates: false,
  mcp: { tool: "get_thread" },
  cli: { command: "threads get" },
  run: ({ principal, params, input }) =>
    Threads.use((t) => t.get(principal, { podId: params.pod_id, inboxId: params.inbox_id }, params.thread_id, input))
})

export const updateThread = operation({
  name: "threads.update",
  summary: "Add and remove labels on every message of a thread.",
  routes: [
    route.patch("/v0/threads/:thread_id"),
    route.patch("/v0/pods/:pod_id/threads/:thread_id"),
    route.patch("/v0/inboxes/:inbox_id/threads/:thread_id")
  ],
  access: { kind: "member", permission: "message_update" },
  body: UpdateLabelsInput,
  output: Output.json(ThreadSummary),
  mutates: true,
  mcp: { tool: "update_thread" },
  cli: { command: "threads update" },
  run: ({ principal, params, input }) =>
    Threads.use((t) => t.update(principal, { podId: params.pod_id, inboxId: params.inbox_id }, params.thread_id, input))
})

export const deleteThread = operation({
  name: "threads.delete",
  summary: "Delete a thread and all its messages.",
  routes: [
    route.delete("/v0/threads/:thread_id"),
    route.delete("/v0/pods/:pod_id/threads/:thread_id"),
    route.delete("/v0/inboxes/:inbox_id/threads/:thread_id")
  ],
  access: { kind: "member", permission: "thread_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_thread" },
  cli: { command: "threads delete" },
  run: ({ principal, params }) =>
    Threads.use((t) => t.delete(principal, { podId: params.pod_id, inboxId: params.inbox_id }, params.thread_id))
})

export const getThreadAttachment = operation({
  name: "threads.attachment",
  summary: "An attachment of any message of a thread, by its id: metadata with a short-lived download URL.",
  routes: [
    route.get("/v0/threads/:thread_id/attachments/:attachment_id"),
    route.get("/v0/pods/:pod_id/threads/:thread_id/attachments/:attachment_id"),
    route.get("/v0/inboxes/:inbox_id/threads/:thread_id/attachments/:attachment_id")
  ],
  access: { kind: "member", permission: "message_read" },
  output: Output.json(AttachmentInfo),
  mutates: false,
  mcp: { tool: "get_thread_attachment" },
  cli: { command: "threads attachment" },
  run: ({ principal, params }) =>
    Effect.gen(function*() {
      const thread = yield* Threads.use((t) => t.get(principal, { podId: params.pod_id, inboxId: params.inbox_id }, params.thread_id))
      const message = thread.messages.find((m) => (m.attachments ?? []).some((a) => a.attachment_id === params.attachment_id))
      if (message === undefined) return yield* notFound("Attachment", params.attachment_id)
      return yield* Messages.use((m) => m.attachment(principal, message.inbox_id, message.message_id, params.attachment_id))
    })
})

export const threadOperations = [listThreads, getThread, updateThread, deleteThread, getThreadAttachment]
