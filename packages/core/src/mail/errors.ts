/**
 * Errors of the mail module that are not spec wire codes.
 *
 * A message we cannot read is an internal condition: the inbound route decides what the
 * client sees (usually the raw message is kept and delivered with what could be read), so
 * `MailParseError` carries a `reason` the caller can branch on rather than a status.
 */
import { Schema } from "effect"

export const MailParseFailure = Schema.Literals([
  "too_large", // raw message over the byte limit; refused before any parsing
  "too_many_parts", // MIME tree over the node limit (also bounds nesting depth)
  "header_too_large", // one MIME node's header block over the limit
  "malformed", // the parser gave up on the bytes
  "timeout", // parsing took longer than the time limit; the worker was replaced
  "resources" // the parsing worker ran out of memory or died; it was replaced
])
export type MailParseFailure = typeof MailParseFailure.Type

export class MailParseError extends Schema.TaggedError<MailParseError>()("MailParseError", {
  reason: MailParseFailure,
  message: Schema.String
}) {}
