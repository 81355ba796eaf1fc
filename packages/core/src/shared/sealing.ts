/**
 * Secrets at rest: sealed with AES-256-GCM under a key derived from INBOX_SECRET_KEY and a
 * purpose, so one operator secret yields a different key for each kind of secret (DKIM
 * private keys, webhook signing secrets and custom header values, authenticator secrets of
 * two-step verification).
 *
 * Sealed form: `v1:<iv>:<tag>:<ciphertext>`, base64 parts. The version names the scheme so
 * a key rotation can tell old rows from new. The owner (a domain name, a webhook id) is the
 * additional authenticated data, so a sealed value copied onto another row does not open.
 */
import { Effect } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"

/** What a sealed value is; part of the key derivation. */
export type SealPurpose = "dkim" | "webhook" | "webhook_headers" | "totp"

const keyOf = (secret: string, purpose: SealPurpose) => createHash("sha256").update(`inbox-engine ${purpose} v1\0${secret}`).digest()

export const isSealed = (value: string) => value.startsWith("v1:")

export const seal = (secret: string, purpose: SealPurpose, owner: string, plaintext: string): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", keyOf(secret, purpose), iv)
  cipher.setAAD(Buffer.from(owner))
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return ["v1", iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(":")
}

/** The plaintext, or undefined when the key is not the one that sealed it (GCM's tag refuses it). */
export const open = (secret: string, purpose: SealPurpose, owner: string, sealed: string): Effect.Effect<string | undefined> => {
  const [version, iv, tag, body] = sealed.split(":")
  if (version !== "v1" || iv === undefined || tag === undefined || body === undefined) return Effect.succeed(undefined)
  return Effect.try(() => {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret, purpose), Buffer.from(iv, "base64"))
    decipher.setAAD(Buffer.from(owner))
    decipher.setAuthTag(Buffer.from(tag, "base64"))
    return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8")
  }).pipe(Effect.orElseSucceed(() => undefined))
}

/**
 * A secret as a row keeps it: sealed (opened here; undefined when there is no key or it is
 * not the key that sealed it), or plain, as rows written before sealing or without a key are.
 */
export const openStored = (secret: string | undefined, purpose: SealPurpose, owner: string, stored: string): Effect.Effect<string | undefined> =>
  !isSealed(stored) ? Effect.succeed(stored) : secret === undefined ? Effect.succeed(undefined) : open(secret, purpose, owner, stored)

/** Sealed when there is a key, as is when there is none. */
export const sealIfKey = (secret: string | undefined, purpose: SealPurpose, owner: string, plaintext: string): string =>
  secret === undefined ? plaintext : seal(secret, purpose, owner, plaintext)
