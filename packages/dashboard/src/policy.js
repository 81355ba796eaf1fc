// The send and receive policy pages: allow and block lists at the organization's, a pod's or
// an inbox's scope (spec: Allow and block lists), and suppressions, the addresses that
// bounced or complained, which the API lists page by page and lets the user delete.
import { api, button, enc, field, form, go, h, notice, page, table, when } from "./dom.js"
import { scopeApi, scopeHash, scopePicker } from "./scope.js"

// ---------- allow and block lists ----------

const DIRECTIONS = ["receive", "send", "reply"]
const TYPES = ["block", "allow"]
const MAIL = { receive: "incoming mail", send: "outgoing mail", reply: "replies" }

export const lists = async (scope, direction = "receive", type = "block") => {
  if (!DIRECTIONS.includes(direction) || !TYPES.includes(type)) return go(scopeHash(scope, "lists"))
  const base = `${scopeApi(scope)}/lists/${direction}/${type}`
  const [{ picker, name }, data] = await Promise.all([scopePicker(scope, `lists/${direction}/${type}`), api("GET", base)])
  const again = () => lists(scope, direction, type)
  page("Allow and block lists",
    picker,
    h("nav", { "aria-label": "Lists", className: "tabs" }, DIRECTIONS.flatMap((d) => TYPES.map((t) =>
      h("a", { href: scopeHash(scope, `lists/${d}/${t}`), "aria-current": d === direction && t === type ? "page" : false }, `${d} ${t}`)))),
    h("p", { className: "muted", "data-testid": "list-scope" }, `The ${type} list of ${name} for ${MAIL[direction]}: an address or a whole domain. `,
      "Lists are checked at the inbox, then the pod, then the organization; the first scope with a matching entry decides."),
    form(`Add to the ${direction} ${type} list`, [...field("Address or domain", { name: "entry", required: true }),
      ...(type === "block" ? field("Reason (optional)", { name: "reason" }) : [])], "Add entry", async (v) => {
      await api("POST", base, type === "block" && v.reason ? { entry: v.entry.trim(), reason: v.reason } : { entry: v.entry.trim() })
      await again()
      notice(`${v.entry.trim()} added.`)
    }),
    data.entries.length === 0 ? h("p", { className: "muted" }, "This list is empty.")
      : table(`${direction} ${type} list`, ["Entry", ...(type === "block" ? ["Reason"] : []), "Added", "Actions"], data.entries.map((e) => [
        e.entry, ...(type === "block" ? [e.reason ?? ""] : []), when(e.created_at),
        button("Delete", async () => { await api("DELETE", `${base}/${enc(e.entry)}`); await again() }, { "aria-label": `Delete ${e.entry}` })])))
}

// ---------- suppressions ----------

/**
 * One page of suppressions, newest first; `token` is the API's page_token of the page shown
 * (in the address, so Back returns to the previous page).
 */
export const suppressions = async (token) => {
  const path = `/v0/suppressions${token ? `?page_token=${enc(token)}` : ""}`
  const data = await api("GET", path)
  page("Suppressions",
    h("p", { className: "muted" }, "Addresses that bounced hard or marked mail as spam: sends to them fail with recipient_suppressed. ",
      "Delete a suppression only when the address can receive mail again."),
    data.suppressions.length === 0 ? h("p", { className: "muted" }, token ? "No more suppressions." : "No suppressed addresses.")
      : table("Suppressions", ["Address", "Reason", "Inbox", "Since", "Actions"], data.suppressions.map((s) => [
        s.address, s.reason, s.inbox_id ?? "—", when(s.created_at),
        button("Delete", async () => {
          if (!confirm(`Delete the suppression of ${s.address}? Mail may be sent to it again.`)) return
          await api("DELETE", `/v0/suppressions/${enc(s.address)}`)
          await suppressions(token)
          notice(`${s.address} may receive mail again.`)
        }, { "aria-label": `Delete the suppression of ${s.address}` })])),
    h("nav", { "aria-label": "Pages", className: "tabs" },
      token ? h("a", { href: "#/suppressions" }, "First page") : null,
      data.next_page_token ? h("a", { href: `#/suppressions/${enc(data.next_page_token)}` }, "Next page") : null))
}
