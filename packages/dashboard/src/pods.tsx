/**
 * The tenancy pages: pods (spec: Pod, Pods), the isolated parts of an organization, listed,
 * created with a name and an optional client_id, and deleted after a confirm; and inboxes,
 * of the whole organization or of one pod (create, pause/resume, delete). Each pod links to
 * its inboxes and to its own lists, webhooks, domains and metrics (the scoped pages of
 * scope.tsx). The API refuses to delete a pod that still has inboxes (409 pod_not_empty)
 * and the default pod (403 pod_protected): the page shows its answer in its words with the fix.
 */
import { useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"
import { notice } from "./dom.js"
import { type Known, type Pod, type Scope, ScopePicker, scopePicker, podScopedPath } from "./scope.tsx"
import { Action, answer, done, type Failure, Field, Form, mount, Muted, Page, Pages, Problem, Table, when } from "./ui.tsx"

/** A pod's pages, each at the pod's scope (`#/pod/ID/...`). */
const POD_PAGES = [["inboxes", "Inboxes"], ["lists", "Lists"], ["webhooks", "Webhooks"], ["domains", "Domains"], ["metrics", "Metrics"]] as const
const INBOX_SCOPES = ["organization", "pod"] as const
const enc = encodeURIComponent

const PodLinks = ({ pod }: { readonly pod: Pod }) => (
  <span class="tabs">
    {POD_PAGES.map(([path, text]) => <a key={path} href={`#/pod/${enc(pod.pod_id)}/${path}`} aria-label={`${text} of pod ${pod.name}`}>{text}</a>)}
  </span>
)

type PodPage = Answer<"pods.list">

const readPods = (token: string | undefined) => answer(client.GET("/v0/pods", { params: { query: token ? { page_token: token } : {} } }))

const Pods = ({ token, first }: { readonly token: string | undefined; readonly first: PodPage }) => {
  const [data, setData] = useState(first)
  const [failed, setFailed] = useState<{ err: Failure; pod: Pod } | null>(null)
  const reload = async () => setData(await readPods(token))
  const remove = async (pod: Pod) => {
    if (!confirm(`Delete pod ${pod.name}? Its lists, webhooks, domains and API keys are deleted with it.`)) return
    setFailed(null)
    try {
      await done(client.DELETE("/v0/pods/{pod_id}", { params: { path: { pod_id: pod.pod_id } } }))
    } catch (err) {
      // The banner has the API's words; beside the table they stay, with the way to the fix.
      setFailed({ err: err as Failure, pod })
      throw err
    }
    await reload()
    notice(`Pod ${pod.name} deleted.`)
  }
  return (
    <Page title="Pods">
      <Muted>
        Pods are isolated parts of the organization: each has its own inboxes, lists, webhooks and domains, and an API key can be limited to one. The default pod
        holds the inboxes created without a pod; it cannot be deleted.
      </Muted>
      <Form label="Create a pod" submit="Create pod" action={async (v) => {
        const clientId = (v["client_id"] ?? "").trim()
        const name = (v["name"] ?? "").trim()
        const pod = await answer(client.POST("/v0/pods", { body: clientId ? { name, client_id: clientId } : { name } }))
        await reload()
        notice(`Pod ${pod.name} is ready.`)
      }}>
        <Field label="Name" name="name" required />
        <Field label="Client ID (optional: creating again with the same client ID returns the same pod)" name="client_id" />
      </Form>
      <div role="status" data-testid="pod-result">
        {failed
          ? (
            <>
              <Problem err={failed.err} />
              {failed.err.body?.code === "pod_not_empty"
                ? <p><a href={`#/pod/${enc(failed.pod.pod_id)}/inboxes`}>{`Open the inboxes of pod ${failed.pod.name}`}</a></p>
                : null}
            </>
          )
          : null}
      </div>
      {data.pods.length === 0
        ? <Muted>{token ? "No more pods." : "No pods."}</Muted>
        : (
          <Table
            name="Pods"
            heads={["Name", "Client ID", "Created", "Its pages", "Actions"]}
            rows={data.pods.map((p) => [p.pod_id, [
              p.name,
              p.client_id ?? "—",
              when(p.created_at),
              <PodLinks pod={p} />,
              <Action aria-label={`Delete pod ${p.name}`} action={() => remove(p)}>Delete</Action>
            ]])}
          />
        )}
      <Pages first={token ? "#/pods" : undefined} next={data.next_page_token ? `#/pods/${enc(data.next_page_token)}` : undefined} />
    </Page>
  )
}

/** One page of pods, newest first; `token` is the API's page_token of the page shown (in the address). */
export const pods = async (token?: string) => {
  const first = await readPods(token)
  mount(<Pods token={token} first={first} />)
}

// ---------- inboxes ----------

type InboxPage = Answer<"inboxes.list.0">

const readInboxes = (scope: Scope) => answer(client.GET(podScopedPath(scope, "/inboxes")))

const Inboxes = ({ scope, known, name, first }: { readonly scope: Scope; readonly known: Known; readonly name: string; readonly first: InboxPage }) => {
  const [data, setData] = useState(first)
  const reload = async () => setData(await readInboxes(scope))
  const whole = scope.kind === "organization"
  return (
    <Page title="Inboxes">
      <ScopePicker scope={scope} rest="inboxes" known={known} kinds={INBOX_SCOPES} />
      <Muted testid="inbox-scope">
        {whole ? "Every inbox of the organization. An inbox created here goes in the default pod." : `The inboxes of ${name}. An inbox created here belongs to this pod.`}
      </Muted>
      <Form label="Create an inbox" submit="Create inbox" action={async (v) => {
        const body = Object.fromEntries(Object.entries(v).filter(([, x]) => x))
        await answer(client.POST(podScopedPath(scope, "/inboxes"), { body }))
        await reload()
      }}>
        <Field label="Username (optional)" name="username" />
        <Field label="Display name (optional)" name="display_name" />
      </Form>
      {data.inboxes.length === 0
        ? <Muted>No inboxes yet.</Muted>
        : (
          <Table
            name="Inboxes"
            heads={["Address", ...(whole ? ["Pod"] : []), "Status", "Actions"]}
            rows={data.inboxes.map((inbox) => {
              const address = inbox.email ?? inbox.inbox_id
              const paused = inbox.status === "paused"
              return [inbox.inbox_id, [
                <>
                  <a href={`#/inbox/${enc(inbox.inbox_id)}`}>{address}</a>
                  {inbox.display_name ? <div class="muted">{inbox.display_name}</div> : null}
                </>,
                ...(whole ? [known.nameOf({ kind: "pod", id: inbox.pod_id })] : []),
                inbox.status ?? "active",
                <>
                  <Action aria-label={`${paused ? "Resume" : "Pause"} ${address}`} action={async () => {
                    await answer(client.PATCH("/v0/inboxes/{inbox_id}", { params: { path: { inbox_id: inbox.inbox_id } }, body: { status: paused ? "active" : "paused" } }))
                    await reload()
                  }}>{paused ? "Resume" : "Pause"}</Action>
                  <Action aria-label={`Delete ${address}`} action={async () => {
                    if (!confirm(`Delete ${address} and all its mail?`)) return
                    await done(client.DELETE("/v0/inboxes/{inbox_id}", { params: { path: { inbox_id: inbox.inbox_id } } }))
                    await reload()
                  }}>Delete</Action>
                </>
              ]]
            })}
          />
        )}
    </Page>
  )
}

/** The inboxes of the organization (each with its pod) or of one pod; a new one goes in the scope's pod. */
export const inboxes = async (scope: Scope) => {
  const [{ known, name }, first] = await Promise.all([scopePicker(scope, INBOX_SCOPES), readInboxes(scope)])
  mount(<Inboxes scope={scope} known={known} name={name} first={first} />)
}
