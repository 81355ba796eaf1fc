/** Sending, replying and forwarding (spec: Messages `/send`, `/reply`, `/reply-all`, `/forward`, Send rules). */
import { Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { SendInput } from "../mail/compose.ts"
import { Line } from "../shared/fields.ts"
import { SendAnswer, Sending } from "./Sending.ts"

const BASE = "/v0/inboxes/:inbox_id/messages"
const IdempotencyHeader = Schema.Struct({ "idempotency-key": Schema.optionalKey(Line(255)) })
/** 6 MB of inline attachments is about 8 MB of base64, plus the bodies. */
const SEND_BODY_LIMIT = 10 * 1024 * 1024

const keyOf = (headers: { readonly "idempotency-key"?: string }) =>
  headers["idempotency-key"] === undefined ? {} : { idempotencyKey: headers["idempotency-key"] }

export const sendMessage = operation({
  name: "messages.send",
  summary: "Send a new message from the inbox to to/cc/bcc (a string or a list), with text and/or html and attachments (inline base64 `content` or `url`).",
  routes: [route.post(`${BASE}/send`)],
  access: { kind: "member", permission: "message_send" },
  body: SendInput,
  headers: IdempotencyHeader,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { tool: "send_message" },
  cli: { command: "send" },
  run: ({ principal, params, input, headers }) =>
    Sending.use((s) => s.send(principal, { kind: "send", inboxId: params.inbox_id, input, ...keyOf(headers) }))
})

export const replyToMessage = operation({
  name: "messages.reply",
  summary: "Reply to a message's sender in the same thread (In-Reply-To and References are set).",
  routes: [route.post(`${BASE}/:message_id/reply`)],
  access: { kind: "member", permission: "message_reply" },
  body: SendInput,
  headers: IdempotencyHeader,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { tool: "reply_to_message" },
  cli: { command: "messages reply" },
  run: ({ principal, params, input, headers }) =>
    Sending.use((s) => s.send(principal, { kind: "reply", inboxId: params.inbox_id, messageId: params.message_id, input, ...keyOf(headers) }))
})

export const replyAllToMessage = operation({
  name: "messages.replyAll",
  summary: "Reply to everyone on a message (its sender, To and Cc, without this inbox) in the same thread.",
  routes: [route.post(`${BASE}/:message_id/reply-all`)],
  access: { kind: "member", permission: "message_reply" },
  body: SendInput,
  headers: IdempotencyHeader,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { tool: "reply_all_to_message" },
  cli: { command: "messages reply-all" },
  run: ({ principal, params, input, headers }) =>
    Sending.use((s) => s.send(principal, { kind: "reply_all", inboxId: params.inbox_id, messageId: params.message_id, input, ...keyOf(headers) }))
})

export const forwardMessage = operation({
  name: "messages.forward",
  summary: "Forward a message with its attachments to new recipients; a forward starts a new thread.",
  routes: [route.post(`${BASE}/:message_id/forward`)],
  access: { kind: "member", permission: "message_send" },
  body: SendInput,
  headers: IdempotencyHeader,
  bodyLimit: SEND_BODY_LIMIT,
  output: Output.json(SendAnswer),
  mutates: true,
  mcp: { tool: "forward_message" },
  cli: { command: "messages forward" },
  run: ({ principal, params, input, headers }) =>
    Sending.use((s) => s.send(principal, { kind: "forward", inboxId: params.inbox_id, messageId: params.message_id, input, ...keyOf(headers) }))
})

export const sendingOperations = [sendMessage, replyToMessage, replyAllToMessage, forwardMessage]
