// The dashboard's few shared pieces: the `h` DOM helper (text is never parsed as HTML, so mail
// content cannot inject markup), labelled fields, forms, the API call that sends the CSRF
// token and shows errors in the spec's words with their `fix`, and the signed-in state.

/** The signed-in person (`GET /auth/me`), or null. One object, so every module sees changes. */
/** @type {{ me: any }} */
export const session = { me: null }
export const $ = (id) => document.getElementById(id)

/** Makes an element: h("button", { onclick }, "text", child…). */
export const h = (tag, props = {}, ...children) => {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v)
    else if (k in el && k !== "list") el[k] = v
    else el.setAttribute(k, v === true ? "" : v)
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

/** An input with its label (every control is labelled). */
let fieldIds = 0
export const field = (label, props = {}) => {
  const id = `f${fieldIds++}`
  const { multiline, ...rest } = props
  const control = multiline ? h("textarea", { id, ...rest }) : h("input", { id, type: "text", ...rest })
  return [h("label", { for: id }, label), control]
}

/** A labelled select of `[value, text]` options (or plain values). */
export const select = (label, name, options, value) => {
  const id = `f${fieldIds++}`
  return [h("label", { for: id }, label), h("select", { id, name }, options.map((o) => {
    const [v, text] = Array.isArray(o) ? o : [o, o]
    return h("option", { value: v, selected: v === value }, text)
  }))]
}

/**
 * The spec's error body in words: its message, each field issue when there are several (one
 * is already in the message), then its fix.
 */
export const said = (body) => {
  const issues = body.errors?.length > 1 ? ` (${body.errors.map((e) => `${(e.path ?? []).join(".")}: ${e.message}`).join("; ")})` : ""
  return `${body.message ?? "Something went wrong."}${issues}${body.fix ? ` — ${body.fix}` : ""}`
}

export const showError = (body) => {
  $("error").className = ""
  $("error").replaceChildren(body ? said(body) : "")
}

// The first load's early GETs live in early.ts (index.html starts them before this script).
import { takeEarly } from "./early.ts"

/** Calls the API; state-changing requests send the CSRF token. Errors are shown in the spec's words. */
export const api = async (method, path, body, { text = false, quiet = false } = {}) => {
  showError(null)
  const headers = { accept: text ? "text/plain, application/json" : "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET" && session.me?.csrf_token) headers["x-csrf-token"] = session.me.csrf_token
  const started = method === "GET" && !text ? takeEarly(path) : undefined
  const res = await (started ?? fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) }))
  const raw = await res.text()
  if (res.ok && text) return raw
  const data = raw ? JSON.parse(raw) : {}
  if (!res.ok) {
    if (!quiet) showError(data)
    const error = new Error(data.message ?? res.statusText)
    error.body = data
    error.status = res.status
    throw error
  }
  return data
}

/**
 * An API failure written beside the control it is about (`aria-describedby`, `aria-invalid`),
 * in plain words, where the person is looking.
 */
export const fieldProblem = (control, err, words) => {
  control.id ||= `c${fieldIds++}`
  const id = `${control.id}-problem`
  document.getElementById(id)?.remove()
  const note = h("p", { id, className: "field-error", role: "alert", "data-code": err.body?.code ?? "" }, words ?? plainWords(err.body ?? { message: err.message }))
  control.setAttribute("aria-invalid", "true")
  control.setAttribute("aria-describedby", id)
  control.after(note)
  return note
}

/** Clears what fieldProblem wrote in a form. */
const clearProblems = (el) => {
  for (const note of el.querySelectorAll(".field-error")) note.remove()
  for (const control of el.querySelectorAll("[aria-invalid]")) { control.removeAttribute("aria-invalid"); control.removeAttribute("aria-describedby") }
}

// The API's field names (error paths such as `to.0`, `totp_code`) as the form's words.
const FIELD_WORDS = {
  to: "To", cc: "Cc", bcc: "Bcc", subject: "Subject", text: "Message", html: "Message", totp_code: "Two-step code", code: "Code",
  password: "Password", new_password: "New password", current_password: "Current password", email: "Email", username: "Username",
  add_labels: "Label", remove_labels: "Label", url: "URL", domain: "Domain name", name: "Name", permissions: "Permissions",
  q: "Search", send_at: "Send at", client_id: "Client ID", entry: "Address or domain", reason: "Reason", event_types: "Event types",
  headers: "Headers", display_name: "Display name", attachments: "Attachments", token: "Link", role: "Role"
}
const ITEM_WORDS = { to: "address", cc: "address", bcc: "address", add_labels: "label", remove_labels: "label", permissions: "permission", attachments: "attachment" }
// The control of a form that holds an API field, when its name differs.
const CONTROL_OF = { totp_code: "code", add_labels: "label", remove_labels: "label" }

/** Errors without a field path, in plain words, and the field they are about (a form shows them there). */
const CODE_WORDS = {
  invalid_credentials: ["The email or password is wrong.", "password"],
  totp_required: ["This account has two-step verification: enter the code of your authenticator app, or a recovery code.", "code"],
  invalid_totp: ["That two-step code is wrong or was already used: enter the code your app shows now, or an unused recovery code.", "code"],
  invalid_code: ["That code is wrong: enter the code your authenticator app shows now.", "code"],
  too_many_attempts: ["Too many wrong tries: wait a while, then try again."],
  rate_limited: ["Too many requests just now: wait a moment, then try again."],
  email_unverified: ["Verify your email address first: follow the link we mailed you."],
  email_not_verified: ["Verify your email address first: follow the link we mailed you."],
  csrf_failed: ["This page is out of date: reload it and try again."],
  missing_permission: ["Your role or key is not allowed to do this."],
  recipient_blocked: ["A recipient is blocked by this inbox's send lists (a block entry, or missing from a non-empty allow list).", "to"],
  recipient_suppressed: ["A recipient bounced or complained before, so mail to them is suppressed: remove them, or delete the suppression.", "to"],
  too_many_recipients: ["At most 50 different recipients across To, Cc and Bcc.", "to"],
  message_rejected: ["The mail provider refused the message, for example an address that does not exist.", "to"],
  payload_too_large: ["The attachments are too large: 6 MB together at most.", "files"],
  inbox_paused: ["This inbox is paused: resume it on the Inboxes page to send."],
  reserved_username: ["That username is reserved: choose another.", "username"],
  invalid_webhook_url: ["The URL must be public https (not a private or internal address).", "url"],
  invalid_token: ["This link is invalid, already used or expired."],
  already_member: ["That person is already a member.", "email"],
  last_owner: ["The organization needs an owner: make another member an owner first."]
}

const fieldWords = (path) => {
  const [first = "", index] = path
  const word = FIELD_WORDS[first] ?? first.replaceAll("_", " ")
  return index !== undefined && /^\d+$/.test(index) ? `${word} (${ITEM_WORDS[first] ?? "item"} ${Number(index) + 1})` : word
}

/** One field's issue as a sentence: "To (address 1) is not an email address." */
const issueWords = (path, message = "") => {
  const name = fieldWords(path ?? [])
  const text = message.replace(/\.$/, "")
  if (/^Expected an email address$/i.test(text) || /^Invalid email address/i.test(text)) return `${name} is not an email address.`
  if (/^Missing key$/i.test(text) || /is missing$/i.test(text)) return `${name} is required.`
  return `${name}: ${text}.`
}

/** An error body in plain words: each field's issue as a sentence, or the code's own sentence, else the API's message; then its fix. */
export const plainWords = (body) => {
  if (body.code === "validation_error" && body.errors?.length) return body.errors.map((e) => issueWords(e.path, e.message)).join(" ")
  const known = CODE_WORDS[body.code]?.[0]
  const main = known ?? body.message ?? "Something went wrong."
  return `${main}${/[.!?]$/.test(main) ? "" : "."}${!known && body.fix ? ` ${body.fix}` : ""}`
}

/**
 * A failed submit shown in the form: each field issue beside its control, a code that is
 * about one field beside that field, anything else just above the submit button.
 */
const formProblem = (el, submitButton, err) => {
  clearProblems(el)
  const body = err.body ?? { message: err.message }
  const controlOf = (name) => name && el.elements.namedItem(CONTROL_OF[name] ?? name)
  const placed = []
  if (body.code === "validation_error" && body.errors?.length) {
    for (const e of body.errors) {
      const control = controlOf(e.path?.[0])
      if (control instanceof Element) placed.push(fieldProblem(control, err, issueWords(e.path, e.message)))
    }
    if (placed.length === body.errors.length) return
  } else {
    const control = controlOf(CODE_WORDS[body.code]?.[1])
    if (control instanceof Element) return fieldProblem(control, err)
  }
  const note = h("p", { className: "field-error", role: "alert", "data-code": body.code ?? "" }, plainWords(body))
  submitButton.before(note)
}

/** An API failure shown in the page too (the banner clears on the next call): the spec's message and fix. */
export const problem = (err) => h("p", { className: "problem", "data-code": err.body?.code ?? "" }, said(err.body ?? { message: err.message }))

export const formValues = (form) => Object.fromEntries(new FormData(form).entries())

/**
 * A form whose submit calls `action(values)`; failures stay on screen as the error banner.
 * While the action runs, the form's buttons are disabled and the submit button says `busy`
 * (`aria-busy` on the form): a double click sends once, and the person sees it is under way.
 */
export const form = (label, fields, submit, action, { busy = "Working…" } = {}) => {
  const submitButton = h("button", { type: "submit", className: "primary" }, submit)
  return h("form", {
    "aria-label": label,
    onsubmit: async (e) => {
      e.preventDefault()
      const el = e.target
      if (el.getAttribute("aria-busy") === "true") return
      const buttons = [...el.querySelectorAll("button")].filter((b) => !b.disabled)
      el.setAttribute("aria-busy", "true")
      for (const b of buttons) b.disabled = true
      submitButton.textContent = busy
      clearProblems(el)
      try { await action(formValues(el), el) } catch (err) {
        if (!err.body) showError({ message: err.message })
        if (el.isConnected) formProblem(el, submitButton, err)
      } finally {
        el.removeAttribute("aria-busy")
        for (const b of buttons) b.disabled = false
        submitButton.textContent = submit
      }
    }
  }, ...fields, submitButton)
}

/** A button whose click runs `action`; an API failure shows in the banner. */
export const button = (text, action, props = {}) =>
  h("button", { type: "button", ...props, onclick: async () => { try { await action() } catch (err) { if (!err.body) showError({ message: err.message }) } } }, text)

/** A table with a caption-like accessible name, header cells and rows of cells. */
export const table = (name, heads, rows) =>
  h("table", { "aria-label": name }, h("thead", {}, h("tr", {}, heads.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c))))))

export const page = (title, ...children) => {
  document.title = `${title} · Inbox`
  $("main").replaceChildren(h("h1", {}, title), ...children.flat().filter((c) => c !== null && c !== undefined))
}

/** A secret the API answers once: shown with a copy button and a warning that it will not be shown again. */
export const secretOnce = (what, secret) => {
  const code = h("code", { "data-testid": "secret" }, secret)
  return h("div", { className: "secret", role: "status" },
    h("p", {}, `${what}: copy it now, it will not be shown again.`), code,
    button("Copy", async () => { await navigator.clipboard.writeText(secret); notice("Copied.") }, { "aria-label": `Copy the ${what.toLowerCase()}` }))
}

// A note for the next page (an action that navigates away says what it did there): shown once
// that page is drawn, since each API call clears the live region.
let flashed = null
export const flash = (message) => { flashed = message }
export const showFlash = () => { if (flashed) notice(flashed); flashed = null }

/** A success message, in the same live region as errors but styled as good news. */
export const notice = (message) => { showError({ message }); $("error").className = "ok" }
/**
 * Shows the page of `hash`. Setting the hash it already has fires no hashchange (a sign-in on
 * `#/`, where "Continue to the dashboard" lands, left the form on screen): the event is sent here.
 */
export const go = (hash) => {
  if (location.hash === hash) dispatchEvent(new HashChangeEvent("hashchange"))
  else location.hash = hash
}
export const list = (s) => (s ?? "").split(",").map((x) => x.trim()).filter(Boolean)
export const enc = encodeURIComponent
export const when = (t) => t ? new Date(t).toLocaleString() : "—"

export const refreshMe = async () => {
  try { session.me = await api("GET", "/auth/me") } catch { session.me = null; showError(null) }
  return session.me
}

/**
 * Where a failed submit's problems go in a form drawn by Preact whose controls are named
 * `names`: each field's sentence by its control's name, and the rest as one sentence (`form`
 * above places them itself, in the DOM).
 */
export const problemsByField = (body, names) => {
  const controlOf = (name) => (name && names.includes(CONTROL_OF[name] ?? name) ? CONTROL_OF[name] ?? name : null)
  const fields = {}
  if (body.code === "validation_error" && body.errors?.length) {
    const rest = []
    for (const e of body.errors) {
      const name = controlOf(e.path?.[0])
      if (name) fields[name] = [fields[name], issueWords(e.path, e.message)].filter(Boolean).join(" ")
      else rest.push(e)
    }
    return { fields, other: rest.length ? plainWords({ ...body, errors: rest }) : null }
  }
  const name = controlOf(CODE_WORDS[body.code]?.[1])
  return name ? { fields: { [name]: plainWords(body) }, other: null } : { fields, other: plainWords(body) }
}
