/**
 * Sending, replying and forwarding (spec: Messages `/send`, `/reply`, `/reply-all`,
 * `/forward`, Send rules). The four share their body (SendInput), the Idempotency-Key header
 * and their answer; they differ in what they answer and which permission they need.
 */
import { Schema } from "effect"
import type { Permission } from "../access/permissions.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { type ComposeKind, SendInput } from "../mail/compose.ts"
import { Labels } from "../messages/model.ts"
import { Line } from "../shared/fields.ts"
import { SendAnswer, Sending } from "./Sending.ts"

const BASE = "/v0/inboxes/:inbox_id/messages" as const
const IdempotencyHeader = Schema.Struct({ "idempotency-key": Schema.optionalKey(Line(255)) })
/** 6 MB of inline attachments is about 8 MB of base64, plus the bodies. */
export const SEND_BODY_LIMIT = 10 * 1024 * 1024

/** The send body: the send fields, and `labels` the sent message carries beside `sent` (the agentmail SDK's). */
export const SendBody = Schema.Struct({ ...SendInput.fields, labels: Schema.optionalKey(Labels) })

/** The request to Sending: the send fields apart from the labels. */
const requestOf = ({ labels, ...input }: typeof SendBody.Type) => ({ input, labels })

const common = {
  access: undefined as never,
  body: SendBody,
  headers: IdempotencyHeader,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(SendAnswer),
  mutates: true
}

const keyOf = (headers: { readonly "idempotency-key"?: string }) =>
  headers["idempotency-key"] === undefined ? {} : { idempotencyKey: headers["idempotency-key"] }

/** An operation that answers (or forwards) the message of its path. */
const answering = (spec: {
  readonly name: string
  readonly summary: string
  readonly path: "reply" | "reply-all" | "forward"
  readonly kind: Exclude<ComposeKind, "send">
  readonly permission: Permission
  readonly tool: string
  readonly command: string
}) =>
  operation({
    ...common,
    name: spec.name,
    summary: spec.summary,
    // Typed as one of the three paths: each has the same two parameters.
    routes: [route.post(`${BASE}/:message_id/${spec.path}` as `${typeof BASE}/:message_id/reply`)],
    access: { kind: "member", permission: spec.permission },
    mcp: { tool: spec.tool },
    cli: { command: spec.command },
    run: ({ principal, params, input, headers }) =>
      Sending.use((s) => s.send(principal, { kind: spec.kind, inboxId: params.inbox_id, messageId: params.message_id, ...requestOf(input), ...keyOf(headers) }))
  })

export const sendMessage = operation({
  ...common,
  name: "messages.send",
  summary: "Send a new message from the inbox to to/cc/bcc (a string or a list), with text and/or html and attachments (inline base64 `content` or `url`).",
  routes: [route.post(`${BASE}/send`)],
  access: { kind: "member", permission: "message_send" },
  mcp: { tool: "send_message" },
  cli: { command: "messages send", aliases: ["send"] },
  run: ({ principal, params, input, headers }) =>
    Sending.use((s) => s.send(principal, { kind: "send", inboxId: params.inbox_id, ...requestOf(input), ...keyOf(headers) }))
})

export const replyToMessage = answering({
  name: "messages.reply",
  summary: "Reply to a message's sender in the same thread (In-Reply-To and References are set).",
  path: "reply",
  kind: "reply",
  permission: "message_reply",
  tool: "reply_to_message",
  command: "messages reply"
})

export const replyAllToMessage = answering({
  name: "messages.replyAll",
  summary: "Reply to everyone on a message (its sender, To and Cc, without this inbox) in the same thread.",
  path: "reply-all",
  kind: "reply_all",
  permission: "message_reply",
  tool: "reply_all_to_message",
  command: "messages reply-all"
})

export const forwardMessage = answering({
  name: "messages.forward",
  summary: "Forward a message with its attachments to new recipients; a forward starts a new thread.",
  path: "forward",
  kind: "forward",
  permission: "message_send",
  tool: "forward_message",
  command: "messages forward"
})

/**
 * A message as its client wrote it (message/rfc822 bytes): what SMTP submission hands the
 * engine, and a route for any program that writes its own MIME. `to` (comma-separated) is
 * the envelope; without it the message goes to its To, Cc and Bcc.
 */
export const sendRawMessage = operation({
  name: "messages.sendRaw",
  summary: "Send a message written as raw RFC 822 bytes (its MIME and Message-ID kept; From, and the envelope sender `mail_from` when given, must be the inbox; the Bcc header removed) to `to` (comma-separated) or to its To, Cc and Bcc.",
  routes: [route.post(`${BASE}/send-raw`)],
  access: { kind: "member", permission: "message_send" },
  query: Schema.Struct({ to: Schema.optionalKey(Line(64 * 1024)), mail_from: Schema.optionalKey(Line(320)) }),
  raw: { maxBytes: SEND_BODY_LIMIT },
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { exclude: "raw MIME bytes are not a tool input: send_message composes the message" },
  cli: { exclude: "raw MIME bytes: any SMTP client sends them through submission (docs/mail-servers.md)" },
  run: ({ principal, params, input, raw }) =>
    Sending.use((s) =>
      s.sendRaw(principal, {
        inboxId: params.inbox_id,
        raw,
        ...(input.to === undefined ? {} : { recipients: input.to.split(",").map((a) => a.trim()).filter((a) => a !== "") }),
        ...(input.mail_from === undefined ? {} : { envelopeFrom: input.mail_from })
      })
    )
})

export const sendingOperations = [sendMessage, replyToMessage, replyAllToMessage, forwardMessage, sendRawMessage]
