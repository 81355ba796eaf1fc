/**
 * The standard-webhooks signature scheme, used for the webhooks we send and for the mail
 * provider's events we receive: `v1,<base64 HMAC-SHA256>` over `<id>.<timestamp>.<body>`,
 * keyed with the bytes of the secret after its `whsec_` prefix (base64). A header may carry
 * several space-separated signatures (during a secret rotation); any match is enough.
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const SECRET_PREFIX = "whsec_"

const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")

/** The `v1,<base64>` signature of one message. */
export const sign = (secret: string, id: string, timestamp: string, body: Uint8Array): string => {
  const mac = createHmac("sha256", keyOf(secret))
  mac.update(`${id}.${timestamp}.`)
  mac.update(body)
  return `v1,${mac.digest("base64")}`
}

export const signatureMatches = (secret: string, id: string, timestamp: string, body: Uint8Array, header: string): boolean => {
  const expected = Buffer.from(sign(secret, id, timestamp, body))
  return header.split(" ").some((candidate) => {
    const given = Buffer.from(candidate.trim())
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}
