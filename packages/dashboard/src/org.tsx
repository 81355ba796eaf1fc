/**
 * The organization's pages: overview (plan and usage), domains of the organization or a pod
 * (DNS records with their status and copy buttons, zone file, verify), API keys (for the
 * organization, a pod or an inbox, with permissions chosen from grouped checkboxes; the
 * secret shown once with a copy button; revoke), billing (the plan, the plans compared side
 * by side with the current one marked, checkout, portal, cancel) and metrics of the
 * organization, a pod or an inbox as SVG charts. Lists and suppressions are policy.tsx,
 * webhooks webhooks.tsx.
 */
import { useState } from "preact/hooks"
import { Bars, Sparkline } from "./charts.tsx"
import { type Answer, client } from "./client.ts"
import { go, notice, plainWords } from "./dom.js"
import { PERMISSIONS } from "./generated/permissions.ts"
import { type Known, ORGANIZATION, parseScope, type Scope, ScopeOptions, ScopePicker, podScopedPath, scopeHash, scopeNames, scopePicker, scopedPath } from "./scope.tsx"
import { Action, answer, Copy, done, type Failure, Field, Form, Loading, mount, Muted, Page, Problem, SecretOnce, Select, Table, when } from "./ui.tsx"

const enc = encodeURIComponent
/** The API's numbers (a Schema.Number may be written as a string such as "Infinity"). */
const num = (v: number | string | null | undefined) => typeof v === "number" ? v : v === null || v === undefined ? null : Number(v)

const PLAN_NAMES: Readonly<Record<string, string>> = { free: "Free", pro: "Pro", scale: "Scale" }
type Counted = "inboxes" | "sends_this_month" | "sends_today" | "domains" | "webhooks"
type Limited = "inboxes" | "sends_per_month" | "sends_per_day" | "domains" | "webhooks"
// What /v0/billing/usage counts, in words, with the limit each count is held to (spec: Billing).
const USAGE_ROWS: ReadonlyArray<readonly [string, Counted, Limited]> = [
  ["Inboxes", "inboxes", "inboxes"],
  ["Sends this month", "sends_this_month", "sends_per_month"],
  ["Sends today", "sends_today", "sends_per_day"],
  ["Custom domains", "domains", "domains"],
  ["Webhooks", "webhooks", "webhooks"]
]
const noLimit = (limit: string) => limit === "sends_per_day" ? "no daily limit" : "no limit"

// ---------- overview ----------

const Overview = ({ email, usage }: { readonly email: string; readonly usage: Answer<"billing.usage"> | Failure | null }) => (
  <Page title="Overview">
    <p>Signed in as {email}</p>
    {usage === null
      ? <Loading what="Reading the plan and its usage…" />
      : usage instanceof Error
      ? (
        <Muted>
          {usage.body?.code === "missing_permission" || usage.status === 403
            ? "The plan and its usage are shown to the organization's owners and admins."
            : plainWords(usage.body ?? { message: usage.message })}
        </Muted>
      )
      : (
        <>
          <h2>{`Plan: ${PLAN_NAMES[usage.plan] ?? usage.plan}`}</h2>
          <Table
            name="Usage"
            heads={["What", "Used", "Limit"]}
            rows={USAGE_ROWS.map(([what, used, limit]) => {
              const n = num(usage.usage[used]) ?? 0
              const max = num(usage.limits[limit])
              const bounded = max !== null && Number.isFinite(max)
              return [what, [
                what,
                bounded ? <span>{`${n} `}<meter min={0} max={Math.max(max, 1)} value={Math.min(n, max)} aria-label={`${what}: ${n} of ${max}`} /></span> : String(n),
                bounded ? String(max) : noLimit(limit)
              ]]
            })}
          />
          <p><a href="#/billing">Plans and billing</a></p>
        </>
      )}
  </Page>
)

/** The plan and its usage: each count against its limit, as a figure and a meter. */
export const overview = async (me: { readonly user: { readonly email: string } }) => {
  mount(<Overview email={me.user.email} usage={null} />)
  const usage = await answer(client.GET("/v0/billing/usage"), { quiet: true }).catch((err: Failure) => err)
  mount(<Overview email={me.user.email} usage={usage} />)
}

// ---------- domains ----------

const DOMAIN_SCOPES = ["organization", "pod"] as const

const Domains = ({ scope, known, name, data }: { readonly scope: Scope; readonly known: Known; readonly name: string; readonly data: Answer<"domains.list.0"> }) => (
  <Page title="Domains">
    <ScopePicker scope={scope} rest="domains" known={known} kinds={DOMAIN_SCOPES} />
    <Muted testid="domain-scope">
      {scope.kind === "organization"
        ? "Every domain of the organization. A domain added here belongs to the whole organization."
        : `The domains of ${name}. A domain added here belongs to this pod.`}
    </Muted>
    <Form label="Add a domain" submit="Add domain" action={async (v) => {
      const d = await answer(client.POST(podScopedPath(scope, "/domains"), { body: { domain: (v["domain"] ?? "").trim() } }))
      go(scopeHash(scope, `domain/${enc(d.domain_id)}`))
    }}>
      <Field label="Domain name" name="domain" required placeholder="mail.example.com" />
    </Form>
    {data.domains.length === 0
      ? <Muted>No custom domains yet.</Muted>
      : (
        <Table
          name="Domains"
          heads={["Domain", "Added"]}
          rows={data.domains.map((d) => [d.domain_id, [<a href={scopeHash(scope, `domain/${enc(d.domain_id)}`)}>{d.domain}</a>, when(d.created_at)]])}
        />
      )}
  </Page>
)

export const domains = async (scope: Scope) => {
  const [{ known, name }, data] = await Promise.all([scopePicker(scope, DOMAIN_SCOPES), answer(client.GET(podScopedPath(scope, "/domains")))])
  mount(<Domains scope={scope} known={known} name={name} data={data} />)
}

type Domain = Answer<"domains.get.0">
const RECORD_USE: Readonly<Record<string, string>> = { TXT: "proves the domain and signs mail (SPF, DKIM, DMARC)", MX: "receives mail" }

const DomainPage = ({ scope, id, first }: { readonly scope: Scope; readonly id: string; readonly first: Domain }) => {
  const [d, setDomain] = useState(first)
  const [zone, setZone] = useState<string | null>(null)
  const path = { params: { path: { domain_id: id } } }
  return (
    <Page title={d.domain}>
      <p>
        <a href={scopeHash(scope, "domains")}>{scope.kind === "organization" ? "← All domains" : "← The pod's domains"}</a>
        {" · status: "}<strong data-testid="domain-status">{d.status}</strong>{d.reason ? ` (${d.reason})` : ""}
      </p>
      <h2>DNS records to publish</h2>
      <Muted>Add each record at your DNS provider with its type, name and value (copy them with the buttons), then press Verify.</Muted>
      <Table
        name="DNS records"
        heads={["Type", "Name", "Value", "Priority", "Status"]}
        rows={(d.records ?? []).map((r, i) => [`${i}`, [
          <span title={RECORD_USE[r.type]}>{r.type}</span>,
          <><code>{r.name}</code> <Copy value={r.name} name={`Copy the name of record ${i + 1} (${r.type})`} /></>,
          <><code class="wrap">{r.value}</code> <Copy value={r.value} name={`Copy the value of record ${i + 1} (${r.type})`} /></>,
          r.priority ?? "",
          <span class={`record-${r.status.toLowerCase()}`}>{r.status}</span>
        ]])}
      />
      <Action class="primary" action={async () => {
        await done(client.POST(podScopedPath(scope, "/domains/{domain_id}/verify"), path))
        setDomain(await answer(client.GET(podScopedPath(scope, "/domains/{domain_id}"), path)))
        notice("Verification checked: see each record's status.")
      }}>Verify</Action>
      <Action action={async () => setZone(await answer(client.GET(podScopedPath(scope, "/domains/{domain_id}/zone-file"), { ...path, parseAs: "text" })))}>Show zone file</Action>
      <Action action={async () => {
        if (!confirm(`Delete ${d.domain}?`)) return
        await done(client.DELETE(podScopedPath(scope, "/domains/{domain_id}"), path))
        go(scopeHash(scope, "domains"))
      }}>Delete domain</Action>
      <pre class="zone" aria-label="Zone file">{zone}</pre>
    </Page>
  )
}

export const domain = async (scope: Scope, given: string | undefined) => {
  const id = given ?? ""
  const first = await answer(client.GET(podScopedPath(scope, "/domains/{domain_id}"), { params: { path: { domain_id: id } } }))
  mount(<DomainPage scope={scope} id={id} first={first} />)
}

// ---------- API keys ----------

/** The body's scope of a new key: none for the organization, else `pod_id` or `inbox_id` (spec: API keys). */
const keyScope = (scope: Scope) => scope.kind === "pod" ? { pod_id: scope.id } : scope.kind === "inbox" ? { inbox_id: scope.id } : {}

/** A key's permissions (an object of name to whether the key has it), the granted ones folded. */
const Granted = ({ permissions }: { readonly permissions: Readonly<Record<string, boolean>> }) => {
  const names = Object.keys(permissions).filter((name) => permissions[name])
  return (
    <details>
      <summary>{`${names.length} permissions`}</summary>
      <p>{names.join(", ")}</p>
    </details>
  )
}

/** The groups of the permission checkboxes: by the first word of each permission's name. */
const PERMISSION_GROUPS: Readonly<Record<string, string>> = {
  account: "Account", api: "API keys", app: "Apps", domain: "Domains", draft: "Drafts", inbox: "Inboxes", label: "Hidden mail (spam, trash, blocked, unverified)",
  list: "Allow and block lists", message: "Messages", metrics: "Metrics", pod: "Pods", thread: "Threads", webhook: "Webhooks"
}
const GROUPED = (() => {
  const groups = new Map<string, Array<string>>()
  for (const p of PERMISSIONS) {
    const group = p.split("_")[0] ?? p
    groups.set(group, [...(groups.get(group) ?? []), p])
  }
  return [...groups]
})()

/** The permissions of a new key, as checkboxes grouped by what they are about; none ticked gives every permission within the scope. */
const PermissionChoice = () => (
  <fieldset class="permissions">
    <legend>Permissions (none ticked: every permission within the scope)</legend>
    {GROUPED.map(([group, names]) => (
      <fieldset key={group}>
        <legend>{PERMISSION_GROUPS[group] ?? group}</legend>
        {names.map((p) => <label key={p} class="check"><input type="checkbox" name={`permission:${p}`} />{p}</label>)}
      </fieldset>
    ))}
  </fieldset>
)

type KeyList = Answer<"apiKeys.list.0">
const readKeys = () => answer(client.GET("/v0/api-keys"))

const ApiKeys = ({ known, first }: { readonly known: Known; readonly first: KeyList }) => {
  const [data, setData] = useState(first)
  const [secret, setSecret] = useState<string | null>(null)
  const reload = async () => setData(await readKeys())
  return (
    <Page title="API keys">
      {secret ? <SecretOnce what="API key" secret={secret} /> : null}
      <Form label="Create an API key" submit="Create key" action={async (v) => {
        const permissions = Object.keys(v).filter((k) => k.startsWith("permission:")).map((k) => k.slice("permission:".length))
        const created = await answer(client.POST("/v0/api-keys", {
          body: { name: v["name"] ?? "", ...keyScope(parseScope(v["scope"] ?? "")), ...(permissions.length > 0 ? { permissions } : {}) }
        }))
        setSecret(created.api_key)
        await reload()
      }}>
        <Field label="Name" name="name" required />
        <label for="key-scope">Scope</label>
        <select id="key-scope" name="scope"><ScopeOptions names={known.names} current="organization" /></select>
        <PermissionChoice />
      </Form>
      {data.api_keys.length === 0
        ? <Muted>No API keys.</Muted>
        : (
          <Table
            name="API keys"
            heads={["Name", "Prefix", "Scope", "Permissions", "Created", "Actions"]}
            rows={data.api_keys.map((k) => [k.api_key_id, [
              k.name,
              <code>{k.prefix}</code>,
              known.nameOf(k.scope === "organization" ? ORGANIZATION : { kind: k.scope, id: (k.scope === "inbox" ? k.inbox_id : k.pod_id) ?? "" }),
              <Granted permissions={k.permissions} />,
              when(k.created_at),
              <Action aria-label={`Revoke ${k.name}`} action={async () => {
                if (!confirm(`Revoke ${k.name}? Programs using it stop at once.`)) return
                await done(client.DELETE("/v0/api-keys/{api_key_id}", { params: { path: { api_key_id: k.api_key_id } } }))
                setSecret(null)
                await reload()
              }}>Revoke</Action>
            ]])}
          />
        )}
    </Page>
  )
}

export const apiKeys = async () => {
  const [first, known] = await Promise.all([readKeys(), scopeNames()])
  mount(<ApiKeys known={known} first={first} />)
}

// ---------- billing ----------

type Plan = Answer<"plans.list">["plans"][number]
type Summary = Answer<"billing.get">

const money = (n: number | string) => {
  const v = num(n)
  return v === null || !Number.isFinite(v) ? "—" : v === 0 ? "free" : `$${v.toLocaleString("en-US")}`
}
const limitWords = (v: number | string | null, limit: string) => {
  const n = num(v)
  return n === null || !Number.isFinite(n) ? noLimit(limit) : n.toLocaleString("en-US")
}
// The rows of the comparison: each plan's price and each limit the API holds it to.
const COMPARED: ReadonlyArray<readonly [string, (p: Plan) => string]> = [
  ["Monthly price (USD)", (p) => money(p.prices.usd.monthly)],
  ["Yearly price (USD)", (p) => money(p.prices.usd.yearly)],
  ["Inboxes", (p) => limitWords(p.limits.inboxes, "inboxes")],
  ["Sends a month", (p) => limitWords(p.limits.sends_per_month, "sends_per_month")],
  ["Sends a day", (p) => limitWords(p.limits.sends_per_day, "sends_per_day")],
  ["Custom domains", (p) => limitWords(p.limits.domains, "domains")],
  ["Webhooks", (p) => limitWords(p.limits.webhooks, "webhooks")]
]

/** The public plans side by side, a column each, the organization's own marked. */
const PlanComparison = ({ plans, current }: { readonly plans: ReadonlyArray<Plan>; readonly current: string }) => (
  <table aria-label="Plans compared" class="compare">
    <thead>
      <tr>
        <td />
        {plans.map((p) => (
          <th key={p.id} scope="col" class={p.id === current ? "current" : undefined} aria-current={p.id === current ? "true" : undefined}>
            {p.name}{p.id === current ? <span class="badge">your plan</span> : null}
          </th>
        ))}
      </tr>
    </thead>
    <tbody>
      {COMPARED.map(([what, value]) => (
        <tr key={what}>
          <th scope="row">{what}</th>
          {plans.map((p) => <td key={p.id} class={p.id === current ? "current" : undefined}>{value(p)}</td>)}
        </tr>
      ))}
    </tbody>
  </table>
)

const Billing = ({ first, plans }: { readonly first: Summary; readonly plans: ReadonlyArray<Plan> }) => {
  const [summary, setSummary] = useState(first)
  const [result, setResult] = useState<{ err?: Failure; text?: string } | null>(null)
  // A failure stays beside the controls (the banner has it too) with its fix.
  const attempt = (action: (v: Record<string, string>) => Promise<unknown>) => async (v: Record<string, string> = {}) => {
    setResult(null)
    try {
      await action(v)
    } catch (err) {
      setResult({ err: err as Failure })
    }
  }
  const upgrades = plans.filter((p) => p.id !== "free")
  return (
    <Page title="Billing">
      <Table
        name="Plan"
        heads={["Plan", "Status", "Interval", "Period ends", "Cancels at period end"]}
        rows={[["plan", [summary.plan_name ?? summary.plan, summary.status, summary.interval ?? "—", when(summary.current_period_end), summary.cancel_at_period_end ? "yes" : "no"]]]}
      />
      {plans.length > 0
        ? (
          <>
            <h2>Plans compared</h2>
            <PlanComparison plans={plans} current={summary.plan} />
          </>
        )
        : null}
      <h2>Change plan</h2>
      <Form label="Checkout" submit="Go to checkout" keep action={attempt(async (v) => {
        const plan = v["plan"] === "scale" ? "scale" : "pro"
        const interval = v["interval"] === "yearly" ? "yearly" : "monthly"
        const { url } = await answer(client.POST("/v0/billing/checkout", { body: { plan, interval } }))
        location.assign(url)
      })}>
        <Select label="Plan" name="plan" options={(upgrades.length > 0 ? upgrades : [{ id: "pro", name: "Pro" }, { id: "scale", name: "Scale" }]).map((p) => [p.id, p.name] as const)} />
        <Select label="Billing interval" name="interval" options={[["monthly", "monthly"], ["yearly", "yearly"]]} />
      </Form>
      <Action action={attempt(async () => {
        const portal = await answer(client.POST("/v0/billing/portal"))
        if (portal.url) location.assign(portal.url)
        else setResult({ text: portal.instructions ?? "" })
      })}>Manage payment (portal)</Action>
      {summary.source === "subscription" && !summary.cancel_at_period_end
        ? (
          <Action action={attempt(async () => {
            if (!confirm("Cancel at the end of the period?")) return
            const s = await answer(client.POST("/v0/billing/cancel"))
            setSummary(await answer(client.GET("/v0/billing")))
            notice((s as { message?: string }).message ?? "Canceled at period end.")
          })}>Cancel subscription</Action>
        )
        : null}
      <div id="billing-result" role="status">
        {result?.err ? <Problem err={result.err} /> : result?.text ? <p>{result.text}</p> : null}
      </div>
    </Page>
  )
}

export const billing = async () => {
  const [summary, plans] = await Promise.all([
    answer(client.GET("/v0/billing")),
    client.GET("/public/plans").then((a) => a.data?.plans ?? [], () => [])
  ])
  mount(<Billing first={summary} plans={plans} />)
}

// ---------- metrics ----------

type Series<K extends string> = Readonly<Record<string, ReadonlyArray<{ readonly timestamp: string } & Readonly<Record<K, number | string | null>>>>>

const Metrics = ({ scope, period, known, name, usage, events, rates }: {
  readonly scope: Scope
  readonly period: string
  readonly known: Known
  readonly name: string
  readonly usage: Series<"value">
  readonly events: Answer<"metrics.events"> | null
  readonly rates: Series<"sent">
}) => (
  <Page title="Metrics">
    <ScopePicker scope={scope} rest={`metrics/${period}`} known={known} />
    <Muted testid="metrics-scope">{`The metrics of ${name}.`}</Muted>
    <Form label="Period" submit="Show" keep action={(v) => go(scopeHash(scope, `metrics/${v["period"] ?? "3600"}`))}>
      <Select label="Period of each bar" name="period" value={period} options={[["3600", "hour (last 24 hours)"], ["86400", "day (last 24 days)"]]} />
    </Form>
    <h2>Usage</h2>
    <div class="charts">
      {Object.entries(usage).map(([type, series]) => (
        <figure key={type}>
          <Sparkline label={type} values={series.map((p) => num(p.value))} times={series.map((p) => p.timestamp)} />
          <figcaption>{type.replaceAll("_", " ")}</figcaption>
        </figure>
      ))}
    </div>
    <h2>{events ? `Events (${events.total})` : "Events"}</h2>
    {events
      ? <Bars label="Events" entries={Object.entries(events.counts ?? {}).map(([n, c]) => [n, num(c) ?? 0] as const).filter(([, c]) => c > 0)} />
      : <Muted>Event counts are kept for the whole organization only: choose it as the scope to see them.</Muted>}
    <h2>Rates</h2>
    <div class="charts">
      {Object.entries(rates).map(([type, series]) => (
        <figure key={type}>
          <Sparkline label={`${type}: sent`} values={series.map((p) => num(p.sent))} times={series.map((p) => p.timestamp)} />
          <figcaption>{`${type} rate (sent per period)`}</figcaption>
        </figure>
      ))}
    </div>
  </Page>
)

/** Usage and rates of the scope; event counts exist for the whole organization only (spec: Metrics). */
export const metrics = async (scope: Scope, period = "3600") => {
  const query = { params: { query: { period, limit: 24 } } }
  const [{ known, name }, usage, events, rates] = await Promise.all([
    scopePicker(scope),
    answer(client.GET(scopedPath(scope, "/metrics/usage"), query)),
    scope.kind === "organization" ? answer(client.GET("/v0/metrics/events", query)) : null,
    answer(client.GET(scopedPath(scope, "/metrics/rates"), query))
  ])
  mount(<Metrics scope={scope} period={period} known={known} name={name} usage={usage} events={events} rates={rates} />)
}
