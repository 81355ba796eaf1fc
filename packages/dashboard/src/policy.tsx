/**
 * The send and receive policy pages: allow and block lists at the organization's, a pod's or
 * an inbox's scope (spec: Allow and block lists), and suppressions, the addresses that
 * bounced or complained, which the API lists page by page and lets the user delete.
 */
import { useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"
import { go, notice } from "./dom.js"
import { type Known, type Scope, ScopePicker, scopeHash, scopePicker, scopedPath } from "./scope.tsx"
import { Action, answer, done, Field, Form, mount, Muted, Page, Pages, Table, when } from "./ui.tsx"

const DIRECTIONS = ["receive", "send", "reply"] as const
const TYPES = ["block", "allow"] as const
type Direction = typeof DIRECTIONS[number]
type ListType = typeof TYPES[number]
const MAIL: Readonly<Record<Direction, string>> = { receive: "incoming mail", send: "outgoing mail", reply: "replies" }
const enc = encodeURIComponent

type Entries = Answer<"lists.list.0">

const readList = (scope: Scope, direction: Direction, type: ListType) =>
  answer(client.GET(scopedPath(scope, "/lists/{direction}/{type}"), { params: { path: { direction, type } } }))

const Lists = ({ scope, direction, type, known, name, first }: {
  readonly scope: Scope
  readonly direction: Direction
  readonly type: ListType
  readonly known: Known
  readonly name: string
  readonly first: Entries
}) => {
  const [data, setData] = useState(first)
  const reload = async () => setData(await readList(scope, direction, type))
  const path = { direction, type }
  const block = type === "block"
  return (
    <Page title="Allow and block lists">
      <ScopePicker scope={scope} rest={`lists/${direction}/${type}`} known={known} />
      <nav aria-label="Lists" class="tabs">
        {DIRECTIONS.flatMap((d) => TYPES.map((t) => (
          <a key={`${d}/${t}`} href={scopeHash(scope, `lists/${d}/${t}`)} aria-current={d === direction && t === type ? "page" : undefined}>{`${d} ${t}`}</a>
        )))}
      </nav>
      <Muted testid="list-scope">
        {`The ${type} list of ${name} for ${MAIL[direction]}: an address or a whole domain. `}
        Lists are checked at the inbox, then the pod, then the organization; the first scope with a matching entry decides.
      </Muted>
      <Form label={`Add to the ${direction} ${type} list`} submit="Add entry" action={async (v) => {
        const entry = (v["entry"] ?? "").trim()
        const reason = v["reason"]
        await answer(client.POST(scopedPath(scope, "/lists/{direction}/{type}"), { params: { path }, body: block && reason ? { entry, reason } : { entry } }))
        await reload()
        notice(`${entry} added.`)
      }}>
        <Field label="Address or domain" name="entry" required />
        {block ? <Field label="Reason (optional)" name="reason" /> : null}
      </Form>
      {data.entries.length === 0
        ? <Muted>This list is empty.</Muted>
        : (
          <Table
            name={`${direction} ${type} list`}
            heads={["Entry", ...(block ? ["Reason"] : []), "Added", "Actions"]}
            rows={data.entries.map((e) => [e.entry, [
              e.entry,
              ...(block ? [e.reason ?? ""] : []),
              when(e.created_at),
              <Action aria-label={`Delete ${e.entry}`} action={async () => {
                await done(client.DELETE(scopedPath(scope, "/lists/{direction}/{type}/{entry}"), { params: { path: { ...path, entry: e.entry } } }))
                await reload()
              }}>Delete</Action>
            ]])}
          />
        )}
    </Page>
  )
}

export const lists = async (scope: Scope, direction = "receive", type = "block") => {
  const d = DIRECTIONS.find((x) => x === direction)
  const t = TYPES.find((x) => x === type)
  if (d === undefined || t === undefined) return go(scopeHash(scope, "lists"))
  const [{ known, name }, first] = await Promise.all([scopePicker(scope), readList(scope, d, t)])
  mount(<Lists scope={scope} direction={d} type={t} known={known} name={name} first={first} />)
}

// ---------- suppressions ----------

type SuppressionPage = Answer<"suppressions.list">

const readSuppressions = (token: string | undefined) =>
  answer(client.GET("/v0/suppressions", { params: { query: token ? { page_token: token } : {} } }))

const Suppressions = ({ token, first }: { readonly token: string | undefined; readonly first: SuppressionPage }) => {
  const [data, setData] = useState(first)
  return (
    <Page title="Suppressions">
      <Muted>
        Addresses that bounced hard or marked mail as spam: sends to them fail with recipient_suppressed. Delete a suppression only when the address can receive mail again.
      </Muted>
      {data.suppressions.length === 0
        ? <Muted>{token ? "No more suppressions." : "No suppressed addresses."}</Muted>
        : (
          <Table
            name="Suppressions"
            heads={["Address", "Reason", "Inbox", "Since", "Actions"]}
            rows={data.suppressions.map((s) => [s.address, [
              s.address,
              s.reason,
              s.inbox_id ?? "—",
              when(s.created_at),
              <Action aria-label={`Delete the suppression of ${s.address}`} action={async () => {
                if (!confirm(`Delete the suppression of ${s.address}? Mail may be sent to it again.`)) return
                await done(client.DELETE("/v0/suppressions/{address}", { params: { path: { address: s.address } } }))
                setData(await readSuppressions(token))
                notice(`${s.address} may receive mail again.`)
              }}>Delete</Action>
            ]])}
          />
        )}
      <Pages first={token ? "#/suppressions" : undefined} next={data.next_page_token ? `#/suppressions/${enc(data.next_page_token)}` : undefined} />
    </Page>
  )
}

/**
 * One page of suppressions, newest first; `token` is the API's page_token of the page shown
 * (in the address, so Back returns to the previous page).
 */
export const suppressions = async (token?: string) => {
  const first = await readSuppressions(token)
  mount(<Suppressions token={token} first={first} />)
}
