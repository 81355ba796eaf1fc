/**
 * A thread, drawn by Preact: a compact toolbar of triage actions, its messages oldest first
 * (message.tsx), each with its own labels (PATCH on the message), and the thread's labels
 * (PATCH on the thread: every message in it). After either change the thread is read again
 * and every label redrawn, since one changes the other; the list beside a reading pane is told
 * the thread's labels so its row shows them at once, and focus goes back to the field of the
 * labels just changed. Opening the thread marks its unread messages read.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { type Answer, client, ok } from "./client.ts"
import { flash, go, plainWords, showError } from "./dom.js"
import { FIXED_LABELS, inboxHash, labelWords } from "./mailbox.ts"
import { type InlineImages, inlineImages } from "./mailframe.tsx"
import { type Message, MessageView } from "./message.tsx"

export type Thread = Answer<"threads.get.2">
export interface LoadedThread { readonly thread: Thread; readonly messages: ReadonlyArray<Message>; readonly inline: ReadonlyArray<InlineImages> }

type LabelChange = { readonly add_labels?: Array<string>; readonly remove_labels?: Array<string> }

/** The thread, each message in full (the thread lists them in summary form), and each message's inline images. */
export const loadThread = async (inboxId: string, threadId: string): Promise<LoadedThread> => {
  const thread = ok(await client.GET("/v0/inboxes/{inbox_id}/threads/{thread_id}", { params: { path: { inbox_id: inboxId, thread_id: threadId } } }))
  const summaries = [...(thread.messages ?? [])].sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)))
  const messages = await Promise.all(summaries.map(async (m) => "text" in m || "html" in m ? m as unknown as Message
    : ok(await client.GET("/v0/inboxes/{inbox_id}/messages/{message_id}", { params: { path: { inbox_id: inboxId, message_id: m.message_id } } }))))
  const inline = await Promise.all(messages.map((m) => inlineImages(inboxId, m)))
  return { thread, messages, inline }
}

/** What the error body of a failed change says, in plain words. */
const failure = (err: unknown) => {
  const body = (err as { body?: unknown }).body
  return body ? plainWords(body) as string : (err as Error).message
}

interface LabelNames {
  readonly list: string
  readonly remove: (label: string) => string
  readonly form: string
  readonly field: string
  readonly submit: string
}
const THREAD_LABELS: LabelNames = { list: "Thread labels", remove: (l) => `Remove label ${l}`, form: "Add a label", field: "New label", submit: "Add label" }
const messageLabels = (n: number): LabelNames => ({ list: `Labels of message ${n}`, remove: (l) => `Remove ${l} from message ${n}`, form: `Label message ${n}`, field: `Add a label to message ${n}`, submit: `Add to message ${n}` })

/**
 * Labels, each with a remove button (not the service's own: they cannot be removed), and a
 * field to add one; `change` sends add_labels or remove_labels. A failure is said beside the field.
 */
const LabelControls = ({ names, labels, change, id, compact = false }: {
  readonly names: LabelNames; readonly labels: ReadonlyArray<string>; readonly change: (c: LabelChange) => Promise<void>; readonly id: string; readonly compact?: boolean
}) => {
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<string | null>(null)
  const input = useRef<HTMLInputElement>(null)
  const run = async (c: LabelChange) => {
    setBusy(true)
    setProblem(null)
    try {
      await change(c)
      if (input.current) input.current.value = ""
    } catch (err) {
      setProblem(failure(err))
    } finally {
      setBusy(false)
      input.current?.focus()
    }
  }
  return (
    <>
      <ul class="chips" aria-label={names.list}>
        {labels.map((l) => (
          <li key={l} class="label">{labelWords(l)}
            {FIXED_LABELS.has(l) ? null : <button type="button" class="chip-x" aria-label={names.remove(l)} disabled={busy} onClick={() => void run({ remove_labels: [l] })}>×</button>}
          </li>
        ))}
      </ul>
      <form aria-label={names.form} aria-busy={busy ? "true" : undefined} onSubmit={(e) => {
        e.preventDefault()
        const label = input.current?.value.trim() ?? ""
        if (label) void run({ add_labels: [label] })
      }}>
        <label for={id}>{names.field}</label>
        <input id={id} name="label" required ref={input} placeholder={compact ? "Add a label" : undefined} aria-invalid={problem ? "true" : undefined} aria-describedby={problem ? `${id}-problem` : undefined} />
        {problem ? <p id={`${id}-problem`} class="field-error" role="alert">{problem}</p> : null}
        {/* In a message's row, "Add": its name says which message. */}
        <button type="submit" class={compact ? undefined : "primary"} aria-label={compact ? names.submit : undefined} disabled={busy}>{compact ? "Add" : names.submit}</button>
      </form>
    </>
  )
}

/**
 * The thread's triage buttons, each a label change on the whole thread (PATCH): archive
 * (`archived`, which the Inbox view leaves out) or back to the inbox, trash or restore, spam or
 * not spam, unread or read. A change that takes the thread out of the view goes back to the
 * list, with a note saying where it went; the others draw the page again (in the reading
 * pane, the list beside it too: the change may move the thread in or out of it).
 */
const Triage = ({ inboxId, threadId, labels }: { readonly inboxId: string; readonly threadId: string; readonly labels: ReadonlyArray<string> }) => {
  const [busy, setBusy] = useState(false)
  const has = (l: string) => labels.includes(l)
  const where = has("trash") ? "trash" : has("spam") ? "spam" : has("archived") ? "archived" : "inbox"
  const act = (text: string, icon: string, body: LabelChange, note: string, leave: boolean) => (
    <button type="button" data-icon={icon} disabled={busy} onClick={async () => {
      setBusy(true)
      try {
        ok(await client.PATCH("/v0/inboxes/{inbox_id}/threads/{thread_id}", { params: { path: { inbox_id: inboxId, thread_id: threadId } }, body }))
        flash(note)
        go(leave ? inboxHash(inboxId, where) : location.hash)
      } catch (err) {
        showError((err as { body?: unknown }).body ?? { message: (err as Error).message })
        setBusy(false)
      }
    }}>{text}</button>
  )
  return (
    <div role="group" aria-label="Thread actions" class="triage">
      {has("archived") ? act("Move to Inbox", "⇤", { remove_labels: ["archived"] }, "Moved to the Inbox.", false) : act("Archive", "▣", { add_labels: ["archived"] }, "Archived: it is in Archived.", true)}
      {has("trash") ? act("Restore", "↺", { remove_labels: ["trash"] }, "Restored from the Trash.", false) : act("Move to Trash", "✕", { add_labels: ["trash"] }, "Moved to the Trash.", true)}
      {has("spam") ? act("Not spam", "✓", { remove_labels: ["spam"] }, "Marked as not spam.", false) : act("Report spam", "⚠", { add_labels: ["spam"] }, "Reported as spam: it is in Spam.", true)}
      {has("unread") ? act("Mark read", "○", { remove_labels: ["unread"] }, "Marked read.", false) : act("Mark unread", "●", { add_labels: ["unread"] }, "Marked unread.", true)}
    </div>
  )
}

type Labelled = { readonly labels: ReadonlyArray<string>; readonly messages: ReadonlyArray<{ readonly message_id: string; readonly labels: ReadonlyArray<string> }> }

interface ThreadProps {
  readonly inboxId: string
  readonly loaded: LoadedThread
  /** In a reading pane: the thread's title as a second-level heading (the page's is the list's). */
  readonly paned: boolean
  /** The thread's unread messages were marked read. */
  readonly onRead?: (threadId: string) => void
  /** The thread's labels changed here. */
  readonly onLabelled?: (threadId: string, labels: ReadonlyArray<string>) => void
}

export const ThreadView = ({ inboxId, loaded: { thread: t, messages, inline }, paned, onRead, onLabelled }: ThreadProps) => {
  const threadId = t.thread_id
  const unread = messages.filter((m) => m.labels?.includes("unread")).map((m) => m.message_id)
  // Opening the thread marks its messages read (below): `unread` is not shown on the first drawing.
  const read = (labels: ReadonlyArray<string> | undefined) => (labels ?? []).filter((l) => !unread.length || l !== "unread")
  const [fresh, setFresh] = useState<Labelled>(() => ({ labels: read(t.labels), messages: messages.map((m) => ({ message_id: m.message_id, labels: read(m.labels) })) }))
  useEffect(() => {
    if (!unread.length) return
    void client.POST("/v0/inboxes/{inbox_id}/messages/batch-update", { params: { path: { inbox_id: inboxId } }, body: { message_ids: unread, remove_labels: ["unread"] } })
      .then((a) => { if (a.response.ok) onRead?.(threadId) }, () => undefined)
  }, [])
  const change = (patch: () => Promise<unknown>) => async () => {
    await patch()
    const again = ok(await client.GET("/v0/inboxes/{inbox_id}/threads/{thread_id}", { params: { path: { inbox_id: inboxId, thread_id: threadId } } }))
    setFresh({ labels: again.labels, messages: (again.messages ?? []).map((m) => ({ message_id: m.message_id, labels: m.labels ?? [] })) })
    onLabelled?.(threadId, again.labels)
  }
  const onThread = (body: LabelChange) => change(async () =>
    ok(await client.PATCH("/v0/inboxes/{inbox_id}/threads/{thread_id}", { params: { path: { inbox_id: inboxId, thread_id: threadId } }, body })))()
  const onMessage = (messageId: string) => (body: LabelChange) => change(async () =>
    ok(await client.PATCH("/v0/inboxes/{inbox_id}/messages/{message_id}", { params: { path: { inbox_id: inboxId, message_id: messageId } }, body })))()
  return (
    <>
      {paned ? <h2>{t.subject || "(no subject)"}</h2> : null}
      <Triage inboxId={inboxId} threadId={threadId} labels={fresh.labels} />
      {messages.map((m, i) => (
        <MessageView key={m.message_id} inboxId={inboxId} message={m} n={i + 1} inline={inline[i] ?? new Map()}
          labels={<div class="msg-labels"><LabelControls id={`message-label-${i + 1}`} names={messageLabels(i + 1)} compact
            labels={fresh.messages.find((x) => x.message_id === m.message_id)?.labels ?? []} change={onMessage(m.message_id)} /></div>} />
      ))}
      <section aria-label="Labels" id="labels">
        <h2>Thread labels</h2>
        <p class="muted">Added to or removed from every message of the thread.</p>
        <LabelControls id="thread-label" names={THREAD_LABELS} labels={fresh.labels} change={onThread} />
      </section>
    </>
  )
}
