/** The operator's inbound route (spec: Operator routes, `POST /inbound/raw`). */
import { Schema, SchemaGetter } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { defaultLimits } from "../mail/parse-core.ts"
import { Line } from "../shared/fields.ts"
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

export const inboundOperations = [receiveRaw]
