// The mail pages: an inbox (threads, search, live updates over the WebSocket), a
// thread (messages oldest first, quoted history folded, attachments, raw, label editing),
// compose / reply / reply all / forward, and drafts with scheduled sends. HTML mail is shown
// only in a sandboxed frame without scripts, as tall as its content, with its own CSP that
// blocks remote images until the reader allows them; every other text from mail goes in as text nodes.
import { keepAsDraft, suggestRecipients } from "./compose.ts"
import { messageArticle } from "./message.tsx"
import { drawThreads, loadThreads, PAGE_SIZE } from "./threads.tsx"
import { $, api, button, enc, field, fieldProblem, flash, form, go, h, list, notice, page, prefetch, select, session, table, when } from "./dom.js"

/**
 * The views of an inbox: each a label the thread list filters on (spec: Thread lists take
 * `labels`; spam and trash are hidden labels, shown only when asked for).
 */
export const VIEWS = [["inbox", "Inbox", undefined], ["sent", "Sent", "sent"],
  ["archived", "Archived", "archived"], ["spam", "Spam", "spam"], ["blocked", "Blocked", "blocked"], ["trash", "Trash", "trash"], ["all", "All mail", null]]
/** The label a view lists: undefined for the Inbox (every thread not archived), null for All mail (every thread but the hidden ones). */
const viewLabel = (view) => VIEWS.find(([v]) => v === view)?.[2]

/** The address of an inbox's view with its state (`q`, `page`, `at`), so a search or a page can be linked, reloaded and gone back to. */
export const inboxHash = (inboxId, view, state = {}) => {
  const params = new URLSearchParams(Object.entries(state).filter(([, v]) => v !== undefined && v !== null && v !== ""))
  const query = params.toString()
  return `#/inbox/${enc(inboxId)}${view && view !== "inbox" ? `/${enc(view)}` : ""}${query ? `?${query}` : ""}`
}

/**
 * The address of a thread opened from a view: the view's state rides along (`view`, `q`, `page`,
 * `at`), so on a wide screen the reading pane shows the same list beside it, and Back returns.
 */
export const threadHash = (inboxId, threadId, view, state = {}) => {
  const params = new URLSearchParams(Object.entries({ view: view && view !== "inbox" ? view : undefined, ...state })
    .filter(([, v]) => v !== undefined && v !== null && v !== ""))
  const query = params.toString()
  return `#/thread/${enc(inboxId)}/${enc(threadId)}${query ? `?${query}` : ""}`
}

/** A screen wide enough for the reading pane beside the list; at 720 px and less, pages stack as on a phone. */
export const wide = () => matchMedia("(min-width: 721px)").matches

/** The API path of a view's threads (as threads.tsx asks it), for the first load's prefetch. */
const threadsPath = (inboxId, view, q, token) => {
  const label = viewLabel(view)
  const base = `/v0/inboxes/${enc(inboxId)}/threads`
  const page = token ? `&page_token=${enc(token)}` : ""
  if (q) return `${base}/search?q=${enc(label ? `label:${label} ${q}` : q)}&limit=${PAGE_SIZE}${page}`
  return `${base}?limit=${PAGE_SIZE}${label ? `&labels=${enc(label)}` : label === null ? "" : "&exclude_labels=archived"}${page}`
}

/** The first GETs of the inbox and thread pages, for the first load (see `prefetch`). */
export const prefetchPage = (name, [inboxId, second], params) => {
  if (name === "inbox" && inboxId) prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, second, params?.get("q"), params?.get("page")))
  if (name === "thread" && inboxId && second) {
    prefetch(`/v0/inboxes/${enc(inboxId)}/threads/${enc(second)}`)
    if (wide()) prefetch(`/v0/inboxes/${enc(inboxId)}`, threadsPath(inboxId, params?.get("view") ?? "inbox", params?.get("q"), params?.get("page")))
  }
}

/** Labels that belong to the service (spec: Labels): they cannot be added or removed. */
const FIXED_LABELS = new Set(["received", "sent", "draft", "scheduled"])

let socket = null
export const closeSocket = () => { socket?.close(); socket = null }

/** The service's labels in words (spec: Labels seen); a person's own labels are shown as they wrote them. */
export const LABEL_WORDS = { received: "Received", sent: "Sent", spam: "Spam", trash: "Trash", archived: "Archived", draft: "Draft", scheduled: "Scheduled", blocked: "Blocked", unauthenticated: "Unverified sender" }
export const labelWords = (l) => LABEL_WORDS[l] ?? l
/** Subscribes to this inbox's events; `onEvent` gets each event frame. */
const live = (inboxId, onEvent) => {
  closeSocket()
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v0/websocket?csrf_token=${enc(session.me.csrf_token)}`)
  socket.onopen = () => socket.send(JSON.stringify({ type: "subscribe", inbox_ids: [inboxId] }))
  socket.onmessage = (e) => { const frame = JSON.parse(e.data); if (frame.type === "event") onEvent(frame) }
}

/** The inbox's views as a sidebar of links, the current one marked. */
const viewNav = (inboxId, view) => {
  const link = ([v, text]) => h("a", { href: inboxHash(inboxId, v), "aria-current": v === view ? "page" : null }, text)
  // Drafts are not mail of a thread (the drafts API keeps them): these two open the inbox's drafts.
  return h("nav", { "aria-label": "Views", className: "views" }, VIEWS.slice(0, 2).map(link),
    h("a", { href: `#/drafts?inbox=${enc(inboxId)}` }, "Drafts"), h("a", { href: `#/drafts?inbox=${enc(inboxId)}&scheduled=1` }, "Scheduled"),
    VIEWS.slice(2).map(link))
}

/**
 * An inbox's view: its threads newest first, page by page ("Older" follows the API's
 * next_page_token; the address holds the token, so Back returns to the newer page), or the
 * results of a search (the query in the address too). New mail redraws the list only on the
 * newest page of a view with no search: elsewhere it would replace what the reader is looking
 * at, so a note offers the newest mail instead. On a wide screen a reading pane sits beside the
 * list, with the thread `open` in it (see `readingPane`); the answer gives the pane and a way
 * to show a thread read in the list.
 */
export const inbox = async (inboxId, view = "inbox", params = new URLSearchParams(), open = undefined) => {
  if (!VIEWS.some(([v]) => v === view)) view = "inbox"
  const q = params.get("q")?.trim() || undefined
  const token = params.get("page") || undefined
  const at = Math.max(1, Number(params.get("at")) || 1)
  const load = () => loadThreads(inboxId, viewLabel(view), q, token)
  const [box, data] = await Promise.all([api("GET", `/v0/inboxes/${enc(inboxId)}`), load().catch((err) => err)])
  const failed = data instanceof Error ? data : null
  const threads = failed ? [] : data.threads
  const own = `#/inbox/${enc(box.inbox_id)}`
  const viewName = VIEWS.find(([v]) => v === view)[1]
  const status = h("p", { role: "status", className: "muted", "data-testid": "threads-status" })
  const rows = h("div", { id: "threads" })
  const state = { q, page: token, at: at > 1 ? at : undefined }
  const hrefOf = (threadId) => threadHash(inboxId, threadId, view, state)
  const redraw = () => drawThreads(rows, { inboxId, threads, labelWords, open, hrefOf, changed: (note) => { flash(note); go(location.hash) } })
  redraw()
  const searchField = field("Search (query language, e.g. from:alice subject:invoice is:unread)", { name: "q", type: "search", value: q ?? "" })
  const describe = () => {
    if (failed) return ""
    if (threads.length === 0) return q ? `Nothing found for “${q}” in ${viewName}.` : view === "inbox" ? "Inbox: no mail yet." : `Nothing in ${viewName}.`
    const range = `${at}–${at + threads.length - 1}`
    return q ? `Results ${range} for “${q}” in ${viewName}.` : `${viewName}: threads ${range}, newest first.`
  }
  status.textContent = describe()
  const next = failed ? undefined : data.next_page_token
  const paned = wide()
  const pane = h("section", { className: "reading-pane", "aria-label": "Reading pane" },
    open ? null : h("p", { className: "muted" }, threads.length ? "Choose a thread to read it here." : ""))
  page(`${viewName} · ${box.email ?? inboxId}`,
    h("nav", { "aria-label": "This inbox", className: "tabs" }, h("a", { href: `#/compose/${enc(inboxId)}` }, "Compose"),
      h("a", { href: `${own}/lists` }, "This inbox's lists"), h("a", { href: `${own}/webhooks` }, "This inbox's webhooks"), h("a", { href: `${own}/metrics` }, "This inbox's metrics"),
      h("a", { href: `#/mail-settings/${enc(box.inbox_id)}` }, "Mail app settings")),
    h("div", { className: paned ? "mailbox reading" : "mailbox" },
      viewNav(inboxId, view),
      h("div", { className: "mailbox-list" },
        form("Search", searchField, "Search", (v) => go(inboxHash(inboxId, view, { q: v.q.trim() }))),
        q ? h("p", {}, h("a", { href: inboxHash(inboxId, view) }, `Clear the search (back to ${viewName})`)) : null,
        status,
        rows,
        h("nav", { "aria-label": "Pages", className: "pager" },
          token ? h("a", { href: inboxHash(inboxId, view, { q }) }, q ? "First results" : "Newest") : null,
          next ? h("a", { href: inboxHash(inboxId, view, { q, page: next, at: at + threads.length }) }, q ? "More results" : "Older") : null)),
      paned ? pane : null))
  if (failed) fieldProblem(searchField[1], failed)
  live(box.inbox_id, async () => {
    if (q || token) {
      status.replaceChildren(describe(), " New mail arrived: ", h("a", { href: inboxHash(inboxId, view) }, `show the newest in ${viewName}`), ".")
      return
    }
    const fresh = await load()
    threads.splice(0, threads.length, ...fresh.threads)
    redraw()
    status.textContent = describe()
  })
  const relabel = (threadId, labelsOf) => {
    const i = threads.findIndex((t) => t.thread_id === threadId)
    if (i < 0) return
    threads[i] = { ...threads[i], labels: labelsOf(threads[i].labels) }
    redraw()
  }
  return {
    pane,
    /** The open thread was marked read: its row is no longer bold. */
    read: (threadId) => relabel(threadId, (labels) => labels.filter((l) => l !== "unread")),
    /** The open thread's labels changed in the pane: its row shows them. */
    labelled: (threadId, labels) => relabel(threadId, () => labels)
  }
}

/**
 * The HTML document for the sandboxed frame: its CSP blocks every remote load unless images are
 * allowed, except the inline images' signed download URLs (`sources`: each URL's origin and exact
 * path, so a mail's own `<img src="/v0/...">` of this origin stays blocked although the frame
 * shares the page's origin to be measured).
 */
const mailDocument = (html, allowImages, sources = []) =>
  `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:${sources.map((o) => ` ${o}`).join("")}${allowImages ? " https: http:" : ""}"><base target="_blank">${html}`

const CID = /cid:([^"'\s)>]+)/gi
const cidKey = (value) => {
  let id = value
  try { id = decodeURIComponent(value) } catch { /* kept as written */ }
  return id.replace(/^<|>$/g, "").trim().toLowerCase()
}

/**
 * The message's inline images: each `cid:` its HTML names, matched to an attachment by its
 * `content_id`, as that attachment's signed `download_url` (spec: Attachment): a URL that is its
 * own credential, so the mail's document needs no session, and its CSP allows those URLs' origin
 * and no other until the reader allows remote images. A map from the content id to the URL.
 */
const inlineImages = async (inboxId, m) => {
  if (!m.html) return new Map()
  const wanted = new Set([...m.html.matchAll(CID)].map((x) => cidKey(x[1])))
  const parts = (m.attachments ?? []).filter((a) => a.content_id && wanted.has(cidKey(a.content_id)))
  const found = await Promise.all(parts.map((a) => api("GET", `/v0/inboxes/${enc(inboxId)}/messages/${enc(m.message_id)}/attachments/${enc(a.attachment_id)}`)
    .then((meta) => [cidKey(a.content_id), meta.download_url], () => null)))
  return new Map(found.filter(Boolean))
}

const htmlFrame = (html, inline) => {
  const shown = inline.size ? html.replace(CID, (all, id) => inline.get(cidKey(id))?.replace(/&/g, "&amp;") ?? all) : html
  const sources = [...new Set([...inline.values()].map((u) => { const url = new URL(u, location.href); return `${url.origin}${url.pathname}` }))]
  // allow-same-origin without allow-scripts: nothing in the mail runs (and the frame's own CSP and
  // the page's `script-src 'self'` would block it again), while this page may read the frame's
  // document to size it to its content. Links open outside the sandbox, in a new tab.
  const frame = h("iframe", { className: "mail", title: "HTML message", sandbox: "allow-same-origin allow-popups allow-popups-to-escape-sandbox", referrerpolicy: "no-referrer" })
  frame.srcdoc = mailDocument(shown, false, sources)
  fitToContent(frame)
  const allow = h("button", { type: "button", onclick: () => { frame.srcdoc = mailDocument(shown, true, sources); allow.remove() } }, "Show remote images")
  return [allow, frame]
}

/**
 * Makes the frame as tall as its document: on each load (and "Show remote images" loads it
 * again), when an image in it loads, and when the frame's width changes (text wraps anew). The
 * frame is first made 0 px tall so a document shorter than the last height is measured as it is.
 */
const fitToContent = (frame) => {
  const fit = () => {
    const root = frame.contentDocument?.documentElement
    if (!root) return
    frame.style.height = "0px"
    // The frame's border is inside its height (box-sizing: border-box): added to the content's.
    frame.style.height = `${root.scrollHeight + frame.offsetHeight - frame.clientHeight}px`
  }
  frame.addEventListener("load", () => {
    fit()
    // Image loads do not bubble: caught on their way down, at the document.
    frame.contentDocument?.addEventListener("load", fit, true)
  })
  let width = 0
  new ResizeObserver(([entry]) => {
    if (entry.contentRect.width === width) return
    width = entry.contentRect.width
    fit()
  }).observe(frame)
}

/**
 * Labels, each with a remove button, and a field to add one; `names` are the accessible names
 * (the thread's and each message's controls differ), `change` sends add_labels or remove_labels.
 */
const labelControls = (names, labels, change) => [
  h("ul", { className: "chips", "aria-label": names.list }, labels.map((l) => h("li", { className: "label" }, labelWords(l),
    // The service's own labels cannot be removed (400): no button offers it.
    FIXED_LABELS.has(l) ? null : button("×", () => change({ remove_labels: [l] }), { className: "chip-x", "aria-label": names.remove(l) })))),
  form(names.form, field(names.field, { name: "label", required: true }), names.submit, (v) => change({ add_labels: [v.label.trim()] }))
]

const THREAD_LABELS = { list: "Thread labels", remove: (l) => `Remove label ${l}`, form: "Add a label", field: "New label", submit: "Add label" }
const messageLabels = (n) => ({ list: `Labels of message ${n}`, remove: (l) => `Remove ${l} from message ${n}`, form: `Label message ${n}`, field: `Add a label to message ${n}`, submit: `Add to message ${n}` })

const messageView = (inboxId, m, n, labels, inline = new Map()) => messageArticle({
  inboxId, message: m, n, labels,
  html: m.html ? () => htmlFrame(m.html, inline) : undefined,
  // Images shown inline are not listed again as attachments.
  files: (m.attachments ?? []).filter((a) => !(a.content_id && inline.has(cidKey(a.content_id))))
})

/**
 * A thread: its messages oldest first, each with its own labels (PATCH on the message), and
 * the thread's labels (PATCH on the thread: every message in it). After either change the
 * page reads the thread again and redraws every label in place, since one changes the other,
 * and puts focus back in the field of the labels just changed.
 */
export const thread = async (inboxId, threadId, params = new URLSearchParams()) =>
  drawThread(inboxId, await loadThread(inboxId, threadId), undefined, listHash(inboxId, params))

/** The list a thread was opened from (its address's `view`, `q`, `page`, `at`), for "Back to the inbox". */
const listHash = (inboxId, params) =>
  inboxHash(inboxId, params.get("view") ?? "inbox", { q: params.get("q"), page: params.get("page"), at: params.get("at") })

/**
 * The inbox's list with the thread open in the reading pane beside it (a wide screen): the list
 * keeps the view and search the thread was opened from (the address's `view`, `q`, `page`),
 * both read at once.
 */
export const readingPane = async (inboxId, threadId, params) => {
  const [list, loaded] = await Promise.all([inbox(inboxId, params.get("view") ?? "inbox", params, threadId), loadThread(inboxId, threadId)])
  await drawThread(inboxId, loaded, list)
}

/** The thread, each message in full, and each message's inline images. */
const loadThread = async (inboxId, threadId) => {
  const t = await api("GET", `/v0/inboxes/${enc(inboxId)}/threads/${enc(threadId)}`)
  // The thread lists its messages in summary form: the bodies come from each full message.
  const summaries = [...(t.messages ?? [])].sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)))
  const messages = await Promise.all(summaries.map((m) => m.text !== undefined || m.html !== undefined ? m
    : api("GET", `/v0/inboxes/${enc(inboxId)}/messages/${enc(m.message_id)}`)))
  const inline = await Promise.all(messages.map((m) => inlineImages(inboxId, m)))
  return { t, messages, inline }
}

/** Draws a loaded thread as its own page, or into the reading pane of `list` (see `inbox`). */
const drawThread = async (inboxId, { t, messages, inline }, list = undefined, back = `#/inbox/${enc(inboxId)}`) => {
  const threadId = t.thread_id
  const path = `/v0/inboxes/${enc(inboxId)}/threads/${enc(threadId)}`
  const unread = messages.filter((m) => m.labels?.includes("unread")).map((m) => m.message_id)
  // Opening the thread marks its messages read (below): `unread` is not shown on the first drawing.
  const read = (labels) => (labels ?? []).filter((l) => !unread.length || l !== "unread")
  const threadBox = h("section", { "aria-label": "Labels", id: "labels" })
  const messageBoxes = new Map(messages.map((m) => [m.message_id, h("div", { className: "msg-labels" })]))
  const draw = (fresh) => {
    threadBox.replaceChildren(h("h2", {}, "Thread labels"), h("p", { className: "muted" }, "Added to or removed from every message of the thread."),
      ...labelControls(THREAD_LABELS, fresh.labels, change(threadBox, path)))
    messages.forEach((m, i) => {
      const box = messageBoxes.get(m.message_id)
      const labels = fresh.messages?.find((x) => x.message_id === m.message_id)?.labels ?? m.labels ?? []
      box.replaceChildren(...labelControls(messageLabels(i + 1), labels, change(box, `/v0/inboxes/${enc(inboxId)}/messages/${enc(m.message_id)}`)))
    })
  }
  const change = (box, target) => async (body) => {
    await api("PATCH", target, body)
    const fresh = await api("GET", path)
    draw(fresh)
    // The list beside the pane shows the thread's labels as they are now, without reading it again.
    list?.labelled(threadId, fresh.labels)
    box.querySelector("input")?.focus()
  }
  draw({ labels: read(t.labels), messages: messages.map((m) => ({ message_id: m.message_id, labels: read(m.labels) })) })
  const title = t.subject || "(no subject)"
  const body = [triage(inboxId, t, read(t.labels), path, list !== undefined),
    messages.map((m, i) => messageView(inboxId, m, i + 1, messageBoxes.get(m.message_id), inline[i])), threadBox]
  if (list) {
    document.title = `${title} · Inbox`
    list.pane.replaceChildren(h("h2", {}, title), ...body.flat())
  } else {
    page(title, h("p", {}, h("a", { href: back }, "← Back to the inbox")), ...body)
  }
  if (unread.length) {
    await api("POST", `/v0/inboxes/${enc(inboxId)}/messages/batch-update`, { message_ids: unread, remove_labels: ["unread"] }).then(() => list?.read(threadId), () => {})
  }
}

/**
 * The thread's triage buttons, each a label change on the whole thread (PATCH): archive
 * (`archived`, which the Inbox view leaves out) or back to the inbox, trash or restore, spam or
 * not spam, unread or read. A change that takes the thread out of the view goes back to the
 * list, with a note saying where it went; the others redraw the thread (in the reading pane,
 * the list beside it too: the change may move the thread in or out of it).
 */
const triage = (inboxId, t, labels, path, paned) => {
  const has = (l) => labels.includes(l)
  const where = has("trash") ? "trash" : has("spam") ? "spam" : has("archived") ? "archived" : "inbox"
  const act = (text, body, note, leave) => button(text, async () => {
    await api("PATCH", path, body)
    if (leave) { flash(note); go(inboxHash(inboxId, where)) } else if (paned) { flash(note); go(location.hash) } else { await thread(inboxId, t.thread_id); notice(note) }
  })
  return h("div", { role: "group", "aria-label": "Thread actions", className: "triage" },
    has("archived") ? act("Move to Inbox", { remove_labels: ["archived"] }, "Moved to the Inbox.", false) : act("Archive", { add_labels: ["archived"] }, "Archived: it is in Archived.", true),
    has("trash") ? act("Restore", { remove_labels: ["trash"] }, "Restored from the Trash.", false) : act("Move to Trash", { add_labels: ["trash"] }, "Moved to the Trash.", true),
    has("spam") ? act("Not spam", { remove_labels: ["spam"] }, "Marked as not spam.", false) : act("Report spam", { add_labels: ["spam"] }, "Reported as spam: it is in Spam.", true),
    has("unread") ? act("Mark read", { remove_labels: ["unread"] }, "Marked read.", false) : act("Mark unread", { add_labels: ["unread"] }, "Marked unread.", true))
}

const inboxChoice = async (label = "From inbox") => {
  const all = (await api("GET", "/v0/inboxes")).inboxes
  return select(label, "inbox_id", all.map((i) => [i.inbox_id, i.email ?? i.inbox_id]))
}

/**
 * Files dropped anywhere on the form join those of its file field (kept there, so Send reads
 * one list, and the field says how many); the form is outlined while files are dragged over it.
 */
const dropFiles = (formEl, input) => {
  const carriesFiles = (e) => e.dataTransfer?.types.includes("Files")
  formEl.addEventListener("dragover", (e) => { if (carriesFiles(e)) { e.preventDefault(); formEl.classList.add("dropping") } })
  formEl.addEventListener("dragleave", () => formEl.classList.remove("dropping"))
  formEl.addEventListener("drop", (e) => {
    formEl.classList.remove("dropping")
    if (!e.dataTransfer?.files.length) return
    e.preventDefault()
    const all = new DataTransfer()
    for (const f of [...input.files, ...e.dataTransfer.files]) all.items.add(f)
    input.files = all.files
    notice(`Attached: ${[...all.files].map((f) => f.name).join(", ")}.`)
  })
}

/** A file's bytes as base64 (FileReader: no spread of a large file's bytes into one call). */
const base64Of = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader()
  reader.onload = () => resolve(String(reader.result).replace(/^[^,]*,/, ""))
  reader.onerror = () => reject(reader.error)
  reader.readAsDataURL(file)
})

const addressOf = (mailbox) => (/<([^>]+)>/.exec(mailbox)?.[1] ?? mailbox).trim().toLowerCase()

/**
 * Who a reply goes to, as the API will address it (mail/compose.ts): the parent's Reply-To or
 * sender (or, for a message this inbox sent, its recipients); reply all adds the parent's To
 * and Cc. This inbox's own address is left out. Shown on the form; the API decides.
 */
const replyRecipients = (parent, mode, own) => {
  const self = (a) => addressOf(a) === own
  const replyTo = parent.headers?.["reply-to"]
  const sentByUs = self(parent.from ?? "")
  const primary = sentByUs ? parent.to ?? [] : replyTo ? [replyTo] : [parent.from]
  const seen = new Set()
  const keep = (list) => list.filter((a) => a && !self(a) && !seen.has(addressOf(a)) && seen.add(addressOf(a)))
  const to = keep(primary)
  const cc = mode === "reply-all" ? keep([...(sentByUs ? [] : parent.to ?? []), ...(parent.cc ?? [])]) : []
  return { to, cc }
}

/** The original, quoted as mail clients quote it: a line saying who wrote it, each line after "> ". */
const quoteOf = (parent) => {
  const text = (parent.text ?? parent.extracted_text ?? parent.preview ?? "").replace(/\s+$/, "")
  return `On ${new Date(parent.timestamp).toLocaleString()}, ${parent.from} wrote:\n${text.split(/\r?\n/).map((l) => `> ${l}`).join("\n")}`
}

/**
 * Compose, and the forms that answer a message: reply and reply all show their recipients
 * (and take more as Cc), the subject with "Re: ", and the original quoted below the new text
 * (sent with it unless unticked); forward asks for recipients and shows the subject with
 * "Fwd: " (the API quotes the original and carries its attachments).
 */
export const compose = async (inboxId, mode, messageId) => {
  const answering = mode === "reply" || mode === "reply-all"
  const [choice, parent, box] = await Promise.all([
    inboxId ? [] : inboxChoice(),
    mode && inboxId && messageId ? api("GET", `/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}`) : null,
    inboxId ? api("GET", `/v0/inboxes/${enc(inboxId)}`) : null
  ])
  const own = (box?.email ?? "").toLowerCase()
  const bare = (parent?.subject ?? "").replace(/^\s*((re|aw|sv|fwd?|wg)\s*:\s*)+/i, "")
  const subject = !parent ? "" : answering ? `Re: ${bare}` : `Fwd: ${bare}`
  const recipients = answering && parent ? replyRecipients(parent, mode, own) : null
  const quote = answering && parent ? quoteOf(parent) : null
  const fields = [
    choice,
    recipients ? h("dl", { className: "envelope", "aria-label": "Recipients" },
      h("dt", {}, "To"), h("dd", { "data-testid": "reply-to" }, recipients.to.join(", ") || "—"),
      recipients.cc.length ? [h("dt", {}, "Cc"), h("dd", { "data-testid": "reply-cc" }, recipients.cc.join(", "))] : null) : null,
    answering ? field("Add recipients (Cc, comma-separated)", { name: "cc" }) : field("To (comma-separated)", { name: "to", required: true }),
    mode ? [] : field("Cc", { name: "cc" }),
    field("Bcc (not shown to the others)", { name: "bcc" }),
    field("Subject", { name: "subject", value: subject }),
    field("Message", { name: "text", multiline: true, required: true }),
    quote ? [h("label", { className: "check" }, h("input", { type: "checkbox", name: "quote", checked: true }), "Include the original, quoted"),
      h("pre", { className: "quote", "aria-label": "Quoted original" }, quote)] : null,
    mode === "forward" && parent ? h("details", {}, h("summary", {}, "The forwarded message (added below your text, with its attachments)"), h("pre", { className: "quote" }, parent.text ?? parent.preview ?? "")) : null,
    // The API's forward carries the original's attachments (spec: forward): the form says which.
    mode === "forward" && parent?.attachments?.length ? [h("h2", { id: "forwarded-files" }, "Forwarded attachments"),
      h("ul", { className: "attachments", "aria-labelledby": "forwarded-files" }, parent.attachments.map((a) => h("li", {}, `${a.filename ?? a.attachment_id} (${a.size} bytes)`)))] : null,
    h("label", { for: "files" }, "Attachments (or drop files on this form)"), h("input", { id: "files", type: "file", name: "files", multiple: true })
  ].flat(2).filter(Boolean)
  const title = mode === "reply" ? "Reply" : mode === "reply-all" ? "Reply all" : mode === "forward" ? "Forward" : "Compose"
  let keeper = null
  page(title, form(title, fields, "Send", async (v, el) => {
    const target = inboxId ?? v.inbox_id
    keeper?.sending()
    const attachments = await Promise.all([...el.querySelector("#files").files].map(async (f) => ({
      filename: f.name, content_type: f.type || "application/octet-stream", content: await base64Of(f)
    })))
    const text = quote && v.quote ? `${v.text.replace(/\s+$/, "")}\n\n${quote}\n` : v.text
    const body = { text, ...(attachments.length ? { attachments } : {}) }
    if (v.to) body.to = list(v.to)
    if (v.cc) body.cc = list(v.cc)
    if (v.bcc) body.bcc = list(v.bcc)
    if (v.subject && v.subject !== subject) body.subject = v.subject
    else if (!mode && v.subject) body.subject = v.subject
    const base = `/v0/inboxes/${enc(target)}/messages`
    const sent = await api("POST", mode ? `${base}/${enc(messageId)}/${mode}` : `${base}/send`, body).catch((err) => { keeper?.failed(); throw err })
    await keeper?.sent()
    go(`#/thread/${enc(target)}/${enc(sent.thread_id)}`)
  }, { busy: "Sending…" }))
  const formEl = $("main").querySelector("form")
  dropFiles(formEl, formEl.querySelector("#files"))
  const inboxOf = () => inboxId ?? formEl.elements.namedItem("inbox_id")?.value
  suggestRecipients(formEl, inboxOf, ["to", "cc", "bcc"])
  // Forward has no draft form in the API (a draft answers with reply_to_message_id only).
  if (mode !== "forward") {
    keeper = await keepAsDraft(formEl, `${inboxId ?? ""}/${mode ?? "new"}/${messageId ?? ""}`, inboxOf,
      answering ? { message_id: messageId, all: mode === "reply-all" } : undefined)
  }
}

// ---------- drafts and scheduled sends ----------

/** A `datetime-local` value (the reader's time zone) as an ISO timestamp, and back. */
const toIso = (local) => local ? new Date(local).toISOString() : undefined
const toLocal = (iso) => { if (!iso) return ""; const d = new Date(iso); return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16) }

const draftPath = (d) => `/v0/inboxes/${enc(d.inbox_id)}/drafts/${enc(d.draft_id)}`
const draftFields = (d = {}) => [
  ...field("To (comma-separated)", { name: "to", value: (d.to ?? []).join(", ") }),
  ...field("Subject", { name: "subject", value: d.subject ?? "" }),
  ...field("Message", { name: "text", multiline: true, value: d.text ?? "" }),
  ...field("Send at (leave empty to keep it a draft)", { name: "send_at", type: "datetime-local", value: toLocal(d.send_at) })
]
const draftBody = (v, clearing) => {
  const body = {}
  for (const k of ["subject", "text"]) if (v[k] || clearing) body[k] = v[k] || null
  if (v.to || clearing) body.to = v.to ? list(v.to) : null
  if (v.send_at) body.send_at = toIso(v.send_at)
  else if (clearing) body.send_at = null
  return body
}

const sendDraft = async (d) => { const sent = await api("POST", `${draftPath(d)}/send`, {}); go(`#/thread/${enc(d.inbox_id)}/${enc(sent.thread_id)}`) }
const status = (d) => d.send_status === "scheduled" ? `scheduled for ${when(d.send_at)}` : d.send_status ?? "draft"

export const drafts = async (params = new URLSearchParams()) => {
  // An inbox's drafts (its sidebar's Drafts), or only those scheduled (Scheduled); else every draft.
  const inboxId = params.get("inbox")
  const scheduled = params.get("scheduled") === "1"
  // Both at once: the inbox choice of the form does not depend on the drafts.
  const [all, choice] = await Promise.all([api("GET", inboxId ? `/v0/inboxes/${enc(inboxId)}/drafts` : "/v0/drafts"), inboxChoice("Inbox")])
  const data = { ...all, drafts: scheduled ? all.drafts.filter((d) => d.send_status === "scheduled") : all.drafts }
  page(scheduled ? "Scheduled" : "Drafts",
    inboxId ? h("p", {}, h("a", { href: `#/inbox/${enc(inboxId)}` }, "← Back to the inbox")) : null,
    h("h2", {}, "New draft"),
    form("New draft", [...choice, ...draftFields()], "Save draft", async (v) => {
      await api("POST", `/v0/inboxes/${enc(v.inbox_id)}/drafts`, draftBody(v, false))
      drafts(params)
    }),
    h("h2", {}, "Drafts and scheduled sends"),
    data.drafts.length === 0 ? h("p", { className: "muted" }, "No drafts.") : table("Drafts", ["Subject", "To", "Inbox", "Status", "Actions"], data.drafts.map((d) => [
      h("a", { href: `#/draft/${enc(d.inbox_id)}/${enc(d.draft_id)}` }, d.subject || "(no subject)"),
      (d.to ?? []).join(", "), d.inbox_id, status(d),
      [d.send_status === "scheduled" ? button("Unschedule", async () => { await api("PATCH", draftPath(d), { send_at: null }); drafts(params) }, { "aria-label": `Unschedule ${d.subject ?? d.draft_id}` }) : null,
        button("Send now", () => sendDraft(d), { "aria-label": `Send now: ${d.subject ?? d.draft_id}` }),
        button("Delete", async () => { await api("DELETE", draftPath(d)); drafts(params) }, { "aria-label": `Delete draft ${d.subject ?? d.draft_id}` })]
    ])))
}

export const draft = async (inboxId, draftId) => {
  const d = await api("GET", `/v0/inboxes/${enc(inboxId)}/drafts/${enc(draftId)}`)
  page(d.subject || "(no subject)",
    h("p", {}, h("a", { href: "#/drafts" }, "← All drafts"), " · ", h("span", { "data-testid": "draft-status" }, status(d))),
    form("Edit draft", draftFields(d), "Save", async (v) => {
      await api("PATCH", draftPath(d), draftBody(v, true))
      await draft(inboxId, draftId)
      notice(v.send_at ? "Saved and scheduled." : "Saved.")
    }),
    d.send_status === "scheduled" ? button("Unschedule", async () => { await api("PATCH", draftPath(d), { send_at: null }); await draft(inboxId, draftId) }) : null,
    button("Send now", () => sendDraft(d)),
    button("Delete", async () => { await api("DELETE", draftPath(d)); go("#/drafts") }))
}
