/**
 * What the mail pages share: an inbox's views (each a label its thread list filters on), the
 * addresses of a view and of a thread opened from it, the width at which the reading pane sits
 * beside the list, the first load's early GETs, the service's labels in words, and the
 * WebSocket that tells an open inbox of new mail.
 */
import { enc, session } from "./dom.js"

export { VIEWS, viewLabel, wide } from "./early.ts"

export type ListState = { readonly q?: string | null | undefined; readonly page?: string | null | undefined; readonly at?: string | number | null | undefined }

const query = (entries: Record<string, string | number | null | undefined>) => {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(entries)) if (v !== undefined && v !== null && v !== "") params.set(k, String(v))
  const text = params.toString()
  return text ? `?${text}` : ""
}

/** The address of an inbox's view with its state (`q`, `page`, `at`), so a search or a page can be linked, reloaded and gone back to. */
export const inboxHash = (inboxId: string, view: string, state: ListState = {}) =>
  `#/inbox/${enc(inboxId)}${view && view !== "inbox" ? `/${enc(view)}` : ""}${query({ ...state })}`

/**
 * The address of a thread opened from a view: the view's state rides along (`view`, `q`, `page`,
 * `at`), so on a wide screen the reading pane shows the same list beside it, and Back returns.
 */
export const threadHash = (inboxId: string, threadId: string, view: string, state: ListState = {}) =>
  `#/thread/${enc(inboxId)}/${enc(threadId)}${query({ view: view && view !== "inbox" ? view : undefined, ...state })}`

/** Labels that belong to the service (spec: Labels): they cannot be added or removed. */
export const FIXED_LABELS: ReadonlySet<string> = new Set(["received", "sent", "draft", "scheduled"])

/** The service's labels in words (spec: Labels seen); a person's own labels are shown as they wrote them. */
export const LABEL_WORDS: Readonly<Record<string, string>> = { received: "Received", sent: "Sent", spam: "Spam", trash: "Trash", archived: "Archived", draft: "Draft", scheduled: "Scheduled", blocked: "Blocked", unauthenticated: "Unverified sender" }
export const labelWords = (l: string) => LABEL_WORDS[l] ?? l

let socket: WebSocket | null = null
export const closeSocket = () => { socket?.close(); socket = null }

/** Subscribes to this inbox's events; `onEvent` is called on each. */
export const live = (inboxId: string, onEvent: () => void) => {
  closeSocket()
  const token = (session.me as { csrf_token?: string } | null)?.csrf_token ?? ""
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v0/websocket?csrf_token=${enc(token)}`)
  socket = ws
  ws.onopen = () => ws.send(JSON.stringify({ type: "subscribe", inbox_ids: [inboxId] }))
  ws.onmessage = (e) => { if ((JSON.parse(String(e.data)) as { type?: string }).type === "event") onEvent() }
}
