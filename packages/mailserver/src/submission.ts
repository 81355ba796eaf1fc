/**
 * SMTP submission (RFC 6409): an inbox sends through any SMTP client or library, on
 * `smtp-server`, over the engine's public API (docs/mail-servers.md, "IMAP and SMTP
 * submission"). On INBOX_SUBMISSION_LISTEN it offers STARTTLS (587 style), on
 * INBOX_SUBMISSIONS_LISTEN it speaks TLS from the first byte (465 style).
 *
 * - AUTH PLAIN or LOGIN with the inbox's address and an API key (core's `mailboxes.signIn`,
 *   counted like the dashboard's passwords); never over plain text, unless the client is on
 *   loopback and INBOX_IMAP_ALLOW_PLAIN_LOOPBACK=1 (538 5.7.11 otherwise);
 * - the message goes to core's `messages.sendRaw` with MAIL FROM and RCPT TO as its
 *   envelope: every send rule applies there (the From header must be the inbox's, 550;
 *   the envelope sender too, which core's `envelopeSenderRefusal` already refuses at MAIL
 *   FROM, 553; suppressions, lists, limits, DKIM, threading) and the
 *   Bcc header is removed; it lands in Sent and fires `message.sent` like an API send. A
 *   refusal the client must fix is 5xx, a limit that passes (429) or a fault of ours 4xx.
 */
import { type ApiError, Engine, envelopeSenderRefusal, type Principal, LOCAL } from "@inbox/core"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import type { AddressInfo } from "node:net"
import type { SMTPServerOptions } from "smtp-server"
import { type Listen, mailAccessConfig, mayTakeCredentials, type TlsFiles } from "./access.ts"

export interface SubmissionOptions extends Listen {
  /** Implicit TLS (465 style); otherwise STARTTLS is offered when `tls` is given. */
  readonly implicitTls?: boolean
  readonly tls?: TlsFiles
  readonly allowPlainLoopback?: boolean
  /** Largest message (default: the send route's 10 MiB). */
  readonly maxBytes?: number
}

const MAX_BYTES = 10 * 1024 * 1024

interface SignedIn {
  readonly inboxId: string
  readonly email: string
  principal: Principal
  /** The API key signed in with, admitted again for each message (a revoked key sends nothing more). */
  readonly key: string
}

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

/** The SMTP answer to a refusal of core. */
export const replyOf = (error: ApiError | undefined): { code: number; text: string } => {
  switch (error?._tag) {
    case "ValidationError":
      // A sender the inbox may not use is MAIL FROM's own refusal (RFC 5321: 553).
      return { code: error.errors.some((e) => e.path[0] === "mail_from") ? 553 : 550, text: `5.7.1 ${error.message}` }
    case "TooManyRecipients":
      return { code: 452, text: `4.5.3 ${error.message}` }
    case "RecipientBlocked":
    case "RecipientSuppressed":
      return { code: 550, text: `5.7.1 ${error.message}` }
    case "RateLimited":
      return { code: 451, text: `4.7.1 ${error.message}` }
    case "PayloadTooLarge":
      return { code: 552, text: `5.3.4 ${error.message}` }
    case "MissingPermission":
    case "Forbidden":
    case "SendLocked":
    case "EmailUnverified":
    case "InboxPaused":
    case "DomainNotVerified":
    case "PlanLimitExceeded":
    case "MessageRejected":
      return { code: 554, text: `5.7.1 ${error.message}` }
    default:
      return { code: 451, text: "4.3.0 Temporary failure, try again later" }
  }
}

export class SubmissionServer extends Context.Service<SubmissionServer, { readonly port: number }>()("inbox/SubmissionServer") {
  static readonly layer = (options: SubmissionOptions) =>
    Layer.effect(SubmissionServer, Effect.gen(function*() {
      const { SMTPServer } = yield* Effect.promise(() => import("smtp-server"))
      const engine = yield* Engine
      const run = Effect.runPromiseExitWith(yield* Effect.context<never>())
      const allowPlain = options.allowPlainLoopback === true
      const failureOf = (cause: Cause.Cause<ApiError>) => {
        const found = Cause.findErrorOption(cause)
        return found._tag === "Some" ? found.value : undefined
      }

      const serverOptions: SMTPServerOptions = {
        name: engine.settings.mailHost,
        banner: "inbox-engine ESMTP submission",
        secure: options.implicitTls === true,
        size: options.maxBytes ?? MAX_BYTES,
        authMethods: ["PLAIN", "LOGIN"],
        authOptional: false,
        // smtp-server would hide AUTH until TLS; the loopback rule below is ours.
        allowInsecureAuth: true,
        disabledCommands: options.tls === undefined ? ["STARTTLS"] : [],
        ...(options.tls === undefined ? {} : { key: options.tls.key, cert: options.tls.cert }),
        socketTimeout: 5 * 60_000,
        closeTimeout: 5_000,
        logger: false,
        onAuth(auth, session, callback) {
          if (!mayTakeCredentials(session.secure, session.remoteAddress, allowPlain)) {
            return callback(smtpError(538, "5.7.11 Encryption required: use STARTTLS first"))
          }
          const context = { clientIp: session.remoteAddress, requestId: `smtp-${session.id}` }
          const signIn = Effect.gen(function*() {
            const answer = yield* engine.call("mailboxes.signIn", { username: auth.username ?? "", password: auth.password ?? "", client_ip: session.remoteAddress }, LOCAL)
            const principal = yield* engine.admit({ kind: "key", key: auth.password ?? "" }, context)
            return { inboxId: answer.inbox_id, email: answer.email, principal, key: auth.password ?? "" } satisfies SignedIn
          })
          void run(signIn).then((exit) => {
            if (Exit.isSuccess(exit)) return callback(null, { user: exit.value })
            const error = failureOf(exit.cause)
            if (error?._tag === "TooManyAttempts" || error?._tag === "RateLimited") return callback(smtpError(454, "4.7.0 Too many attempts, try again later"))
            if (error === undefined) void run(Effect.logError("SMTP submission sign-in failed", exit.cause))
            callback(smtpError(535, "5.7.8 Authentication credentials invalid"))
          })
        },
        onMailFrom(address, session, callback) {
          const user = session.user as unknown as SignedIn | undefined
          if (user === undefined) return callback(smtpError(530, "5.7.0 Authentication required"))
          // Each message admits the key again, as HTTP does each request (from the key cache):
          // one revoked or expired since AUTH is refused.
          void run(engine.admit({ kind: "key", key: user.key }, { clientIp: session.remoteAddress, requestId: `smtp-${session.id}` })).then((exit) => {
            if (Exit.isSuccess(exit)) {
              user.principal = exit.value
              // Another sender is refused here, before the client sends the message; core's rule.
              const refused = envelopeSenderRefusal(user.email, address.address)
              if (refused === undefined) return callback()
              const reply = replyOf(refused)
              return callback(smtpError(reply.code, reply.text))
            }
            const error = failureOf(exit.cause)
            if (error?._tag === "Unauthorized") return callback(smtpError(535, "5.7.8 The API key was revoked or has expired; sign in again"))
            const reply = replyOf(error)
            callback(smtpError(reply.code, reply.text))
          })
        },
        onData(stream, session, callback) {
          const user = session.user as unknown as SignedIn
          const chunks: Array<Buffer> = []
          stream.on("data", (chunk: Buffer) => {
            if (!stream.sizeExceeded) chunks.push(chunk)
          })
          stream.on("end", () => {
            if (stream.sizeExceeded) return callback(smtpError(552, "5.3.4 Message too large"))
            const send = engine.call("messages.sendRaw", {
              inbox_id: user.inboxId,
              to: session.envelope.rcptTo.map((r) => r.address).join(","),
              // Core decides whether the inbox may send as it (`<>` too: it arrives as an empty address).
              mail_from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
              raw: Buffer.concat(chunks)
            }, { kind: "principal", principal: user.principal }, { clientIp: session.remoteAddress, requestId: `smtp-${session.id}` })
            void run(send).then((exit) => {
              if (Exit.isSuccess(exit)) return callback(null, `2.0.0 Sent ${exit.value.message_id}`)
              const error = failureOf(exit.cause)
              if (error === undefined) void run(Effect.logError("SMTP submission failed", exit.cause))
              const reply = replyOf(error)
              callback(smtpError(reply.code, reply.text))
            })
          })
        }
      }

      const server = new SMTPServer(serverOptions)
      const port = yield* Effect.acquireRelease(
        Effect.callback<number, Error>((resume) => {
          server.once("error", (e) => resume(Effect.fail(e)))
          server.listen(options.port, options.host, () => resume(Effect.succeed((server.server.address() as AddressInfo).port)))
        }),
        () => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
      ).pipe(Effect.orDie)
      server.on("error", (e) => void run(Effect.logWarning("SMTP submission server error", e)))
      yield* Effect.logInfo("SMTP submission listening").pipe(Effect.annotateLogs({
        address: `${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
        tls: options.implicitTls === true ? "implicit" : options.tls === undefined ? "none" : "starttls"
      }))
      return SubmissionServer.of({ port })
    }))

  /** From the settings: INBOX_SUBMISSION_LISTEN (STARTTLS) and INBOX_SUBMISSIONS_LISTEN (implicit TLS); off when unset. */
  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    const config = yield* mailAccessConfig
    const servers: Array<Layer.Layer<SubmissionServer, never, Engine>> = []
    const common = { allowPlainLoopback: config.allowPlainLoopback, ...(config.tls === undefined ? {} : { tls: config.tls }) }
    if (config.submission !== undefined) servers.push(SubmissionServer.layer({ ...config.submission, ...common }))
    if (config.submissions !== undefined) servers.push(SubmissionServer.layer({ ...config.submissions, ...common, implicitTls: true }))
    return servers.length === 0 ? Layer.empty as Layer.Layer<never, never, Engine> : Layer.mergeAll(...servers as [Layer.Layer<SubmissionServer, never, Engine>])
  }).pipe(Effect.orDie))
}
