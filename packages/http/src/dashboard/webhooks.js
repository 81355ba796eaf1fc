// The webhook pages: the webhooks of the organization, a pod or an inbox (create with event
// types and custom request headers, the signing secret shown once, enable/disable, delete),
// and one webhook (its delivery log, "Send test event", its URL and event types to change, and
// its custom headers: names shown, values write-only as the spec says, set and removed).
import { api, button, enc, field, form, h, notice, page, secretOnce, table, when } from "/dashboard/dom.js"
import { ORGANIZATION, scopeApi, scopeHash, scopePicker } from "/dashboard/scope.js"

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

export const webhooks = async (scope, created) => {
  const [{ picker, name, nameOf }, data] = await Promise.all([scopePicker(scope, "webhooks"), api("GET", `${scopeApi(scope)}/webhooks`)])
  page("Webhooks",
    picker,
    created ? secretOnce("Signing secret", created.secret) : null,
    h("h2", {}, "New webhook"),
    h("p", { className: "muted", "data-testid": "webhook-scope" }, `A new webhook receives the events of ${name}.`),
    form("New webhook", [...field("URL", { name: "url", type: "url", required: true, placeholder: "https://example.com/hooks/inbox" }),
      eventTypes(DEFAULT_EVENTS),
      ...field("Custom headers (optional, one Name: value a line; values are not shown again)", { name: "headers", multiline: true, className: "short", rows: 2, placeholder: "X-Team: mail" })],
    "Create webhook", async (v, el) => {
      const headers = headerLines(v.headers)
      const body = { url: v.url, event_types: checkedTypes(el), ...(Object.keys(headers).length ? { headers } : {}) }
      await webhooks(scope, await api("POST", `${scopeApi(scope)}/webhooks`, body))
    }),
    h("h2", {}, "Webhooks"),
    data.webhooks.length === 0 ? h("p", { className: "muted" }, "No webhooks yet.")
      : table("Webhooks", ["URL", "Scope", "Status", "Events", "Actions"], data.webhooks.map((w) => [
        h("a", { href: `#/webhook/${enc(w.webhook_id)}` }, w.url), nameOf(ownerOf(w)), w.enabled ? "enabled" : "disabled", w.event_types.join(", "),
        [button(w.enabled ? "Disable" : "Enable", async () => { await api("PATCH", `/v0/webhooks/${enc(w.webhook_id)}`, { enabled: !w.enabled }); await webhooks(scope) }, { "aria-label": `${w.enabled ? "Disable" : "Enable"} ${w.url}` }),
          button("Delete", async () => { if (confirm(`Delete the webhook to ${w.url}?`)) { await api("DELETE", `/v0/webhooks/${enc(w.webhook_id)}`); await webhooks(scope) } }, { "aria-label": `Delete ${w.url}` })]])))
}

/** Test events are not stored by the API (it answers what the endpoint said): the page keeps them beside the log. */
const tests = new Map()

export const webhook = async (id) => {
  const path = `/v0/webhooks/${enc(id)}`
  const [w, log, { headers }] = await Promise.all([api("GET", path), api("GET", `${path}/deliveries?limit=50`), api("GET", `${path}/headers`)])
  const owner = ownerOf(w)
  const testRows = (tests.get(id) ?? []).map((t) => [when(t.at), "test event", t.delivered ? "delivered" : "failed", t.status_code ?? "", "1", t.error ?? ""])
  const changeHeaders = async (change, said) => { await api("PATCH", `${path}/headers`, change); await webhook(id); notice(said) }
  page(`Webhook to ${w.url}`,
    h("p", {}, h("a", { href: scopeHash(owner, "webhooks") }, owner.kind === "organization" ? "← All webhooks" : `← The ${owner.kind}'s webhooks`),
      " · ", w.enabled ? "enabled" : "disabled", " · events: ", w.event_types.join(", "),
      w.inbox_ids ? ` · only inboxes ${w.inbox_ids.join(", ")}` : "", w.pod_ids ? ` · only pods ${w.pod_ids.join(", ")}` : ""),
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
    form("Edit webhook", [...field("URL", { name: "url", type: "url", required: true, value: w.url }), eventTypes(w.event_types)], "Save changes", async (v, el) => {
      await api("PATCH", path, { url: v.url, event_types: checkedTypes(el) })
      await webhook(id)
      notice("Webhook saved.")
    }))
}
