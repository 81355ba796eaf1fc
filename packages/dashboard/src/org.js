// The organization's pages: overview (plan and usage), domains of the organization or a pod
// (DNS records with their status, zone file, verify), API keys (for the organization, a pod
// or an inbox, with an optional permission list; the secret shown once with a copy button;
// revoke), billing (plan, checkout, portal, cancel) and metrics of the organization, a pod or
// an inbox as small SVG charts. Lists and suppressions are policy.js, webhooks webhooks.js.
import { bars, sparkline } from "./charts.js"
import { PERMISSIONS } from "./generated/permissions.ts"
import { $, api, button, enc, field, form, go, h, notice, page, plainWords, problem, secretOnce, select, showError, table, when } from "./dom.js"
import { ORGANIZATION, parseScope, scopeApi, scopeHash, scopeNames, scopeOptions, scopePicker } from "./scope.js"

const PLAN_NAMES = { free: "Free", pro: "Pro", scale: "Scale" }
// What /v0/billing/usage counts, in words, with the limit each count is held to (spec: Billing).
const USAGE_ROWS = [
  ["Inboxes", "inboxes", "inboxes"],
  ["Sends this month", "sends_this_month", "sends_per_month"],
  ["Sends today", "sends_today", "sends_per_day"],
  ["Custom domains", "domains", "domains"],
  ["Webhooks", "webhooks", "webhooks"]
]

/** The plan and its usage: each count against its limit, as a figure and a meter. */
export const overview = async (me) => {
  page("Overview", h("p", {}, "Signed in as ", me.user.email))
  const usage = await api("GET", "/v0/billing/usage", undefined, { quiet: true }).catch((err) => err)
  if (usage instanceof Error) {
    $("main").append(h("p", { className: "muted" }, usage.body?.code === "missing_permission" || usage.status === 403
      ? "The plan and its usage are shown to the organization's owners and admins." : plainWords(usage.body ?? { message: usage.message })))
    return
  }
  $("main").append(h("h2", {}, `Plan: ${PLAN_NAMES[usage.plan] ?? usage.plan}`),
    table("Usage", ["What", "Used", "Limit"], USAGE_ROWS.map(([what, used, limit]) => {
      const n = usage.usage?.[used] ?? 0
      const max = usage.limits?.[limit]
      const bounded = typeof max === "number"
      return [what,
        bounded ? h("span", {}, `${n} `, h("meter", { min: 0, max: Math.max(max, 1), value: Math.min(n, max), "aria-label": `${what}: ${n} of ${max}` })) : String(n),
        bounded ? String(max) : limit === "sends_per_day" ? "no daily limit" : "no limit"]
    })),
    h("p", {}, h("a", { href: "#/billing" }, "Plans and billing")))
}

// ---------- domains ----------

const DOMAIN_SCOPES = ["organization", "pod"]

export const domains = async (scope) => {
  const base = `${scopeApi(scope)}/domains`
  const [{ picker, name }, data] = await Promise.all([scopePicker(scope, "domains", DOMAIN_SCOPES), api("GET", base)])
  page("Domains",
    picker,
    h("p", { className: "muted", "data-testid": "domain-scope" }, scope.kind === "organization"
      ? "Every domain of the organization. A domain added here belongs to the whole organization."
      : `The domains of ${name}. A domain added here belongs to this pod.`),
    form("Add a domain", field("Domain name", { name: "domain", required: true, placeholder: "mail.example.com" }), "Add domain", async (v) => {
      const d = await api("POST", base, { domain: v.domain.trim() })
      go(scopeHash(scope, `domain/${enc(d.domain_id)}`))
    }),
    data.domains.length === 0 ? h("p", { className: "muted" }, "No custom domains yet.")
      : table("Domains", ["Domain", "Added"], data.domains.map((d) => [h("a", { href: scopeHash(scope, `domain/${enc(d.domain_id)}`) }, d.domain), when(d.created_at)])))
}

/** A small button that puts `value` on the clipboard; its name says which value (its text is "Copy"). */
const copyButton = (value, name) =>
  button("Copy", async () => { await navigator.clipboard.writeText(value); notice("Copied.") }, { className: "copy", "aria-label": name })

export const domain = async (scope, id) => {
  const base = `${scopeApi(scope)}/domains/${enc(id)}`
  const d = await api("GET", base)
  const zone = h("pre", { className: "zone", "aria-label": "Zone file" })
  page(d.domain,
    h("p", {}, h("a", { href: scopeHash(scope, "domains") }, scope.kind === "organization" ? "← All domains" : "← The pod's domains"),
      " · status: ", h("strong", { "data-testid": "domain-status" }, d.status), d.reason ? ` (${d.reason})` : ""),
    h("h2", {}, "DNS records to publish"),
    table("DNS records", ["Type", "Name", "Value", "Priority", "Status"], (d.records ?? []).map((r, i) =>
      [r.type, [h("code", {}, r.name), " ", copyButton(r.name, `Copy the name of record ${i + 1} (${r.type})`)],
        [h("code", { className: "wrap" }, r.value), " ", copyButton(r.value, `Copy the value of record ${i + 1} (${r.type})`)], r.priority ?? "", r.status])),
    button("Verify", async () => { await api("POST", `${base}/verify`, {}); await domain(scope, id); notice("Verification checked: see each record's status.") }, { className: "primary" }),
    button("Show zone file", async () => { zone.replaceChildren(await api("GET", `${base}/zone-file`, undefined, { text: true })) }),
    button("Delete domain", async () => { if (confirm(`Delete ${d.domain}?`)) { await api("DELETE", base); go(scopeHash(scope, "domains")) } }),
    zone)
}

// ---------- API keys ----------

/** The body's scope of a new key: none for the organization, else `pod_id` or `inbox_id` (spec: API keys). */
const keyScope = (scope) => scope.kind === "pod" ? { pod_id: scope.id } : scope.kind === "inbox" ? { inbox_id: scope.id } : {}

/** A key's permissions (an object of name to whether the key has it), the granted ones folded. */
const granted = (permissions) => {
  const names = Object.keys(permissions).filter((name) => permissions[name])
  return h("details", {}, h("summary", {}, `${names.length} permissions`), h("p", {}, names.join(", ")))
}

/** The groups of the permission checkboxes: by the first word of each permission's name. */
const PERMISSION_GROUPS = {
  account: "Account", api: "API keys", app: "Apps", domain: "Domains", draft: "Drafts", inbox: "Inboxes", label: "Hidden mail (spam, trash, blocked, unverified)",
  list: "Allow and block lists", message: "Messages", metrics: "Metrics", pod: "Pods", thread: "Threads", webhook: "Webhooks"
}

/** The permissions of a new key, as checkboxes grouped by what they are about; none ticked gives every permission within the scope. */
const permissionChoice = () => {
  const groups = new Map()
  for (const p of PERMISSIONS) {
    const group = p.split("_")[0]
    groups.set(group, [...(groups.get(group) ?? []), p])
  }
  return h("fieldset", { className: "permissions" }, h("legend", {}, "Permissions (none ticked: every permission within the scope)"),
    [...groups].map(([group, names]) => h("fieldset", {}, h("legend", {}, PERMISSION_GROUPS[group] ?? group),
      names.map((p) => h("label", { className: "check" }, h("input", { type: "checkbox", name: `permission:${p}` }), p)))))
}

export const apiKeys = async (created) => {
  const [data, { names, nameOf }] = await Promise.all([api("GET", "/v0/api-keys"), scopeNames()])
  page("API keys",
    created ? secretOnce("API key", created.api_key) : null,
    form("Create an API key", [...field("Name", { name: "name", required: true }),
      h("label", { for: "key-scope" }, "Scope"), h("select", { id: "key-scope", name: "scope" }, scopeOptions(names, "organization")),
      permissionChoice()], "Create key",
    async (v) => {
      const permissions = Object.keys(v).filter((k) => k.startsWith("permission:")).map((k) => k.slice("permission:".length))
      await apiKeys(await api("POST", "/v0/api-keys", { name: v.name, ...keyScope(parseScope(v.scope)), ...(permissions.length ? { permissions } : {}) }))
    }),
    data.api_keys.length === 0 ? h("p", { className: "muted" }, "No API keys.")
      : table("API keys", ["Name", "Prefix", "Scope", "Permissions", "Created", "Actions"], data.api_keys.map((k) => [
        k.name, h("code", {}, k.prefix), nameOf(k.scope === "organization" ? ORGANIZATION : { kind: k.scope, id: k.scope === "inbox" ? k.inbox_id : k.pod_id }),
        granted(k.permissions), when(k.created_at),
        button("Revoke", async () => { if (confirm(`Revoke ${k.name}? Programs using it stop at once.`)) { await api("DELETE", `/v0/api-keys/${enc(k.api_key_id)}`); await apiKeys() } }, { "aria-label": `Revoke ${k.name}` })])))
}

// ---------- billing ----------

export const billing = async () => {
  const [summary, plans] = await Promise.all([api("GET", "/v0/billing"), api("GET", "/public/plans").catch(() => null)])
  const result = h("div", { id: "billing-result", role: "status" })
  const attempt = (action) => async (...args) => {
    result.replaceChildren()
    try { await action(...args) } catch (err) { result.replaceChildren(problem(err)); showError(err.body ?? { message: err.message }) }
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

/** Usage and rates of the scope; event counts exist for the whole organization only (spec: Metrics). */
export const metrics = async (scope, period = "3600") => {
  const q = `period=${enc(period)}&limit=24`
  const base = `${scopeApi(scope)}/metrics`
  const whole = scope.kind === "organization"
  const [{ picker, name }, usage, events, rates] = await Promise.all([scopePicker(scope, `metrics/${period}`), api("GET", `${base}/usage?${q}`),
    whole ? api("GET", `/v0/metrics/events?${q}`) : null, api("GET", `${base}/rates?${q}`)])
  const figure = (label, chart) => h("figure", {}, chart, h("figcaption", {}, label))
  page("Metrics",
    picker,
    h("p", { className: "muted", "data-testid": "metrics-scope" }, `The metrics of ${name}.`),
    form("Period", select("Period of each bar", "period", [["3600", "hour (last 24 hours)"], ["86400", "day (last 24 days)"]], period), "Show",
      (v) => go(scopeHash(scope, `metrics/${v.period}`))),
    h("h2", {}, "Usage"),
    h("div", { className: "charts" }, Object.entries(usage).map(([type, series]) => figure(type.replaceAll("_", " "), sparkline(type, series.map((p) => p.value), { times: series.map((p) => p.timestamp) })))),
    h("h2", {}, events ? `Events (${events.total})` : "Events"),
    events ? bars("Events", Object.entries(events.counts ?? {}).filter(([, c]) => c > 0))
      : h("p", { className: "muted" }, "Event counts are kept for the whole organization only: choose it as the scope to see them."),
    h("h2", {}, "Rates"),
    h("div", { className: "charts" }, Object.entries(rates).map(([type, series]) => figure(`${type} rate (sent per period)`, sparkline(`${type}: sent`, series.map((p) => p.sent), { times: series.map((p) => p.timestamp) })))))
}
