/**
 * A real SMTP server on loopback (smtp-server) that records what it receives, for testing
 * the relay transport through a genuine SMTP conversation. Addresses listed in `reject`
 * are refused at RCPT TO with 550, as a relay refuses an unknown mailbox.
 */
import { Context, Effect, Layer } from "effect"
import { type AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface ReceivedSmtp {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: Buffer
}

export class SmtpSink extends Context.Service<SmtpSink, {
  readonly url: string
  readonly received: () => ReadonlyArray<ReceivedSmtp>
  /** SMTP connections opened to it so far (a pooled relay reuses one). */
  readonly connections: () => number
}>()("testkit/SmtpSink") {
  static readonly layer = (options: { readonly reject?: ReadonlyArray<string> } = {}) =>
    Layer.effect(SmtpSink, Effect.gen(function*() {
      const received: Array<ReceivedSmtp> = []
      let connections = 0
      const refused = new Set((options.reject ?? []).map((a) => a.toLowerCase()))
      const server = new SMTPServer({
        authOptional: true,
        disabledCommands: ["STARTTLS", "AUTH"],
        logger: false,
        onConnect(_session, callback) {
          connections++
          callback()
        },
        onRcptTo(address, _session, callback) {
          if (refused.has(address.address.toLowerCase())) {
            const error = Object.assign(new Error("mailbox unavailable"), { responseCode: 550 })
            return callback(error)
          }
          callback()
        },
        onData(stream, session, callback) {
          const chunks: Array<Buffer> = []
          stream.on("data", (c: Buffer) => chunks.push(c))
          stream.on("end", () => {
            received.push({
              from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
              to: session.envelope.rcptTo.map((r) => r.address),
              raw: Buffer.concat(chunks)
            })
            callback()
          })
        }
      })
      const port = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.server.address() as AddressInfo).port)))
        }),
        () => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
      )
      return SmtpSink.of({ url: `smtp://127.0.0.1:${port}`, received: () => [...received], connections: () => connections })
    }))
}
