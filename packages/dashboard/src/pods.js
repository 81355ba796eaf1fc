// The tenancy pages: pods (spec: Pod, Pods), the isolated parts of an organization, listed,
// created with a name and an optional client_id, and deleted after a confirm; and inboxes,
// of the whole organization or of one pod (create, pause/resume, delete). Each pod links to
// its inboxes and to its own lists, webhooks, domains and metrics (the scoped pages of
// scope.js). The API refuses to delete a pod that still has inboxes (409 pod_not_empty) and
// the default pod (403 pod_protected): the page shows its answer in its words with the fix.
import { api, button, enc, field, form, h, notice, page, problem, table, when } from "./dom.js"
import { scopeApi, scopePicker } from "./scope.js"

/** A pod's pages, each at the pod's scope (`#/pod/ID/...`). */
const POD_PAGES = [["inboxes", "Inboxes"], ["lists", "Lists"], ["webhooks", "Webhooks"], ["domains", "Domains"], ["metrics", "Metrics"]]
const INBOX_SCOPES = ["organization", "pod"]

const podLinks = (p) => h("span", { className: "tabs" }, POD_PAGES.map(([path, text]) =>
  h("a", { href: `#/pod/${enc(p.pod_id)}/${path}`, "aria-label": `${text} of pod ${p.name}` }, text)))

/** One page of pods, newest first; `token` is the API's page_token of the page shown (in the address). */
export const pods = async (token) => {
  const data = await api("GET", `/v0/pods${token ? `?page_token=${enc(token)}` : ""}`)
  const result = h("div", { role: "status", "data-testid": "pod-result" })
  const again = () => pods(token)
  const remove = async (p) => {
    if (!confirm(`Delete pod ${p.name}? Its lists, webhooks, domains and API keys are deleted with it.`)) return
    result.replaceChildren()
    try {
      await api("DELETE", `/v0/pods/${enc(p.pod_id)}`)
    } catch (err) {
      // The banner has the API's words; beside the table they stay, with the way to the fix.
      result.replaceChildren(problem(err), err.body?.code === "pod_not_empty"
        ? h("p", {}, h("a", { href: `#/pod/${enc(p.pod_id)}/inboxes` }, `Open the inboxes of pod ${p.name}`)) : null)
      throw err
    }
    await again()
    notice(`Pod ${p.name} deleted.`)
  }
  page("Pods",
    h("p", { className: "muted" }, "Pods are isolated parts of the organization: each has its own inboxes, lists, webhooks and domains, ",
      "and an API key can be limited to one. The default pod holds the inboxes created without a pod; it cannot be deleted."),
    form("Create a pod", [...field("Name", { name: "name", required: true }),
      ...field("Client ID (optional: creating again with the same client ID returns the same pod)", { name: "client_id" })], "Create pod", async (v) => {
      const clientId = v.client_id.trim()
      const pod = await api("POST", "/v0/pods", clientId ? { name: v.name.trim(), client_id: clientId } : { name: v.name.trim() })
      await again()
      notice(`Pod ${pod.name} is ready.`)
    }),
    result,
    data.pods.length === 0 ? h("p", { className: "muted" }, token ? "No more pods." : "No pods.")
      : table("Pods", ["Name", "Client ID", "Created", "Its pages", "Actions"], data.pods.map((p) => [
        p.name, p.client_id ?? "—", when(p.created_at), podLinks(p),
        button("Delete", () => remove(p), { "aria-label": `Delete pod ${p.name}` })])),
    h("nav", { "aria-label": "Pages", className: "tabs" },
      token ? h("a", { href: "#/pods" }, "First page") : null,
      data.next_page_token ? h("a", { href: `#/pods/${enc(data.next_page_token)}` }, "Next page") : null))
}

/** The inboxes of the organization (each with its pod) or of one pod; a new one goes in the scope's pod. */
export const inboxes = async (scope) => {
  const base = `${scopeApi(scope)}/inboxes`
  const whole = scope.kind === "organization"
  const [{ picker, name, nameOf }, data] = await Promise.all([scopePicker(scope, "inboxes", INBOX_SCOPES), api("GET", base)])
  const again = () => inboxes(scope)
  page("Inboxes",
    picker,
    h("p", { className: "muted", "data-testid": "inbox-scope" }, whole
      ? "Every inbox of the organization. An inbox created here goes in the default pod."
      : `The inboxes of ${name}. An inbox created here belongs to this pod.`),
    form("Create an inbox", [...field("Username (optional)", { name: "username" }), ...field("Display name (optional)", { name: "display_name" })], "Create inbox", async (v) => {
      await api("POST", base, Object.fromEntries(Object.entries(v).filter(([, x]) => x)))
      await again()
    }),
    data.inboxes.length === 0 ? h("p", { className: "muted" }, "No inboxes yet.")
      : table("Inboxes", ["Address", ...(whole ? ["Pod"] : []), "Status", "Actions"], data.inboxes.map((inbox) => {
        const address = inbox.email ?? inbox.inbox_id
        const paused = inbox.status === "paused"
        return [
          [h("a", { href: `#/inbox/${enc(inbox.inbox_id)}` }, address), inbox.display_name ? h("div", { className: "muted" }, inbox.display_name) : null],
          ...(whole ? [nameOf({ kind: "pod", id: inbox.pod_id })] : []),
          inbox.status ?? "active",
          [button(paused ? "Resume" : "Pause", async () => { await api("PATCH", `/v0/inboxes/${enc(inbox.inbox_id)}`, { status: paused ? "active" : "paused" }); await again() },
            { "aria-label": `${paused ? "Resume" : "Pause"} ${address}` }),
          button("Delete", async () => { if (confirm(`Delete ${address} and all its mail?`)) { await api("DELETE", `/v0/inboxes/${enc(inbox.inbox_id)}`); await again() } },
            { "aria-label": `Delete ${address}` })]
        ]
      })))
}
