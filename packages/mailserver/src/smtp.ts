/**
 * The built-in SMTP receiver: mail reaches the engine straight from the internet, without a
 * forwarder. It runs beside the HTTP server (INBOX_SMTP_LISTEN) on `smtp-server`, over the
 * engine's public API: the operator's own operations `inbound.recipient` (RCPT) and
 * `inbound.receive` (DATA), the intake budget, the cached DNS resolver.
 *
 * Rules (docs/mail-servers.md, "SMTP receiver"):
 * - RCPT is accepted only for hosted inbox addresses (550 5.1.1 otherwise): never a relay;
 * - SIZE is advertised and enforced with the mail engine's limit (552 5.3.4); the bytes of
 *   messages being received count against the process's intake budget (IntakeBudget), and
 *   past it a message is answered 452 4.3.1 so the sender retries later;
 * - per-IP limits on open connections (421) and messages per minute (451 4.7.1), an idle
 *   timeout and a lifetime per connection (421 4.4.2), so one client cannot hold the slots;
 * - each message is checked with mailauth (SPF for the connecting IP and MAIL FROM, DKIM,
 *   DMARC with alignment, ARC) through the engine's cached resolver; the verdicts feed
 *   the same labelling rules as the forwarder's `x-auth-*` headers, and core prepends the
 *   Authentication-Results header mailauth writes to the stored message, renaming an
 *   incoming one bearing our authserv-id first (RFC 8601 section 5: only ours may claim it);
 * - then the message takes the `/inbound/raw` path (core's inbound delivery). The reply is 250 only
 *   after that commit; a storage failure is 451 4.3.0 so the sender retries: nothing
 *   acknowledged is ever lost. An unreachable database is noted as an outage
 *   (core's outage notice: one line when it goes, one when it returns), any other failure is
 *   logged with its cause.
 *
 * The receiver logs its address when it starts listening.
 */
import { type ApiError, Engine, LOCAL, type OutputOf, settingDefault } from "@inbox/core"
import { Cause, Clock, Config, Context, Effect, Exit, Layer, Option } from "effect"
import type { authenticate } from "mailauth"
import { readFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import type { SMTPServerOptions } from "smtp-server"

export interface ReceiverOptions {
  readonly host: string
  /** 0 picks a free port (tests); `SmtpReceiver.port` tells which. */
  readonly port: number
  /** PEM contents; with both, STARTTLS is offered. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer }
  readonly maxConnectionsPerIp?: number
  readonly messagesPerMinutePerIp?: number
  /** Idle time allowed on a connection before it is closed. */
  readonly socketTimeoutMs?: number
  /** Longest a connection may last, busy or not, before it is closed with 421. */
  readonly maxSessionMs?: number
  /** Largest message; default the mail engine's limit (50 MiB). */
  readonly maxBytes?: number
}

export const SMTP_DEFAULTS = {
  maxConnectionsPerIp: settingDefault("INBOX_SMTP_MAX_CONNECTIONS"),
  messagesPerMinutePerIp: settingDefault("INBOX_SMTP_MESSAGES_PER_MINUTE"),
  socketTimeoutMs: 60_000,
  maxSessionMs: 10 * 60_000
} as const

/**
 * The client the per-IP limits count: an IPv4 address (IPv4-mapped IPv6 included), or an
 * IPv6 address's /64, the block one subscriber usually holds whole, so taking a new
 * address of it for each connection does not make a new client.
 */
export const clientOf = (address: string): string => {
  const bare = address.replace(/%.*$/, "").toLowerCase()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  if (mapped !== null) return mapped[1]!
  if (!bare.includes(":")) return bare
  const [head = "", tail] = bare.split("::")
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = tail === undefined ? left : [...left, ...Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => "0"), ...right]
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`
}

/** Clients whose message rate is remembered at most; past it, the idle ones are forgotten first. */
const RATE_CLIENTS = 100_000

/**
 * A token bucket per client: a burst of up to `perMinute`, refilled at `perMinute` a
 * minute. When too many clients are remembered, those idle a minute (their buckets full
 * again, so nothing is lost) are forgotten; forgetting them all, as before, also refilled
 * the bucket of the client being throttled.
 */
export const messageRate = (perMinute: number, clients = RATE_CLIENTS) => {
  const buckets = new Map<string, { at: number; tokens: number }>()
  // A sweep reads every bucket: at most one a second, so a flood of new clients is not a
  // flood of sweeps.
  let sweptAt = Number.NEGATIVE_INFINITY
  return {
    allow: (client: string, ms: number): boolean => {
      const bucket = buckets.get(client) ?? { at: ms, tokens: perMinute }
      const tokens = Math.min(perMinute, bucket.tokens + ((ms - bucket.at) * perMinute) / 60_000)
      if (buckets.size >= clients && !buckets.has(client)) {
        if (ms - sweptAt >= 1_000) {
          sweptAt = ms
          for (const [key, b] of buckets) if (ms - b.at >= 60_000) buckets.delete(key)
        }
        if (buckets.size >= clients) return false
      }
      const allowed = tokens >= 1
      buckets.set(client, { at: ms, tokens: allowed ? tokens - 1 : tokens })
      return allowed
    }
  }
}

/** The verdicts mail authentication can give (core's AuthResult). */
const RESULTS = ["pass", "fail", "softfail", "neutral", "none", "temperror", "permerror"] as const
type AuthResult = typeof RESULTS[number]
const result = (value: unknown): AuthResult | undefined => typeof value === "string" && (RESULTS as ReadonlyArray<string>).includes(value) ? value as AuthResult : undefined

interface AuthVerdicts {
  readonly spf?: AuthResult
  readonly dkim?: AuthResult
  readonly dmarc?: AuthResult
}

/** The hosted inbox an accepted RCPT named (core's `inbound.recipient`). */
type InboxTarget = NonNullable<OutputOf<"inbound.recipient">["inbox"]>

/** The largest message, the mail engine's limit (50 MiB; core refuses more with 413). */
const MAX_MESSAGE_BYTES = 50 * 1024 * 1024

/** The three verdicts of a mailauth answer; DKIM passes when any signature passes. */
export const verdictsOf = (answer: Awaited<ReturnType<typeof authenticate>>): AuthVerdicts => {
  const dkimResults = answer.dkim.results.map((r) => r.status.result)
  const dkim = dkimResults.includes("pass") ? "pass" : result(dkimResults[0]) ?? "none"
  const spf = answer.spf === false ? undefined : result(answer.spf.status.result)
  const dmarc = answer.dmarc === false ? undefined : result(answer.dmarc.status.result)
  return { dkim, ...(spf === undefined ? {} : { spf }), ...(dmarc === undefined ? {} : { dmarc }) }
}

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

export class SmtpReceiver extends Context.Service<SmtpReceiver, { readonly port: number }>()("inbox/SmtpReceiver") {
  static readonly layer = (options: ReceiverOptions) =>
    Layer.effect(SmtpReceiver, Effect.gen(function*() {
      // Loaded only when the receiver is on: mailauth and smtp-server are most of a second of every start otherwise.
      const [{ authenticate }, { SMTPServer }] = yield* Effect.promise(() => Promise.all([import("mailauth"), import("smtp-server")]))
      const engine = yield* Engine
      const settings = engine.settings
      const maxConnections = options.maxConnectionsPerIp ?? SMTP_DEFAULTS.maxConnectionsPerIp
      const perMinute = options.messagesPerMinutePerIp ?? SMTP_DEFAULTS.messagesPerMinutePerIp
      const maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES
      const connections = new Map<string, number>()
      // The sessions counted in `connections`. smtp-server calls onClose for a connection
      // refused at onConnect too: counted as one that closed, each refusal freed a slot the
      // client still held, and a client that retried got past the limit.
      const counted = new Set<string>()
      // The idle timeout is reset by any bytes, so a client that sends a NOOP now and then
      // (or its message a byte at a time) would hold its slot for ever: each connection also
      // has a lifetime. smtp-server's own timers are Node's, so this one is too.
      const maxSession = options.maxSessionMs ?? SMTP_DEFAULTS.maxSessionMs
      const lifetimes = new Map<string, ReturnType<typeof setTimeout>>()
      const endSession = (id: string) => {
        for (const connection of (server as unknown as { connections: Set<{ id: string; send: (code: number, text: string) => void; close: () => void }> }).connections) {
          if (connection.id !== id) continue
          connection.send(421, `4.4.2 ${settings.mailHost} Session too long, closing; reconnect to go on`)
          connection.close()
        }
      }
      const rates = messageRate(perMinute)
      // The inbox each accepted RCPT named, kept on smtp-server's own address object (the one
      // it puts in the envelope), so DATA does not look the inboxes up a second time.
      const recipients = new WeakMap<object, InboxTarget>()

      // smtp-server's callbacks run outside any fiber: with the layer's context, so what they
      // log goes through the server's logger (JSON lines), not Effect's default one.
      const run = Effect.runPromiseExitWith(yield* Effect.context<never>())

      /** A failure answered 451 4.3.0: an outage is noted once, anything else logged with its cause. */
      const failed = (message: string, cause: Cause.Cause<unknown>) => {
        // An operation met the outage and answered 503 already: the engine has noted it once.
        const error = Cause.findErrorOption(cause)
        if (error._tag === "Some" && (error.value as { _tag?: unknown })._tag === "ServiceUnavailable") return
        void run(Effect.flatMap(engine.unavailable(cause), (unavailable) => unavailable === undefined ? Effect.logError(message, cause) : Effect.void))
      }

      const allowMessage = (address: string) => Effect.map(Clock.currentTimeMillis, (ms) => rates.allow(clientOf(address), ms))

      const receive = (raw: Buffer, session: { remoteAddress: string; hostNameAppearsAs: string; envelope: { mailFrom: false | { address: string }; rcptTo: ReadonlyArray<{ readonly address: string }> } }) =>
        Effect.gen(function*() {
          const answer = yield* Effect.promise(() =>
            authenticate(raw, {
              ip: session.remoteAddress,
              helo: session.hostNameAppearsAs,
              sender: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
              mta: settings.mailHost,
              resolver: engine.resolve as never,
              disableBimi: true
            })
          )
          const inboxes = session.envelope.rcptTo.flatMap((r) => recipients.get(r) ?? [])
          // Core puts our Authentication-Results first and renames any that spoke in our name.
          return yield* engine.call("inbound.receive", {
            to: session.envelope.rcptTo.map((r) => r.address),
            ...verdictsOf(answer),
            authentication_results: answer.headers,
            // Every RCPT was accepted through `recipient`; should one be missing, the delivery looks them all up.
            ...(inboxes.length === session.envelope.rcptTo.length ? { inboxes } : {}),
            raw
          }, LOCAL)
        })

      const serverOptions: SMTPServerOptions = {
        name: settings.mailHost,
        banner: "inbox-engine ESMTP",
        size: maxBytes,
        authOptional: true,
        disabledCommands: options.tls === undefined ? ["AUTH", "STARTTLS"] : ["AUTH"],
        ...(options.tls === undefined ? {} : { key: options.tls.key, cert: options.tls.cert }),
        socketTimeout: options.socketTimeoutMs ?? SMTP_DEFAULTS.socketTimeoutMs,
        closeTimeout: 5_000,
        logger: false,
        onConnect(session, callback) {
          const client = clientOf(session.remoteAddress)
          const open = (connections.get(client) ?? 0) + 1
          if (open > maxConnections) return callback(smtpError(421, "4.7.0 Too many connections from your address, try later"))
          connections.set(client, open)
          counted.add(session.id)
          const timer = setTimeout(() => endSession(session.id), maxSession)
          timer.unref()
          lifetimes.set(session.id, timer)
          callback()
        },
        onClose(session) {
          clearTimeout(lifetimes.get(session.id))
          lifetimes.delete(session.id)
          if (!counted.delete(session.id)) return
          const client = clientOf(session.remoteAddress)
          const open = (connections.get(client) ?? 1) - 1
          if (open <= 0) connections.delete(client)
          else connections.set(client, open)
        },
        onMailFrom(_address, session, callback) {
          void run(allowMessage(session.remoteAddress)).then((exit) =>
            Exit.isSuccess(exit) && exit.value ? callback() : callback(smtpError(451, "4.7.1 Too many messages from your address, try later"))
          )
        },
        onRcptTo(address, _session, callback) {
          void run(engine.call("inbound.recipient", { address: address.address }, LOCAL)).then((exit) => {
            if (Exit.isFailure(exit)) {
              failed("SMTP recipient check failed", exit.cause)
              return callback(smtpError(451, "4.3.0 Temporary failure, try again later"))
            }
            if (exit.value.inbox === null) return callback(smtpError(550, "5.1.1 No such mailbox here"))
            recipients.set(address, exit.value.inbox)
            callback()
          })
        },
        onData(stream, session, callback) {
          const chunks: Array<Buffer> = []
          // The message's bytes count against the intake budget until it is stored or refused;
          // past the budget the rest is read and dropped, and the sender is asked to retry.
          const reserver = engine.intake.reserver()
          let overBudget = false
          stream.on("data", (chunk: Buffer) => {
            if (stream.sizeExceeded || overBudget) return
            if (!reserver.take(chunk.byteLength)) {
              overBudget = true
              chunks.length = 0
              reserver.releaseAll()
              return
            }
            chunks.push(chunk)
          })
          stream.on("end", () => {
            if (stream.sizeExceeded) {
              reserver.releaseAll()
              return callback(smtpError(552, `5.3.4 Message larger than ${maxBytes} bytes`))
            }
            if (overBudget) return callback(smtpError(452, "4.3.1 Insufficient system storage, try again later"))
            void run(receive(Buffer.concat(chunks), session as never).pipe(Effect.ensuring(Effect.sync(reserver.releaseAll)))).then((exit) => {
              if (Exit.isSuccess(exit)) return callback(null, "2.0.0 Stored")
              const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
              const error = failure?._tag === "Fail" ? failure.error as ApiError : undefined
              switch (error?._tag) {
                case "NotFound":
                  return callback(smtpError(550, "5.1.1 No such mailbox here"))
                case "PayloadTooLarge":
                  return callback(smtpError(552, "5.3.4 Message too large"))
                case "BadRequest":
                  return callback(smtpError(554, "5.6.0 The message cannot be read"))
                default:
                  // Storage or another fault of ours: the sender keeps the message and retries.
                  failed("SMTP delivery failed", exit.cause)
                  return callback(smtpError(451, "4.3.0 Temporary failure, try again later"))
              }
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
      server.on("error", (e) => void run(Effect.logWarning("SMTP server error", e)))
      yield* Effect.logInfo("SMTP receiver listening").pipe(Effect.annotateLogs({
        address: `${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
        starttls: options.tls !== undefined
      }))
      return SmtpReceiver.of({ port })
    }))

  /**
   * From the environment: INBOX_SMTP_LISTEN (`host:port`; unset, no receiver), with
   * STARTTLS from the PEM files INBOX_SMTP_TLS_CERT and INBOX_SMTP_TLS_KEY, and the per-IP
   * limits INBOX_SMTP_MAX_CONNECTIONS and INBOX_SMTP_MESSAGES_PER_MINUTE (SMTP_DEFAULTS):
   * a relay of the operator's own that hands over all its mail from one address needs more.
   */
  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    const listen = yield* Config.option(Config.String("INBOX_SMTP_LISTEN"))
    if (Option.isNone(listen) || listen.value === "") return Layer.empty as Layer.Layer<never, never, Engine>
    const at = listen.value.lastIndexOf(":")
    const host = at < 0 ? "0.0.0.0" : listen.value.slice(0, at).replace(/^\[|\]$/g, "")
    const port = Number(at < 0 ? listen.value : listen.value.slice(at + 1))
    const cert = yield* Config.option(Config.String("INBOX_SMTP_TLS_CERT"))
    const key = yield* Config.option(Config.String("INBOX_SMTP_TLS_KEY"))
    const tls = Option.isSome(cert) && Option.isSome(key)
      ? { cert: readFileSync(cert.value), key: readFileSync(key.value) }
      : undefined
    const maxConnectionsPerIp = yield* Config.Int("INBOX_SMTP_MAX_CONNECTIONS").pipe(Config.withDefault(SMTP_DEFAULTS.maxConnectionsPerIp))
    const messagesPerMinutePerIp = yield* Config.Int("INBOX_SMTP_MESSAGES_PER_MINUTE").pipe(Config.withDefault(SMTP_DEFAULTS.messagesPerMinutePerIp))
    return SmtpReceiver.layer({ host, port, maxConnectionsPerIp, messagesPerMinutePerIp, ...(tls === undefined ? {} : { tls }) })
  }).pipe(Effect.orDie))
}
