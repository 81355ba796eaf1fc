// The webhook pages: the webhooks of the organization, a pod or an inbox (create with event
// types, custom request headers and an optional narrowing to some inboxes or pods, the
// signing secret shown once, enable/disable, delete), and one webhook (its delivery log,
// "Send test event", its URL, event types and narrowing to change, and its custom headers:
// names shown, values write-only as the spec says, set and removed).
import { api, button, enc, field, form, h, notice, page, secretOnce, table, when } from "./dom.js"
import { ORGANIZATION, scopeApi, scopeHash, scopeNames, scopePicker } from "./scope.js"

const EVENT_TYPES = ["message.received", "message.sent", "message.delivered", "message.bounced", "message.complained", "message.rejected", "message.opened", "domain.verified",
  "message.received.spam", "message.received.blocked", "message.received.unauthenticated"]
const DEFAULT_EVENTS = EVENT_TYPES.slice(0, 8)

const eventTypes = (checked) => h("fieldset", {}, h("legend", {}, "Event types"), EVENT_TYPES.map((t) => h("label", { className: "check" },
  h("input", { type: "checkbox", name: "event_types", value: t, checked: checked.includes(t) }), t)))
const checkedTypes = (el) => [...el.querySelectorAll("input[name=event_types]:checked")].map((c) => c.value)

/** `Name: value` lines as the `headers` object of the create body; the API checks names and values. */
const headerLines = (text) => {
  const headers = {}
  for (const line of (text ?? "").split("\n").map((l) => l.trim()).filter(Boolean)) {
    const colon = line.indexOf(":")
    if (colon <= 0) throw new Error(`Write each custom header as Name: value (not "${line}").`)
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
  }
  return headers
}

/** Where a webhook belongs: an inbox's, a pod's or the organization's (its scope in the API). */
const ownerOf = (w) => w.inbox_id ? { kind: "inbox", id: w.inbox_id } : w.pod_id ? { kind: "pod", id: w.pod_id } : ORGANIZATION

/**
 * The inboxes and pods a webhook of `owner` may be narrowed to (spec: `inbox_ids`, `pod_ids`,
 * up to 10 each), as checkboxes, `w`'s own checked. The API's rules decide what is offered:
 * an inbox's webhook has that inbox's events only, a pod's may be narrowed to its inboxes,
 * the organization's to any inbox or pod. Chosen ones beyond the hundred listed are offered
 * too, so saving keeps them.
 */
const narrowing = (owner, known, w = {}) => {
  if (owner.kind === "inbox") return h("p", { className: "muted" }, "An inbox's webhook receives that inbox's events only.")
  const boxes = (legend, name, items, ids = []) => {
    const all = [...items, ...ids.filter((id) => !items.some(([x]) => x === id)).map((id) => [id, id])]
    return h("fieldset", {}, h("legend", {}, legend), all.length === 0 ? h("p", { className: "muted" }, "None yet.")
      : all.map(([id, text]) => h("label", { className: "check" }, h("input", { type: "checkbox", name, value: id, checked: ids.includes(id) }), text)))
  }
  const inboxes = known.inboxes.filter((i) => owner.kind === "organization" || i.pod_id === owner.id).map((i) => [i.inbox_id, i.email ?? i.inbox_id])
  return h("details", { open: Boolean(w.inbox_ids || w.pod_ids) }, h("summary", {}, "Narrow to some inboxes or pods (optional)"),
    h("p", { className: "muted" }, `With some chosen, the webhook receives only their events (up to 10 of each); with none, every event of ${known.nameOf(owner)}.`),
    boxes("Only these inboxes", "inbox_ids", inboxes, w.inbox_ids),
    owner.kind === "organization" ? boxes("Only these pods", "pod_ids", known.pods.map((p) => [p.pod_id, p.name]), w.pod_ids) : null)
}

/** The checked inbox_ids and pod_ids of a form, as the API takes them at the owner's scope. */
const narrowed = (el, owner) => {
  const ids = (name) => [...el.querySelectorAll(`input[name=${name}]:checked`)].map((c) => c.value)
  return { ...(owner.kind === "inbox" ? {} : { inbox_ids: ids("inbox_ids") }), ...(owner.kind === "organization" ? { pod_ids: ids("pod_ids") } : {}) }
}

/** Whose events a webhook receives: its owner's, or only those of any inbox or pod it is narrowed to. */
const receives = (w, nameOf) => {
  const only = [...(w.inbox_ids ?? []).map((id) => nameOf({ kind: "inbox", id })), ...(w.pod_ids ?? []).map((id) => nameOf({ kind: "pod", id }))]
  const either = only.length > 1 ? `${only.slice(0, -1).join(", ")} or ${only.at(-1)}` : only[0]
  return `${nameOf(ownerOf(w))}${either ? `, only those of ${either}` : ""}`
}

export const webhooks = async (scope, created) => {
  const [known, data] = await Promise.all([scopePicker(scope, "webhooks"), api("GET", `${scopeApi(scope)}/webhooks`)])
  const { picker, name, nameOf } = known
  page("Webhooks",
    picker,
    created ? secretOnce("Signing secret", created.secret) : null,
    h("h2", {}, "New webhook"),
    h("p", { className: "muted", "data-testid": "webhook-scope" }, `A new webhook receives the events of ${name}.`),
    form("New webhook", [...field("URL", { name: "url", type: "url", required: true, placeholder: "https://example.com/hooks/inbox" }),
      eventTypes(DEFAULT_EVENTS),
      narrowing(scope, known),
      ...field("Custom headers (optional, one Name: value a line; values are not shown again)", { name: "headers", multiline: true, className: "short", rows: 2, placeholder: "X-Team: mail" })],
    "Create webhook", async (v, el) => {
      const headers = headerLines(v.headers)
      // An empty narrowing is left out: the webhook then has its scope's every event.
      const only = Object.fromEntries(Object.entries(narrowed(el, scope)).filter(([, ids]) => ids.length))
      const body = { url: v.url, event_types: checkedTypes(el), ...only, ...(Object.keys(headers).length ? { headers } : {}) }
      await webhooks(scope, await api("POST", `${scopeApi(scope)}/webhooks`, body))
    }),
    h("h2", {}, "Webhooks"),
    data.webhooks.length === 0 ? h("p", { className: "muted" }, "No webhooks yet.")
      : table("Webhooks", ["URL", "Scope", "Status", "Events", "Actions"], data.webhooks.map((w) => [
        h("a", { href: `#/webhook/${enc(w.webhook_id)}` }, w.url), receives(w, nameOf), w.enabled ? "enabled" : "disabled", w.event_types.join(", "),
        [button(w.enabled ? "Disable" : "Enable", async () => { await api("PATCH", `/v0/webhooks/${enc(w.webhook_id)}`, { enabled: !w.enabled }); await webhooks(scope) }, { "aria-label": `${w.enabled ? "Disable" : "Enable"} ${w.url}` }),
          button("Delete", async () => { if (confirm(`Delete the webhook to ${w.url}?`)) { await api("DELETE", `/v0/webhooks/${enc(w.webhook_id)}`); await webhooks(scope) } }, { "aria-label": `Delete ${w.url}` })]])))
}

/** Test events are not stored by the API (it answers what the endpoint said): the page keeps them beside the log. */
const tests = new Map()

export const webhook = async (id) => {
  const path = `/v0/webhooks/${enc(id)}`
  const [w, log, { headers }, known] = await Promise.all([api("GET", path), api("GET", `${path}/deliveries?limit=50`), api("GET", `${path}/headers`), scopeNames()])
  const owner = ownerOf(w)
  const testRows = (tests.get(id) ?? []).map((t) => [when(t.at), "test event", t.delivered ? "delivered" : "failed", t.status_code ?? "", "1", t.error ?? ""])
  const changeHeaders = async (change, said) => { await api("PATCH", `${path}/headers`, change); await webhook(id); notice(said) }
  page(`Webhook to ${w.url}`,
    h("p", {}, h("a", { href: scopeHash(owner, "webhooks") }, owner.kind === "organization" ? "← All webhooks" : `← The ${owner.kind}'s webhooks`),
      " · ", w.enabled ? "enabled" : "disabled", " · events: ", w.event_types.join(", ")),
    h("p", { "data-testid": "webhook-receives" }, `Receives the events of ${receives(w, known.nameOf)}.`),
    button("Send test event", async () => {
      const result = await api("POST", `${path}/test`, {})
      tests.set(id, [{ ...result, at: new Date().toISOString() }, ...(tests.get(id) ?? [])])
      await webhook(id)
      notice(result.delivered ? `Test event delivered (HTTP ${result.status_code}).` : `Test event failed: ${result.error ?? "no answer"}${result.status_code ? ` (HTTP ${result.status_code})` : ""}.`)
    }, { className: "primary" }),
    h("h2", {}, "Delivery log"),
    testRows.length + log.deliveries.length === 0 ? h("p", { className: "muted" }, "Nothing delivered yet.")
      : table("Delivery log", ["Time", "Event", "Status", "HTTP", "Attempts", "Error"], [...testRows, ...log.deliveries.map((d) =>
        [when(d.last_attempt_at ?? d.created_at), d.event_type, d.status, d.status_code ?? "", String(d.attempts), d.error ?? ""])]),
    h("h2", {}, "Custom headers"),
    h("p", { className: "muted" }, "Added to every delivery. Values are write-only: only the names are shown."),
    headers.length === 0 ? h("p", { className: "muted" }, "No custom headers.")
      : h("ul", { className: "chips", "aria-label": "Custom headers" }, headers.map((n) => h("li", { className: "label" }, h("code", {}, n),
        button("×", () => changeHeaders({ remove: [n] }, `Header ${n} removed.`), { className: "chip-x", "aria-label": `Remove header ${n}` })))),
    form("Set a header", [...field("Header name", { name: "name", required: true, placeholder: "X-Team" }), ...field("Header value", { name: "value", required: true })], "Set header",
      (v) => changeHeaders({ set: { [v.name.trim()]: v.value } }, `Header ${v.name.trim()} set.`)),
    h("h2", {}, "Settings"),
    form("Edit webhook", [...field("URL", { name: "url", type: "url", required: true, value: w.url }), eventTypes(w.event_types), narrowing(owner, known, w)], "Save changes", async (v, el) => {
      await api("PATCH", path, { url: v.url, event_types: checkedTypes(el), ...narrowed(el, owner) })
      await webhook(id)
      notice("Webhook saved.")
    }))
}
