/**
 * The scope of the inboxes, lists, webhooks, domains and metrics pages: the organization, a
 * pod or an inbox, as the API's three path forms (/v0/..., /v0/pods/:pod_id/...,
 * /v0/inboxes/:inbox_id/...). The dashboard's hash routes mirror them (#/lists/...,
 * #/pod/ID/lists/..., #/inbox/ID/lists/...), so a scoped page has its own address, and each
 * of those pages opens with a labelled picker (a form with a Switch button, so arrowing
 * through the options does not navigate).
 */
import { type Answer, client, type paths } from "./client.ts"
import { go } from "./dom.js"
import { Form, type Values } from "./ui.tsx"

export type Kind = "organization" | "pod" | "inbox"
export type Scope = { readonly kind: "organization" } | { readonly kind: "pod" | "inbox"; readonly id: string }
export const ORGANIZATION: Scope = { kind: "organization" }
const ALL: ReadonlyArray<Kind> = ["organization", "pod", "inbox"]

/** The scopes each page has in the API (spec: domains, and the list of inboxes, exist at organization and pod level only). */
const PAGES: Readonly<Record<string, ReadonlyArray<Kind>>> = {
  inboxes: ["organization", "pod"],
  lists: ALL,
  webhooks: ALL,
  metrics: ALL,
  domains: ["organization", "pod"],
  domain: ["organization", "pod"]
}

/** Splits a scoped route (`pod/ID/lists/...`) into its scope, page and arguments; other routes pass through. */
export const routeScope = (name: string, args: Array<string>): { scope: Scope; name: string; args: Array<string> } => {
  const [id, page, ...rest] = args
  return (name === "pod" || name === "inbox") && id && page !== undefined && PAGES[page]?.includes(name)
    ? { scope: { kind: name, id }, name: page, args: rest }
    : { scope: ORGANIZATION, name, args }
}

const enc = encodeURIComponent

/** The API prefix of a scope: `/v0`, `/v0/pods/ID` or `/v0/inboxes/ID`. */
export const scopeApi = (scope: Scope) => scope.kind === "organization" ? "/v0" : `/v0/${scope.kind === "pod" ? "pods" : "inboxes"}/${enc(scope.id)}`

/**
 * The rest of a path (`/webhooks`) that the API has at each of the three scopes, or at the
 * organization's and a pod's: a path the API drops at one of them fails the type check.
 */
type Rest<P> = P extends `/v0/pods/{pod_id}${infer R}` ? R : never
type EveryScope = { [R in Rest<keyof paths>]: `/v0${R}` extends keyof paths ? `/v0/inboxes/{inbox_id}${R}` extends keyof paths ? R : never : never }[Rest<keyof paths>]
type PodScope = { [R in Rest<keyof paths>]: `/v0${R}` extends keyof paths ? R : never }[Rest<keyof paths>]

/**
 * The API path of `rest` in a scope, with the scope's id written in. Typed as the
 * organization's path, whose parameters and answer the scoped paths share.
 */
export const scopedPath = <R extends EveryScope>(scope: Scope, rest: R) => `${scopeApi(scope)}${rest}` as `/v0${R}`
export const podScopedPath = <R extends PodScope>(scope: Scope, rest: R) => `${scopeApi(scope)}${rest}` as `/v0${R}`

/** The dashboard address of `rest` (a page and its arguments) in a scope. */
export const scopeHash = (scope: Scope, rest: string) => scope.kind === "organization" ? `#/${rest}` : `#/${scope.kind}/${enc(scope.id)}/${rest}`

/** The value of a scope in a select (`organization`, `pod:ID`, `inbox:ID`), and back. */
export const valueOf = (scope: Scope) => scope.kind === "organization" ? "organization" : `${scope.kind}:${scope.id}`
export const parseScope = (value: string): Scope => {
  const at = value.indexOf(":")
  const kind = value.slice(0, at)
  return at < 0 || (kind !== "pod" && kind !== "inbox") ? ORGANIZATION : { kind, id: value.slice(at + 1) }
}

export type Pod = Answer<"pods.list">["pods"][number]
export type InboxItem = Answer<"inboxes.list.0">["inboxes"][number]
const readInboxes = () => client.GET("/v0/inboxes", { params: { query: { limit: 100 } } }).then((a) => a.data?.inboxes ?? [])

export interface Known {
  readonly pods: ReadonlyArray<Pod>
  readonly inboxes: ReadonlyArray<InboxItem>
  /** A name for each scope offered, by its select value. */
  readonly names: Map<string, string>
  readonly nameOf: (scope: Scope) => string
}

/**
 * The first hundred pods and inboxes (of the `kinds` asked), and a name for each scope: what
 * a page needs to offer scopes or to name one (a webhook's owner, a key's scope). A list the
 * session may not read is offered empty rather than failing the page.
 */
export const scopeNames = async (kinds: ReadonlyArray<Kind> = ALL): Promise<Known> => {
  const [pods, inboxes] = await Promise.all([
    kinds.includes("pod") ? client.GET("/v0/pods", { params: { query: { limit: 100 } } }).then((a) => a.data?.pods ?? [], () => []) : [],
    kinds.includes("inbox") ? readInboxes().catch(() => []) : []
  ])
  const names = new Map<string, string>([
    ["organization", "the whole organization"],
    ...pods.map((p): [string, string] => [`pod:${p.pod_id}`, `pod ${p.name}`]),
    ...inboxes.map((i): [string, string] => [`inbox:${i.inbox_id}`, `inbox ${i.email ?? i.inbox_id}`])
  ])
  return { pods, inboxes, names, nameOf: (scope) => names.get(valueOf(scope)) ?? (scope.kind === "organization" ? "the whole organization" : `${scope.kind} ${scope.id}`) }
}

/** The options of a scope select: the organization, then the pods and the inboxes in groups. */
export const ScopeOptions = ({ names, current, kinds = ALL }: { readonly names: Map<string, string>; readonly current: string; readonly kinds?: ReadonlyArray<Kind> }) => {
  const option = (value: string) => <option key={value} value={value} selected={value === current}>{names.get(value)}</option>
  const group = (kind: Kind, label: string) => {
    const values = [...names.keys()].filter((v) => v.startsWith(`${kind}:`))
    return values.length > 0 && kinds.includes(kind) ? <optgroup label={label}>{values.map(option)}</optgroup> : null
  }
  return (
    <>
      {option("organization")}
      {group("pod", "Pods")}
      {group("inbox", "Inboxes")}
    </>
  )
}

/** The picker of a page: its scopes (the first hundred pods and inboxes, and the current one), switched by its button. */
export const ScopePicker = ({ scope, rest, known, kinds = ALL }: { readonly scope: Scope; readonly rest: string; readonly known: Known; readonly kinds?: ReadonlyArray<Kind> }) => {
  const id = `scope-${rest.split("/")[0]}`
  return (
    <Form label="Choose the scope" submit="Switch scope" class="scope" keep action={(v: Values) => go(scopeHash(parseScope(v["scope"] ?? ""), rest))}>
      <label for={id}>Scope</label>
      <select id={id} name="scope"><ScopeOptions names={known.names} current={valueOf(scope)} kinds={kinds} /></select>
    </Form>
  )
}

/** The names of a page's scopes, the current one among them even when it is beyond the hundred listed. */
export const scopePicker = async (scope: Scope, kinds: ReadonlyArray<Kind> = ALL) => {
  const known = await scopeNames(kinds)
  const current = valueOf(scope)
  if (!known.names.has(current) && scope.kind !== "organization") known.names.set(current, `${scope.kind} ${scope.id}`)
  return { known, name: known.nameOf(scope) }
}
