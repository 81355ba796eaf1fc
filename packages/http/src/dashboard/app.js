// The dashboard: a single-page client of /auth and /v0 with the session cookie. No framework
// and no build: a small `h` helper makes DOM nodes (text is never parsed as HTML, so mail
// content cannot inject markup), and hash routes pick the page. HTML mail is shown only in a
// sandboxed frame without scripts, with its own CSP that blocks remote images until allowed.

let me = null
let socket = null
const $ = (id) => document.getElementById(id)

/** Makes an element: h("button", { onclick }, "text", child…). */
const h = (tag, props = {}, ...children) => {
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
const field = (label, props = {}) => {
  const id = `f${fieldIds++}`
  const control = props.multiline ? h("textarea", { id, name: props.name, required: props.required }) : h("input", { id, type: "text", ...props })
  return [h("label", { for: id }, label), control]
}

const showError = (body) => {
  $("error").replaceChildren(body ? `${body.message ?? "Something went wrong."}${body.fix ? ` — ${body.fix}` : ""}` : "")
}

/** Calls the API; state-changing requests send the CSRF token. Errors are shown in the spec's words. */
const api = async (method, path, body) => {
  showError(null)
  const headers = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET" && me?.csrf_token) headers["x-csrf-token"] = me.csrf_token
  const res = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  const data = text ? JSON.parse(text) : {}
  if (!res.ok) {
    showError(data)
    const error = new Error(data.message ?? res.statusText)
    error.body = data
    error.status = res.status
    throw error
  }
  return data
}

const formValues = (form) => Object.fromEntries(new FormData(form).entries())

/** A form whose submit calls `action(values)`; failures stay on screen as the error banner. */
const form = (label, fields, submit, action) =>
  h("form", {
    "aria-label": label,
    onsubmit: async (e) => {
      e.preventDefault()
      try { await action(formValues(e.target), e.target) } catch (err) { if (!err.body) showError({ message: err.message }) }
    }
  }, ...fields, h("button", { type: "submit", className: "primary" }, submit))

const page = (title, ...children) => {
  document.title = `${title} · Inbox`
  $("main").replaceChildren(h("h1", {}, title), ...children.flat().filter((c) => c !== null && c !== undefined))
}

const go = (hash) => { location.hash = hash }
const list = (s) => (s ?? "").split(",").map((x) => x.trim()).filter(Boolean)

const refreshMe = async () => {
  try { me = await api("GET", "/auth/me") } catch { me = null; showError(null) }
  return me
}

const renderNav = () => {
  const links = me
    ? [["#/", "Overview"], ["#/inboxes", "Inboxes"], ["#/compose", "Compose"], ["#/security", "Security"], ["#/members", "Members"]]
    : [["#/sign-in", "Sign in"], ["#/sign-up", "Sign up"]]
  $("nav").replaceChildren(...links.map(([href, text]) => h("a", { href }, text)),
    me ? h("button", { type: "button", onclick: async () => { await api("POST", "/auth/sign-out"); me = null; go("#/sign-in") } }, "Sign out") : null)
}

// ---------- /auth pages ----------

const signIn = () => page("Sign in",
  form("Sign in", [...field("Email", { name: "email", type: "email", required: true, autocomplete: "username" }), ...field("Password", { name: "password", type: "password", required: true, autocomplete: "current-password" }),
    ...field("Two-step code or recovery code (if enabled)", { name: "code", autocomplete: "one-time-code" })], "Sign in",
  async (v) => {
    const body = { email: v.email, password: v.password }
    if (v.code) body.totp_code = v.code.trim()
    await api("POST", "/auth/sign-in", body)
    await refreshMe()
    go("#/")
  }),
  h("p", {}, h("a", { href: "#/forgot" }, "Forgot your password?")))

const signUp = () => page("Sign up",
  form("Sign up", [...field("Email", { name: "email", type: "email", required: true }), ...field("Password", { name: "password", type: "password", required: true, autocomplete: "new-password" })], "Create account",
  async (v) => {
    await api("POST", "/auth/sign-up", v)
    page("Check your mail", h("p", {}, `We sent a verification link to ${v.email}. Follow it, then sign in.`))
  }))

const forgot = () => page("Reset your password",
  form("Reset password", field("Email", { name: "email", type: "email", required: true }), "Send reset link", async (v) => {
    await api("POST", "/auth/password-reset", v)
    page("Check your mail", h("p", {}, "If this email has an account, a reset link is on its way."))
  }))

const tokenFromUrl = () => new URLSearchParams(location.search).get("token") ?? ""

const verifyEmail = async () => {
  page("Verifying your email…")
  try {
    await api("POST", "/auth/verify-email", { token: tokenFromUrl() })
    page("Email verified", h("p", {}, h("a", { href: "/#/" }, "Continue to the dashboard")))
  } catch { page("This link cannot be used", h("p", {}, h("a", { href: "/#/sign-in" }, "Sign in"), " to send a new one.")) }
}

const resetPassword = () => page("Choose a new password",
  form("New password", field("New password", { name: "password", type: "password", required: true, autocomplete: "new-password" }), "Set password", async (v) => {
    await api("POST", "/auth/password-reset/confirm", { token: tokenFromUrl(), password: v.password })
    page("Password changed", h("p", {}, h("a", { href: "/#/sign-in" }, "Sign in")))
  }))

const acceptInvitation = async () => {
  if (!await refreshMe()) return page("Sign in to accept the invitation", h("p", {}, h("a", { href: `/#/sign-in` }, "Sign in"), " or ", h("a", { href: "/#/sign-up" }, "sign up"), ", then open the link again."))
  page("Accepting the invitation…")
  await api("POST", "/auth/invitations/accept", { token: tokenFromUrl() })
  page("You joined the organization", h("p", {}, h("a", { href: "/#/" }, "Continue")))
}

const security = () => page("Security",
  h("h2", {}, "Two-step verification"),
  me.user.totp_enabled
    ? form("Disable two-step verification", field("Code", { name: "code", required: true, autocomplete: "one-time-code" }), "Disable", async (v) => { await api("POST", "/auth/2fa/disable", v); await refreshMe(); security() })
    : h("button", { type: "button", onclick: async () => {
      const setup = await api("POST", "/auth/2fa/setup")
      $("totp").replaceChildren(
        h("p", {}, "Add this account to your authenticator app, then enter the code it shows."),
        h("p", {}, "Secret: ", h("code", { "data-testid": "totp-secret" }, setup.secret)),
        h("p", {}, h("a", { href: setup.otpauth_uri }, "otpauth link")),
        form("Enable two-step verification", field("Code", { name: "code", required: true, autocomplete: "one-time-code" }), "Enable", async (v) => {
          const enabled = await api("POST", "/auth/2fa/enable", v)
          $("totp").replaceChildren(h("p", {}, "Two-step verification is on. Keep these recovery codes; each works once:"), h("ul", {}, enabled.recovery_codes.map((c) => h("li", {}, h("code", {}, c)))))
          await refreshMe()
        }))
    } }, "Set up two-step verification"),
  h("div", { id: "totp" }),
  h("h2", {}, "Change password"),
  form("Change password", [...field("Current password", { name: "current_password", type: "password", required: true }), ...field("New password", { name: "new_password", type: "password", required: true })], "Change password",
    async (v) => { await api("POST", "/auth/password", v); showError({ message: "Password changed." }) }))

const members = () => page("Members",
  h("p", {}, "Your organizations: ", me.organizations.map((o) => `${o.name ?? o.organization_id} (${o.role})`).join(", ")),
  h("h2", {}, "Invite a member"),
  form("Invite", [...field("Email", { name: "email", type: "email", required: true }), h("label", { for: "role" }, "Role"),
    h("select", { id: "role", name: "role" }, ["member", "admin"].map((r) => h("option", { value: r }, r)))], "Send invitation",
  async (v) => { await api("POST", "/auth/invitations", v); showError({ message: `Invitation sent to ${v.email}.` }) }))

// ---------- mail pages ----------

const overview = async () => {
  page("Overview", h("p", {}, "Signed in as ", me.user.email))
  try {
    const usage = await api("GET", "/v0/billing/usage")
    $("main").append(h("h2", {}, `Plan: ${usage.plan?.name ?? usage.plan ?? "—"}`),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Usage"), h("th", {}, "Used"), h("th", {}, "Limit"))),
        h("tbody", {}, Object.entries(usage.usage ?? {}).map(([k, used]) => h("tr", {}, h("td", {}, k), h("td", {}, String(used)), h("td", {}, String(usage.limits?.[k] ?? "—")))))))
  } catch { /* the banner shows the error's message and fix */ }
}

const inboxes = async () => {
  const data = await api("GET", "/v0/inboxes")
  page("Inboxes",
    form("Create an inbox", [...field("Username (optional)", { name: "username" }), ...field("Display name (optional)", { name: "display_name" })], "Create inbox", async (v) => {
      await api("POST", "/v0/inboxes", Object.fromEntries(Object.entries(v).filter(([, x]) => x)))
      inboxes()
    }),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Address"), h("th", {}, "Status"), h("th", {}, "Actions"))),
      h("tbody", {}, data.inboxes.map((inbox) => h("tr", {},
        h("td", {}, h("a", { href: `#/inbox/${encodeURIComponent(inbox.inbox_id)}` }, inbox.email ?? inbox.inbox_id), inbox.display_name ? h("div", { className: "muted" }, inbox.display_name) : null),
        h("td", {}, inbox.status ?? "active"),
        h("td", {},
          h("button", { type: "button", onclick: async () => { await api("PATCH", `/v0/inboxes/${encodeURIComponent(inbox.inbox_id)}`, { status: inbox.status === "paused" ? "active" : "paused" }); inboxes() } }, inbox.status === "paused" ? "Resume" : "Pause"),
          h("button", { type: "button", onclick: async () => { if (confirm(`Delete ${inbox.inbox_id} and all its mail?`)) { await api("DELETE", `/v0/inboxes/${encodeURIComponent(inbox.inbox_id)}`); inboxes() } } }, "Delete"))))))
  )
}

const threadRows = (inboxId, threads) =>
  h("table", { "aria-label": "Threads" }, h("thead", {}, h("tr", {}, h("th", {}, "From"), h("th", {}, "Subject"), h("th", {}, "Date"), h("th", {}, "Labels"))),
    h("tbody", {}, threads.map((t) => h("tr", { className: t.labels?.includes("unread") ? "unread" : "" },
      h("td", {}, (t.senders ?? []).join(", ")),
      h("td", {}, h("a", { href: `#/thread/${encodeURIComponent(inboxId)}/${encodeURIComponent(t.thread_id)}` }, t.subject || "(no subject)"), h("div", { className: "muted" }, t.preview ?? "")),
      h("td", {}, new Date(t.timestamp).toLocaleString()),
      h("td", {}, (t.labels ?? []).map((l) => h("span", { className: "label" }, l)))))))

/** Subscribes to this inbox's events; a new message reloads the thread list in place. */
const live = (inboxId, onEvent) => {
  socket?.close()
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v0/websocket?csrf_token=${encodeURIComponent(me.csrf_token)}`)
  socket.onopen = () => socket.send(JSON.stringify({ type: "subscribe", inbox_ids: [inboxId] }))
  socket.onmessage = (e) => { const frame = JSON.parse(e.data); if (frame.type === "event") onEvent(frame) }
}

const inbox = async (inboxId, q) => {
  const path = q ? `/v0/inboxes/${encodeURIComponent(inboxId)}/threads/search?q=${encodeURIComponent(q)}` : `/v0/inboxes/${encodeURIComponent(inboxId)}/threads`
  const [box, data] = await Promise.all([api("GET", `/v0/inboxes/${encodeURIComponent(inboxId)}`), api("GET", path)])
  const rows = h("div", { id: "threads" }, threadRows(inboxId, data.threads))
  page(box.email ?? inboxId,
    h("p", {}, h("a", { href: `#/compose/${encodeURIComponent(inboxId)}` }, "Compose")),
    form("Search", field("Search (query language, e.g. from:alice subject:invoice)", { name: "q", type: "search", value: q ?? "" }), "Search", (v) => inbox(inboxId, v.q)),
    rows)
  if (!q) live(box.inbox_id, async () => { const fresh = await api("GET", path); $("threads")?.replaceChildren(threadRows(inboxId, fresh.threads)) })
}

/** The HTML document for the sandboxed frame: its CSP blocks every remote load unless images are allowed. */
const mailDocument = (html, allowImages) =>
  `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:${allowImages ? " https: http:" : ""}"><base target="_blank">${html}`

const htmlFrame = (html) => {
  const frame = h("iframe", { className: "mail", title: "HTML message", sandbox: "allow-popups allow-popups-to-escape-sandbox", referrerpolicy: "no-referrer" })
  frame.srcdoc = mailDocument(html, false)
  const allow = h("button", { type: "button", onclick: () => { frame.srcdoc = mailDocument(html, true); allow.remove() } }, "Show remote images")
  return [allow, frame]
}

const messageView = (inboxId, m) => {
  const base = `/v0/inboxes/${encodeURIComponent(inboxId)}/messages/${encodeURIComponent(m.message_id)}`
  const quoted = m.text && m.extracted_text && m.text.trim() !== m.extracted_text.trim()
  return h("article", { className: "message", "aria-label": `Message from ${m.from}` },
    h("p", {}, h("strong", {}, m.from), " → ", (m.to ?? []).join(", "), h("br"), h("span", { className: "muted" }, new Date(m.timestamp).toLocaleString())),
    m.html ? htmlFrame(m.html) : h("pre", {}, m.extracted_text || m.text || ""),
    !m.html && quoted ? h("details", {}, h("summary", {}, "Show quoted text"), h("pre", {}, m.text)) : null,
    m.html && m.text ? h("details", {}, h("summary", {}, "Show plain text"), h("pre", {}, m.extracted_text ?? m.text), quoted ? h("details", {}, h("summary", {}, "Show quoted text"), h("pre", {}, m.text)) : null) : null,
    (m.attachments ?? []).length ? h("ul", { "aria-label": "Attachments" }, m.attachments.map((a) => h("li", {}, h("a", { href: `${base}/attachments/${encodeURIComponent(a.attachment_id)}/download`, download: a.filename ?? "" }, `${a.filename ?? a.attachment_id} (${a.size} bytes)`)))) : null,
    h("p", {},
      h("a", { href: `${base}/raw/download` }, "Raw message"), " · ",
      h("a", { href: `#/compose/${encodeURIComponent(inboxId)}/reply/${encodeURIComponent(m.message_id)}` }, "Reply"), " · ",
      h("a", { href: `#/compose/${encodeURIComponent(inboxId)}/reply-all/${encodeURIComponent(m.message_id)}` }, "Reply all"), " · ",
      h("a", { href: `#/compose/${encodeURIComponent(inboxId)}/forward/${encodeURIComponent(m.message_id)}` }, "Forward")))
}

const thread = async (inboxId, threadId) => {
  const t = await api("GET", `/v0/inboxes/${encodeURIComponent(inboxId)}/threads/${encodeURIComponent(threadId)}`)
  // The thread lists its messages in summary form: the bodies come from each full message.
  const summaries = [...(t.messages ?? [])].sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)))
  const messages = await Promise.all(summaries.map((m) => m.text !== undefined || m.html !== undefined ? m
    : api("GET", `/v0/inboxes/${encodeURIComponent(inboxId)}/messages/${encodeURIComponent(m.message_id)}`)))
  page(t.subject || "(no subject)", h("p", {}, h("a", { href: `#/inbox/${encodeURIComponent(inboxId)}` }, "← Back to the inbox")), messages.map((m) => messageView(inboxId, m)))
  const unread = messages.filter((m) => m.labels?.includes("unread")).map((m) => m.message_id)
  if (unread.length) await api("POST", `/v0/inboxes/${encodeURIComponent(inboxId)}/messages/batch-update`, { message_ids: unread, remove_labels: ["unread"] }).catch(() => {})
}

const compose = async (inboxId, mode, messageId) => {
  const inboxList = inboxId ? null : (await api("GET", "/v0/inboxes")).inboxes
  const fields = [
    inboxList ? [h("label", { for: "from" }, "From inbox"), h("select", { id: "from", name: "inbox_id" }, inboxList.map((i) => h("option", { value: i.inbox_id }, i.email ?? i.inbox_id)))] : [],
    mode === "reply" || mode === "reply-all" ? [] : field("To (comma-separated)", { name: "to", required: true }),
    mode ? [] : [...field("Cc", { name: "cc" }), ...field("Subject", { name: "subject" })],
    field("Message", { name: "text", multiline: true, required: true }),
    h("label", { for: "files" }, "Attachments"), h("input", { id: "files", type: "file", name: "files", multiple: true })
  ].flat()
  const title = mode === "reply" ? "Reply" : mode === "reply-all" ? "Reply all" : mode === "forward" ? "Forward" : "Compose"
  page(title, form(title, fields, "Send", async (v, el) => {
    const target = inboxId ?? v.inbox_id
    const attachments = await Promise.all([...el.querySelector("#files").files].map(async (f) => ({
      filename: f.name, content_type: f.type || "application/octet-stream",
      content: btoa(String.fromCharCode(...new Uint8Array(await f.arrayBuffer())))
    })))
    const body = { text: v.text, ...(attachments.length ? { attachments } : {}) }
    if (v.to) body.to = list(v.to)
    if (v.cc) body.cc = list(v.cc)
    if (v.subject) body.subject = v.subject
    const base = `/v0/inboxes/${encodeURIComponent(target)}/messages`
    const sent = await api("POST", mode ? `${base}/${encodeURIComponent(messageId)}/${mode}` : `${base}/send`, body)
    go(`#/thread/${encodeURIComponent(target)}/${encodeURIComponent(sent.thread_id)}`)
  }))
}

// ---------- routing ----------

const route = async () => {
  socket?.close(); socket = null
  const path = location.pathname
  if (path === "/verify-email") return verifyEmail()
  if (path === "/reset-password") return resetPassword()
  if (path === "/accept-invitation") return acceptInvitation()
  const [name, ...args] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent)
  if (me === null) await refreshMe()
  renderNav()
  if (name === "sign-up") return signUp()
  if (name === "forgot") return forgot()
  if (!me || name === "sign-in") return signIn()
  if (!me.user.email_verified) {
    return page("Verify your email", h("p", {}, `Follow the link we sent to ${me.user.email}.`),
      h("button", { type: "button", onclick: () => api("POST", "/auth/resend-verification", { email: me.user.email }) }, "Send the link again"))
  }
  switch (name) {
    case "inboxes": return inboxes()
    case "inbox": return inbox(args[0])
    case "thread": return thread(args[0], args[1])
    case "compose": return compose(args[0], args[1], args[2])
    case "security": return security()
    case "members": return members()
    default: return overview()
  }
}

addEventListener("hashchange", () => route().catch(() => {}))
route().catch(() => {})
