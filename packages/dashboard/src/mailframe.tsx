/**
 * HTML mail, shown only in a sandboxed frame without scripts, as tall as its content, with its
 * own CSP that blocks remote images until the reader allows them; its inline (`cid:`) images
 * through their attachments' signed download URLs, never behind the session cookie.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"

type Message = Answer<"messages.get">

/**
 * The HTML document for the sandboxed frame: its CSP blocks every remote load unless images are
 * allowed, except the inline images' signed download URLs (`sources`: each URL's origin and exact
 * path, so a mail's own `<img src="/v0/...">` of this origin stays blocked although the frame
 * shares the page's origin to be measured).
 */
const mailDocument = (html: string, allowImages: boolean, sources: ReadonlyArray<string>) =>
  `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:${sources.map((o) => ` ${o}`).join("")}${allowImages ? " https: http:" : ""}"><base target="_blank">${html}`

const CID = /cid:([^"'\s)>]+)/gi
export const cidKey = (value: string) => {
  let id = value
  try { id = decodeURIComponent(value) } catch { /* kept as written */ }
  return id.replace(/^<|>$/g, "").trim().toLowerCase()
}

/** Content id → signed download URL of each inline image a message's HTML names. */
export type InlineImages = ReadonlyMap<string, string>

/**
 * The message's inline images: each `cid:` its HTML names, matched to an attachment by its
 * `content_id`, as that attachment's signed `download_url` (spec: Attachment): a URL that is its
 * own credential, so the mail's document needs no session, and its CSP allows those URLs and no
 * other origin until the reader allows remote images.
 */
export const inlineImages = async (inboxId: string, m: Message): Promise<InlineImages> => {
  if (!m.html) return new Map()
  const wanted = new Set([...m.html.matchAll(CID)].map((x) => cidKey(x[1] ?? "")))
  const parts = (m.attachments ?? []).filter((a) => a.content_id && wanted.has(cidKey(a.content_id)))
  const found = await Promise.all(parts.map(async (a) => {
    const { data } = await client.GET("/v0/inboxes/{inbox_id}/messages/{message_id}/attachments/{attachment_id}", {
      params: { path: { inbox_id: inboxId, message_id: m.message_id, attachment_id: a.attachment_id } }
    }).catch(() => ({ data: undefined }))
    return data?.download_url ? [cidKey(a.content_id ?? ""), data.download_url] as const : null
  }))
  return new Map(found.filter((x) => x !== null))
}

/**
 * The frame, and a button to show remote images. allow-same-origin without allow-scripts:
 * nothing in the mail runs (and the frame's own CSP and the page's `script-src 'self'` would
 * block it again), while this page may read the frame's document to size it to its content.
 * Links open outside the sandbox, in a new tab. It is as tall as its document: on each load,
 * when an image in it loads, and when its width changes (text wraps anew); it is first made
 * 0 px tall so a document shorter than the last height is measured as it is.
 */
export const HtmlFrame = ({ html, inline, hidden }: { readonly html: string; readonly inline: InlineImages; readonly hidden: boolean }) => {
  const [remote, setRemote] = useState(false)
  const ref = useRef<HTMLIFrameElement>(null)
  const shown = inline.size ? html.replace(CID, (all, id: string) => inline.get(cidKey(id))?.replace(/&/g, "&amp;") ?? all) : html
  const sources = [...new Set([...inline.values()].map((u) => { const url = new URL(u, location.href); return `${url.origin}${url.pathname}` }))]
  // Before the frame's first load event, which comes a task after it is in the document.
  useLayoutEffect(() => {
    const frame = ref.current
    if (!frame) return
    const fit = () => {
      const root = frame.contentDocument?.documentElement
      if (!root) return
      frame.style.height = "0px"
      // The frame's border is inside its height (box-sizing: border-box): added to the content's.
      frame.style.height = `${root.scrollHeight + frame.offsetHeight - frame.clientHeight}px`
    }
    const loaded = () => {
      fit()
      // Image loads do not bubble: caught on their way down, at the document.
      frame.contentDocument?.addEventListener("load", fit, true)
    }
    frame.addEventListener("load", loaded)
    let width = 0
    const observer = new ResizeObserver(([entry]) => {
      if (!entry || entry.contentRect.width === width) return
      width = entry.contentRect.width
      fit()
    })
    observer.observe(frame)
    return () => { frame.removeEventListener("load", loaded); observer.disconnect() }
  }, [])
  return (
    <div hidden={hidden}>
      {remote ? null : <button type="button" onClick={() => setRemote(true)}>Show remote images</button>}
      <iframe ref={ref} class="mail" title="HTML message" sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
        referrerpolicy="no-referrer" srcdoc={mailDocument(shown, remote, sources)} />
    </div>
  )
}
