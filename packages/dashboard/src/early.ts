/**
 * The first load's API calls, started as the dashboard's script begins to run: main.tsx
 * imports this module first (through first.ts), so the inbox's or the thread's GETs go out
 * before the framework and the pages' modules are evaluated. Each answer
 * is taken once, by the page's own call (client.ts and dom.js `api` ask `takeEarly`), and
 * the rest dropped after the first page. Nothing here imports the rest of the dashboard, so
 * nothing else needs to run first.
 */

export const enc = encodeURIComponent

/** Threads a list page shows. */
export const PAGE_SIZE = 50

/** The label a view lists: undefined for the Inbox (every thread not archived), null for All mail (every thread but the hidden ones). */
type ViewLabel = string | null | undefined

/**
 * The views of an inbox: each a label the thread list filters on (spec: Thread lists take
 * `labels`; spam and trash are hidden labels, shown only when asked for).
 */
export const VIEWS: ReadonlyArray<readonly [string, string, ViewLabel]> = [["inbox", "Inbox", undefined], ["sent", "Sent", "sent"],
  ["archived", "Archived", "archived"], ["spam", "Spam", "spam"], ["blocked", "Blocked", "blocked"], ["trash", "Trash", "trash"], ["all", "All mail", null]]
export const viewLabel = (view: string): ViewLabel => VIEWS.find(([v]) => v === view)?.[2]

/** A screen wide enough for the reading pane beside the list; at 720 px and less, pages stack as on a phone. */
export const wide = () => matchMedia("(min-width: 721px)").matches

// Keyed by path and sorted query, so the typed client (client.ts), which writes its query
// itself, finds them too.
const early = new Map<string, Promise<Response>>()
const earlyKey = (url: string) => {
  const u = new URL(url, location.href)
  u.searchParams.sort()
  return `${u.pathname}?${u.searchParams}`
}
export const prefetch = (...paths: ReadonlyArray<string>) => {
  for (const p of paths) early.set(earlyKey(p), fetch(p, { headers: { accept: "application/json" }, credentials: "same-origin" }))
}
export const dropPrefetched = () => early.clear()
/** The answer a prefetch started for this URL, once; undefined when none. */
export const takeEarly = (url: string): Promise<Response> | undefined => {
  const key = earlyKey(url)
  const started = early.get(key)
  early.delete(key)
  return started
}

/** The API path of a view's threads (as threads.tsx asks it). */
export const threadsPath = (inboxId: string, view: string, q: string | null | undefined, token: string | null | undefined) => {
  const label = viewLabel(view)
  const base = `/v0/inboxes/${enc(inboxId)}/threads`
  const page = token ? `&page_token=${enc(token)}` : ""
  if (q) return `${base}/search?q=${enc(label ? `label:${label} ${q}` : q)}&limit=${PAGE_SIZE}${page}`
  return `${base}?limit=${PAGE_SIZE}${label ? `&labels=${enc(label)}` : label === null ? "" : "&exclude_labels=archived"}${page}`
}

/**
 * The first GETs of the page the address names, when it is an inbox's view (`#/inbox/ID`,
 * `#/inbox/ID/sent`) or a thread (`#/thread/ID/THREAD`); `#/inbox/ID/lists` and the other
 * pages at an inbox's scope are not views, and ask nothing early.
 */
export const prefetchFirstPage = () => {
  const [hashPath = "", hashQuery = ""] = location.hash.split("?")
  const params = new URLSearchParams(hashQuery)
  const [name, inboxId, second] = hashPath.replace(/^#\/?/, "").split("/").map(decodeURIComponent)
  if (name === "inbox" && inboxId && (second === undefined || viewLabel(second) !== undefined || second === "inbox")) {
    prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, second ?? "inbox", params.get("q"), params.get("page")))
  }
  if (name === "thread" && inboxId && second) {
    prefetch(`/v0/inboxes/${enc(inboxId)}/threads/${enc(second)}`)
    if (wide()) prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, params.get("view") ?? "inbox", params.get("q"), params.get("page")))
  }
}
