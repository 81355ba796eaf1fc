/**
 * MailTransport: hands a composed RFC 822 message and its envelope to the outside world.
 *
 * Contract: `send` resolves once the next hop has accepted the message (the relay said 250,
 * or the local outbox row committed). A refusal of the message itself (a recipient the
 * relay rejects) is `MessageRejected` with the relay's reason; a relay that cannot be
 * reached is a defect, because the caller cannot fix it. Implementations never alter the
 * bytes. Bcc recipients appear only in `envelope.to`, never in `raw`.
 *
 * Layers: `layerSmtp(url)` relays through nodemailer; `layerLocalOutbox` stores mail in the
 * database (the default when INBOX_SMTP_URL is unset; `inboxctl outbox list` shows it);
 * `layerConfig` picks one. The testkit adds a captured outbox.
 */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import nodemailer from "nodemailer"
import { MessageRejected } from "../errors/errors.ts"
import { now } from "../shared/time.ts"

export interface OutgoingMail {
  readonly envelope: { readonly from: string; readonly to: ReadonlyArray<string> }
  readonly raw: Uint8Array
  /** For the local outbox listing only. */
  readonly subject?: string
}

/**
 * The relay URL with connection pooling on unless the URL says otherwise (`?pool=false`):
 * smtp-server, and many MTAs, hold every new connection 100 ms before their greeting to catch
 * early talkers, so a connection per message waited that long on every send and capped
 * what a send slot could relay.
 */
const pooled = (url: string) => {
  const parsed = new URL(url)
  if (!parsed.searchParams.has("pool")) parsed.searchParams.set("pool", "true")
  return parsed.toString()
}

export class MailTransport extends Context.Service<MailTransport, {
  send(mail: OutgoingMail): Effect.Effect<void, MessageRejected>
}>()("inbox/MailTransport") {
  static readonly layerSmtp = (url: string) =>
    Layer.effect(MailTransport, Effect.gen(function*() {
      const transporter = yield* Effect.acquireRelease(
        Effect.sync(() => nodemailer.createTransport(pooled(url))),
        (t) => Effect.sync(() => t.close())
      )
      return MailTransport.of({
        send: (mail) =>
          Effect.tryPromise({
            try: () => transporter.sendMail({ envelope: { from: mail.envelope.from, to: [...mail.envelope.to] }, raw: Buffer.from(mail.raw) }),
            catch: (error) => error
          }).pipe(
            Effect.asVoid,
            Effect.catch((error) => {
              const code = (error as { responseCode?: number }).responseCode
              // 5xx from the relay refuses this message; anything else is an outage.
              return code !== undefined && code >= 500 && code < 600
                ? Effect.fail(new MessageRejected({ message: `The mail relay refused the message: ${(error as Error).message}` }))
                : Effect.die(error)
            })
          )
      })
    }))

  static readonly layerLocalOutbox = Layer.effect(MailTransport, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MailTransport.of({
      send: (mail) =>
        Effect.gen(function*() {
          const at = yield* now
          yield* sql`INSERT INTO local_outbox (envelope_from, envelope_to, subject, raw, created_at)
            VALUES (${mail.envelope.from}, ${JSON.stringify(mail.envelope.to)}::jsonb, ${mail.subject ?? null}, ${mail.raw}, ${at})`
        }).pipe(Effect.orDie)
    })
  }))

  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    const url = yield* Config.option(Config.String("INBOX_SMTP_URL"))
    return Option.isSome(url) ? MailTransport.layerSmtp(url.value) : MailTransport.layerLocalOutbox
  }).pipe(Effect.orDie))
}

const OutboxRow = Schema.Struct({
  id: Schema.Union([Schema.Number, Schema.BigInt, Schema.String]),
  envelope_from: Schema.String,
  envelope_to: Schema.Array(Schema.String),
  subject: Schema.NullOr(Schema.String),
  raw: Schema.Uint8Array,
  created_at: Schema.Date
})

/** The newest mail of the local outbox, for `inboxctl outbox list` and `outbox get`. */
export const readLocalOutbox = (limit: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT id, envelope_from, envelope_to, subject, raw, created_at FROM local_outbox ORDER BY id DESC LIMIT ${limit}`
    return yield* Schema.decodeUnknownEffect(Schema.Array(OutboxRow))(rows)
  }).pipe(Effect.orDie)
