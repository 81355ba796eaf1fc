/**
 * DKIM keys of custom domains: one RSA-2048 key pair per domain, the private half sealed
 * under INBOX_SECRET_KEY before it is stored (shared/sealing.ts; the domain name is the
 * authenticated data, so a sealed key copied onto another domain's row does not open), and
 * the signer that adds a DKIM-Signature to outgoing mail (nodemailer's, the one the Node
 * mail stack trusts).
 */
import { Effect } from "effect"
import { generateKeyPair } from "node:crypto"
import { Readable } from "node:stream"
import { promisify } from "node:util"
import DKIM from "nodemailer/lib/dkim"
import { open as openValue, seal as sealValue } from "../shared/sealing.ts"

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

/** The private key sealed for its domain (shared/sealing.ts). */
export const seal = (secret: string, domain: string, plaintext: string): string => sealValue(secret, "dkim", domain, plaintext)

/** The plaintext, or undefined when the key is not the one that sealed it. */
export const open = (secret: string, domain: string, sealed: string): Effect.Effect<string | undefined> =>
  openValue(secret, "dkim", domain, sealed)

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
