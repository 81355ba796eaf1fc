/**
 * An inbox view's thread list: the page of threads (or of search results) read through the
 * typed client, and the table of rows drawn by Preact. The fields it shows (senders, subject,
 * preview, timestamp, labels) are the OpenAPI document's: a rename fails the type check.
 */
import { useState } from "preact/hooks"
import { type Answer, client, ok } from "./client.ts"
import { plainWords } from "./dom.js"

import { PAGE_SIZE } from "./early.ts"

export { PAGE_SIZE }

export type ThreadPage = Answer<"threads.list.2">
export type ThreadItem = ThreadPage["threads"][number]

/**
 * A page of a view's threads: a view with a label lists that label's threads; the Inbox lists
 * every thread not archived (Archive adds `archived`); All mail (label null) every thread but
 * the hidden ones (spam, trash, blocked). A search is restricted to the view's label.
 */
export const loadThreads = async (inboxId: string, label: string | null | undefined, q: string | undefined, token: string | undefined): Promise<ThreadPage> => {
  const page = token ? { page_token: token } : {}
  const path = { inbox_id: inboxId }
  if (q) {
    return ok(await client.GET("/v0/inboxes/{inbox_id}/threads/search", {
      params: { path, query: { q: label ? `label:${label} ${q}` : q, limit: PAGE_SIZE, ...page } }
    }))
  }
  return ok(await client.GET("/v0/inboxes/{inbox_id}/threads", {
    params: { path, query: { limit: PAGE_SIZE, ...(label ? { labels: label } : label === null ? {} : { exclude_labels: "archived" }), ...page } }
  }))
}

/** A sender as a list shows it: the name of "Ann <ann@example.org>", else the address (the whole on hover). */
const displayName = (mailbox: string) => /^\s*"?([^"<]*?)"?\s*<[^>]+>\s*$/.exec(mailbox)?.[1] || mailbox

/** Today's mail by its time, older mail by its date, as mail clients list them (the full time on hover). */
const shortDate = (timestamp: string) => {
  const at = new Date(timestamp)
  return at.toDateString() === new Date().toDateString()
    ? at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : at.toLocaleDateString([], { day: "numeric", month: "short", ...(at.getFullYear() === new Date().getFullYear() ? {} : { year: "numeric" }) })
}

/** Labels the list does not show as chips: every received message has `received`, and unread rows are bold. */
const SYSTEM_LABELS = new Set(["received", "unread"])

type LabelChange = { readonly add_labels?: Array<string>; readonly remove_labels?: Array<string> }

/** What the selection toolbar offers, each a label change on every selected thread. */
const BULK: ReadonlyArray<readonly [string, LabelChange]> = [
  ["Archive", { add_labels: ["archived"] }], ["Move to Trash", { add_labels: ["trash"] }], ["Report spam", { add_labels: ["spam"] }],
  ["Mark read", { remove_labels: ["unread"] }], ["Mark unread", { add_labels: ["unread"] }]
]

interface ListProps {
  readonly inboxId: string
  readonly threads: ReadonlyArray<ThreadItem>
  readonly labelWords: (label: string) => string
  /** Called once a change to the selected threads is done (the page reads its list again), with what was done. */
  readonly changed: (note: string) => void
  /** The thread open in the reading pane beside the list: its row is marked. */
  readonly open?: string | undefined
  /** The address a row's link opens (the reading pane's keeps the list's view and search). */
  readonly hrefOf: (threadId: string) => string
}

/**
 * The thread rows with a checkbox each: a click selects one, a shift-click the range from the
 * last one clicked; the toolbar above acts on the selection (one PATCH per thread, at once).
 * The selection is kept while new mail redraws the list (Preact keeps this component's state).
 */
export const ThreadList = ({ inboxId, threads, labelWords, changed, open, hrefOf }: ListProps) => {
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const [anchor, setAnchor] = useState<number | null>(null)
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<string | null>(null)
  const shown = new Set(threads.map((t) => t.thread_id))
  const chosen = [...selected].filter((id) => shown.has(id))
  const click = (index: number, event: MouseEvent) => {
    const id = threads[index]?.thread_id
    if (id === undefined) return
    const on = !selected.has(id)
    const range = event.shiftKey && anchor !== null ? threads.slice(Math.min(anchor, index), Math.max(anchor, index) + 1).map((t) => t.thread_id) : [id]
    const next = new Set(selected)
    for (const r of range) on ? next.add(r) : next.delete(r)
    setSelected(next)
    setAnchor(index)
  }
  const act = async (name: string, change: LabelChange) => {
    setBusy(true)
    setFailure(null)
    try {
      await Promise.all(chosen.map(async (thread_id) =>
        ok(await client.PATCH("/v0/inboxes/{inbox_id}/threads/{thread_id}", { params: { path: { inbox_id: inboxId, thread_id } }, body: change }))))
      setSelected(new Set())
      changed(`${name}: ${chosen.length} thread${chosen.length === 1 ? "" : "s"}.`)
    } catch (err) {
      // In plain words, as every form says it (dom.js).
      const body = (err as { body?: unknown }).body
      setFailure(body ? plainWords(body) : (err as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const all = threads.length > 0 && chosen.length === threads.length
  return (
    <>
      <div role="group" aria-label="Selected threads" class="triage bulk">
        <label class="check"><input type="checkbox" checked={all} onChange={() => setSelected(all ? new Set() : new Set(threads.map((t) => t.thread_id)))} />Select all</label>
        <span class="muted" aria-live="polite">{chosen.length ? `${chosen.length} selected` : ""}</span>
        {BULK.map(([name, change]) => <button key={name} type="button" disabled={busy || chosen.length === 0} onClick={() => void act(name, change)}>{name}</button>)}
        {failure ? <p class="field-error" role="alert">{failure}</p> : null}
      </div>
      <table aria-label="Threads">
        <thead><tr><th><span class="visually-hidden">Select</span></th><th>From</th><th>Subject</th><th>Date</th></tr></thead>
        <tbody>
          {threads.map((t, index) => (
            <tr key={t.thread_id} aria-current={t.thread_id === open ? "true" : undefined}
              class={`${t.labels.includes("unread") ? "unread" : ""}${selected.has(t.thread_id) ? " selected" : ""}`}>
              <td><input type="checkbox" aria-label={`Select ${t.subject || "(no subject)"}`} checked={selected.has(t.thread_id)} onClick={(e) => click(index, e)} /></td>
              <td title={t.senders.join(", ")}>{t.senders.map(displayName).join(", ")}</td>
              <td>
                <a href={hrefOf(t.thread_id)}>{t.subject || "(no subject)"}</a>
                {t.labels.filter((l) => !SYSTEM_LABELS.has(l)).map((l) => <span key={l} class="label">{labelWords(l)}</span>)}
                <div class="muted">{t.preview}</div>
              </td>
              <td><time dateTime={t.timestamp} title={new Date(t.timestamp).toLocaleString()}>{shortDate(t.timestamp)}</time></td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}
