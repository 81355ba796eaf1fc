/**
 * What IMAP and SMTP submission share: where they listen and with which TLS, read from the
 * settings once (INBOX_IMAP_LISTEN, INBOX_IMAPS_LISTEN, INBOX_SUBMISSION_LISTEN,
 * INBOX_SUBMISSIONS_LISTEN, the certificate of INBOX_SMTP_TLS_CERT and INBOX_SMTP_TLS_KEY,
 * INBOX_IMAP_ALLOW_PLAIN_LOOPBACK), and the rule that a password never crosses a plain-text
 * connection unless it comes from this machine and the operator allowed that.
 */
import { Config, Effect, Option } from "effect"
import { readFileSync } from "node:fs"

export interface Listen {
  readonly host: string
  /** 0 picks a free port (tests). */
  readonly port: number
}

export interface TlsFiles {
  readonly cert: string | Buffer
  readonly key: string | Buffer
}

/** `host:port`, `[v6]:port` or a bare port (all interfaces). */
export const parseListen = (value: string): Listen => {
  const at = value.lastIndexOf(":")
  const host = at < 0 ? "0.0.0.0" : value.slice(0, at).replace(/^\[|\]$/g, "")
  const port = Number(at < 0 ? value : value.slice(at + 1))
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${value} is no host:port`)
  return { host, port }
}

/** A client on this machine: 127.0.0.0/8 or ::1 (IPv4-mapped too). */
export const isLoopback = (address: string | undefined): boolean => {
  const bare = (address ?? "").replace(/^::ffff:/i, "")
  return bare === "::1" || /^127\./.test(bare)
}

/** Whether credentials may be taken on this connection: over TLS, or plain from loopback when allowed. */
export const mayTakeCredentials = (secure: boolean, remoteAddress: string | undefined, allowPlainLoopback: boolean): boolean =>
  secure || (allowPlainLoopback && isLoopback(remoteAddress))

export interface MailAccessConfig {
  readonly imap?: Listen
  readonly imaps?: Listen
  readonly submission?: Listen
  readonly submissions?: Listen
  readonly tls?: TlsFiles
  readonly allowPlainLoopback: boolean
}

const listenOf = (name: string) =>
  Effect.map(Config.option(Config.String(name)), (value) => Option.isSome(value) && value.value !== "" ? parseListen(value.value) : undefined)

/** The settings of IMAP and submission; implicit TLS without a certificate is a start-up error. */
export const mailAccessConfig = Effect.gen(function*() {
  const imap = yield* listenOf("INBOX_IMAP_LISTEN")
  const imaps = yield* listenOf("INBOX_IMAPS_LISTEN")
  const submission = yield* listenOf("INBOX_SUBMISSION_LISTEN")
  const submissions = yield* listenOf("INBOX_SUBMISSIONS_LISTEN")
  const cert = yield* Config.option(Config.String("INBOX_SMTP_TLS_CERT"))
  const key = yield* Config.option(Config.String("INBOX_SMTP_TLS_KEY"))
  const allowPlainLoopback = (yield* Config.String("INBOX_IMAP_ALLOW_PLAIN_LOOPBACK").pipe(Config.withDefault(""))) === "1"
  const tls = Option.isSome(cert) && Option.isSome(key) ? { cert: readFileSync(cert.value), key: readFileSync(key.value) } : undefined
  if (tls === undefined && (imaps !== undefined || submissions !== undefined)) {
    throw new Error("INBOX_IMAPS_LISTEN and INBOX_SUBMISSIONS_LISTEN need INBOX_SMTP_TLS_CERT and INBOX_SMTP_TLS_KEY")
  }
  return {
    allowPlainLoopback,
    ...(imap === undefined ? {} : { imap }),
    ...(imaps === undefined ? {} : { imaps }),
    ...(submission === undefined ? {} : { submission }),
    ...(submissions === undefined ? {} : { submissions }),
    ...(tls === undefined ? {} : { tls })
  } satisfies MailAccessConfig
})
