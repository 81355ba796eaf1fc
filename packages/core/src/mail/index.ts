/**
 * The mail engine: pure handling of RFC 822 messages. `MailParser` turns raw bytes into the
 * spec's message model (bounded cost, worker pool); `extractReply` finds the new content of
 * a reply; `decideThread` places a message in a thread; `compose` builds outgoing messages
 * for send, reply, reply-all and forward. No HTTP, no database.
 */
export * from "./model.ts"
export * from "./errors.ts"
export { MailParser, type MailParserOptions } from "./parse.ts"
export { extractReply } from "./extract.ts"
export { type BouncedRecipient, type DeliveryReport, parseDeliveryReport } from "./report.ts"
export * from "./thread.ts"
export * from "./compose.ts"
