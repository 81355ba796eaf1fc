/**
 * DKIM keys of custom domains: one RSA-2048 key pair per domain, the private half sealed
 * with AES-256-GCM under a key derived from INBOX_SECRET_KEY before it is stored, and the
 * signer that adds a DKIM-Signature to outgoing mail (nodemailer's, the one the Node mail
 * stack trusts).
 *
 * Sealed form: `v1:<iv>:<tag>:<ciphertext>`, base64 parts. The version names the scheme so
 * a key rotation (see the README, "Custom domains") can tell old rows from new. The domain
 * name is the additional authenticated data, so a sealed key copied onto another domain's
 * row does not open.
 */
import { Effect } from "effect"
import { createCipheriv, createDecipheriv, createHash, generateKeyPair, randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { promisify } from "node:util"
import DKIM from "nodemailer/lib/dkim"

const generate = promisify(generateKeyPair)

export interface KeyPair {
  /** base64 of the DER SubjectPublicKeyInfo: the `p=` of the DKIM record */
  readonly publicKey: string
  readonly privateKeyPem: string
}

export const generateDkimKey: Effect.Effect<KeyPair> = Effect.promise(async () => {
  const { publicKey, privateKey } = await generate("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" }
  })
  return { publicKey: Buffer.from(publicKey).toString("base64"), privateKeyPem: privateKey }
})

const keyOf = (secret: string) => createHash("sha256").update(`inbox-engine dkim v1\0${secret}`).digest()

export const seal = (secret: string, domain: string, plaintext: string): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", keyOf(secret), iv)
  cipher.setAAD(Buffer.from(domain))
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return ["v1", iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(":")
}

/** The plaintext, or undefined when the key is not the one that sealed it (GCM's tag refuses it). */
export const open = (secret: string, domain: string, sealed: string): Effect.Effect<string | undefined> => {
  const [version, iv, tag, body] = sealed.split(":")
  if (version !== "v1" || iv === undefined || tag === undefined || body === undefined) return Effect.succeed(undefined)
  return Effect.try(() => {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret), Buffer.from(iv, "base64"))
    decipher.setAAD(Buffer.from(domain))
    decipher.setAuthTag(Buffer.from(tag, "base64"))
    return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8")
  }).pipe(Effect.orElseSucceed(() => undefined))
}

export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`

/** The `p=` of a published DKIM record, whitespace removed (hosts split long TXT values). */
export const publishedKey = (record: string): string | undefined => {
  const tags = new Map(record.replace(/\s+/g, "").split(";").map((t) => {
    const eq = t.indexOf("=")
    return [t.slice(0, eq).toLowerCase(), t.slice(eq + 1)] as const
  }))
  return tags.get("p")
}

export const sign = (raw: Uint8Array, key: { readonly domain: string; readonly selector: string; readonly privateKeyPem: string }) =>
  Effect.promise(async () => {
    const signer = new DKIM({ domainName: key.domain, keySelector: key.selector, privateKey: key.privateKeyPem })
    const chunks: Array<Buffer> = []
    for await (const chunk of signer.sign(Readable.from([Buffer.from(raw)]))) chunks.push(chunk as Buffer)
    return new Uint8Array(Buffer.concat(chunks))
  })
