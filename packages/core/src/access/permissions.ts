/**
 * The 43 permission names of the spec, and the two input forms a key creator may use
 * (a list of names, or an object of name to boolean).
 *
 * A key's permissions are either absent (full access within its scope) or a set of these
 * names. Unknown names are refused with 400 validation_error; the former names
 * provider_connect and provider_share_owner get a message pointing at their successors.
 * billing_read and billing_manage exist only implicitly (an unrestricted organization key)
 * and cannot be granted in a list.
 */
import { Effect, Schema } from "effect"
import type { ValidationError } from "../errors/errors.ts"
import { validationError } from "../shared/validation.ts"

export const PERMISSIONS = [
  "account_update", "api_key_create", "api_key_delete", "api_key_read", "api_key_update",
  "app_connect", "app_share_owner",
  "domain_create", "domain_delete", "domain_read", "domain_update",
  "draft_create", "draft_delete", "draft_read", "draft_send", "draft_update",
  "inbox_create", "inbox_delete", "inbox_read", "inbox_update",
  "label_blocked_read", "label_spam_read", "label_trash_read", "label_unauthenticated_read",
  "list_entry_create", "list_entry_delete", "list_entry_read",
  "message_delete", "message_read", "message_reply", "message_send", "message_update",
  "metrics_read",
  "pod_create", "pod_delete", "pod_read", "pod_update",
  "thread_delete", "thread_read",
  "webhook_create", "webhook_delete", "webhook_read", "webhook_update"
] as const

export type Permission = typeof PERMISSIONS[number]

const known: ReadonlySet<string> = new Set(PERMISSIONS)

const RENAMED: Readonly<Record<string, string>> = {
  provider_connect: "app_connect",
  provider_share_owner: "app_share_owner"
}

export const PermissionsInput = Schema.Union([
  Schema.Array(Schema.String),
  Schema.Record(Schema.String, Schema.Boolean)
])
export type PermissionsInput = typeof PermissionsInput.Type

/** Normalises either input form to a sorted list of known names, or fails naming each bad entry. */
export const parsePermissions = (input: PermissionsInput): Effect.Effect<ReadonlyArray<Permission>, ValidationError> => {
  const names = Array.isArray(input)
    ? input as ReadonlyArray<string>
    : Object.entries(input).filter(([, granted]) => granted).map(([name]) => name)
  const all = Array.isArray(input) ? names : Object.keys(input)
  const issues = all.flatMap((name, i) => {
    if (known.has(name)) return []
    const path = Array.isArray(input) ? ["permissions", String(i)] : ["permissions", name]
    const renamed = RENAMED[name]
    return [{
      path,
      message: renamed === undefined
        ? `Unknown permission "${name}"`
        : `Permission "${name}" was renamed to "${renamed}"; the former name is no longer accepted`
    }]
  })
  if (issues.length > 0) return Effect.fail(validationError(issues))
  return Effect.succeed([...new Set(names as ReadonlyArray<Permission>)].sort())
}
