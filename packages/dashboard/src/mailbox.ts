/**
 * What the mail pages share: an inbox's views (each a label its thread list filters on), the
 * addresses of a view and of a thread opened from it, the width at which the reading pane sits
 * beside the list, the first load's early GETs, the service's labels in words, and the
 * WebSocket that tells an open inbox of new mail.
 */
import { enc, prefetch, session } from "./dom.js"
import { PAGE_SIZE } from "./threads.tsx"

/** The label a view lists: undefined for the Inbox (every thread not archived), null for All mail (every thread but the hidden ones). */
type ViewLabel = string | null | undefined

/**
 * The views of an inbox: each a label the thread list filters on (spec: Thread lists take
 * `labels`; spam and trash are hidden labels, shown only when asked for).
 */
export const VIEWS: ReadonlyArray<readonly [string, string, ViewLabel]> = [["inbox", "Inbox", undefined], ["sent", "Sent", "sent"],
  ["archived", "Archived", "archived"], ["spam", "Spam", "spam"], ["blocked", "Blocked", "blocked"], ["trash", "Trash", "trash"], ["all", "All mail", null]]
export const viewLabel = (view: string): ViewLabel => VIEWS.find(([v]) => v === view)?.[2]

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

/** A screen wide enough for the reading pane beside the list; at 720 px and less, pages stack as on a phone. */
export const wide = () => matchMedia("(min-width: 721px)").matches

/** The API path of a view's threads (as threads.tsx asks it), for the first load's prefetch. */
const threadsPath = (inboxId: string, view: string, q: string | null | undefined, token: string | null | undefined) => {
  const label = viewLabel(view)
  const base = `/v0/inboxes/${enc(inboxId)}/threads`
  const page = token ? `&page_token=${enc(token)}` : ""
  if (q) return `${base}/search?q=${enc(label ? `label:${label} ${q}` : q)}&limit=${PAGE_SIZE}${page}`
  return `${base}?limit=${PAGE_SIZE}${label ? `&labels=${enc(label)}` : label === null ? "" : "&exclude_labels=archived"}${page}`
}

/** The first GETs of the inbox and thread pages, for the first load (see dom.js `prefetch`). */
export const prefetchPage = (name: string, [inboxId, second]: ReadonlyArray<string | undefined>, params: URLSearchParams) => {
  if (name === "inbox" && inboxId) prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, second ?? "inbox", params.get("q"), params.get("page")))
  if (name === "thread" && inboxId && second) {
    prefetch(`/v0/inboxes/${enc(inboxId)}/threads/${enc(second)}`)
    if (wide()) prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, params.get("view") ?? "inbox", params.get("q"), params.get("page")))
  }
}

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
