/**
 * Mail.compose: a send, reply, reply-all or forward request to RFC 822 bytes plus the SMTP
 * envelope, with every send rule of the spec checked here so REST, MCP and the CLI refuse
 * the same requests the same way.
 *
 * Input: `SendInput` (the body of POST .../send, .../reply, .../reply-all, .../forward), as
 * decoded by the adapter; `to`, `cc`, `bcc` and `reply_to` take a string or a list. For a
 * reply the recipients come from the parent; any `to`/`cc`/`bcc` given are added to them.
 * Rules, in the order they are checked (the first failing group answers):
 * 1. ValidationError: malformed addresses, no recipient at all (path `to`), attachments
 *    with neither or both of `content` and `url`, bad base64, non-http URLs, custom headers
 *    that would override a structural header or carry a line break. All issues at once.
 * 2. TooManyRecipients: more than 50 unique addresses (case-insensitive) across to/cc/bcc.
 * 3. HtmlRequired: `track_opens` without `html`.
 * 4. PayloadTooLarge: inline `content` over 6 MB decoded, combined; URL attachments over
 *    10 MB each or 25 MB together (fetched one after the other through `Egress`, each with
 *    the remaining budget, so nothing past the budget is ever held in memory). A URL that
 *    cannot be fetched (timeout, network, non-2xx) is a ValidationError on its `url`.
 *
 * Headers: Message-ID `<hex@inbox-domain>` with randomness from Ids, Date from the Clock,
 * From with the inbox display name. Bcc is never written into the message; it is only in
 * the envelope. Replies set In-Reply-To and References (parent's References + parent's id)
 * and prefix the subject "Re: " once; a forward starts a new thread, prefixes "Fwd: ",
 * quotes the original in a forwarded-message block (text and HTML) and carries its
 * attachments.
 */
import { Clock, Duration, Effect, Schema } from "effect"
import libmime from "libmime"
import addressparser from "nodemailer/lib/addressparser"
import MailComposer from "nodemailer/lib/mail-composer"
import { Egress, type EgressError } from "../egress/Egress.ts"
import { type FieldIssue, HtmlRequired, PayloadTooLarge, TooManyRecipients, ValidationError } from "../errors/errors.ts"
import { Ids } from "../platform/Ids.ts"
import { normaliseAddress } from "../shared/fields.ts"
import type { AttachmentMeta, ParsedAttachment, ParsedMessage } from "./model.ts"
import { formatAddress } from "./parse-core.ts"
import { isForwardSubject } from "./thread.ts"

// --- input -----------------------------------------------------------------------------------

const Recipients = Schema.Union([Schema.String, Schema.Array(Schema.String)])

export const AttachmentInput = Schema.Struct({
  filename: Schema.optionalKey(Schema.String),
  content_type: Schema.optionalKey(Schema.String),
  content_disposition: Schema.optionalKey(Schema.Literals(["inline", "attachment"])),
  /** for inline images referenced as `cid:<content_id>` from the HTML */
  content_id: Schema.optionalKey(Schema.String),
  /** base64 of the bytes; exactly one of `content` and `url` */
  content: Schema.optionalKey(Schema.String),
  url: Schema.optionalKey(Schema.String)
})
export type AttachmentInput = typeof AttachmentInput.Type

export const SendInput = Schema.Struct({
  to: Schema.optionalKey(Recipients),
  cc: Schema.optionalKey(Recipients),
  bcc: Schema.optionalKey(Recipients),
  reply_to: Schema.optionalKey(Recipients),
  subject: Schema.optionalKey(Schema.String),
  text: Schema.optionalKey(Schema.String),
  html: Schema.optionalKey(Schema.String),
  track_opens: Schema.optionalKey(Schema.Boolean),
  attachments: Schema.optionalKey(Schema.Array(AttachmentInput)),
  /** extra headers; structural ones (From, To, Subject, Message-ID, Content-*, ...) are refused */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})
export type SendInput = typeof SendInput.Type

export const MAX_RECIPIENTS = 50
export const MAX_INLINE_BYTES = 6 * 1024 * 1024
export const MAX_URL_BYTES = 10 * 1024 * 1024
export const MAX_URL_TOTAL_BYTES = 25 * 1024 * 1024

export interface Sender {
  /** the sending inbox's address */
  readonly email: string
  readonly display_name?: string
}

export interface ComposeContext {
  readonly inbox: Sender
  /** needed when `track_opens` is set: the pixel is `${public_url}/t/o/${open_token}.gif` */
  readonly tracking?: { readonly public_url: string; readonly open_token: string }
  /** time limit of one URL attachment fetch (default 15 seconds) */
  readonly url_timeout?: Duration.Input
}

/** What compose needs of the message being answered or forwarded (a ParsedMessage fits). */
export type ParentMessage =
  & Pick<ParsedMessage, "from" | "to" | "subject">
  & Partial<Pick<ParsedMessage, "cc" | "text" | "html" | "rfc_message_id" | "references" | "date" | "headers">>
  & {
    /** forward carries these; absent means the parent had none */
    readonly attachment_contents?: ReadonlyArray<ParsedAttachment>
  }

export type ComposeKind = "send" | "reply" | "reply_all" | "forward"

export interface Composed {
  readonly raw: Uint8Array
  /** SMTP envelope: bare addresses, Bcc included */
  readonly envelope: { readonly from: string; readonly to: ReadonlyArray<string> }
  readonly rfc_message_id: string
  readonly in_reply_to?: string
  readonly references?: ReadonlyArray<string>
  /** true for send and forward: the message starts a thread; a reply joins its parent's */
  readonly starts_thread: boolean
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly cc?: ReadonlyArray<string>
  readonly bcc?: ReadonlyArray<string>
  readonly subject: string
  readonly text?: string
  readonly html?: string
  /** everything attached, for storage: request attachments, then a forward's originals */
  readonly attachments: ReadonlyArray<ParsedAttachment>
  readonly date: string
}

export type ComposeError = ValidationError | TooManyRecipients | HtmlRequired | PayloadTooLarge

// --- addresses -------------------------------------------------------------------------------

interface Mailbox {
  readonly name: string
  readonly address: string
}

/**
 * One mailbox from `a@b` or `Name <a@b>`; undefined when the string is not exactly one.
 * The address is checked and normalised by the engine's one address rule (shared/fields.ts),
 * so a send accepts exactly the addresses sign-up and lists accept.
 */
export const parseMailbox = (value: string): Mailbox | undefined => {
  if (value.length > 998 || /[\r\n]/.test(value)) return undefined
  const parsed = addressparser(value, { flatten: true })
  const only = parsed.length === 1 ? parsed[0] : undefined
  const address = only === undefined ? undefined : normaliseAddress(only.address)
  if (only === undefined || address === undefined) return undefined
  return { name: only.name, address }
}

const display = (m: Mailbox): string => formatAddress(m.name, m.address)
const keyOf = (m: Mailbox): string => m.address.toLowerCase()

const asList = (value: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  value === undefined ? [] : typeof value === "string" ? [value] : value

const readMailboxes = (field: string, value: string | ReadonlyArray<string> | undefined, issues: Array<FieldIssue>) =>
  asList(value).flatMap((v, i) => {
    const m = parseMailbox(v)
    if (m === undefined) {
      issues.push({ path: typeof value === "string" ? [field] : [field, String(i)], message: `Invalid email address: ${JSON.stringify(v.slice(0, 100))}` })
      return []
    }
    return [m]
  })

/** Addresses stored on a parsed message are already display form; unreadable ones are skipped. */
const storedMailboxes = (values: ReadonlyArray<string> | undefined): Array<Mailbox> =>
  (values ?? []).flatMap((v) => {
    const m = parseMailbox(v)
    return m === undefined ? [] : [m]
  })

const dedupe = (list: ReadonlyArray<Mailbox>, seen: Set<string>): Array<Mailbox> =>
  list.filter((m) => {
    const k = keyOf(m)
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })

// --- subjects --------------------------------------------------------------------------------

const REPLY_PREFIX = /^\s*(?:(?:re|aw|sv|antw|vs|ref|réf|rif|odp|atb|ynt|res)(?:\s*\[\d+\])?\s*:\s*)+/i

/** "Re: " exactly once, whatever reply prefixes (in whatever language) were there. */
export const replySubject = (subject: string): string => `Re: ${subject.replace(REPLY_PREFIX, "").trim()}`

export const forwardSubject = (subject: string): string =>
  isForwardSubject(subject) ? subject.trim() : `Fwd: ${subject.trim()}`

// --- html helpers ----------------------------------------------------------------------------

const escapeHtml = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const textToHtml = (s: string): string => `<div>${escapeHtml(s).replace(/\r?\n/g, "<br>\n")}</div>`

const bodyOf = (html: string): string => html.match(/<body[^>]*>([\s\S]*)<\/body>/i)?.[1] ?? html

const withPixel = (html: string, url: string): string => {
  const pixel = `<img src="${escapeHtml(url)}" width="1" height="1" alt="" style="display:none;border:0;width:1px;height:1px">`
  const close = html.search(/<\/body>/i)
  return close === -1 ? `${html}${pixel}` : `${html.slice(0, close)}${pixel}${html.slice(close)}`
}

// --- attachments -----------------------------------------------------------------------------

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/

const decodedLength = (b64: string): number => {
  const clean = b64.replace(/\s+/g, "")
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0
  return Math.floor((clean.length * 3) / 4) - padding
}

// Headers the composer owns; a caller setting them could forge threading or break MIME.
const STRUCTURAL = new Set([
  "from", "to", "cc", "bcc", "reply-to", "sender", "subject", "date", "message-id", "in-reply-to", "references",
  "mime-version", "content-type", "content-transfer-encoding", "content-disposition", "content-id", "return-path"
])

const checkAttachments = (attachments: ReadonlyArray<AttachmentInput>, issues: Array<FieldIssue>) =>
  attachments.forEach((a, i) => {
    const path = (field: string) => ["attachments", String(i), field]
    if ((a.content === undefined) === (a.url === undefined)) {
      issues.push({ path: path(a.content === undefined ? "content" : "url"), message: "Give exactly one of content (base64) and url" })
    } else if (a.content !== undefined && !BASE64.test(a.content)) {
      issues.push({ path: path("content"), message: "content must be base64" })
    } else if (a.url !== undefined) {
      const u = URL.parse(a.url)
      if (u === null || (u.protocol !== "https:" && u.protocol !== "http:")) issues.push({ path: path("url"), message: "url must be an http or https URL" })
    }
    if (a.content_id !== undefined && !/^[^\s<>]{1,250}$/.test(a.content_id)) {
      issues.push({ path: path("content_id"), message: "content_id must be 1 to 250 characters without spaces or angle brackets" })
    }
    if (a.filename !== undefined && /[\r\n]/.test(a.filename)) issues.push({ path: path("filename"), message: "filename must not contain line breaks" })
    if (a.content_type !== undefined && !/^[\w.+-]+\/[\w.+-]+$/.test(a.content_type)) {
      issues.push({ path: path("content_type"), message: "content_type must be a media type such as image/png" })
    }
  })

const checkHeaders = (headers: Readonly<Record<string, string>> | undefined, issues: Array<FieldIssue>) => {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!/^[!-9;-~]+$/.test(name)) issues.push({ path: ["headers", name], message: "Invalid header name" })
    else if (STRUCTURAL.has(name.toLowerCase())) issues.push({ path: ["headers", name], message: `${name} is set by the service and cannot be given` })
    else if (/[\r\n\0]/.test(value)) issues.push({ path: ["headers", name], message: "Header values must not contain line breaks" })
  }
}

const fileNameFromUrl = (url: string): string | undefined => {
  const last = URL.parse(url)?.pathname.split("/").pop()
  // URLSearchParams decodes percent escapes without throwing on malformed ones
  return last === undefined || last === "" ? undefined : new URLSearchParams(`f=${last.replace(/\+/g, "%2B")}`).get("f") ?? last
}

/** The media type and disposition an attachment is sent with when the caller gives none (a draft's attachment shows the same). */
export const attachmentKind = (a: AttachmentInput, filename: string | undefined, fetchedType?: string) => ({
  content_type: (a.content_type ?? fetchedType ?? (filename === undefined ? undefined : libmime.detectMimeType(filename)) ?? "application/octet-stream").toLowerCase(),
  content_disposition: a.content_disposition ?? (a.content_id !== undefined ? "inline" as const : "attachment" as const)
})

const meta = (a: AttachmentInput, bytes: Uint8Array, fetchedType: string | undefined, fallbackName: string | undefined): AttachmentMeta => {
  const filename = a.filename ?? fallbackName
  return {
    ...(filename === undefined ? {} : { filename }),
    ...attachmentKind(a, filename, fetchedType),
    size: bytes.byteLength,
    ...(a.content_id === undefined ? {} : { content_id: a.content_id })
  }
}

const resolveAttachments = Effect.fn("Mail.resolveAttachments")(function*(attachments: ReadonlyArray<AttachmentInput>, timeout: Duration.Input) {
  const inlineBytes = attachments.reduce((n, a) => n + (a.content === undefined ? 0 : decodedLength(a.content)), 0)
  if (inlineBytes > MAX_INLINE_BYTES) {
    return yield* new PayloadTooLarge({
      message: `Inline attachment content is ${inlineBytes} bytes; at most ${MAX_INLINE_BYTES} bytes (6 MB) combined`,
      fix: "Send large files by url, or split them over several messages"
    })
  }
  const egress = yield* Egress
  let fetchedTotal = 0
  const out: Array<ParsedAttachment> = []
  for (const [i, a] of attachments.entries()) {
    if (a.content !== undefined) {
      const bytes = new Uint8Array(Buffer.from(a.content, "base64"))
      out.push({ meta: meta(a, bytes, undefined, undefined), content: bytes })
      continue
    }
    const url = a.url ?? ""
    const remaining = MAX_URL_TOTAL_BYTES - fetchedTotal
    const cap = Math.min(MAX_URL_BYTES, remaining)
    const fetched = yield* egress.fetch(url, { maxBytes: cap, timeout }).pipe(
      Effect.mapError((e: EgressError) =>
        e.reason === "too_large"
          ? new PayloadTooLarge({
            message: cap < MAX_URL_BYTES
              ? `URL attachments are over ${MAX_URL_TOTAL_BYTES} bytes (25 MB) together (attachments.${i}.url)`
              : `The file at attachments.${i}.url is over ${MAX_URL_BYTES} bytes (10 MB)`
          })
          : new ValidationError({
            message: `attachments.${i}.url: could not be fetched (${e.reason})`,
            errors: [{ path: ["attachments", String(i), "url"], message: `Could not be fetched: ${e.reason}: ${e.message}` }]
          })
      )
    )
    fetchedTotal += fetched.bytes.byteLength
    out.push({ meta: meta(a, fetched.bytes, fetched.content_type, fileNameFromUrl(url)), content: fetched.bytes })
  }
  return out
})

// --- compose ---------------------------------------------------------------------------------

const fail = (issues: ReadonlyArray<FieldIssue>) =>
  new ValidationError({
    message: issues.length === 1 && issues[0] !== undefined ? `${issues[0].path.join(".")}: ${issues[0].message}` : "The request failed validation.",
    errors: issues
  })

const replyTargets = (parent: ParentMessage): Array<Mailbox> => {
  const replyTo = storedMailboxes(addressparser(parent.headers?.["reply-to"] ?? "", { flatten: true }).map((a) => formatAddress(a.name, a.address)))
  return replyTo.length > 0 ? replyTo : storedMailboxes([parent.from])
}

interface Plan {
  readonly to: ReadonlyArray<Mailbox>
  readonly cc: ReadonlyArray<Mailbox>
  readonly bcc: ReadonlyArray<Mailbox>
}

/** Recipients of each kind, de-duplicated case-insensitively; To wins over Cc over Bcc. */
const plan = (kind: ComposeKind, input: SendInput, parent: ParentMessage | undefined, self: string, issues: Array<FieldIssue>): Plan => {
  const to = readMailboxes("to", input.to, issues)
  const cc = readMailboxes("cc", input.cc, issues)
  const bcc = readMailboxes("bcc", input.bcc, issues)
  const seen = new Set<string>()
  const notSelf = (m: Mailbox) => keyOf(m) !== self
  if (parent === undefined || kind === "send" || kind === "forward") {
    return { to: dedupe(to, seen), cc: dedupe(cc, seen), bcc: dedupe(bcc, seen) }
  }
  const sender = replyTargets(parent).filter(notSelf)
  const parentTo = storedMailboxes(parent.to).filter(notSelf)
  const parentCc = storedMailboxes(parent.cc).filter(notSelf)
  // answering a message this inbox sent: the reply goes to whom it was sent
  const primary = sender.length > 0 ? sender : parentTo
  // A reply's `to` replaces its default recipient, the sender (the agentmail SDK's rule; the
  // spec says only that a reply goes to the sender, which it does without one).
  if (kind === "reply") return { to: dedupe(to.length > 0 ? to : primary, seen), cc: dedupe(cc, seen), bcc: dedupe(bcc, seen) }
  return {
    to: dedupe([...primary, ...parentTo, ...to], seen),
    cc: dedupe([...parentCc, ...cc], seen),
    bcc: dedupe(bcc, seen)
  }
}

const forwardBlock = (parent: ParentMessage) => {
  const lines: Array<[string, string]> = [
    ["From", parent.from],
    ...(parent.date === undefined ? [] : [["Date", new Date(parent.date).toUTCString()] as [string, string]]),
    ["Subject", parent.subject],
    ["To", parent.to.join(", ")],
    ...(parent.cc === undefined || parent.cc.length === 0 ? [] : [["Cc", parent.cc.join(", ")] as [string, string]])
  ]
  const text = ["---------- Forwarded message ---------", ...lines.map(([k, v]) => `${k}: ${v}`), "", parent.text ?? ""].join("\n")
  const html = `<div class="forwarded">---------- Forwarded message ---------<br>\n` +
    lines.map(([k, v]) => `${k}: ${escapeHtml(v)}<br>\n`).join("") + "<br>\n" +
    (parent.html !== undefined ? bodyOf(parent.html) : textToHtml(parent.text ?? "")) + "</div>"
  return { text, html }
}

/**
 * Rules 1 to 3 of the module comment, without fetching or composing (drafts can use it);
 * answers the envelope's recipient addresses, so the caller can check its lists first.
 */
export const validateSend = (kind: ComposeKind, input: SendInput, inbox: Sender, parent?: ParentMessage) =>
  Effect.map(check(kind, input, inbox, parent), ({ recipients }) => ({
    addresses: [...recipients.to, ...recipients.cc, ...recipients.bcc].map((m) => m.address)
  }))

const check = Effect.fnUntraced(function*(kind: ComposeKind, input: SendInput, inbox: Sender, parent: ParentMessage | undefined) {
  const issues: Array<FieldIssue> = []
  const recipients = plan(kind, input, parent, inbox.email.toLowerCase(), issues)
  const replyTo = readMailboxes("reply_to", input.reply_to, issues)
  checkAttachments(input.attachments ?? [], issues)
  checkHeaders(input.headers, issues)
  const total = recipients.to.length + recipients.cc.length + recipients.bcc.length
  if (total === 0 && !issues.some((i) => ["to", "cc", "bcc"].includes(i.path[0] ?? ""))) {
    issues.push({ path: ["to"], message: "At least one recipient is required in to, cc or bcc" })
  }
  if (issues.length > 0) return yield* fail(issues)
  if (total > MAX_RECIPIENTS) {
    return yield* new TooManyRecipients({ message: `${total} unique recipients; at most ${MAX_RECIPIENTS} across to, cc and bcc` })
  }
  if (input.track_opens === true && input.html === undefined) {
    return yield* new HtmlRequired({ message: "track_opens needs an html body", fix: "Add html, or leave track_opens unset" })
  }
  return { recipients, replyTo }
})

/**
 * Builds the message. `parent` is required for reply, reply_all and forward (a missing one
 * is a defect: the caller looks the parent up and answers not_found itself).
 */
export const compose = Effect.fn("Mail.compose")(function*(
  kind: ComposeKind,
  input: SendInput,
  context: ComposeContext,
  parent?: ParentMessage
) {
  if (kind !== "send" && parent === undefined) return yield* Effect.die(new Error(`compose ${kind} needs the parent message`))
  const { recipients, replyTo } = yield* check(kind, input, context.inbox, parent)
  const own = yield* resolveAttachments(input.attachments ?? [], context.url_timeout ?? Duration.seconds(15))

  const ids = yield* Ids
  const random = yield* ids.secret(16)
  const domain = context.inbox.email.split("@").pop() ?? "localhost"
  const messageId = `<${random}@${domain}>`
  const date = new Date(yield* Clock.currentTimeMillis)

  const threaded = (kind === "reply" || kind === "reply_all") && parent?.rfc_message_id !== undefined
  const references = threaded && parent !== undefined && parent.rfc_message_id !== undefined
    ? [...(parent.references ?? []).filter((r) => r !== parent.rfc_message_id), parent.rfc_message_id]
    : []
  const subject = kind === "reply" || kind === "reply_all"
    ? replySubject(input.subject ?? parent?.subject ?? "")
    : kind === "forward"
    ? forwardSubject(input.subject ?? parent?.subject ?? "")
    : input.subject ?? ""

  let text = input.text
  let html = input.html
  let carried: ReadonlyArray<ParsedAttachment> = []
  if (kind === "forward" && parent !== undefined) {
    const block = forwardBlock(parent)
    text = `${input.text ?? ""}\n\n${block.text}`.replace(/^\n+/, "")
    html = `${input.html ?? (input.text === undefined ? "" : textToHtml(input.text))}<br>\n${block.html}`
    carried = parent.attachment_contents ?? []
  }
  if (input.track_opens === true && html !== undefined) {
    if (context.tracking === undefined) return yield* Effect.die(new Error("track_opens needs context.tracking (public URL and open token)"))
    html = withPixel(html, `${context.tracking.public_url.replace(/\/+$/, "")}/t/o/${context.tracking.open_token}.gif`)
  }
  if (text === undefined && html === undefined) text = ""

  const attachments = [...own, ...carried]
  const from: Mailbox = { name: context.inbox.display_name ?? "", address: context.inbox.email }
  const address = (m: Mailbox) => (m.name === "" ? m.address : { name: m.name, address: m.address })
  const composer = new MailComposer({
    from: address(from),
    ...(recipients.to.length > 0 ? { to: recipients.to.map(address) } : {}),
    ...(recipients.cc.length > 0 ? { cc: recipients.cc.map(address) } : {}),
    ...(replyTo.length > 0 ? { replyTo: replyTo.map(address) } : {}),
    subject,
    messageId,
    date,
    ...(references.length > 0 && parent?.rfc_message_id !== undefined ? { inReplyTo: parent.rfc_message_id, references } : {}),
    ...(text === undefined ? {} : { text }),
    ...(html === undefined ? {} : { html }),
    attachments: attachments.map((a) => ({
      content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
      contentType: a.meta.content_type,
      contentDisposition: a.meta.content_disposition,
      filename: a.meta.filename ?? false,
      ...(a.meta.content_id === undefined ? {} : { cid: a.meta.content_id })
    })),
    ...(input.headers === undefined ? {} : { headers: { ...input.headers } }),
    // the boundaries come from Ids too, so composing is deterministic under the testkit
    baseBoundary: random,
    // bodies and attachments are always bytes we hold: never let a value name a file or URL
    disableFileAccess: true,
    disableUrlAccess: true,
    xMailer: false
  })
  // every input was checked above, so a composer failure is a bug: a defect, not an error
  const built = yield* Effect.promise(() => composer.compile().build())

  const envelopeTo = [...recipients.to, ...recipients.cc, ...recipients.bcc].map((m) => m.address)
  const composed: Composed = {
    raw: new Uint8Array(built.buffer, built.byteOffset, built.byteLength),
    envelope: { from: context.inbox.email, to: envelopeTo },
    rfc_message_id: messageId,
    ...(references.length > 0 && parent?.rfc_message_id !== undefined ? { in_reply_to: parent.rfc_message_id, references } : {}),
    starts_thread: !threaded,
    from: display(from),
    to: recipients.to.map(display),
    ...(recipients.cc.length > 0 ? { cc: recipients.cc.map(display) } : {}),
    ...(recipients.bcc.length > 0 ? { bcc: recipients.bcc.map(display) } : {}),
    subject,
    ...(text === undefined ? {} : { text }),
    ...(html === undefined ? {} : { html }),
    attachments,
    date: date.toISOString()
  }
  return composed
})

