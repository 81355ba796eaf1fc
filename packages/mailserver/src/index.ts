/**
 * @inbox/mailserver: mail protocol servers over the engine's public API, beside the HTTP
 * adapter: the SMTP receiver (INBOX_SMTP_LISTEN), mail straight from the internet; SMTP
 * submission (INBOX_SUBMISSION_LISTEN), inboxes sending through any SMTP client; and the IMAP
 * server (INBOX_IMAP_LISTEN), inboxes read in any mail client.
 */
export { clientOf, messageRate, type ReceiverOptions, SMTP_DEFAULTS, SmtpReceiver, verdictsOf } from "./smtp.ts"
export { isLoopback, type Listen, type MailAccessConfig, mailAccessConfig, mayTakeCredentials, parseListen, type TlsFiles } from "./access.ts"
export { replyOf, type SubmissionOptions, SubmissionServer } from "./submission.ts"
export { type ImapOptions, ImapServer } from "./imap/server.ts"
