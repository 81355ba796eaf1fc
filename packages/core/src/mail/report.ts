/**
 * Delivery reports arriving as mail: a delivery status notification (RFC 3464,
 * `multipart/report; report-type=delivery-status`) or an abuse feedback report (RFC 5965,
 * `report-type=feedback-report`). Pure: the raw message in, what it reports out: the
 * Message-ID of the original message (from its returned message or headers part), and per
 * recipient the action and status, or the complained-about recipients. Deciding whether the
 * original is a message we sent, and what follows (suppression, `message.bounced`), is
 * core's (the provider-events rule), not the parser's. Anything that is not a well-formed
 * report is `undefined`, and the message is ordinary mail. What it reports is storable text
 * (storable.ts): a NUL in a forged report is U+FFFD, not a failed transaction.
 */
import { storable } from "./storable.ts"

export interface BouncedRecipient {
  readonly address: string
  /** RFC 3464 Action: failed, delayed, delivered, relayed, expanded */
  readonly action: string
  /** RFC 3463 status code such as 5.1.1 */
  readonly status: string
  readonly diagnostic?: string
}

export type DeliveryReport =
  | {
    readonly kind: "bounce"
    readonly rfc_message_id?: string
    /** hard: some recipient failed with a permanent (5.x.x) status; soft: only transient failures or delays */
    readonly bounce_type: "hard" | "soft"
    readonly recipients: ReadonlyArray<BouncedRecipient>
  }
  | {
    readonly kind: "complaint"
    readonly rfc_message_id?: string
    readonly feedback_type: string
    readonly recipients: ReadonlyArray<string>
  }

interface Part {
  readonly headers: ReadonlyMap<string, string>
  readonly body: string
}

/** Header block and body; folded lines unfolded; names lower-case; the first of a repeated field wins. */
const splitPart = (text: string): Part => {
  const end = /\r?\n\r?\n/.exec(text)
  const head = end === null ? text : text.slice(0, end.index)
  const body = end === null ? "" : text.slice(end.index + end[0].length)
  return { headers: fields(head), body }
}

/** Where splitPart's `/\r?\n\r?\n/` would match in the bytes (the end of the header block), or -1. */
const blankLine = (bytes: Buffer): number => {
  for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) {
    if (bytes[i + 1] === 0x0a || (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a)) return i > 0 && bytes[i - 1] === 0x0d ? i - 1 : i
  }
  return -1
}

const fields = (block: string): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  for (const line of block.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":")
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    if (!out.has(name)) out.set(name, line.slice(colon + 1).trim())
  }
  return out
}

const param = (value: string, name: string): string | undefined => {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))`, "i").exec(value)
  return match === null ? undefined : (match[1] ?? match[2])
}

const mediaType = (value: string | undefined) => (value ?? "text/plain").split(";")[0]!.trim().toLowerCase()

const decoded = (part: Part): string =>
  (part.headers.get("content-transfer-encoding") ?? "").trim().toLowerCase() === "base64"
    ? Buffer.from(part.body.replace(/\s+/g, ""), "base64").toString("utf8")
    : part.body

const children = (body: string, boundary: string): ReadonlyArray<Part> => {
  const delimiter = `--${boundary}`
  const pieces = body.split(new RegExp(`\\r?\\n?${delimiter.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`))
  // pieces[0] is the preamble; the piece starting with "--" is the close delimiter and the epilogue.
  return pieces.slice(1).filter((p) => !p.startsWith("--")).map((p) => splitPart(p.replace(/^[ \t]*\r?\n/, "")))
}

/** `rfc822; a@b.example` → `a@b.example` (the address type is optional in practice). */
const addressField = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const address = (value.includes(";") ? value.slice(value.indexOf(";") + 1) : value).trim().replace(/^<|>$/g, "").toLowerCase()
  return address.includes("@") ? address : undefined
}

const originalMessageId = (parts: ReadonlyArray<Part>): string | undefined => {
  for (const part of parts) {
    const type = mediaType(part.headers.get("content-type"))
    if (type === "message/rfc822" || type === "text/rfc822-headers" || type === "message/rfc822-headers") {
      const id = splitPart(decoded(part)).headers.get("message-id")
      if (id !== undefined && id !== "") return id
    }
  }
  return undefined
}

const originalRecipients = (parts: ReadonlyArray<Part>): ReadonlyArray<string> => {
  for (const part of parts) {
    const type = mediaType(part.headers.get("content-type"))
    if (type === "message/rfc822" || type === "text/rfc822-headers") {
      const to = splitPart(decoded(part)).headers.get("to")
      if (to !== undefined) return [...to.matchAll(/[^\s<>,;"]+@[^\s<>,;"]+/g)].map((m) => m[0].toLowerCase())
    }
  }
  return []
}

const bounce = (parts: ReadonlyArray<Part>): DeliveryReport | undefined => {
  const status = parts.find((p) => mediaType(p.headers.get("content-type")) === "message/delivery-status")
  if (status === undefined) return undefined
  // The per-message group first, then one group per recipient, separated by blank lines.
  const groups = decoded(status).split(/\r?\n[ \t]*\r?\n/).map(fields)
  const recipients: Array<BouncedRecipient> = []
  for (const group of groups) {
    const address = addressField(group.get("final-recipient") ?? group.get("original-recipient"))
    const action = group.get("action")?.toLowerCase()
    if (address === undefined || action === undefined) continue
    const diagnostic = group.get("diagnostic-code")
    recipients.push({ address, action, status: group.get("status") ?? "", ...(diagnostic === undefined ? {} : { diagnostic }) })
  }
  if (recipients.length === 0) return undefined
  const hard = recipients.some((r) => r.action === "failed" && r.status.startsWith("5"))
  const id = originalMessageId(parts)
  return { kind: "bounce", ...(id === undefined ? {} : { rfc_message_id: id }), bounce_type: hard ? "hard" : "soft", recipients }
}

const complaint = (parts: ReadonlyArray<Part>): DeliveryReport | undefined => {
  const report = parts.find((p) => mediaType(p.headers.get("content-type")) === "message/feedback-report")
  if (report === undefined) return undefined
  const feedback = fields(decoded(report))
  const feedbackType = feedback.get("feedback-type")?.toLowerCase()
  if (feedbackType === undefined) return undefined
  const named = addressField(feedback.get("original-rcpt-to"))
  const recipients = named !== undefined ? [named] : originalRecipients(parts)
  const id = originalMessageId(parts)
  return { kind: "complaint", ...(id === undefined ? {} : { rfc_message_id: id }), feedback_type: feedbackType, recipients }
}

/** The report a message carries, or undefined when it is ordinary mail. */
export const parseDeliveryReport = (raw: Uint8Array): DeliveryReport | undefined => {
  // Every arriving message is asked, and nearly none is a report: its header block alone
  // answers, without a copy and a string of the whole message (a few hundred µs at 280 KB).
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const end = blankLine(bytes)
  if (mediaType(fields(bytes.toString("latin1", 0, end < 0 ? bytes.length : end)).get("content-type")) !== "multipart/report") return undefined
  const top = splitPart(bytes.toString("latin1"))
  const contentType = top.headers.get("content-type") ?? ""
  const boundary = param(contentType, "boundary")
  if (boundary === undefined) return undefined
  const parts = children(top.body, boundary)
  switch (param(contentType, "report-type")?.toLowerCase()) {
    case "delivery-status":
      return storable(bounce(parts))
    case "feedback-report":
      return storable(complaint(parts))
    default:
      return undefined
  }
}
