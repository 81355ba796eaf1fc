/**
 * @inbox/mailserver: mail protocol servers over the engine's public API, beside the HTTP
 * adapter. Today the SMTP receiver (INBOX_SMTP_LISTEN): mail straight from the internet.
 */
export { clientOf, messageRate, type ReceiverOptions, SMTP_DEFAULTS, SmtpReceiver, verdictsOf } from "./smtp.ts"
