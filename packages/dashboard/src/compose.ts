/**
 * What the compose form does while a person writes: it keeps what they type as a draft of
 * the drafts API (created once with a `client_id`, so a retry makes no second draft; then
 * changed as they type, a moment after they stop, and at once when they leave the page), so
 * nothing typed is lost on navigation: opening the same form again fills it from that draft.
 * A sent message deletes its draft. It also suggests recipients from the inbox's past
 * correspondents as an address is typed.
 */
import { client, ok } from "./client.ts"

type Fields = { to?: Array<string>; cc?: Array<string>; bcc?: Array<string>; subject?: string; text?: string }

const list = (value: string) => value.split(",").map((x) => x.trim()).filter(Boolean)
const text = (form: HTMLFormElement, name: string) => {
  const control = form.elements.namedItem(name)
  return control instanceof HTMLInputElement || control instanceof HTMLTextAreaElement || control instanceof HTMLSelectElement ? control.value : ""
}
const fieldsOf = (form: HTMLFormElement): Fields => {
  const out: Fields = {}
  for (const name of ["to", "cc", "bcc"] as const) { const v = list(text(form, name)); if (v.length) out[name] = v }
  for (const name of ["subject", "text"] as const) { const v = text(form, name); if (v) out[name] = v }
  return out
}

interface Saved { readonly inbox_id: string; readonly draft_id: string; readonly client_id: string }

const SAVE_AFTER_MS = 800

/**
 * Keeps `form` as a draft. `key` names this form (its inbox, mode and message), under which the
 * draft is remembered for the session; `inboxOf` says the inbox (the form's choice, or the
 * page's); `reply` the message answered; `say` shows how the saving goes. Returns `sent`, to
 * call once the message is sent.
 */
export const keepAsDraft = async (form: HTMLFormElement, key: string, inboxOf: () => string, reply: { readonly message_id: string; readonly all: boolean } | undefined,
  say: (text: string) => void) => {
  const storeKey = `inbox-compose:${key}`
  let saved: Saved | null = null
  try { saved = JSON.parse(sessionStorage.getItem(storeKey) ?? "null") as Saved | null } catch { saved = null }
  // Filled from the draft this form left, unless it was sent or deleted since.
  if (saved) {
    const draft = await client.GET("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { params: { path: { inbox_id: saved.inbox_id, draft_id: saved.draft_id } } })
    if (draft.data) {
      const d = draft.data
      const set = (name: string, value: string | undefined) => {
        const control = form.elements.namedItem(name)
        if (value && (control instanceof HTMLInputElement || control instanceof HTMLTextAreaElement)) control.value = value
      }
      set("to", d.to?.join(", ")); set("cc", d.cc?.join(", ")); set("bcc", d.bcc?.join(", ")); set("subject", d.subject); set("text", d.text)
      say("Your unsent text was kept as a draft.")
    } else {
      saved = null
      sessionStorage.removeItem(storeKey)
    }
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  let last = JSON.stringify(fieldsOf(form))
  let sending = false
  let running: Promise<void> = Promise.resolve()
  const save = () => {
    clearTimeout(timer)
    const fields = fieldsOf(form)
    const now = JSON.stringify(fields)
    if (sending || now === last || (!saved && now === "{}")) return running
    last = now
    running = running.then(async () => {
      if (saved) {
        const clearing = { to: fields.to ?? null, cc: fields.cc ?? null, bcc: fields.bcc ?? null, subject: fields.subject ?? null, text: fields.text ?? null }
        ok(await client.PATCH("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { params: { path: { inbox_id: saved.inbox_id, draft_id: saved.draft_id } }, body: clearing as never }))
      } else {
        const inbox_id = inboxOf()
        const client_id = crypto.randomUUID()
        const made = ok(await client.POST("/v0/inboxes/{inbox_id}/drafts", {
          params: { path: { inbox_id } },
          body: { ...fields, client_id, ...(reply ? { reply_to_message_id: reply.message_id, reply_all: reply.all } : {}) }
        }))
        saved = { inbox_id, draft_id: made.draft_id, client_id }
        sessionStorage.setItem(storeKey, JSON.stringify(saved))
      }
      say(`Draft saved at ${new Date().toLocaleTimeString()}.`)
    }).catch(() => { say("The draft could not be saved just now; it is tried again as you type."); last = "" })
    return running
  }
  form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(save, SAVE_AFTER_MS) })
  // Leaving the form (another page, a reload): saved at once, not after the pause.
  const leave = () => { void save() }
  addEventListener("hashchange", leave, { once: true })
  addEventListener("pagehide", leave, { once: true })
  return {
    /** Before sending: no more saves. */
    sending: () => { sending = true; clearTimeout(timer) },
    /** The message left: its draft is deleted and forgotten. */
    sent: async () => {
      await running
      if (saved) await client.DELETE("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { params: { path: { inbox_id: saved.inbox_id, draft_id: saved.draft_id } } }).catch(() => undefined)
      sessionStorage.removeItem(storeKey)
      saved = null
    },
    /** The send failed: saving goes on. */
    failed: () => { sending = false }
  }
}

/**
 * Suggestions for the address fields (`names`) of `form`: as the last address of a field is
 * typed, the inbox's past correspondents that match, offered in a <datalist> (each option is
 * the field's earlier addresses followed by the suggested one), the form's own `datalist`.
 */
export const suggestRecipients = (form: HTMLFormElement, inboxOf: () => string, names: ReadonlyArray<string>, datalist: HTMLDataListElement) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  for (const name of names) {
    const control = form.elements.namedItem(name)
    if (!(control instanceof HTMLInputElement)) continue
    control.setAttribute("list", datalist.id)
    control.setAttribute("autocomplete", "off")
    control.addEventListener("input", () => {
      clearTimeout(timer)
      timer = setTimeout(async () => {
        const at = control.value.lastIndexOf(",")
        const before = at < 0 ? "" : `${control.value.slice(0, at + 1)} `
        const q = control.value.slice(at + 1).trim()
        if (q.length < 2) return
        const { data } = await client.GET("/v0/inboxes/{inbox_id}/correspondents", { params: { path: { inbox_id: inboxOf() }, query: { q, limit: 8 } } })
        // A failed lookup offers nothing: suggestions are a help, never in the way.
        if (data === undefined) return
        datalist.replaceChildren(...data.correspondents.map((c) => {
          const option = document.createElement("option")
          option.value = `${before}${c.address}`
          if (c.name) option.label = `${c.name} <${c.address}>`
          return option
        }))
      }, 200)
    })
  }
}
