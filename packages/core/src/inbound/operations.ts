/** The operator's inbound route (spec: Operator routes, `POST /inbound/raw`). */
import { Effect, Schema, SchemaGetter } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { defaultLimits } from "../mail/parse-core.ts"
import { Line } from "../shared/fields.ts"
import { renameOurAuthenticationResults } from "../mail/auth-results.ts"
import { Settings } from "../settings/Settings.ts"
import { AuthResult, DeliveryResult, Inbound } from "./Inbound.ts"

/** A verdict header, case-insensitive on the wire. */
const Verdict = Schema.String.pipe(
  Schema.decode({ decode: SchemaGetter.transform((s: string) => s.trim().toLowerCase()), encode: SchemaGetter.passthrough() }),
  Schema.decodeTo(AuthResult)
)

export const receiveRaw = operation({
  name: "inbound.raw",
  summary: "Deliver a raw RFC 822 message to the hosted inboxes named in `to` (comma-separated); the operator's forwarder calls it with x-inbound-secret.",
  routes: [route.post("/inbound/raw")],
  access: { kind: "operator", credential: "inbound_secret" },
  query: Schema.Struct({ to: Line(64 * 1024) }),
  headers: Schema.Struct({
    "x-auth-spf": Schema.optionalKey(Verdict),
    "x-auth-dkim": Schema.optionalKey(Verdict),
    "x-auth-dmarc": Schema.optionalKey(Verdict),
    "x-spam-verdict": Schema.optionalKey(Schema.Literals(["spam", "ham"]))
  }),
  raw: { maxBytes: defaultLimits.maxRawBytes },
  output: Output.json(DeliveryResult),
  mutates: true,
  mcp: { exclude: "an operator route: the mail forwarder calls it with the inbound secret" },
  cli: { exclude: "operators deliver a local file with `inboxctl inbound FILE.eml --to ADDR`, which needs no secret" },
  run: ({ input, headers, raw }) =>
    Inbound.use((inbound) =>
      inbound.deliver({
        raw,
        to: input.to.split(","),
        auth: {
          ...(headers["x-auth-spf"] === undefined ? {} : { spf: headers["x-auth-spf"] }),
          ...(headers["x-auth-dkim"] === undefined ? {} : { dkim: headers["x-auth-dkim"] }),
          ...(headers["x-auth-dmarc"] === undefined ? {} : { dmarc: headers["x-auth-dmarc"] })
        },
        spam: headers["x-spam-verdict"] === "spam"
      })
    )
})

const Target = Schema.Struct({ id: Schema.String, organization_id: Schema.String, pod_id: Schema.String, email: Schema.String })

/**
 * The hosted inbox an address reaches, or none: what a mail server asks at RCPT, so it never
 * accepts mail it would have to bounce (and never relays).
 */
export const recipient = operation({
  name: "inbound.recipient",
  summary: "The hosted inbox an address reaches, or none (a mail server's RCPT check).",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ address: Line(320) }),
  output: Output.json(Schema.Struct({ inbox: Schema.NullOr(Target) })),
  mutates: false,
  mcp: { exclude: "a mail server's own question" },
  cli: { exclude: "a mail server's own question" },
  run: ({ input }) => Effect.map(Inbound.use((i) => i.recipient(input.address)), (inbox) => ({ inbox: inbox ?? null }))
})

/**
 * A message a mail server of this process received (the SMTP receiver), with the verdicts
 * of its checks and the Authentication-Results header it wrote: the header is put first,
 * after any header of the sender's that carries our own authserv-id is renamed (RFC 8601
 * section 5: only ours may speak in our name), and the message takes the forwarder's path.
 * `inboxes` are those its RCPT checks found, so the delivery does not ask again.
 */
export const receiveSmtp = operation({
  name: "inbound.receive",
  summary: "Deliver a message received by this process's mail server, with its authentication verdicts and header.",
  routes: [],
  access: { kind: "local" },
  query: Schema.Struct({
    to: Schema.Array(Line(320)),
    spf: Schema.optionalKey(AuthResult),
    dkim: Schema.optionalKey(AuthResult),
    dmarc: Schema.optionalKey(AuthResult),
    authentication_results: Schema.String,
    inboxes: Schema.optionalKey(Schema.Array(Target))
  }),
  raw: { maxBytes: defaultLimits.maxRawBytes },
  output: Output.json(DeliveryResult),
  mutates: true,
  mcp: { exclude: "a mail server's own delivery" },
  cli: { exclude: "a mail server's own delivery" },
  run: ({ input, raw }) =>
    Effect.gen(function*() {
      const settings = yield* Settings
      const stamped = Buffer.concat([Buffer.from(input.authentication_results), renameOurAuthenticationResults(raw, settings.mailHost)])
      return yield* Inbound.use((inbound) =>
        inbound.deliver({
          raw: stamped,
          to: input.to,
          auth: {
            ...(input.spf === undefined ? {} : { spf: input.spf }),
            ...(input.dkim === undefined ? {} : { dkim: input.dkim }),
            ...(input.dmarc === undefined ? {} : { dmarc: input.dmarc })
          },
          ...(input.inboxes === undefined ? {} : { inboxes: input.inboxes })
        })
      )
    })
})

export const inboundOperations = [receiveRaw, recipient, receiveSmtp]
