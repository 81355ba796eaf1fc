// The organization's pages: overview (plan and usage), allow/block lists, webhooks (secret
// shown once, enable/disable, delivery log, test event), domains (DNS records with their
// status, zone file, verify), API keys (secret shown once with a copy button, revoke),
// billing (plan, checkout, portal, cancel) and metrics as small SVG charts.
import { bars, sparkline } from "/dashboard/charts.js"
import { $, api, button, enc, field, form, go, h, notice, page, select, showError, table, when } from "/dashboard/dom.js"

/** A secret the API answers once: shown with a copy button and a warning that it will not be shown again. */
const secretOnce = (what, secret) => {
  const code = h("code", { "data-testid": "secret" }, secret)
  return h("div", { className: "secret", role: "status" },
    h("p", {}, `${what}: copy it now, it will not be shown again.`), code,
    button("Copy", async () => { await navigator.clipboard.writeText(secret); notice("Copied.") }, { "aria-label": `Copy the ${what.toLowerCase()}` }))
}

/** An API failure shown in the page too (the banner clears on the next call): the spec's message and fix. */
const inlineError = (err) => h("p", { className: "problem", "data-code": err.body?.code ?? "" }, `${err.body?.message ?? err.message}${err.body?.fix ? ` — ${err.body.fix}` : ""}`)

export const overview = async (me) => {
  page("Overview", h("p", {}, "Signed in as ", me.user.email))
  try {
    const usage = await api("GET", "/v0/billing/usage")
    $("main").append(h("h2", {}, `Plan: ${usage.plan?.name ?? usage.plan ?? "—"}`),
      table("Usage", ["Usage", "Used", "Limit"], Object.entries(usage.usage ?? {}).map(([k, used]) => [k, String(used), String(usage.limits?.[k] ?? "—")])))
  } catch { /* the banner shows the error's message and fix */ }
}

// ---------- allow and block lists ----------

const DIRECTIONS = ["receive", "send", "reply"]
const TYPES = ["block", "allow"]

export const lists = async (direction = "receive", type = "block") => {
  if (!DIRECTIONS.includes(direction) || !TYPES.includes(type)) return go("#/lists")
  const base = `/v0/lists/${direction}/${type}`
  const data = await api("GET", base)
  page("Allow and block lists",
    h("nav", { "aria-label": "Lists", className: "tabs" }, DIRECTIONS.flatMap((d) => TYPES.map((t) =>
      h("a", { href: `#/lists/${d}/${t}`, "aria-current": d === direction && t === type ? "page" : false }, `${d} ${t}`)))),
    h("p", { className: "muted" }, `Organization-wide ${type} list for ${direction === "receive" ? "incoming mail" : direction === "send" ? "outgoing mail" : "replies"}: an address or a whole domain.`),
    form(`Add to the ${direction} ${type} list`, [...field("Address or domain", { name: "entry", required: true }),
      ...(type === "block" ? field("Reason (optional)", { name: "reason" }) : [])], "Add entry", async (v) => {
      await api("POST", base, type === "block" && v.reason ? { entry: v.entry.trim(), reason: v.reason } : { entry: v.entry.trim() })
      await lists(direction, type)
      notice(`${v.entry.trim()} added.`)
    }),
    data.entries.length === 0 ? h("p", { className: "muted" }, "This list is empty.")
      : table(`${direction} ${type} list`, ["Entry", ...(type === "block" ? ["Reason"] : []), "Added", "Actions"], data.entries.map((e) => [
        e.entry, ...(type === "block" ? [e.reason ?? ""] : []), when(e.created_at),
        button("Delete", async () => { await api("DELETE", `${base}/${enc(e.entry)}`); await lists(direction, type) }, { "aria-label": `Delete ${e.entry}` })])))
}

// ---------- webhooks ----------

const EVENT_TYPES = ["message.received", "message.sent", "message.delivered", "message.bounced", "message.complained", "message.rejected", "message.opened", "domain.verified",
  "message.received.spam", "message.received.blocked", "message.received.unauthenticated"]
const DEFAULT_EVENTS = EVENT_TYPES.slice(0, 8)

export const webhooks = async (created) => {
  const data = await api("GET", "/v0/webhooks")
  page("Webhooks",
    created ? secretOnce("Signing secret", created.secret) : null,
    h("h2", {}, "New webhook"),
    form("New webhook", [...field("URL", { name: "url", type: "url", required: true, placeholder: "https://example.com/hooks/inbox" }),
      h("fieldset", {}, h("legend", {}, "Event types"), EVENT_TYPES.map((t) => h("label", { className: "check" },
        h("input", { type: "checkbox", name: "event_types", value: t, checked: DEFAULT_EVENTS.includes(t) }), t)))], "Create webhook",
    async (v, el) => {
      const types = [...el.querySelectorAll("input[name=event_types]:checked")].map((c) => c.value)
      await webhooks(await api("POST", "/v0/webhooks", { url: v.url, event_types: types }))
    }),
    h("h2", {}, "Webhooks"),
    data.webhooks.length === 0 ? h("p", { className: "muted" }, "No webhooks yet.")
      : table("Webhooks", ["URL", "Status", "Events", "Actions"], data.webhooks.map((w) => [
        h("a", { href: `#/webhook/${enc(w.webhook_id)}` }, w.url), w.enabled ? "enabled" : "disabled", w.event_types.join(", "),
        [button(w.enabled ? "Disable" : "Enable", async () => { await api("PATCH", `/v0/webhooks/${enc(w.webhook_id)}`, { enabled: !w.enabled }); await webhooks() }, { "aria-label": `${w.enabled ? "Disable" : "Enable"} ${w.url}` }),
          button("Delete", async () => { if (confirm(`Delete the webhook to ${w.url}?`)) { await api("DELETE", `/v0/webhooks/${enc(w.webhook_id)}`); await webhooks() } }, { "aria-label": `Delete ${w.url}` })]])))
}

/** Test events are not stored by the API (it answers what the endpoint said): the page keeps them beside the log. */
const tests = new Map()

export const webhook = async (id) => {
  const [w, log] = await Promise.all([api("GET", `/v0/webhooks/${enc(id)}`), api("GET", `/v0/webhooks/${enc(id)}/deliveries?limit=50`)])
  const testRows = (tests.get(id) ?? []).map((t) => [when(t.at), "test event", t.delivered ? "delivered" : "failed", t.status_code ?? "", "1", t.error ?? ""])
  page(`Webhook to ${w.url}`,
    h("p", {}, h("a", { href: "#/webhooks" }, "← All webhooks"), " · ", w.enabled ? "enabled" : "disabled", " · events: ", w.event_types.join(", ")),
    button("Send test event", async () => {
      const result = await api("POST", `/v0/webhooks/${enc(id)}/test`, {})
      tests.set(id, [{ ...result, at: new Date().toISOString() }, ...(tests.get(id) ?? [])])
      await webhook(id)
      notice(result.delivered ? `Test event delivered (HTTP ${result.status_code}).` : `Test event failed: ${result.error ?? "no answer"}${result.status_code ? ` (HTTP ${result.status_code})` : ""}.`)
    }, { className: "primary" }),
    h("h2", {}, "Delivery log"),
    testRows.length + log.deliveries.length === 0 ? h("p", { className: "muted" }, "Nothing delivered yet.")
      : table("Delivery log", ["Time", "Event", "Status", "HTTP", "Attempts", "Error"], [...testRows, ...log.deliveries.map((d) =>
        [when(d.last_attempt_at ?? d.created_at), d.event_type, d.status, d.status_code ?? "", String(d.attempts), d.error ?? ""])]))
}

// ---------- domains ----------

export const domains = async () => {
  const data = await api("GET", "/v0/domains")
  page("Domains",
    form("Add a domain", field("Domain name", { name: "domain", required: true, placeholder: "mail.example.com" }), "Add domain", async (v) => {
      const d = await api("POST", "/v0/domains", { domain: v.domain.trim() })
      go(`#/domain/${enc(d.domain_id)}`)
    }),
    data.domains.length === 0 ? h("p", { className: "muted" }, "No custom domains yet.")
      : table("Domains", ["Domain", "Added"], data.domains.map((d) => [h("a", { href: `#/domain/${enc(d.domain_id)}` }, d.domain), when(d.created_at)])))
}

export const domain = async (id) => {
  const d = await api("GET", `/v0/domains/${enc(id)}`)
  const zone = h("pre", { className: "zone", "aria-label": "Zone file" })
  page(d.domain,
    h("p", {}, h("a", { href: "#/domains" }, "← All domains"), " · status: ", h("strong", { "data-testid": "domain-status" }, d.status), d.reason ? ` (${d.reason})` : ""),
    h("h2", {}, "DNS records to publish"),
    table("DNS records", ["Type", "Name", "Value", "Priority", "Status"], (d.records ?? []).map((r) =>
      [r.type, h("code", {}, r.name), h("code", { className: "wrap" }, r.value), r.priority ?? "", r.status])),
    button("Verify", async () => { await api("POST", `/v0/domains/${enc(id)}/verify`, {}); await domain(id); notice("Verification checked: see each record's status.") }, { className: "primary" }),
    button("Show zone file", async () => { zone.replaceChildren(await api("GET", `/v0/domains/${enc(id)}/zone-file`, undefined, { text: true })) }),
    button("Delete domain", async () => { if (confirm(`Delete ${d.domain}?`)) { await api("DELETE", `/v0/domains/${enc(id)}`); go("#/domains") } }),
    zone)
}

// ---------- API keys ----------

export const apiKeys = async (created) => {
  const [data, boxes] = await Promise.all([api("GET", "/v0/api-keys"), api("GET", "/v0/inboxes")])
  page("API keys",
    created ? secretOnce("API key", created.api_key) : null,
    form("Create an API key", [...field("Name", { name: "name", required: true }),
      ...select("Scope", "inbox_id", [["", "Whole organization"], ...boxes.inboxes.map((i) => [i.inbox_id, `Inbox ${i.email ?? i.inbox_id}`])])], "Create key",
    async (v) => { await apiKeys(await api("POST", "/v0/api-keys", v.inbox_id ? { name: v.name, inbox_id: v.inbox_id } : { name: v.name })) }),
    data.api_keys.length === 0 ? h("p", { className: "muted" }, "No API keys.")
      : table("API keys", ["Name", "Prefix", "Scope", "Created", "Actions"], data.api_keys.map((k) => [
        k.name, h("code", {}, k.prefix), k.inbox_id ?? k.pod_id ?? k.scope, when(k.created_at),
        button("Revoke", async () => { if (confirm(`Revoke ${k.name}? Programs using it stop at once.`)) { await api("DELETE", `/v0/api-keys/${enc(k.api_key_id)}`); await apiKeys() } }, { "aria-label": `Revoke ${k.name}` })])))
}

// ---------- billing ----------

export const billing = async () => {
  const [summary, plans] = await Promise.all([api("GET", "/v0/billing"), api("GET", "/public/plans").catch(() => null)])
  const result = h("div", { id: "billing-result", role: "status" })
  const attempt = (action) => async (...args) => {
    result.replaceChildren()
    try { await action(...args) } catch (err) { result.replaceChildren(inlineError(err)); showError(err.body ?? { message: err.message }) }
  }
  page("Billing",
    table("Plan", ["Plan", "Status", "Interval", "Period ends", "Cancels at period end"],
      [[summary.plan_name ?? summary.plan, summary.status, summary.interval ?? "—", when(summary.current_period_end), summary.cancel_at_period_end ? "yes" : "no"]]),
    plans?.plans?.length ? table("Plans", ["Plan", "Monthly (USD)", "Yearly (USD)"], plans.plans.map((p) => [p.name, p.prices?.usd?.monthly ?? "—", p.prices?.usd?.yearly ?? "—"])) : null,
    h("h2", {}, "Change plan"),
    form("Checkout", [...select("Plan", "plan", [["pro", "Pro"], ["scale", "Scale"]]), ...select("Billing interval", "interval", ["monthly", "yearly"])], "Go to checkout",
      attempt(async (v) => { const { url } = await api("POST", "/v0/billing/checkout", v); location.assign(url) })),
    button("Manage payment (portal)", attempt(async () => {
      const portal = await api("POST", "/v0/billing/portal", {})
      if (portal.url) location.assign(portal.url)
      else result.replaceChildren(h("p", {}, portal.instructions ?? ""))
    })),
    summary.source === "subscription" && !summary.cancel_at_period_end
      ? button("Cancel subscription", attempt(async () => { if (confirm("Cancel at the end of the period?")) { const s = await api("POST", "/v0/billing/cancel", {}); await billing(); notice(s.message ?? "Canceled at period end.") } }))
      : null,
    result)
}

// ---------- metrics ----------

export const metrics = async (period = "3600") => {
  const q = `period=${enc(period)}&limit=24`
  const [usage, events, rates] = await Promise.all([api("GET", `/v0/metrics/usage?${q}`), api("GET", `/v0/metrics/events?${q}`), api("GET", `/v0/metrics/rates?${q}`)])
  const figure = (label, chart) => h("figure", {}, chart, h("figcaption", {}, label))
  page("Metrics",
    form("Period", select("Period of each bar", "period", [["3600", "hour (last 24 hours)"], ["86400", "day (last 24 days)"]], period), "Show", (v) => metrics(v.period)),
    h("h2", {}, "Usage"),
    h("div", { className: "charts" }, Object.entries(usage).map(([type, series]) => figure(type.replaceAll("_", " "), sparkline(type, series.map((p) => p.value))))),
    h("h2", {}, `Events (${events.total})`),
    bars("Events", Object.entries(events.counts ?? {}).filter(([, c]) => c > 0)),
    h("h2", {}, "Rates"),
    h("div", { className: "charts" }, Object.entries(rates).map(([type, series]) => figure(`${type} rate (sent per period)`, sparkline(`${type}: sent`, series.map((p) => p.sent))))))
}
