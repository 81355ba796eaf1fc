/**
 * The one catalogue of event types, shared by the events list, the WebSocket, webhooks,
 * metrics and MCP. The eight default types are what a webhook receives when it names none;
 * the three `message.received.*` types are opt-in, and a scoped key needs the matching
 * `label_*_read` permission to see them.
 */
import type { Permission } from "../access/permissions.ts"
import { holds, type Principal } from "../access/Principal.ts"

export const DEFAULT_EVENT_TYPES = [
  "message.received",
  "message.sent",
  "message.delivered",
  "message.bounced",
  "message.complained",
  "message.rejected",
  "message.opened",
  "domain.verified"
] as const

export const OPT_IN_EVENT_TYPES = [
  "message.received.spam",
  "message.received.blocked",
  "message.received.unauthenticated"
] as const

export const EVENT_TYPES = [...DEFAULT_EVENT_TYPES, ...OPT_IN_EVENT_TYPES] as const
export type EventType = typeof EVENT_TYPES[number]

/** The permission a scoped key needs to see an opt-in type. */
export const OPT_IN_PERMISSION: Readonly<Record<typeof OPT_IN_EVENT_TYPES[number], Permission>> = {
  "message.received.spam": "label_spam_read",
  "message.received.blocked": "label_blocked_read",
  "message.received.unauthenticated": "label_unauthenticated_read"
}

/** The permissions subscribing to these event types needs (the opt-in ones'): an operation's `permissionsFor`. */
export const optInPermissions = (types: ReadonlyArray<string>): ReadonlyArray<Permission> =>
  types.flatMap((type) => {
    const permission = OPT_IN_PERMISSION[type as typeof OPT_IN_EVENT_TYPES[number]]
    return permission === undefined ? [] : [permission]
  })

/**
 * The first opt-in type of `types` whose permission the principal lacks, with that
 * permission: subscribing to it (a webhook, a WebSocket) is refused as reading it would be.
 */
export const unreadableOptIn = (
  principal: Principal,
  types: ReadonlyArray<string>
): { readonly type: string; readonly permission: Permission } | undefined => {
  for (const type of types) {
    const permission = OPT_IN_PERMISSION[type as typeof OPT_IN_EVENT_TYPES[number]]
    if (permission !== undefined && !holds(principal, permission)) return { type, permission }
  }
  return undefined
}
