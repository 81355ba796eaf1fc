/**
 * AgentMail's MCP toolkit (`agentmail-to/agentmail-toolkit`, node/src/tools.ts, 37 tools in
 * its newest version) beside our tools: agents written against it call our server with its
 * tool names and argument names. Each toolkit tool maps to one of ours (the same name, or
 * an alias name served as the same tool), with the toolkit's argument names that differ
 * from ours beyond camelCase; the tools for connected third-party apps are out of scope,
 * each with the reason. docs/mcp.md shows the mapping as its "toolkit" column, and
 * docs/client-compatibility.md the differences.
 */

export interface ToolkitTool {
  /** The toolkit's tool name. */
  readonly name: string
  /** Our tool that serves it, or undefined when it is out of scope. */
  readonly ours?: string
  /** Toolkit argument names (camelCase) that are another of our names, to ours (snake_case). */
  readonly renames?: Readonly<Record<string, string>>
  /** Why a tool is left out. */
  readonly outOfScope?: string
}

const APPS = "connected third-party apps (AgentMail's app marketplace and sign-ins at other services) are no part of a self-hosted mail engine"

const LIST_ARGS = { listType: "type" } as const

export const TOOLKIT: ReadonlyArray<ToolkitTool> = [
  { name: "list_inboxes", ours: "list_inboxes" },
  { name: "search_inboxes", ours: "search_inboxes" },
  { name: "get_inbox", ours: "get_inbox" },
  { name: "create_inbox", ours: "create_inbox" },
  { name: "update_inbox", ours: "update_inbox" },
  { name: "delete_inbox", ours: "delete_inbox" },
  { name: "list_threads", ours: "list_threads" },
  { name: "search_threads", ours: "search_threads" },
  { name: "get_thread", ours: "get_thread" },
  // The toolkit's attachment is by thread; ours by message: one tool takes either (tools.ts).
  { name: "get_attachment", ours: "get_attachment" },
  { name: "update_thread", ours: "update_thread" },
  { name: "delete_thread", ours: "delete_thread" },
  { name: "list_messages", ours: "list_messages" },
  { name: "search_messages", ours: "search_messages" },
  { name: "send_message", ours: "send_message" },
  // replyAll: true answers as reply_all_to_message does (tools.ts).
  { name: "reply_to_message", ours: "reply_to_message" },
  { name: "forward_message", ours: "forward_message" },
  { name: "update_message", ours: "update_message" },
  { name: "get_message", ours: "get_message" },
  { name: "create_draft", ours: "create_draft", renames: { inReplyTo: "reply_to_message_id" } },
  { name: "list_drafts", ours: "list_drafts" },
  { name: "get_draft", ours: "get_draft" },
  { name: "update_draft", ours: "update_draft" },
  { name: "send_draft", ours: "send_draft" },
  { name: "delete_draft", ours: "delete_draft" },
  { name: "list_list_entries", ours: "list_list_entries", renames: LIST_ARGS },
  { name: "get_list_entry", ours: "get_list_entry", renames: LIST_ARGS },
  { name: "create_list_entry", ours: "create_list_entry", renames: LIST_ARGS },
  { name: "delete_list_entry", ours: "delete_list_entry", renames: LIST_ARGS },
  { name: "auth_me", ours: "auth_me" },
  { name: "agent_attach_human", ours: "attach_human" },
  { name: "agent_verify", ours: "verify_human" },
  { name: "list_apps", outOfScope: APPS },
  { name: "search_apps", outOfScope: APPS },
  { name: "get_app", outOfScope: APPS },
  { name: "list_accounts", outOfScope: APPS },
  { name: "connect_app", outOfScope: APPS }
]

/** Our tool name to the toolkit's names for it (its own name, or an alias). */
export const toolkitNamesOf = (ours: string): ReadonlyArray<string> =>
  TOOLKIT.filter((t) => t.ours === ours).map((t) => t.name)

/** Toolkit names served under another of our names: alias to ours. */
export const ALIASES: Readonly<Record<string, string>> = Object.fromEntries(
  TOOLKIT.filter((t) => t.ours !== undefined && t.ours !== t.name).map((t) => [t.name, t.ours!])
)

/** The toolkit's other argument names for one of our tools. */
export const renamesOf = (ours: string): Readonly<Record<string, string>> =>
  Object.assign({}, ...TOOLKIT.filter((t) => t.ours === ours).map((t) => t.renames ?? {}))
