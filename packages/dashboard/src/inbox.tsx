/**
 * An inbox's view, drawn by Preact: a sidebar of views, the search box, the thread list
 * (threads.tsx) page by page ("Older" follows the API's next_page_token; the address holds the
 * token, so Back returns to the newer page) or a search's results (the query in the address
 * too), and on a wide screen the reading pane with the open thread (thread.tsx) beside the
 * list. New mail redraws the list only on the newest page of a view with no search: elsewhere
 * it would replace what the reader is looking at, so a note offers the newest mail instead.
 * On a phone a thread has the page to itself.
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { type Answer, client, ok } from "./client.ts"
import { enc, flash, go, h, page, plainWords } from "./dom.js"
import { inboxHash, labelWords, live, threadHash, VIEWS, viewLabel, wide } from "./mailbox.ts"
import { type LoadedThread, loadThread, ThreadView } from "./thread.tsx"
import { loadThreads, ThreadList, type ThreadPage } from "./threads.tsx"

type Inbox = Answer<"inboxes.get.0">
type Failure = Error & { body?: unknown }

interface ListArgs { readonly inboxId: string; readonly view: string; readonly q: string | undefined; readonly token: string | undefined; readonly at: number }

const listArgs = (inboxId: string, view: string | undefined, params: URLSearchParams): ListArgs => ({
  inboxId,
  view: VIEWS.some(([v]) => v === view) ? view ?? "inbox" : "inbox",
  q: params.get("q")?.trim() || undefined,
  token: params.get("page") || undefined,
  at: Math.max(1, Number(params.get("at")) || 1)
})

const loadList = async ({ inboxId, view, q, token }: ListArgs) => {
  const [box, data] = await Promise.all([
    client.GET("/v0/inboxes/{inbox_id}", { params: { path: { inbox_id: inboxId } } }).then(ok),
    loadThreads(inboxId, viewLabel(view), q, token).catch((err: Failure) => err)
  ])
  return { box, data }
}

/** The inbox's views as a sidebar of links, the current one marked; Drafts and Scheduled open the inbox's drafts (drafts are not thread mail). */
const ViewNav = ({ inboxId, view }: { readonly inboxId: string; readonly view: string }) => {
  const link = ([v, text]: readonly [string, string, unknown]) => <a key={v} href={inboxHash(inboxId, v)} aria-current={v === view ? "page" : undefined}>{text}</a>
  return (
    <nav aria-label="Views" class="views">
      {VIEWS.slice(0, 2).map(link)}
      <a href={`#/drafts?inbox=${enc(inboxId)}`}>Drafts</a>
      <a href={`#/drafts?inbox=${enc(inboxId)}&scheduled=1`}>Scheduled</a>
      {VIEWS.slice(2).map(link)}
    </nav>
  )
}

const SEARCH_LABEL = "Search (query language, e.g. from:alice subject:invoice is:unread)"

/** The search box: a refused query (an unknown operator) is said beside it, in words. */
const Search = ({ args, problem }: { readonly args: ListArgs; readonly problem: string | null }) => (
  <form aria-label="Search" role="search" onSubmit={(e) => {
    e.preventDefault()
    const q = new FormData(e.currentTarget).get("q")
    go(inboxHash(args.inboxId, args.view, { q: String(q ?? "").trim() }))
  }}>
    <label for="search-q">{SEARCH_LABEL}</label>
    <input id="search-q" name="q" type="search" defaultValue={args.q ?? ""} aria-invalid={problem ? "true" : undefined} aria-describedby={problem ? "search-q-problem" : undefined} />
    {problem ? <p id="search-q-problem" class="field-error" role="alert">{problem}</p> : null}
    <button type="submit" class="primary">Search</button>
  </form>
)

interface InboxProps {
  readonly args: ListArgs
  readonly box: Inbox
  readonly data: ThreadPage | Failure
  /** The thread open in the reading pane beside the list (a wide screen). */
  readonly open: LoadedThread | undefined
}

const InboxPage = ({ args, box, data, open }: InboxProps) => {
  const { inboxId, view, q, token, at } = args
  const failed = data instanceof Error ? data : null
  const [threads, setThreads] = useState<ThreadPage["threads"]>(failed ? [] : (data as ThreadPage).threads)
  const [arrived, setArrived] = useState(false)
  const viewName = VIEWS.find(([v]) => v === view)?.[1] ?? "Inbox"
  const state = { q, page: token, at: at > 1 ? at : undefined }
  const own = `#/inbox/${enc(box.inbox_id)}`
  useEffect(() => {
    live(box.inbox_id, () => {
      if (q || token) return setArrived(true)
      void loadThreads(inboxId, viewLabel(view), q, token).then((fresh) => setThreads(fresh.threads), () => undefined)
    })
  }, [])
  const relabel = (threadId: string, labelsOf: (labels: ReadonlyArray<string>) => ReadonlyArray<string>) =>
    setThreads((all) => all.map((t) => t.thread_id === threadId ? { ...t, labels: [...labelsOf(t.labels)] } : t))
  const describe = () => {
    if (failed) return ""
    if (threads.length === 0) return q ? `Nothing found for “${q}” in ${viewName}.` : view === "inbox" ? "Inbox: no mail yet." : `Nothing in ${viewName}.`
    const range = `${at}–${at + threads.length - 1}`
    return q ? `Results ${range} for “${q}” in ${viewName}.` : `${viewName}: threads ${range}, newest first.`
  }
  const next = failed ? undefined : (data as ThreadPage).next_page_token
  const paned = wide()
  return (
    <>
      <nav aria-label="This inbox" class="tabs">
        <a href={`#/compose/${enc(inboxId)}`}>Compose</a>
        <a href={`${own}/lists`}>This inbox's lists</a>
        <a href={`${own}/webhooks`}>This inbox's webhooks</a>
        <a href={`${own}/metrics`}>This inbox's metrics</a>
        <a href={`#/mail-settings/${enc(box.inbox_id)}`}>Mail app settings</a>
      </nav>
      <div class={paned ? "mailbox reading" : "mailbox"}>
        <ViewNav inboxId={inboxId} view={view} />
        <div class="mailbox-list">
          <Search key={q ?? ""} args={args} problem={failed ? plainWords(failed.body ?? { message: failed.message }) as string : null} />
          {q ? <p><a href={inboxHash(inboxId, view)}>{`Clear the search (back to ${viewName})`}</a></p> : null}
          <p role="status" class="muted" data-testid="threads-status">
            {describe()}
            {arrived ? <>{" New mail arrived: "}<a href={inboxHash(inboxId, view)}>{`show the newest in ${viewName}`}</a>.</> : null}
          </p>
          <div id="threads">
            {threads.length
              ? <ThreadList inboxId={inboxId} threads={threads} labelWords={labelWords} open={open?.thread.thread_id}
                  hrefOf={(threadId) => threadHash(inboxId, threadId, view, state)} changed={(note) => { flash(note); go(location.hash) }} />
              : null}
          </div>
          <nav aria-label="Pages" class="pager">
            {token ? <a href={inboxHash(inboxId, view, { q })}>{q ? "First results" : "Newest"}</a> : null}
            {next ? <a href={inboxHash(inboxId, view, { q, page: next, at: at + threads.length })}>{q ? "More results" : "Older"}</a> : null}
          </nav>
        </div>
        {paned
          ? (
            <section class="reading-pane" aria-label="Reading pane">
              {open
                ? <ThreadView key={open.thread.thread_id} inboxId={inboxId} loaded={open} paned
                    onRead={(id) => relabel(id, (labels) => labels.filter((l) => l !== "unread"))} onLabelled={(id, labels) => relabel(id, () => labels)} />
                : <p class="muted">{threads.length ? "Choose a thread to read it here." : ""}</p>}
            </section>
          )
          : null}
      </div>
    </>
  )
}

const drawInbox = (args: ListArgs, listed: Awaited<ReturnType<typeof loadList>>, open: LoadedThread | undefined) => {
  const viewName = VIEWS.find(([v]) => v === args.view)?.[1] ?? "Inbox"
  const root = h("div", {})
  page(`${viewName} · ${listed.box.email ?? args.inboxId}`, root)
  render(<InboxPage args={args} box={listed.box} data={listed.data} open={open} />, root)
}

/** `#/inbox/ID[/view]?q=&page=&at=`: the view's list. */
export const inbox = async (inboxId: string, view: string | undefined, params: URLSearchParams) => {
  const args = listArgs(inboxId, view, params)
  drawInbox(args, await loadList(args), undefined)
}

/**
 * `#/thread/ID/THREAD` on a wide screen: the inbox's list with the thread open in the reading
 * pane beside it; the list keeps the view and search the thread was opened from (the address's
 * `view`, `q`, `page`), both read at once.
 */
export const readingPane = async (inboxId: string, threadId: string, params: URLSearchParams) => {
  const args = listArgs(inboxId, params.get("view") ?? "inbox", params)
  const [listed, open] = await Promise.all([loadList(args), loadThread(inboxId, threadId)])
  drawInbox(args, listed, open)
  document.title = `${open.thread.subject || "(no subject)"} · Inbox`
}

/** `#/thread/ID/THREAD` on a phone: the thread alone, with a way back to the list it was opened from. */
export const thread = async (inboxId: string, threadId: string, params: URLSearchParams) => {
  const loaded = await loadThread(inboxId, threadId)
  const back = inboxHash(inboxId, params.get("view") ?? "inbox", { q: params.get("q"), page: params.get("page"), at: params.get("at") })
  const root = h("div", {})
  page(loaded.thread.subject || "(no subject)", h("p", {}, h("a", { href: back }, "← Back to the inbox")), root)
  render(<ThreadView inboxId={inboxId} loaded={loaded} paned={false} />, root)
}
