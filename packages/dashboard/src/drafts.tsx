/**
 * Drafts and scheduled sends, drawn by Preact: every draft (or an inbox's, or only those
 * scheduled: the inbox sidebar's Drafts and Scheduled), a form for a new one, and a draft's
 * page to edit it, schedule it with a send time, unschedule it, send it now or delete it.
 */
import { render } from "preact"
import { useState } from "preact/hooks"
import { type Answer, client, ok } from "./client.ts"
import { enc, go, h, list, notice, page, problemsByField, showError, when } from "./dom.js"

type Draft = Answer<"drafts.get.2">
type Inboxes = Answer<"inboxes.list.0">["inboxes"]

/** A `datetime-local` value (the reader's time zone) as an ISO timestamp, and back. */
const toIso = (local: string) => local ? new Date(local).toISOString() : undefined
const toLocal = (iso: string | null | undefined) => {
  if (!iso) return ""
  const d = new Date(iso)
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
}

const path = (d: { readonly inbox_id: string; readonly draft_id: string }) => ({ params: { path: { inbox_id: d.inbox_id, draft_id: d.draft_id } } })
const status = (d: Draft) => d.send_status === "scheduled" ? `scheduled for ${when(d.send_at)}` : d.send_status ?? "draft"

/** The form's values as a draft's fields; `clearing` sends null for an emptied field (an edit), else leaves it out. */
const draftBody = (v: Record<string, string>, clearing: boolean) => {
  const body: Record<string, unknown> = {}
  for (const k of ["subject", "text"]) if (v[k] || clearing) body[k] = v[k] || null
  if (v["to"] || clearing) body["to"] = v["to"] ? list(v["to"]) : null
  if (v["send_at"]) body["send_at"] = toIso(v["send_at"])
  else if (clearing) body["send_at"] = null
  return body
}

const sendDraft = async (d: Draft) => {
  const sent = ok(await client.POST("/v0/inboxes/{inbox_id}/drafts/{draft_id}/send", path(d)))
  go(`#/thread/${enc(d.inbox_id)}/${enc(sent.thread_id)}`)
}

/** A button whose action's failure is said in the page's error banner, in the spec's words. */
const Act = ({ label, name, action }: { readonly label: string; readonly name?: string; readonly action: () => Promise<unknown> }) => {
  const [busy, setBusy] = useState(false)
  return (
    <button type="button" aria-label={name} disabled={busy} onClick={async () => {
      setBusy(true)
      try { await action() } catch (err) {
        const e = err as Error & { body?: unknown }
        showError(e.body ?? { message: e.message })
      } finally { setBusy(false) }
    }}>{label}</button>
  )
}

/** A draft's form: `save` gets its values; a failure is said beside the field it is about. */
const DraftForm = ({ label, submit, draft, inboxes, save }: {
  readonly label: string; readonly submit: string; readonly draft?: Draft; readonly inboxes?: Inboxes; readonly save: (v: Record<string, string>) => Promise<void>
}) => {
  const [busy, setBusy] = useState(false)
  const [problems, setProblems] = useState<{ readonly fields: Record<string, string>; readonly other: string | null }>({ fields: {}, other: null })
  const id = label.toLowerCase().replace(/\W+/g, "-")
  const field = (text: string, name: string, props: Record<string, unknown> = {}, multiline = false) => {
    const problem = problems.fields[name]
    const described = problem ? { "aria-invalid": true, "aria-describedby": `${id}-${name}-problem` } as const : {}
    return (
      <>
        <label for={`${id}-${name}`}>{text}</label>
        {multiline
          ? <textarea id={`${id}-${name}`} name={name} {...props} {...described} />
          : <input id={`${id}-${name}`} name={name} type="text" {...props as Record<string, never>} {...described} />}
        {problem ? <p id={`${id}-${name}-problem`} class="field-error" role="alert">{problem}</p> : null}
      </>
    )
  }
  return (
    <form aria-label={label} aria-busy={busy ? "true" : undefined} onSubmit={async (e) => {
      e.preventDefault()
      if (busy) return
      setBusy(true)
      setProblems({ fields: {}, other: null })
      try {
        await save(Object.fromEntries([...new FormData(e.currentTarget).entries()].map(([k, x]) => [k, String(x)])))
      } catch (err) {
        const failure = err as Error & { body?: Record<string, unknown> }
        setProblems(problemsByField(failure.body ?? { message: failure.message }, ["inbox_id", "to", "subject", "text", "send_at"]))
      } finally {
        setBusy(false)
      }
    }}>
      {inboxes
        ? (
          <>
            <label for={`${id}-inbox_id`}>Inbox</label>
            <select id={`${id}-inbox_id`} name="inbox_id">{inboxes.map((i) => <option key={i.inbox_id} value={i.inbox_id}>{i.email ?? i.inbox_id}</option>)}</select>
          </>
        )
        : null}
      {field("To (comma-separated)", "to", { defaultValue: (draft?.to ?? []).join(", ") })}
      {field("Subject", "subject", { defaultValue: draft?.subject ?? "" })}
      {field("Message", "text", { defaultValue: draft?.text ?? "" }, true)}
      {field("Send at (leave empty to keep it a draft)", "send_at", { type: "datetime-local", defaultValue: toLocal(draft?.send_at) })}
      {problems.other ? <p class="field-error" role="alert">{problems.other}</p> : null}
      <button type="submit" class="primary" disabled={busy}>{busy ? "Working…" : submit}</button>
    </form>
  )
}

/** `#/drafts[?inbox=ID[&scheduled=1]]`. */
export const drafts = async (params = new URLSearchParams()) => {
  const inboxId = params.get("inbox")
  const scheduled = params.get("scheduled") === "1"
  // Both at once: the inbox choice of the form does not depend on the drafts.
  const [all, inboxes] = await Promise.all([
    inboxId ? client.GET("/v0/inboxes/{inbox_id}/drafts", { params: { path: { inbox_id: inboxId } } }).then(ok) : client.GET("/v0/drafts").then(ok),
    client.GET("/v0/inboxes").then(ok).then((a) => a.inboxes)
  ])
  const shown = (all.drafts as ReadonlyArray<Draft>).filter((d) => !scheduled || d.send_status === "scheduled")
  const again = () => drafts(params)
  const root = h("div", {})
  page(scheduled ? "Scheduled" : "Drafts", root)
  render(
    <>
      {inboxId ? <p><a href={`#/inbox/${enc(inboxId)}`}>← Back to the inbox</a></p> : null}
      <h2>New draft</h2>
      <DraftForm label="New draft" submit="Save draft" inboxes={inboxes} save={async (v) => {
        ok(await client.POST("/v0/inboxes/{inbox_id}/drafts", { params: { path: { inbox_id: v["inbox_id"] ?? "" } }, body: draftBody(v, false) as never }))
        await again()
      }} />
      <h2>Drafts and scheduled sends</h2>
      {shown.length === 0
        ? <p class="muted">No drafts.</p>
        : (
          <table aria-label="Drafts">
            <thead><tr><th>Subject</th><th>To</th><th>Inbox</th><th>Status</th><th>Actions</th></tr></thead>
            <tbody>{shown.map((d) => (
              <tr key={d.draft_id}>
                <td><a href={`#/draft/${enc(d.inbox_id)}/${enc(d.draft_id)}`}>{d.subject || "(no subject)"}</a></td>
                <td>{(d.to ?? []).join(", ")}</td>
                <td>{d.inbox_id}</td>
                <td>{status(d)}</td>
                <td>
                  {d.send_status === "scheduled"
                    ? <Act label="Unschedule" name={`Unschedule ${d.subject ?? d.draft_id}`} action={async () => { ok(await client.PATCH("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { ...path(d), body: { send_at: null } })); await again() }} />
                    : null}
                  <Act label="Send now" name={`Send now: ${d.subject ?? d.draft_id}`} action={() => sendDraft(d)} />
                  <Act label="Delete" name={`Delete draft ${d.subject ?? d.draft_id}`} action={async () => { ok(await client.DELETE("/v0/inboxes/{inbox_id}/drafts/{draft_id}", path(d))); await again() }} />
                </td>
              </tr>
            ))}</tbody>
          </table>
        )}
    </>, root)
}

/** `#/draft/INBOX/DRAFT`: one draft, to edit, schedule, send or delete. */
export const draft = async (inboxId: string, draftId: string) => {
  const d = ok(await client.GET("/v0/inboxes/{inbox_id}/drafts/{draft_id}", path({ inbox_id: inboxId, draft_id: draftId })))
  const again = () => draft(inboxId, draftId)
  const root = h("div", {})
  page(d.subject || "(no subject)", root)
  render(
    <>
      <p><a href="#/drafts">← All drafts</a> · <span data-testid="draft-status">{status(d)}</span></p>
      <DraftForm label="Edit draft" submit="Save" draft={d} save={async (v) => {
        ok(await client.PATCH("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { ...path(d), body: draftBody(v, true) as never }))
        await again()
        notice(v["send_at"] ? "Saved and scheduled." : "Saved.")
      }} />
      {d.send_status === "scheduled"
        ? <Act label="Unschedule" action={async () => { ok(await client.PATCH("/v0/inboxes/{inbox_id}/drafts/{draft_id}", { ...path(d), body: { send_at: null } })); await again() }} />
        : null}
      <Act label="Send now" action={() => sendDraft(d)} />
      <Act label="Delete" action={async () => { ok(await client.DELETE("/v0/inboxes/{inbox_id}/drafts/{draft_id}", path(d))); go("#/drafts") }} />
    </>, root)
}
