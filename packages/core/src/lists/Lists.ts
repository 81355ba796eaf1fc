/**
 * Allow and block lists (spec: Allow/block list entry; Allow and block lists): entries are
 * addresses or domains, at organization, pod and inbox scope, for three directions:
 * `send` (new messages and forwards), `reply` (replies), `receive` (inbound mail).
 *
 * The verdict for an address (README, "Allow and block lists"): scopes are checked inbox,
 * then pod, then organization; the first scope with an entry matching the address decides
 * (a block entry blocks, an allow entry allows; block wins within one scope). When no
 * scope has a match, a non-empty allow list at any of the scopes blocks, otherwise the
 * address is allowed. An entry matches an address equal to it (case-insensitive), or, for a
 * domain entry, an address at that domain or a subdomain of it.
 */
import { Context, type Effect } from "effect"

export type ListDirection = "send" | "receive" | "reply"
export type ListType = "allow" | "block"
export type Verdict = "allow" | "block"

/** Where the mail is sent from or received into: the scopes whose lists apply. */
export interface ListScope {
  readonly organizationId: string
  readonly podId: string
  readonly inboxId: string
}

export class Lists extends Context.Service<Lists, {
  /** The verdict for each address (lower-cased keys), by the rule above, in one query. */
  verdicts(scope: ListScope, direction: ListDirection, addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyMap<string, Verdict>>
}>()("inbox/Lists") {}
