/**
 * Compose, and the forms that answer a message, drawn by Preact: reply and reply all show
 * their recipients as the API will address them (and take more as Cc), the subject with "Re: ",
 * and the original quoted below the new text (sent with it unless unticked); forward asks for
 * recipients, shows the subject with "Fwd: " and the attachments it carries (the API quotes the
 * original and carries its attachments). Files join by the file field or dropped anywhere on
 * the form. While a message is sent the form's buttons are disabled and Send says "Sending…":
 * one click, one message. What is typed is kept as a draft (compose.ts); addresses are
 * suggested from past correspondents. A failure is said beside the field it is about.
 */
import { render } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { type Answer, client, ok } from "./client.ts"
import { keepAsDraft, suggestRecipients } from "./compose.ts"
import { enc, go, h, list, notice, page, problemsByField } from "./dom.js"
import type { Message } from "./message.tsx"

type Mode = "reply" | "reply-all" | "forward"
type Inbox = Answer<"inboxes.get.0">
type Keeper = Awaited<ReturnType<typeof keepAsDraft>>

const addressOf = (mailbox: string) => (/<([^>]+)>/.exec(mailbox)?.[1] ?? mailbox).trim().toLowerCase()

/**
 * Who a reply goes to, as the API will address it (mail/compose.ts): the parent's Reply-To or
 * sender (or, for a message this inbox sent, its recipients); reply all adds the parent's To
 * and Cc. This inbox's own address is left out. Shown on the form; the API decides.
 */
const replyRecipients = (parent: Message, mode: Mode, own: string) => {
  const self = (a: string) => addressOf(a) === own
  const replyTo = (parent.headers as Record<string, unknown> | undefined)?.["reply-to"]
  const sentByUs = self(parent.from ?? "")
  const primary = sentByUs ? parent.to ?? [] : typeof replyTo === "string" ? [replyTo] : [parent.from]
  const seen = new Set<string>()
  const keep = (all: ReadonlyArray<string>) => all.filter((a) => a && !self(a) && !seen.has(addressOf(a)) && seen.add(addressOf(a)))
  return { to: keep(primary), cc: mode === "reply-all" ? keep([...(sentByUs ? [] : parent.to ?? []), ...(parent.cc ?? [])]) : [] }
}

/** The original, quoted as mail clients quote it: a line saying who wrote it, each line after "> ". */
const quoteOf = (parent: Message) => {
  const text = (parent.text ?? parent.extracted_text ?? parent.preview ?? "").replace(/\s+$/, "")
  return `On ${new Date(parent.timestamp).toLocaleString()}, ${parent.from} wrote:\n${text.split(/\r?\n/).map((l) => `> ${l}`).join("\n")}`
}

/** A file's bytes as base64 (FileReader: no spread of a large file's bytes into one call). */
const base64Of = (file: File) => new Promise<string>((resolve, reject) => {
  const reader = new FileReader()
  reader.onload = () => resolve(String(reader.result).replace(/^[^,]*,/, ""))
  reader.onerror = () => reject(reader.error)
  reader.readAsDataURL(file)
})

/** One labelled control, with its problem beside it (`aria-describedby`, `aria-invalid`). */
const Field = ({ label, name, problem, multiline, ...rest }: { readonly label: string; readonly name: string; readonly problem: string | undefined; readonly multiline?: boolean } & Record<string, unknown>) => {
  const id = `write-${name}`
  const described = problem ? { "aria-invalid": true, "aria-describedby": `${id}-problem` } as const : {}
  return (
    <>
      <label for={id}>{label}</label>
      {multiline ? <textarea id={id} name={name} {...rest} {...described} /> : <input id={id} name={name} type="text" {...rest as Record<string, never>} {...described} />}
      {problem ? <p id={`${id}-problem`} class="field-error" role="alert">{problem}</p> : null}
    </>
  )
}

interface WriteProps {
  readonly inboxId: string | undefined
  readonly mode: Mode | undefined
  readonly messageId: string | undefined
  readonly parent: Message | null
  readonly box: Inbox | null
  readonly inboxes: ReadonlyArray<{ readonly inbox_id: string; readonly email?: string | null }>
  readonly title: string
}

const FIELDS = ["inbox_id", "to", "cc", "bcc", "subject", "text", "files"]

const Write = ({ inboxId, mode, messageId, parent, box, inboxes, title }: WriteProps) => {
  const answering = mode === "reply" || mode === "reply-all"
  const own = (box?.email ?? "").toLowerCase()
  const bare = (parent?.subject ?? "").replace(/^\s*((re|aw|sv|fwd?|wg)\s*:\s*)+/i, "")
  const subject = !parent ? "" : answering ? `Re: ${bare}` : `Fwd: ${bare}`
  const recipients = answering && parent && mode ? replyRecipients(parent, mode, own) : null
  const quote = answering && parent ? quoteOf(parent) : null
  const [busy, setBusy] = useState(false)
  const [problems, setProblems] = useState<{ readonly fields: Record<string, string>; readonly other: string | null }>({ fields: {}, other: null })
  const [saying, setSaying] = useState("")
  const [dropping, setDropping] = useState(false)
  const formRef = useRef<HTMLFormElement>(null)
  const filesRef = useRef<HTMLInputElement>(null)
  const listRef = useRef<HTMLDataListElement>(null)
  const keeper = useRef<Keeper | null>(null)
  const inboxOf = () => inboxId ?? String(new FormData(formRef.current ?? undefined).get("inbox_id") ?? "")
  useEffect(() => {
    const form = formRef.current
    if (!form || !listRef.current) return
    suggestRecipients(form, inboxOf, ["to", "cc", "bcc"], listRef.current)
    // Forward has no draft form in the API (a draft answers with reply_to_message_id only).
    if (mode !== "forward") {
      void keepAsDraft(form, `${inboxId ?? ""}/${mode ?? "new"}/${messageId ?? ""}`, inboxOf,
        answering && messageId ? { message_id: messageId, all: mode === "reply-all" } : undefined, setSaying).then((k) => { keeper.current = k })
    }
  }, [])
  const carriesFiles = (e: DragEvent) => e.dataTransfer?.types.includes("Files") ?? false
  const drop = (e: DragEvent) => {
    setDropping(false)
    const input = filesRef.current
    if (!e.dataTransfer?.files.length || !input) return
    e.preventDefault()
    const all = new DataTransfer()
    for (const f of [...(input.files ?? []), ...e.dataTransfer.files]) all.items.add(f)
    input.files = all.files
    notice(`Attached: ${[...all.files].map((f) => f.name).join(", ")}.`)
  }
  const send = async (e: SubmitEvent) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    if (busy) return
    setBusy(true)
    setProblems({ fields: {}, other: null })
    const v = Object.fromEntries([...new FormData(form).entries()].filter(([, x]) => typeof x === "string")) as Record<string, string>
    const target = inboxId ?? v["inbox_id"] ?? ""
    keeper.current?.sending()
    try {
      const attachments = await Promise.all([...(filesRef.current?.files ?? [])].map(async (f) => ({
        filename: f.name, content_type: f.type || "application/octet-stream", content: await base64Of(f)
      })))
      const text = quote && v["quote"] ? `${(v["text"] ?? "").replace(/\s+$/, "")}\n\n${quote}\n` : v["text"] ?? ""
      const body: Record<string, unknown> = { text, ...(attachments.length ? { attachments } : {}) }
      for (const name of ["to", "cc", "bcc"]) if (v[name]) body[name] = list(v[name])
      if (v["subject"] && (v["subject"] !== subject || !mode)) body["subject"] = v["subject"]
      const path = { inbox_id: target }
      const sent = mode && messageId
        ? ok(await client.POST(`/v0/inboxes/{inbox_id}/messages/{message_id}/${mode}`, { params: { path: { ...path, message_id: messageId } }, body: body as never }))
        : ok(await client.POST("/v0/inboxes/{inbox_id}/messages/send", { params: { path }, body: body as never }))
      await keeper.current?.sent()
      go(`#/thread/${enc(target)}/${enc(sent.thread_id)}`)
    } catch (err) {
      keeper.current?.failed()
      const failure = err as Error & { body?: Record<string, unknown> }
      setProblems(problemsByField(failure.body ?? { message: failure.message }, FIELDS))
      setBusy(false)
    }
  }
  const p = problems.fields
  return (
    <form ref={formRef} aria-label={title} aria-busy={busy ? "true" : undefined} class={dropping ? "dropping" : undefined} onSubmit={(e) => void send(e as SubmitEvent)}
      onDragOver={(e) => { if (carriesFiles(e)) { e.preventDefault(); setDropping(true) } }} onDragLeave={() => setDropping(false)} onDrop={drop}>
      {inboxId
        ? null
        : (
          <>
            <label for="write-inbox_id">From inbox</label>
            <select id="write-inbox_id" name="inbox_id">{inboxes.map((i) => <option key={i.inbox_id} value={i.inbox_id}>{i.email ?? i.inbox_id}</option>)}</select>
          </>
        )}
      {recipients
        ? (
          <dl class="envelope" aria-label="Recipients">
            <dt>To</dt><dd data-testid="reply-to">{recipients.to.join(", ") || "—"}</dd>
            {recipients.cc.length ? <><dt>Cc</dt><dd data-testid="reply-cc">{recipients.cc.join(", ")}</dd></> : null}
          </dl>
        )
        : null}
      {answering
        ? <Field label="Add recipients (Cc, comma-separated)" name="cc" problem={p["cc"] ?? p["to"]} list="correspondents" autocomplete="off" />
        : <Field label="To (comma-separated)" name="to" required problem={p["to"]} list="correspondents" autocomplete="off" />}
      {mode ? null : <Field label="Cc" name="cc" problem={p["cc"]} list="correspondents" autocomplete="off" />}
      <Field label="Bcc (not shown to the others)" name="bcc" problem={p["bcc"]} list="correspondents" autocomplete="off" />
      <Field label="Subject" name="subject" defaultValue={subject} problem={p["subject"]} />
      <Field label="Message" name="text" multiline required problem={p["text"]} />
      {quote
        ? (
          <>
            <label class="check"><input type="checkbox" name="quote" defaultChecked />Include the original, quoted</label>
            <pre class="quote" aria-label="Quoted original">{quote}</pre>
          </>
        )
        : null}
      {mode === "forward" && parent
        ? <details><summary>The forwarded message (added below your text, with its attachments)</summary><pre class="quote">{parent.text ?? parent.preview ?? ""}</pre></details>
        : null}
      {/* The API's forward carries the original's attachments (spec: forward): the form says which. */}
      {mode === "forward" && parent?.attachments?.length
        ? (
          <>
            <h2 id="forwarded-files">Forwarded attachments</h2>
            <ul class="attachments" aria-labelledby="forwarded-files">{parent.attachments.map((a) => <li key={a.attachment_id}>{`${a.filename ?? a.attachment_id} (${a.size} bytes)`}</li>)}</ul>
          </>
        )
        : null}
      <label for="files">Attachments (or drop files on this form)</label>
      <input id="files" ref={filesRef} type="file" name="files" multiple aria-invalid={p["files"] ? "true" : undefined} aria-describedby={p["files"] ? "files-problem" : undefined} />
      {p["files"] ? <p id="files-problem" class="field-error" role="alert">{p["files"]}</p> : null}
      <datalist id="correspondents" ref={listRef} />
      {problems.other ? <p class="field-error" role="alert">{problems.other}</p> : null}
      <button type="submit" class="primary" disabled={busy}>{busy ? "Sending…" : "Send"}</button>
      <p class="muted" role="status">{saying}</p>
    </form>
  )
}

/** `#/compose[/INBOX[/MODE/MESSAGE]]`: a new message, or a reply, reply all or forward of a message. */
export const compose = async (inboxId?: string, mode?: string, messageId?: string) => {
  const answeringMode = mode === "reply" || mode === "reply-all" || mode === "forward" ? mode : undefined
  const [inboxes, parent, box] = await Promise.all([
    inboxId ? [] : client.GET("/v0/inboxes").then(ok).then((a) => a.inboxes),
    answeringMode && inboxId && messageId ? client.GET("/v0/inboxes/{inbox_id}/messages/{message_id}", { params: { path: { inbox_id: inboxId, message_id: messageId } } }).then(ok) : null,
    inboxId ? client.GET("/v0/inboxes/{inbox_id}", { params: { path: { inbox_id: inboxId } } }).then(ok) : null
  ])
  const title = answeringMode === "reply" ? "Reply" : answeringMode === "reply-all" ? "Reply all" : answeringMode === "forward" ? "Forward" : "Compose"
  const root = h("div", {})
  page(title, root)
  render(<Write inboxId={inboxId} mode={answeringMode} messageId={messageId} parent={parent} box={box} inboxes={inboxes} title={title} />, root)
}
