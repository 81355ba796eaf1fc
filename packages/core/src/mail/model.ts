/**
 * The message model the mail module produces: the spec's full message form minus the
 * fields storage assigns (inbox_id, thread_id, message_id, labels, timestamps, attachment
 * ids). Field names are the spec's, snake_case; optional fields are absent, never null.
 *
 * Attachment bytes travel beside the model (`ParseResult.attachments[i].content`, same
 * order as `message.attachments`) so the storage layer can hand them to the BlobStore
 * without the model ever holding megabytes.
 */
import { Schema } from "effect"

export const ContentDisposition = Schema.Literals(["inline", "attachment"])
export type ContentDisposition = typeof ContentDisposition.Type

export const AttachmentMeta = Schema.Struct({
  filename: Schema.optionalKey(Schema.String),
  content_type: Schema.String,
  content_disposition: ContentDisposition,
  size: Schema.Number,
  /** Content-ID without angle brackets, as `cid:` URLs in the HTML name it */
  content_id: Schema.optionalKey(Schema.String)
})
export type AttachmentMeta = typeof AttachmentMeta.Type

export const ParsedMessage = Schema.Struct({
  /** display-name-and-address form: `Ann Lee <ann@x.org>`, or the bare address */
  from: Schema.String,
  to: Schema.Array(Schema.String),
  cc: Schema.optionalKey(Schema.Array(Schema.String)),
  /** empty string when the message has no Subject */
  subject: Schema.String,
  text: Schema.optionalKey(Schema.String),
  html: Schema.optionalKey(Schema.String),
  extracted_text: Schema.optionalKey(Schema.String),
  extracted_html: Schema.optionalKey(Schema.String),
  /** lower-case names; `content-type` holds JSON `{"value":..,"params":{..}}` */
  headers: Schema.Record(Schema.String, Schema.String),
  attachments: Schema.Array(AttachmentMeta),
  preview: Schema.String,
  /** bytes of the raw message */
  size: Schema.Number,
  /** with angle brackets, as in the header; absent when the message has none */
  rfc_message_id: Schema.optionalKey(Schema.String),
  in_reply_to: Schema.optionalKey(Schema.String),
  references: Schema.optionalKey(Schema.Array(Schema.String)),
  /** the Date header as ISO 8601 UTC, when present and readable */
  date: Schema.optionalKey(Schema.String)
})
export type ParsedMessage = typeof ParsedMessage.Type

export const ParsedAttachment = Schema.Struct({
  meta: AttachmentMeta,
  content: Schema.Uint8Array,
  /** SHA-256 of `content` (hex), when the parser computed it already; absent for composed attachments */
  sha256: Schema.optionalKey(Schema.String)
})
export type ParsedAttachment = typeof ParsedAttachment.Type

export const ParseResult = Schema.Struct({ message: ParsedMessage, attachments: Schema.Array(ParsedAttachment) })
export type ParseResult = typeof ParseResult.Type
