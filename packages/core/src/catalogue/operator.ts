/**
 * The operator's credentials on operator routes, checked before the operation runs:
 * - `inbound_secret`: the `x-inbound-secret` header equals INBOX_INBOUND_SECRET, compared
 *   in constant time;
 * - `provider_signature`: the mail provider's events are signed like our outgoing webhooks
 *   (standard-webhooks: HMAC-SHA256 over `id.timestamp.body`, keyed with the base64 bytes of
 *   the `whsec_` secret INBOX_PROVIDER_EVENTS_SECRET), with the timestamp at most five
 *   minutes from our clock.
 * A server without the secret answers 503 not_configured; a wrong one is 401 unauthorized.
 * - `billing_signature`: a payment provider's webhook, signed by the provider's own scheme
 *   and secret; the provider's implementation verifies it as the operation's first step
 *   (Billing.receive: 503 billing_not_configured, 400 invalid_signature), so nothing is
 *   checked here.
 */
import { Clock, Effect } from "effect"
import { NotConfigured, Unauthorized } from "../errors/errors.ts"
import { Settings } from "../settings/Settings.ts"
import { sameSecret } from "../shared/secrets.ts"
import { signatureMatches } from "../shared/signing.ts"
import type { OperatorCredential } from "./Operation.ts"

/** Signatures older or newer than this are refused, so a captured request cannot be replayed later. */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60

const refused = (message: string) => new Unauthorized({ message })

/**
 * The checks that need only the headers, made before the body is read: a caller without
 * the secret, or without a fresh signature's headers, is refused before the server reads
 * (and holds) what it sends.
 */
export const admitOperator = (
  credential: OperatorCredential,
  headers: Readonly<Record<string, string | undefined>>
) =>
  Effect.gen(function*() {
    if (credential === "billing_signature") return
    const settings = yield* Settings
    if (credential === "inbound_secret") {
      if (settings.inboundSecret === undefined) {
        return yield* new NotConfigured({ message: "Inbound mail is not configured on this server.", fix: "Set INBOX_INBOUND_SECRET." })
      }
      const given = headers["x-inbound-secret"]
      if (given === undefined || !sameSecret(given, settings.inboundSecret)) return yield* refused("The x-inbound-secret header is missing or wrong.")
      return
    }
    if (settings.providerEventsSecret === undefined) {
      return yield* new NotConfigured({ message: "Provider events are not configured on this server.", fix: "Set INBOX_PROVIDER_EVENTS_SECRET." })
    }
    const id = headers["webhook-id"]
    const timestamp = headers["webhook-timestamp"]
    const signature = headers["webhook-signature"]
    if (id === undefined || timestamp === undefined || signature === undefined) {
      return yield* refused("The webhook-id, webhook-timestamp and webhook-signature headers are required.")
    }
    const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN
    const nowSeconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (!Number.isFinite(seconds) || Math.abs(nowSeconds - seconds) > SIGNATURE_TOLERANCE_SECONDS) {
      return yield* refused("The webhook-timestamp is missing or more than five minutes from the server's clock.")
    }
  })

/** The check that needs the body too: a provider signature covers it. Runs after `admitOperator`. */
export const verifyOperatorBody = (
  credential: OperatorCredential,
  headers: Readonly<Record<string, string | undefined>>,
  body: Uint8Array
) =>
  Effect.gen(function*() {
    if (credential !== "provider_signature") return
    const settings = yield* Settings
    const secret = settings.providerEventsSecret
    const id = headers["webhook-id"]
    const timestamp = headers["webhook-timestamp"]
    const signature = headers["webhook-signature"]
    // admitOperator has refused a call without them.
    if (secret === undefined || id === undefined || timestamp === undefined || signature === undefined) return yield* refused("The webhook signature is missing.")
    if (!signatureMatches(secret, id, timestamp, body, signature)) return yield* refused("The webhook signature does not match.")
  })
