/**
 * The webhook pages: the webhooks of the organization, a pod or an inbox (create with event
 * types, custom request headers and an optional narrowing to some inboxes or pods, the
 * signing secret shown once, enable/disable, delete), and one webhook: its delivery log,
 * each delivery opened to show its payload (the JSON as POSTed, pretty, copyable) and sent
 * again ("Redeliver", a new delivery of the same event), "Send test event", its URL, event
 * types and narrowing to change, and its custom headers (names shown, values write-only as
 * the spec says, set and removed).
 */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"
import { notice } from "./dom.js"
import { type Known, ORGANIZATION, type Scope, ScopePicker, scopeHash, scopeNames, scopePicker, scopedPath } from "./scope.tsx"
import { Action, answer, Check, Copy, done, Field, Form, mount, Muted, Page, SecretOnce, Table, ticked, useMounted, when } from "./ui.tsx"

const EVENT_TYPES = [
  "message.received", "message.sent", "message.delivered", "message.bounced", "message.complained", "message.rejected", "message.opened", "domain.verified",
  "message.received.spam", "message.received.blocked", "message.received.unauthenticated"
] as const
type EventType = typeof EVENT_TYPES[number]
const DEFAULT_EVENTS: ReadonlyArray<string> = EVENT_TYPES.slice(0, 8)

type Webhook = Answer<"webhooks.get.0">
type Delivery = Answer<"webhooks.deliveries">["deliveries"][number]
type Created = Answer<"webhooks.create.0">

const EventTypes = ({ checked }: { readonly checked: ReadonlyArray<string> }) => (
  <fieldset>
    <legend>Event types</legend>
    {EVENT_TYPES.map((t) => <Check key={t} name="event_types" value={t} checked={checked.includes(t)}>{t}</Check>)}
  </fieldset>
)
const checkedTypes = (form: HTMLFormElement) => ticked(form, "event_types").filter((t): t is EventType => (EVENT_TYPES as ReadonlyArray<string>).includes(t))

/** `Name: value` lines as the `headers` object of the create body; the API checks names and values. */
const headerLines = (text: string | undefined) => {
  const headers: Record<string, string> = {}
  for (const line of (text ?? "").split("\n").map((l) => l.trim()).filter(Boolean)) {
    const colon = line.indexOf(":")
    if (colon <= 0) throw new Error(`Write each custom header as Name: value (not "${line}").`)
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
  }
  return headers
}

/** Where a webhook belongs: an inbox's, a pod's or the organization's (its scope in the API). */
const ownerOf = (w: Webhook): Scope => w.inbox_id ? { kind: "inbox", id: w.inbox_id } : w.pod_id ? { kind: "pod", id: w.pod_id } : ORGANIZATION

/** Checkboxes of inboxes or pods, the `ids` chosen ticked (and offered even when not among `items`). */
const Boxes = ({ legend, name, items, ids = [] }: {
  readonly legend: string
  readonly name: string
  readonly items: ReadonlyArray<readonly [string, string]>
  readonly ids?: ReadonlyArray<string> | undefined
}) => {
  const all = [...items, ...ids.filter((id) => !items.some(([x]) => x === id)).map((id) => [id, id] as const)]
  return (
    <fieldset>
      <legend>{legend}</legend>
      {all.length === 0 ? <Muted>None yet.</Muted> : all.map(([id, text]) => <Check key={id} name={name} value={id} checked={ids.includes(id)}>{text}</Check>)}
    </fieldset>
  )
}

/**
 * The inboxes and pods a webhook of `owner` may be narrowed to (spec: `inbox_ids`, `pod_ids`,
 * up to 10 each), as checkboxes, `w`'s own checked. The API's rules decide what is offered:
 * an inbox's webhook has that inbox's events only, a pod's may be narrowed to its inboxes,
 * the organization's to any inbox or pod. Chosen ones beyond the hundred listed are offered
 * too, so saving keeps them.
 */
const Narrowing = ({ owner, known, w }: { readonly owner: Scope; readonly known: Known; readonly w?: Webhook }) => {
  if (owner.kind === "inbox") return <Muted>An inbox's webhook receives that inbox's events only.</Muted>
  const inboxes = known.inboxes.filter((i) => owner.kind === "organization" || i.pod_id === owner.id).map((i) => [i.inbox_id, i.email ?? i.inbox_id] as const)
  return (
    <details open={Boolean(w?.inbox_ids || w?.pod_ids)}>
      <summary>Narrow to some inboxes or pods (optional)</summary>
      <Muted>{`With some chosen, the webhook receives only their events (up to 10 of each); with none, every event of ${known.nameOf(owner)}.`}</Muted>
      <Boxes legend="Only these inboxes" name="inbox_ids" items={inboxes} ids={w?.inbox_ids} />
      {owner.kind === "organization" ? <Boxes legend="Only these pods" name="pod_ids" items={known.pods.map((p) => [p.pod_id, p.name] as const)} ids={w?.pod_ids} /> : null}
    </details>
  )
}

/** The checked inbox_ids and pod_ids of a form, as the API takes them at the owner's scope. */
const narrowed = (form: HTMLFormElement, owner: Scope) => ({
  ...(owner.kind === "inbox" ? {} : { inbox_ids: ticked(form, "inbox_ids") }),
  ...(owner.kind === "organization" ? { pod_ids: ticked(form, "pod_ids") } : {})
})

/** Whose events a webhook receives: its owner's, or only those of any inbox or pod it is narrowed to. */
const receives = (w: Webhook, nameOf: Known["nameOf"]) => {
  const only = [...(w.inbox_ids ?? []).map((id) => nameOf({ kind: "inbox", id })), ...(w.pod_ids ?? []).map((id) => nameOf({ kind: "pod", id }))]
  const either = only.length > 1 ? `${only.slice(0, -1).join(", ")} or ${only.at(-1)}` : only[0]
  return `${nameOf(ownerOf(w))}${either ? `, only those of ${either}` : ""}`
}

const readWebhooks = (scope: Scope) => answer(client.GET(scopedPath(scope, "/webhooks")))
const hookPath = (id: string) => ({ params: { path: { webhook_id: id } } })

const Webhooks = ({ scope, known, name, first }: { readonly scope: Scope; readonly known: Known; readonly name: string; readonly first: Answer<"webhooks.list.0"> }) => {
  const [data, setData] = useState(first)
  const [created, setCreated] = useState<Created | null>(null)
  const reload = async () => setData(await readWebhooks(scope))
  return (
    <Page title="Webhooks">
      <ScopePicker scope={scope} rest="webhooks" known={known} />
      {created ? <SecretOnce what="Signing secret" secret={created.secret ?? ""} /> : null}
      <h2>New webhook</h2>
      <Muted testid="webhook-scope">{`A new webhook receives the events of ${name}.`}</Muted>
      <Form label="New webhook" submit="Create webhook" action={async (v, form) => {
        const headers = headerLines(v["headers"])
        // An empty narrowing is left out: the webhook then has its scope's every event.
        const only = Object.fromEntries(Object.entries(narrowed(form, scope)).filter(([, ids]) => ids.length > 0))
        const body = { url: v["url"] ?? "", event_types: checkedTypes(form), ...only, ...(Object.keys(headers).length > 0 ? { headers } : {}) }
        const hook = await answer(client.POST(scopedPath(scope, "/webhooks"), { body }))
        setCreated(hook)
        await reload()
      }}>
        <Field label="URL" name="url" type="url" required placeholder="https://example.com/hooks/inbox" />
        <EventTypes checked={DEFAULT_EVENTS} />
        <Narrowing owner={scope} known={known} />
        <Field label="Custom headers (optional, one Name: value a line; values are not shown again)" name="headers" multiline class="short" rows={2} placeholder="X-Team: mail" />
      </Form>
      <h2>Webhooks</h2>
      {data.webhooks.length === 0
        ? <Muted>No webhooks yet.</Muted>
        : (
          <Table
            name="Webhooks"
            heads={["URL", "Scope", "Status", "Events", "Actions"]}
            rows={data.webhooks.map((w) => [w.webhook_id, [
              <a href={`#/webhook/${encodeURIComponent(w.webhook_id)}`}>{w.url}</a>,
              receives(w, known.nameOf),
              w.enabled ? "enabled" : "disabled",
              w.event_types.join(", "),
              <>
                <Action aria-label={`${w.enabled ? "Disable" : "Enable"} ${w.url}`} action={async () => {
                  await answer(client.PATCH("/v0/webhooks/{webhook_id}", { ...hookPath(w.webhook_id), body: { enabled: !w.enabled } }))
                  await reload()
                }}>{w.enabled ? "Disable" : "Enable"}</Action>
                <Action aria-label={`Delete ${w.url}`} action={async () => {
                  if (!confirm(`Delete the webhook to ${w.url}?`)) return
                  await done(client.DELETE("/v0/webhooks/{webhook_id}", hookPath(w.webhook_id)))
                  await reload()
                }}>Delete</Action>
              </>
            ]])}
          />
        )}
    </Page>
  )
}

export const webhooks = async (scope: Scope) => {
  const [{ known, name }, first] = await Promise.all([scopePicker(scope), readWebhooks(scope)])
  mount(<Webhooks scope={scope} known={known} name={name} first={first} />)
}

// ---------- one webhook ----------

type TestResult = Answer<"webhooks.test"> & { readonly at: string }
/** Test events are not stored by the API (it answers what the endpoint said): the page keeps them beside the log. */
const tests = new Map<string, ReadonlyArray<TestResult>>()

const readHook = (id: string) =>
  Promise.all([
    answer(client.GET("/v0/webhooks/{webhook_id}", hookPath(id))),
    answer(client.GET("/v0/webhooks/{webhook_id}/deliveries", { params: { path: { webhook_id: id }, query: { limit: 50 } } })),
    answer(client.GET("/v0/webhooks/{webhook_id}/headers", hookPath(id)))
  ])
type HookData = Awaited<ReturnType<typeof readHook>>

/**
 * One delivery opened, below the log (a phone has room for it there): its payload as POSTed
 * (pretty JSON, with a copy button; gone once the event is past retention) and "Redeliver",
 * which sends the same event again as a new delivery.
 */
const DeliveryDetail = ({ webhookId, delivery, onRedelivered }: { readonly webhookId: string; readonly delivery: Delivery; readonly onRedelivered: () => unknown }) => {
  const [payload, setPayload] = useState<string | null | undefined>(undefined)
  const path = { params: { path: { webhook_id: webhookId, delivery_id: delivery.delivery_id } } }
  useMounted(() => {
    answer(client.GET("/v0/webhooks/{webhook_id}/deliveries/{delivery_id}", path)).then(
      (detail) => setPayload(detail.payload === undefined ? null : JSON.stringify(detail.payload, null, 2)),
      () => setPayload(null)
    )
  })
  const title = `The ${delivery.event_type} delivery of ${when(delivery.created_at)}`
  return (
    <section id="delivery-detail" class="delivery" aria-label={title}>
      <h3>{title}</h3>
      <p class="muted">{`${delivery.status}, ${delivery.attempts} ${delivery.attempts === 1 ? "attempt" : "attempts"}${delivery.status_code ? `, HTTP ${delivery.status_code}` : ""}${delivery.error ? `, ${delivery.error}` : ""}`}</p>
      {payload === undefined
        ? <p class="muted" role="status" aria-busy="true">Loading the payload…</p>
        : payload === null
        ? <Muted>The event is no longer kept, so its payload cannot be shown or sent again.</Muted>
        : (
          <>
            <pre class="payload" tabIndex={0} aria-label={`Payload of delivery ${delivery.delivery_id}`}><code>{payload}</code></pre>
            <Copy value={payload} name={`Copy the payload of delivery ${delivery.delivery_id}`} class="" />
          </>
        )}
      <Action aria-label={`Redeliver the ${delivery.event_type} event of ${when(delivery.created_at)}`} action={async () => {
        const again = await answer(client.POST("/v0/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", path))
        await onRedelivered()
        notice(`Sent again as a new delivery (${again.status}): it joins the top of the log.`)
      }}>Redeliver</Action>
    </section>
  )
}

const WebhookPage = ({ id, known, first }: { readonly id: string; readonly known: Known; readonly first: HookData }) => {
  const [[w, log, { headers }], setData] = useState(first)
  const [testRows, setTests] = useState(tests.get(id) ?? [])
  const [open, setOpen] = useState<Delivery | null>(null)
  const reload = async () => setData(await readHook(id))
  const owner = ownerOf(w)
  const changeHeaders = async (change: { set?: Record<string, string>; remove?: Array<string> }, said: string) => {
    await answer(client.PATCH("/v0/webhooks/{webhook_id}/headers", { ...hookPath(id), body: change }))
    await reload()
    notice(said)
  }
  const rows: Array<readonly [string, ReadonlyArray<ComponentChildren>]> = [
    ...testRows.map((t) => [t.event_id, [when(t.at), "test event", t.delivered ? "delivered" : "failed", t.status_code ?? "", "1", t.error ?? "", <span class="muted">not stored</span>]] as const),
    ...log.deliveries.map((d) => [d.delivery_id, [
      when(d.last_attempt_at ?? d.created_at), d.event_type, d.status, d.status_code ?? "", String(d.attempts), d.error ?? "",
      <button type="button" class="link" aria-expanded={open?.delivery_id === d.delivery_id} aria-controls="delivery-detail"
        aria-label={`Payload of the ${d.event_type} delivery of ${when(d.created_at)}`} onClick={() => setOpen(open?.delivery_id === d.delivery_id ? null : d)}>
        Payload
      </button>
    ]] as const)
  ]
  return (
    <Page title={`Webhook to ${w.url}`}>
      <p>
        <a href={scopeHash(owner, "webhooks")}>{owner.kind === "organization" ? "← All webhooks" : `← The ${owner.kind}'s webhooks`}</a>
        {` · ${w.enabled ? "enabled" : "disabled"} · events: ${w.event_types.join(", ")}`}
      </p>
      <p data-testid="webhook-receives">{`Receives the events of ${receives(w, known.nameOf)}.`}</p>
      <Action class="primary" action={async () => {
        const result = await answer(client.POST("/v0/webhooks/{webhook_id}/test", hookPath(id)))
        const kept = [{ ...result, at: new Date().toISOString() }, ...(tests.get(id) ?? [])]
        tests.set(id, kept)
        setTests(kept)
        notice(result.delivered
          ? `Test event delivered (HTTP ${result.status_code}).`
          : `Test event failed: ${result.error ?? "no answer"}${result.status_code ? ` (HTTP ${result.status_code})` : ""}.`)
      }}>Send test event</Action>
      <h2>Delivery log</h2>
      {rows.length === 0
        ? <Muted>Nothing delivered yet.</Muted>
        : <Table name="Delivery log" heads={["Time", "Event", "Status", "HTTP", "Attempts", "Error", "Payload"]} rows={rows} />}
      {open ? <DeliveryDetail key={open.delivery_id} webhookId={id} delivery={open} onRedelivered={reload} /> : null}
      <h2>Custom headers</h2>
      <Muted>Added to every delivery. Values are write-only: only the names are shown.</Muted>
      {headers.length === 0
        ? <Muted>No custom headers.</Muted>
        : (
          <ul class="chips" aria-label="Custom headers">
            {headers.map((n) => (
              <li key={n} class="label">
                <code>{n}</code>
                <Action class="chip-x" aria-label={`Remove header ${n}`} action={() => changeHeaders({ remove: [n] }, `Header ${n} removed.`)}>×</Action>
              </li>
            ))}
          </ul>
        )}
      <Form label="Set a header" submit="Set header" action={(v) => changeHeaders({ set: { [(v["name"] ?? "").trim()]: v["value"] ?? "" } }, `Header ${(v["name"] ?? "").trim()} set.`)}>
        <Field label="Header name" name="name" required placeholder="X-Team" />
        <Field label="Header value" name="value" required />
      </Form>
      <h2>Settings</h2>
      <Form label="Edit webhook" submit="Save changes" keep action={async (v, form) => {
        await answer(client.PATCH("/v0/webhooks/{webhook_id}", { ...hookPath(id), body: { url: v["url"] ?? "", event_types: checkedTypes(form), ...narrowed(form, owner) } }))
        await reload()
        notice("Webhook saved.")
      }}>
        <Field label="URL" name="url" type="url" required value={w.url} />
        <EventTypes checked={w.event_types} />
        <Narrowing owner={owner} known={known} w={w} />
      </Form>
    </Page>
  )
}

export const webhook = async (given: string | undefined) => {
  const id = given ?? ""
  const [first, known] = await Promise.all([readHook(id), scopeNames()])
  mount(<WebhookPage id={id} known={known} first={first} />)
}
