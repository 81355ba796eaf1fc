/**
 * The search operations of the catalogue (spec: Messages `/search`, Threads `/threads/search`):
 * messages of an inbox (GET with a query string, or POST with the same fields in a body),
 * and threads at organization, pod and inbox level.
 */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { ThreadSummary } from "../messages/model.ts"
import { listBody } from "../shared/pagination.ts"
import { MessageSearchResult, Search, SearchQuery, searchPermissions } from "./Search.ts"

const PATH = "/v0/inboxes/:inbox_id/messages/search"
const SUMMARY = "Search an inbox's messages (from, to, subject, body), ranked, each with highlights.text marking the matched words with **. " +
  "q: words (all must match), \"phrases\", -exclusion, OR, from:, to:, subject:, has:attachment, label:, is:unread, is:read, before:/after: YYYY-MM-DD (any other name: is refused as an unknown operator); the last word matches as a prefix."
const COLUMNS = ["message_id", "timestamp", "from", "subject", "thread_id"]

const common = {
  access: { kind: "member", permission: "message_read" },
  output: Output.list("messages", MessageSearchResult),
  mutates: false,
  permissionsFor: (input: typeof SearchQuery.Type) => searchPermissions(input.q)
} as const

export const searchMessages = operation({
  ...common,
  name: "messages.search",
  summary: SUMMARY,
  routes: [route.get(PATH)],
  query: SearchQuery,
  mcp: { tool: "search_messages" },
  cli: { command: "messages search", aliases: ["search messages"], columns: COLUMNS },
  run: ({ principal, params, input }) => Search.use((s) => Effect.map(s.messages(principal, params.inbox_id, input), (page) => listBody("messages", page)))
})

export const searchMessagesPost = operation({
  ...common,
  name: "messages.searchPost",
  summary: `${SUMMARY} (The parameters in a JSON body.)`,
  routes: [route.post(PATH)],
  body: SearchQuery,
  mcp: { exclude: "the same as search_messages" },
  cli: { exclude: "the same as inboxctl messages search" },
  run: ({ principal, params, input }) => Search.use((s) => Effect.map(s.messages(principal, params.inbox_id, input), (page) => listBody("messages", page)))
})

export const searchThreads = operation({
  name: "threads.search",
  summary: "Search threads in the organization, a pod or an inbox, ranked by their best-matching message; q as in search_messages.",
  routes: [route.get("/v0/threads/search"), route.get("/v0/pods/:pod_id/threads/search"), route.get("/v0/inboxes/:inbox_id/threads/search")],
  access: { kind: "member", permission: "thread_read" },
  query: SearchQuery,
  permissionsFor: (input) => searchPermissions(input.q),
  output: Output.list("threads", ThreadSummary),
  mutates: false,
  mcp: { tool: "search_threads" },
  cli: { command: "threads search", aliases: ["search threads"], columns: ["thread_id", "timestamp", "subject", "senders", "message_count"] },
  run: ({ principal, params, input }) =>
    Search.use((s) => Effect.map(s.threads(principal, { podId: params.pod_id, inboxId: params.inbox_id }, input), (page) => listBody("threads", page)))
})

export const searchOperations = [searchMessages, searchMessagesPost, searchThreads]
