/**
 * Field formats shared by several resources. The spec leaves `client_id` and `metadata`
 * formats open; our choice (also in the README): client_id is 1-128 characters of
 * letters, digits and `._:@-`; metadata has at most 50 keys of 1-64 characters, each value
 * a string of at most 1024 characters.
 */
import { Schema } from "effect"

export const ClientId = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(128),
  Schema.isPattern(/^[A-Za-z0-9._:@-]+$/, { message: "client_id may contain letters, digits and . _ : @ -" })
)

export const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))

export const Metadata = Schema.Record(
  Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)),
  Schema.String.check(Schema.isMaxLength(1024))
).check(Schema.makeFilter((m) => Object.keys(m).length <= 50 || "metadata has at most 50 keys"))

export const EmailAddress = Schema.String.check(
  Schema.isMaxLength(254),
  Schema.isPattern(/^[^\s@<>()",;:]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/, {
    message: "Expected an email address"
  })
)

/** Strips keys whose value is undefined or null, so optional fields are absent, never null. */
export const compact = <A extends Record<string, unknown>>(value: A): { [K in keyof A]: Exclude<A[K], null | undefined> } =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as never
