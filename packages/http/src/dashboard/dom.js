// The dashboard's few shared pieces: the `h` DOM helper (text is never parsed as HTML, so mail
// content cannot inject markup), labelled fields, forms, the API call that sends the CSRF
// token and shows errors in the spec's words with their `fix`, and the signed-in state.

/** The signed-in person (`GET /auth/me`), or null. One object, so every module sees changes. */
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

// GETs a page is about to make, started beside `GET /auth/me` on the first load rather than
// after it; each is used once, by the page's own `api` call, and the rest dropped after the page.
const early = new Map()
export const prefetch = (...paths) => {
  for (const p of paths) early.set(p, fetch(p, { headers: { accept: "application/json" }, credentials: "same-origin" }))
}
export const dropPrefetched = () => early.clear()

/** Calls the API; state-changing requests send the CSRF token. Errors are shown in the spec's words. */
export const api = async (method, path, body, { text = false, quiet = false } = {}) => {
  showError(null)
  const headers = { accept: text ? "text/plain, application/json" : "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET" && session.me?.csrf_token) headers["x-csrf-token"] = session.me.csrf_token
  const started = method === "GET" && !text ? early.get(path) : undefined
  early.delete(path)
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
 * in plain words, where the person is looking; the banner at the top is cleared.
 */
export const fieldProblem = (control, err) => {
  showError(null)
  const id = `${control.id || `c${fieldIds++}`}-problem`
  control.id ||= id.replace(/-problem$/, "")
  document.getElementById(id)?.remove()
  const note = h("p", { id, className: "field-error", role: "alert" }, plainWords(err.body ?? { message: err.message }))
  control.setAttribute("aria-invalid", "true")
  control.setAttribute("aria-describedby", id)
  control.after(note)
  return note
}

/** Clears what fieldProblem wrote beside a control. */
export const clearFieldProblem = (control) => {
  const id = control.getAttribute("aria-describedby")
  if (id) document.getElementById(id)?.remove()
  control.removeAttribute("aria-invalid")
  control.removeAttribute("aria-describedby")
}

/** An error body in plain words: each field's issue (without API paths) and the fix. */
export const plainWords = (body) => {
  const issues = (body.errors ?? []).filter((e) => e.message).map((e) => e.message)
  const main = issues.length ? issues.join(" ") : body.message ?? "Something went wrong."
  return `${main}${/[.!?]$/.test(main) ? "" : "."}`
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
      try { await action(formValues(el), el) } catch (err) { if (!err.body) showError({ message: err.message }) } finally {
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
