/**
 * Messages and threads as stored (rows) and as the API shows them (wire schemas), with the
 * mapping between the two. Every read path maps rows here, so the summary and full forms
 * (spec: Message, Thread, Attachment) are written once.
 */
import { Schema } from "effect"
import { compact, Line } from "../shared/fields.ts"
import { findUnstorable, parseJson } from "../shared/json.ts"
import { Int8, Json } from "../shared/sql.ts"
import { iso, Timestamp } from "../shared/time.ts"

/** Labels that hide a message (and a thread of only such messages) from lists unless asked for. */
export const HIDDEN_LABELS = ["spam", "blocked", "unauthenticated", "trash"] as const
export type HiddenLabel = typeof HIDDEN_LABELS[number]

/** Labels only the service sets: by arrival, by sending, and by drafts. */
export const SYSTEM_LABELS = ["received", "sent", "draft", "scheduled"] as const

/** The most labels a message holds, the service's own included (docs/messages.md). */
export const MAX_LABELS = 100
/** The longest label, in characters. */
export const MAX_LABEL_LENGTH = 64

/** A caller-defined or system label: one line, lower case, at most MAX_LABEL_LENGTH characters. */
export const Label = Line(MAX_LABEL_LENGTH).check(Schema.isPattern(/^[^A-Z]*$/, { message: "Labels are lower case" }))

const tooManyLabels = `At most ${MAX_LABELS} labels`

/**
 * Labels given in a request (added, removed): at most MAX_LABELS, since no message holds
 * more. Every input that names labels uses this or LabelsFilter, so the bounds are one rule.
 */
export const Labels = Schema.Array(Label).check(Schema.isMaxLength(MAX_LABELS, { message: tooManyLabels }))

/**
 * A query value written as a JSON array of strings (`["a","b"]`), as the agentmail SDK
 * sends its list filters (docs/api.md, "Compatibility with the agentmail SDK"); undefined for
 * any other value, which is then taken as written.
 */
export const jsonListOf = (value: string): ReadonlyArray<string> | undefined => {
  const trimmed = value.trim()
  if (!trimmed.startsWith("[") || !trimmed.endsWith("]")) return undefined
  const parsed = parseJson(trimmed)
  // An element the database cannot hold (a NUL written as \u0000) makes it no list at all.
  return parsed.ok && Array.isArray(parsed.value) && parsed.value.every((v) => typeof v === "string") && findUnstorable(parsed.value) === undefined
    ? parsed.value
    : undefined
}

/** The labels as a list, whichever form they came in (a list, comma-separated, a JSON array); unique. */
export const labelsOf = (value: ReadonlyArray<string> | string | undefined): ReadonlyArray<string> =>
  value === undefined
    ? []
    : [...new Set((typeof value === "string" ? jsonListOf(value) ?? value.split(",") : value).map((l) => l.trim()).filter((l) => l.length > 0))]

/** A labels filter of a list: a list, or one string (comma-separated or a JSON array) with the same bounds once split. */
export const LabelsFilter = Schema.Union([
  Labels,
  Line(1024).check(Schema.makeFilter((value: string) => {
    const labels = labelsOf(value)
    if (labels.length > MAX_LABELS) return tooManyLabels
    return labels.every((l) => l.length <= MAX_LABEL_LENGTH) || `A label has at most ${MAX_LABEL_LENGTH} characters`
  }))
])

export const AttachmentMeta = Schema.Struct({
  attachment_id: Schema.String,
  filename: Schema.optionalKey(Schema.String),
  content_type: Schema.String,
  content_disposition: Schema.Literals(["inline", "attachment"]),
  size: Schema.Number,
  content_id: Schema.optionalKey(Schema.String)
})
export type AttachmentMeta = typeof AttachmentMeta.Type

/**
 * An attachment as stored on its message row: the metadata and the hash of its bytes, and
 * `part` when the bytes are kept only inside the raw message (blobs/parts.ts).
 */
export const StoredAttachment = Schema.Struct({ ...AttachmentMeta.fields, sha256: Schema.String, part: Schema.optionalKey(Schema.Number) })
export type StoredAttachment = typeof StoredAttachment.Type

export const MessageRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  inbox_id: Schema.String,
  thread_id: Schema.String,
  direction: Schema.Literals(["received", "sent"]),
  state: Schema.String,
  rfc_message_id: Schema.String,
  in_reply_to: Schema.NullOr(Schema.String),
  references: Schema.NullOr(Schema.Array(Schema.String)),
  labels: Schema.Array(Schema.String),
  timestamp: Schema.Date,
  sender: Schema.String,
  recipients: Schema.Array(Schema.String),
  cc: Schema.NullOr(Schema.Array(Schema.String)),
  bcc: Schema.NullOr(Schema.Array(Schema.String)),
  subject: Schema.String,
  preview: Schema.String,
  size: Schema.Number,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type MessageRow = typeof MessageRow.Type

/** The columns a summary needs (lists read only these). */
export const SUMMARY_COLUMNS = [
  "id", "organization_id", "pod_id", "inbox_id", "thread_id", "direction", "state", "rfc_message_id", "in_reply_to",
  "references", "labels", "timestamp", "sender", "recipients", "cc", "bcc", "subject", "preview", "size", "created_at",
  "updated_at"
] as const

/** A message's body columns as stored; `bodiesOf` reads them as the API's body fields. */
export const BodiesRow = Schema.Struct({
  text: Schema.NullOr(Schema.String),
  html: Schema.NullOr(Schema.String),
  // NULL with its flag set: the extract is the whole body, stored once (migration 0055).
  extracted_text: Schema.NullOr(Schema.String),
  extracted_html: Schema.NullOr(Schema.String),
  extracted_text_is_text: Schema.Boolean,
  extracted_html_is_html: Schema.Boolean
})
export type BodiesRow = typeof BodiesRow.Type

export const FullMessageRow = Schema.Struct({
  ...MessageRow.fields,
  ...BodiesRow.fields,
  headers: Json(Schema.Record(Schema.String, Schema.String)),
  attachments: Json(Schema.Array(StoredAttachment)),
  raw_sha256: Schema.String
})
export type FullMessageRow = typeof FullMessageRow.Type

export const MessageSummary = Schema.Struct({
  inbox_id: Schema.String,
  thread_id: Schema.String,
  message_id: Schema.String,
  rfc_message_id: Schema.String,
  labels: Schema.Array(Schema.String),
  timestamp: Timestamp,
  from: Schema.String,
  to: Schema.Array(Schema.String),
  cc: Schema.optionalKey(Schema.Array(Schema.String)),
  bcc: Schema.optionalKey(Schema.Array(Schema.String)),
  size: Schema.Number,
  subject: Schema.String,
  preview: Schema.String,
  in_reply_to: Schema.optionalKey(Schema.String),
  references: Schema.optionalKey(Schema.Array(Schema.String)),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type MessageSummary = typeof MessageSummary.Type

export const Message = Schema.Struct({
  ...MessageSummary.fields,
  text: Schema.optionalKey(Schema.String),
  html: Schema.optionalKey(Schema.String),
  extracted_text: Schema.optionalKey(Schema.String),
  extracted_html: Schema.optionalKey(Schema.String),
  headers: Schema.Record(Schema.String, Schema.String),
  attachments: Schema.Array(AttachmentMeta)
})
export type Message = typeof Message.Type

const nonEmpty = <A>(list: ReadonlyArray<A> | null): ReadonlyArray<A> | undefined =>
  list === null || list.length === 0 ? undefined : list

export const toSummary = (row: MessageRow): MessageSummary =>
  compact({
    inbox_id: row.inbox_id,
    thread_id: row.thread_id,
    message_id: row.id,
    rfc_message_id: row.rfc_message_id,
    labels: row.labels,
    timestamp: iso(row.timestamp),
    from: row.sender,
    to: row.recipients,
    cc: nonEmpty(row.cc),
    bcc: nonEmpty(row.bcc),
    size: row.size,
    subject: row.subject,
    preview: row.preview,
    in_reply_to: row.in_reply_to,
    references: nonEmpty(row.references),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })

export const toAttachmentMeta = (a: StoredAttachment): AttachmentMeta =>
  compact({
    attachment_id: a.attachment_id,
    filename: a.filename,
    content_type: a.content_type,
    content_disposition: a.content_disposition,
    size: a.size,
    content_id: a.content_id
  })

/** The body fields of a message (each absent when NULL), its extracts resolved. */
export const bodiesOf = (row: BodiesRow): Pick<Message, "text" | "html" | "extracted_text" | "extracted_html"> =>
  compact({
    text: row.text,
    html: row.html,
    extracted_text: row.extracted_text_is_text ? row.text : row.extracted_text,
    extracted_html: row.extracted_html_is_html ? row.html : row.extracted_html
  })

export const toMessage = (row: FullMessageRow): Message =>
  compact({
    ...toSummary(row),
    ...bodiesOf(row),
    headers: row.headers,
    attachments: row.attachments.map(toAttachmentMeta)
  })

export const ThreadRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  inbox_id: Schema.String,
  subject: Schema.String,
  preview: Schema.String,
  senders: Schema.Array(Schema.String),
  recipients: Schema.Array(Schema.String),
  labels: Schema.Array(Schema.String),
  last_message_id: Schema.String,
  message_count: Schema.Number,
  size: Int8,
  received_at: Schema.NullOr(Schema.Date),
  sent_at: Schema.NullOr(Schema.Date),
  last_at: Schema.Date,
  hidden: Schema.Boolean,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type ThreadRow = typeof ThreadRow.Type

export const ThreadSummary = Schema.Struct({
  inbox_id: Schema.String,
  thread_id: Schema.String,
  labels: Schema.Array(Schema.String),
  timestamp: Timestamp,
  senders: Schema.Array(Schema.String),
  recipients: Schema.Array(Schema.String),
  last_message_id: Schema.String,
  message_count: Schema.Number,
  size: Schema.Number,
  received_timestamp: Schema.optionalKey(Timestamp),
  sent_timestamp: Schema.optionalKey(Timestamp),
  subject: Schema.String,
  preview: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type ThreadSummary = typeof ThreadSummary.Type

export const Thread = Schema.Struct({
  ...ThreadSummary.fields,
  attachments: Schema.Array(AttachmentMeta),
  count: Schema.Number,
  limit: Schema.Number,
  messages: Schema.Array(Message),
  /** With `limit` or `page_token` (a page of the thread's messages): the token of the older ones, when there are. */
  next_page_token: Schema.optionalKey(Schema.String)
})
export type Thread = typeof Thread.Type

export const toThreadSummary = (row: ThreadRow): ThreadSummary =>
  compact({
    inbox_id: row.inbox_id,
    thread_id: row.id,
    labels: row.labels,
    timestamp: iso(row.last_at),
    senders: row.senders,
    recipients: row.recipients,
    last_message_id: row.last_message_id,
    message_count: row.message_count,
    size: row.size,
    received_timestamp: row.received_at === null ? undefined : iso(row.received_at),
    sent_timestamp: row.sent_at === null ? undefined : iso(row.sent_at),
    subject: row.subject,
    preview: row.preview,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })
