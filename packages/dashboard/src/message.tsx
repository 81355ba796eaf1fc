/**
 * One message of a thread, drawn by Preact: who sent it to whom, a compact toolbar (reply,
 * reply all, forward, the raw file) and four ways to read it: the plain text (quoted history
 * folded), the HTML in its sandboxed frame (mailframe.tsx, kept while the reader switches
 * views), the source (the raw RFC 822 message, asked of the API only when first shown, as
 * text) and the parsed headers. Its attachments are listed under it, images previewed.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"
import { cidKey, HtmlFrame, type InlineImages } from "./mailframe.tsx"

export type Message = Answer<"messages.get">

type View = "plain" | "html" | "source" | "headers"
const VIEW_WORDS: Readonly<Record<View, string>> = { plain: "Plain", html: "HTML", source: "Source", headers: "Headers" }

interface Props {
  readonly inboxId: string
  readonly message: Message
  /** Its place in the thread, oldest first, from 1: the accessible names count by it. */
  readonly n: number
  /** The message's label controls (thread.tsx's; they change with the thread's). */
  readonly labels: ComponentChildren
  /** Its inline images (see mailframe.tsx). */
  readonly inline: InlineImages
}

const enc = encodeURIComponent

const Source = ({ inboxId, messageId }: { readonly inboxId: string; readonly messageId: string }) => {
  const [text, setText] = useState<string | null>(null)
  useEffect(() => {
    void client.GET("/v0/inboxes/{inbox_id}/messages/{message_id}/raw/download", {
      params: { path: { inbox_id: inboxId, message_id: messageId } }, parseAs: "text"
    }).then((a) => setText(a.data !== undefined && a.response.ok ? a.data : "The source could not be read just now."),
      () => setText("The source could not be read just now."))
  }, [inboxId, messageId])
  return text === null ? <p class="muted" role="status">Loading the source…</p> : <pre class="source" aria-label="Message source">{text}</pre>
}

const headerLines = (headers: Message["headers"]) =>
  Object.entries(headers ?? {}).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : String(v)}`).join("\n")

export const MessageView = ({ inboxId, message: m, n, labels, inline }: Props) => {
  const [view, setView] = useState<View>(m.html ? "html" : "plain")
  const base = `/v0/inboxes/${enc(inboxId)}/messages/${enc(m.message_id)}`
  const compose = (mode: string) => `#/compose/${enc(inboxId)}/${mode}/${enc(m.message_id)}`
  const quoted = m.text && m.extracted_text && m.text.trim() !== m.extracted_text.trim()
  const views: ReadonlyArray<View> = m.html ? ["plain", "html", "source", "headers"] : ["plain", "source", "headers"]
  // Images shown inline are not listed again as attachments.
  const files = (m.attachments ?? []).filter((a) => !(a.content_id && inline.has(cidKey(a.content_id))))
  return (
    <article class="message" aria-label={`Message ${n}, from ${m.from}`}>
      <div class="msg-head">
        <dl class="envelope">
          <dt>From</dt><dd><strong>{m.from}</strong></dd>
          {m.to?.length ? <><dt>To</dt><dd>{m.to.join(", ")}</dd></> : null}
          {m.cc?.length ? <><dt>Cc</dt><dd>{m.cc.join(", ")}</dd></> : null}
          {m.bcc?.length ? <><dt>Bcc</dt><dd>{m.bcc.join(", ")}</dd></> : null}
          <dt>Date</dt><dd class="muted">{new Date(m.timestamp).toLocaleString()} · #{n}</dd>
        </dl>
        <div role="toolbar" aria-label={`Message ${n} actions`} class="toolbar">
          <a class="tool" data-icon="↩" href={compose("reply")}>Reply</a>
          <a class="tool" data-icon="⤶" href={compose("reply-all")}>Reply all</a>
          <a class="tool" data-icon="↪" href={compose("forward")}>Forward</a>
          <a class="tool" data-icon="⤓" href={`${base}/raw/download`}>Raw message</a>
        </div>
      </div>
      {labels}
      <div role="group" aria-label={`View of message ${n}`} class="views-toggle">
        {views.map((v) => <button key={v} type="button" aria-pressed={view === v} onClick={() => setView(v)}>{VIEW_WORDS[v]}</button>)}
      </div>
      {view === "plain"
        ? <>
            <pre>{m.extracted_text || m.text || ""}</pre>
            {quoted ? <details><summary>Show quoted text</summary><pre>{m.text}</pre></details> : null}
          </>
        : null}
      {/* Kept while another view is shown: a frame taken out of the document would load again. */}
      {m.html ? <HtmlFrame html={m.html} inline={inline} hidden={view !== "html"} /> : null}
      {view === "source" ? <Source inboxId={inboxId} messageId={m.message_id} /> : null}
      {view === "headers" ? <pre class="quote" aria-label="Message headers">{headerLines(m.headers) || "No headers."}</pre> : null}
      {files.length
        ? (
          <ul aria-label="Attachments" class="attachments">
            {files.map((a) => {
              const href = `${base}/attachments/${enc(a.attachment_id)}/download`
              // An image is previewed: the page (not the mail's frame) may load it with the session.
              return (
                <li key={a.attachment_id}>
                  {/^image\/(png|jpeg|gif|webp)$/i.test(a.content_type ?? "") ? <img src={href} alt={`Preview of ${a.filename ?? "the image"}`} loading="lazy" class="preview" /> : null}
                  <a href={href} download={a.filename ?? ""}>{`${a.filename ?? a.attachment_id} (${a.size} bytes)`}</a>
                </li>
              )
            })}
          </ul>
        )
        : null}
    </article>
  )
}
