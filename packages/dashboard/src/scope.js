// The scope of the inboxes, lists, webhooks, domains and metrics pages: the organization, a pod or an
// inbox, as the API's three path forms (/v0/..., /v0/pods/:pod_id/..., /v0/inboxes/:inbox_id/...).
// The dashboard's hash routes mirror them (#/lists/..., #/pod/ID/lists/..., #/inbox/ID/lists/...),
// so a scoped page has its own address, and each of those pages opens with a labelled picker
// (a form with a Switch button, so arrowing through the options does not navigate).
import { api, enc, form, go, h } from "./dom.js"

export const ORGANIZATION = { kind: "organization" }
const ALL = ["organization", "pod", "inbox"]

/** The scopes each page has in the API (spec: domains, and the list of inboxes, exist at organization and pod level only). */
const PAGES = { inboxes: ["organization", "pod"], lists: ALL, webhooks: ALL, metrics: ALL, domains: ["organization", "pod"], domain: ["organization", "pod"] }

/** Splits a scoped route (`pod/ID/lists/...`) into its scope, page and arguments; other routes pass through. */
export const routeScope = (name, args) => {
  const [id, page, ...rest] = args
  return (name === "pod" || name === "inbox") && id && PAGES[page]?.includes(name)
    ? { scope: { kind: name, id }, name: page, args: rest }
    : { scope: ORGANIZATION, name, args }
}

/** The API prefix of a scope: `/v0`, `/v0/pods/ID` or `/v0/inboxes/ID`. */
export const scopeApi = (scope) => scope.kind === "pod" ? `/v0/pods/${enc(scope.id)}` : scope.kind === "inbox" ? `/v0/inboxes/${enc(scope.id)}` : "/v0"

/** The dashboard address of `rest` (a page and its arguments) in a scope. */
export const scopeHash = (scope, rest) => scope.kind === "organization" ? `#/${rest}` : `#/${scope.kind}/${enc(scope.id)}/${rest}`

/** The value of a scope in a select (`organization`, `pod:ID`, `inbox:ID`), and back. */
export const valueOf = (scope) => scope.kind === "organization" ? "organization" : `${scope.kind}:${scope.id}`
export const parseScope = (value) => {
  const at = value.indexOf(":")
  return at < 0 ? ORGANIZATION : { kind: value.slice(0, at), id: value.slice(at + 1) }
}

/**
 * The first hundred pods and inboxes (of the `kinds` asked), and a name for each scope: what
 * a page needs to offer scopes or to name one (a webhook's owner, a key's scope). A list the
 * session may not read is offered empty rather than failing the page.
 */
export const scopeNames = async (kinds = ALL) => {
  const [pods, inboxes] = await Promise.all([
    kinds.includes("pod") ? api("GET", "/v0/pods?limit=100").then((d) => d.pods, () => []) : [],
    kinds.includes("inbox") ? api("GET", "/v0/inboxes?limit=100").then((d) => d.inboxes, () => []) : []
  ])
  const names = new Map([["organization", "the whole organization"],
    ...pods.map((p) => [`pod:${p.pod_id}`, `pod ${p.name}`]), ...inboxes.map((i) => [`inbox:${i.inbox_id}`, `inbox ${i.email ?? i.inbox_id}`])])
  return { pods, inboxes, names, nameOf: (scope) => names.get(valueOf(scope)) ?? `${scope.kind} ${scope.id}` }
}

/** The options of a scope select: the organization, then the pods and the inboxes in groups. */
export const scopeOptions = (names, current, kinds = ALL) => {
  const option = (value) => h("option", { value, selected: value === current }, names.get(value))
  const group = (kind, label) => {
    const values = [...names.keys()].filter((v) => v.startsWith(`${kind}:`))
    return values.length && kinds.includes(kind) ? h("optgroup", { label }, values.map(option)) : null
  }
  return [option("organization"), group("pod", "Pods"), group("inbox", "Inboxes")]
}

/**
 * The picker of a page, the scope's name for its text, `nameOf` for other scopes (a webhook's
 * owner), and the pods and inboxes it offers: the first hundred of each; a scope reached by a
 * link (an inbox's page) is offered too.
 */
export const scopePicker = async (scope, rest, kinds = ALL) => {
  const known = await scopeNames(kinds)
  const current = valueOf(scope)
  if (!known.names.has(current)) known.names.set(current, `${scope.kind} ${scope.id}`)
  const id = `scope-${rest.split("/")[0]}`
  const picker = form("Choose the scope", [h("label", { for: id }, "Scope"), h("select", { id, name: "scope" }, scopeOptions(known.names, current, kinds))],
    "Switch scope", (v) => go(scopeHash(parseScope(v.scope), rest)))
  picker.className = "scope"
  return { ...known, picker, name: known.names.get(current) }
}
