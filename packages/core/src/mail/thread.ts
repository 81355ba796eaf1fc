/**
 * Threading: which thread of an inbox a newly stored message belongs to. Pure: the caller
 * fetches the few rows the decision needs (by RFC Message-ID) and passes them in as a
 * `ThreadLookup`; the decision says what to do and the storage layer applies it in the same
 * transaction as the insert.
 *
 * Rules, in order:
 * 1. A forward starts a new thread: the caller marks it (`is_forward`, e.g. the forward
 *    route), or its subject starts with a forward prefix (Fwd:, Fw:, WG:, TR:, RV:, ENC:,
 *    VB:, Doorst:, PD:, I:). Mail clients put the original's id in a forward's
 *    In-Reply-To/References, so without this rule every forward would join the original.
 * 2. A reply joins its parent's thread: In-Reply-To first, then References from newest
 *    (last) to oldest; the first id that names a message of this inbox wins.
 * 3. Otherwise a new thread. A matching subject alone never joins: two unrelated
 *    "Invoice" mails are not one conversation.
 * Reordered arrival (a reply stored before its parent, common with several MX hops): when
 * the new message's own Message-ID is named in the In-Reply-To or References of messages
 * already stored, those earlier replies are its children. If rule 2 found no parent (or
 * rule 1 applies), the message joins the thread of its oldest child instead of starting a
 * new one. Children in other threads than the chosen one are listed in `merge_thread_ids`:
 * the storage layer moves their messages into the chosen thread (and deletes the emptied
 * threads), so a conversation that arrived out of order ends up as one thread.
 */
import type { ParsedMessage } from "./model.ts"

export interface KnownMessage {
  readonly thread_id: string
  readonly rfc_message_id: string
}

export interface ThreadLookup {
  /** the inbox's message with this RFC Message-ID (angle brackets included), if any */
  readonly byRfcMessageId: (rfcMessageId: string) => KnownMessage | undefined
  /** the inbox's messages whose In-Reply-To or References name this id, oldest first */
  readonly referencing: (rfcMessageId: string) => ReadonlyArray<KnownMessage>
}

export type ThreadingInput =
  & Pick<ParsedMessage, "subject">
  & Partial<Pick<ParsedMessage, "rfc_message_id" | "in_reply_to" | "references">>
  & { readonly is_forward?: boolean }

export type ThreadDecision =
  | {
    readonly _tag: "Join"
    readonly thread_id: string
    /** which header found the thread, or "children" for reordered arrival */
    readonly via: "in_reply_to" | "references" | "children"
    /** the message the thread was found through */
    readonly parent_rfc_message_id: string
    readonly merge_thread_ids: ReadonlyArray<string>
  }
  | {
    readonly _tag: "New"
    readonly reason: "forward" | "no_parent"
  }

const FORWARD_PREFIX = /^\s*(?:fwd?|fw|wg|tr|rv|enc|vb|doorst|pd|i)\s*:/i

export const isForwardSubject = (subject: string): boolean => FORWARD_PREFIX.test(subject)

const unique = (ids: ReadonlyArray<string>, except: string): Array<string> => [...new Set(ids)].filter((id) => id !== except)

export const decideThread = (message: ThreadingInput, lookup: ThreadLookup): ThreadDecision => {
  const own = message.rfc_message_id
  const children = own === undefined ? [] : lookup.referencing(own).filter((c) => c.rfc_message_id !== own)
  const forward = message.is_forward === true || isForwardSubject(message.subject)

  if (!forward) {
    const candidates: ReadonlyArray<readonly ["in_reply_to" | "references", string]> = [
      ...(message.in_reply_to === undefined ? [] : [["in_reply_to", message.in_reply_to] as const]),
      ...[...(message.references ?? [])].reverse().map((id) => ["references", id] as const)
    ]
    for (const [via, id] of candidates) {
      if (id === own) continue // a message naming itself is not its own parent
      const parent = lookup.byRfcMessageId(id)
      if (parent !== undefined) {
        return {
          _tag: "Join",
          thread_id: parent.thread_id,
          via,
          parent_rfc_message_id: id,
          merge_thread_ids: unique(children.map((c) => c.thread_id), parent.thread_id)
        }
      }
    }
  }

  const oldest = children[0]
  if (oldest !== undefined && own !== undefined) {
    return {
      _tag: "Join",
      thread_id: oldest.thread_id,
      via: "children",
      parent_rfc_message_id: oldest.rfc_message_id,
      merge_thread_ids: unique(children.map((c) => c.thread_id), oldest.thread_id)
    }
  }
  return { _tag: "New", reason: forward ? "forward" : "no_parent" }
}

/** A lookup over rows already in memory (tests, small batches, imports). */
export const lookupFrom = (
  messages: ReadonlyArray<KnownMessage & Partial<Pick<ParsedMessage, "in_reply_to" | "references">>>
): ThreadLookup => ({
  byRfcMessageId: (id) => messages.find((m) => m.rfc_message_id === id),
  referencing: (id) => messages.filter((m) => m.in_reply_to === id || (m.references ?? []).includes(id))
})
