/**
 * What the tests of the mail servers share (IMAP, SMTP submission, the SMTP receiver): a
 * self-signed certificate for STARTTLS and implicit TLS, made once per run with the
 * system's openssl, and the world a mail client signs in to: an organization with two
 * inboxes and an API key scoped to the first (a key of inbox A must not open inbox B).
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TestApp } from "./app.ts"
import { newOrganization } from "./fixtures.ts"

export interface Certificate {
  readonly key: Buffer
  readonly cert: Buffer
}

const certificates = new Map<string, Certificate>()

/** A self-signed certificate for `commonName`, made once per run (per name). */
export const selfSignedCertificate = (commonName = "mx.inbox.localhost"): Certificate => {
  const made = certificates.get(commonName)
  if (made !== undefined) return made
  const dir = mkdtempSync(join(tmpdir(), "mail-tls-"))
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${commonName}`,
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")
  ], { stdio: "ignore" })
  const certificate = { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }
  certificates.set(commonName, certificate)
  return certificate
}

/** An organization with two inboxes (`inbox`, `other`) and `key`, an API key scoped to `inbox`. */
export const mailClientWorld = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const make = () => Effect.map(app.request("POST", "/v0/inboxes", { key: org.key, json: {} }), (r) => r.body as { inbox_id: string; email: string })
  const inbox = yield* make()
  const other = yield* make()
  const scoped = (yield* app.request("POST", "/v0/api-keys", { key: org.key, json: { name: "mail client", inbox_id: inbox.inbox_id } })).body as { api_key: string }
  return { app, org, inbox, other, key: scoped.api_key }
})
