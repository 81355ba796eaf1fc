// The mail pages written without a framework: compose / reply / reply all / forward, and
// drafts with scheduled sends. The inbox, its reading pane and threads are Preact components
// (inbox.tsx, thread.tsx, message.tsx), exported from here too.
import { keepAsDraft, suggestRecipients } from "./compose.ts"
import { $, api, button, enc, field, form, go, h, list, notice, page, select, table, when } from "./dom.js"

export { closeSocket, prefetchPage, wide } from "./mailbox.ts"
export { inbox, readingPane, thread } from "./inbox.tsx"

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
