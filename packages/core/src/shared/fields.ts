/**
 * Field formats shared by every resource, so a rule is written once and no operation can
 * forget it. Text fields refuse control characters (PostgreSQL cannot store NUL, and a line
 * break in a name or an id is never meant); multi-line text allows tab and line breaks only.
 *
 * The spec leaves `client_id` and `metadata` formats open; our choice (also in docs/api.md):
 * client_id is 1-128 characters of letters, digits and `._:@-`; metadata has at most 50 keys
 * of 1-64 characters, each value a string of at most 1024 characters. An email address is
 * one rule everywhere (sign-up, keys, sends, lists): see `EmailAddress`.
 */
import { Schema, SchemaGetter } from "effect"
import { domainToASCII } from "node:url"
import { usernameProblem } from "./usernames.ts"

// C0 controls, DEL and C1 controls: never part of a one-line value.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
// Multi-line text may hold tab, LF and CR; every other control character is refused.
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/

const noControl = Schema.makeFilter((s: string) => !CONTROL.test(s) || "Control characters are not allowed")
const noControlInText = Schema.makeFilter((s: string) => !CONTROL_IN_TEXT.test(s) || "Control characters other than tab and line breaks are not allowed")
const notBlank = Schema.makeFilter((s: string) => s.trim().length > 0 || "Expected a non-blank string")

/** A one-line string of 1..max characters, not only spaces, without control characters. */
export const Line = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max), notBlank, noControl)

/** Multi-line text (bodies, notes) up to `max` characters. */
export const Text = (max: number) => Schema.String.check(Schema.isMaxLength(max), noControlInText)

/** An id given in a body field or a path: non-empty, one line, bounded. */
export const Id = Line(512)

export const ClientId = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(128),
  Schema.isPattern(/^[A-Za-z0-9._:@-]+$/, { message: "client_id may contain letters, digits and . _ : @ -" })
)

export const Name = Line(128)

const metadataKeyProblem = (key: string): string | undefined =>
  key.length < 1 || key.length > 64
    ? "A metadata key has 1 to 64 characters"
    : key.trim().length === 0
    ? "Expected a non-blank string"
    : CONTROL.test(key)
    ? "Control characters are not allowed"
    : undefined

// The keys are checked by a filter over the whole record, not by the Record's key schema:
// a Record drops a key its key schema refuses, which silently lost the entry.
export const MAX_METADATA_KEYS = 50

const metadataKeyIssues = (m: object) =>
  Object.keys(m).flatMap((key) => {
    const problem = metadataKeyProblem(key)
    return problem === undefined ? [] : [{ path: [key], issue: problem }]
  })

export const Metadata = Schema.Record(Schema.String, Text(1024)).check(Schema.makeFilter((m) => {
  if (Object.keys(m).length > MAX_METADATA_KEYS) return `metadata has at most ${MAX_METADATA_KEYS} keys`
  return metadataKeyIssues(m)
}))

/**
 * A metadata change (PATCH): keys to set, and keys set to null to remove. Merged into the
 * stored metadata (the agentmail SDK's rule; the spec does not say); an empty object would
 * change nothing, and is refused so that nobody takes it for "clear" (that is `null`).
 */
export const MetadataChanges = Schema.Record(Schema.String, Schema.NullOr(Text(1024))).check(Schema.makeFilter((m) => {
  if (Object.keys(m).length === 0) return "an empty metadata object changes nothing: send metadata: null to clear it"
  if (Object.keys(m).length > MAX_METADATA_KEYS) return `metadata has at most ${MAX_METADATA_KEYS} keys`
  return metadataKeyIssues(m)
}))

/** The local part of an inbox address; trimmed and lower-cased, then checked (usernames.ts). */
export const Username = Schema.String.pipe(
  Schema.decode({ decode: SchemaGetter.transform((s: string) => s.trim().toLowerCase()), encode: SchemaGetter.passthrough() }),
  Schema.check(Schema.makeFilter((s: string) => usernameProblem(s) ?? true))
)

const ATEXT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/**
 * A domain name in its ASCII form (IDNA applied, lower case, no trailing dot), or undefined
 * when it is not a valid host name with at least two labels and an alphabetic (or IDNA)
 * top-level label.
 */
export const normaliseDomain = (input: string): string | undefined => {
  const trimmed = input.trim().replace(/\.$/, "")
  if (trimmed.length === 0 || CONTROL.test(trimmed)) return undefined
  const ascii = domainToASCII(trimmed).toLowerCase()
  if (ascii === "" || ascii.length > 253) return undefined
  const labels = ascii.split(".")
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return undefined
  const tld = labels[labels.length - 1] ?? ""
  return /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/.test(tld) ? ascii : undefined
}

/**
 * An address as `local@domain`: the local part a dot-atom of RFC 5322 (ASCII), the domain
 * as `normaliseDomain` accepts it. Returns the normal form (domain in ASCII, lower case) or
 * undefined. Used by the EmailAddress schema and by the mail engine, so sign-up, keys,
 * sends and lists accept exactly the same addresses.
 */
export const normaliseAddress = (input: string): string | undefined => {
  const value = input.trim()
  const at = value.lastIndexOf("@")
  if (at <= 0 || value.length > 254) return undefined
  const local = value.slice(0, at)
  const domain = normaliseDomain(value.slice(at + 1))
  if (local.length > 64 || !ATEXT.test(local) || domain === undefined) return undefined
  return `${local}@${domain}`
}

/** An email address, decoded to its normal form (see normaliseAddress). */
export const EmailAddress = Schema.String.pipe(
  Schema.check(Schema.makeFilter((s: string) => normaliseAddress(s) !== undefined || "Expected an email address")),
  Schema.decode({ decode: SchemaGetter.transform((s: string) => normaliseAddress(s) ?? s), encode: SchemaGetter.passthrough() })
)

/** Strips keys whose value is undefined or null, so optional fields are absent, never null. */
export const compact = <A extends Record<string, unknown>>(value: A): { [K in keyof A]: Exclude<A[K], null | undefined> } => {
  // A loop rather than entries, filter and fromEntries: every API answer passes here.
  const result: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const v = value[key]
    if (v !== undefined && v !== null) result[key] = v
  }
  return result as never
}
