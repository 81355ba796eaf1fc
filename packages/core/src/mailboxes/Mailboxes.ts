/**
 * Mailboxes: an inbox as a mail client sees it over IMAP (docs/mail-servers.md, "IMAP and
 * SMTP submission"). The IMAP server in packages/mailserver only speaks the protocol; every
 * rule of what a mailbox holds, which UID a message has and what a flag means is here.
 *
 * - Mailboxes are views of labels: INBOX (received, not trash, spam or blocked), Sent, Trash,
 *   Junk (spam), Drafts, and each user label as a mailbox of its name (labels are lower
 *   case: CREATE `Receipts` makes `receipts`). Trash and Junk are listed only to a key that
 *   may read those labels, and `unauthenticated` mail stays out of INBOX for a key that may not.
 * - Whether anything changed is the inbox's change counter (imap_changes, migration 0049),
 *   raised by triggers in the transaction of every change: one row read per sync that finds
 *   nothing new, whatever the size of the mailbox.
 * - CONDSTORE (RFC 7162): that counter is each mailbox's HIGHESTMODSEQ, and each message's
 *   modseq, kept beside its UID (migration 0051), is the counter at its last change the
 *   mailbox shows; `flags` with `unchangedSince` changes only messages not changed since.
 * - UIDs per (inbox, mailbox) live in imap_uids, given in `sync` under the mailbox row's lock
 *   (migration 0045): strictly increasing, never reused, the same across restarts and
 *   processes. A message that left the mailbox (relabelled, deleted, from anywhere) loses its
 *   UID at the next sync, which is how clients learn of it (EXPUNGE). A sync after a change
 *   looks only at the messages stored or relabelled since the mailbox's last sync (the log of
 *   migration 0053), not at the whole mailbox.
 * - Flags: `\Seen` is the absence of `unread`, `\Flagged` is `starred`, `\Draft` is `draft`;
 *   `\Deleted`, `\Answered` and keywords are kept per mailbox beside the UID. EXPUNGE of a
 *   `\Deleted` message moves it to trash (deletes it, in Trash). COPY and MOVE change labels.
 * - APPEND stores the client's bytes as the user's own copy (no lists, spam or bounce rules,
 *   no `message.received`): to Sent as a sent message, so a copy of one that submission
 *   stored (same Message-ID) adds nothing; to Drafts it creates a draft the API sees.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { holds, notFound, type Principal } from "../access/Principal.ts"
import { attachmentBlob, sha256Of } from "../blobs/Blobs.ts"
import { Signals } from "../db/Signals.ts"
import { Drafts } from "../drafts/Drafts.ts"
import { type ApiError, ValidationError } from "../errors/errors.ts"
import { addressOf } from "../inbound/Inbound.ts"
import { Inboxes, type InboxRow } from "../inboxes/Inboxes.ts"
import { MailParser } from "../mail/parse.ts"
import { Messages } from "../messages/Messages.ts"
import { MESSAGES_CHANGED, MessageStore } from "../messages/MessageStore.ts"
import { MAX_LABEL_LENGTH } from "../messages/model.ts"
import { Search } from "../search/Search.ts"
import { decodeRows, Int8 } from "../shared/sql.ts"
import { now } from "../shared/time.ts"

/** A special mailbox, with the label that places a message in it. */
export type SpecialUse = "\\Sent" | "\\Drafts" | "\\Trash" | "\\Junk"

export const MailboxInfo = Schema.Struct({
  name: Schema.String,
  /** RFC 6154 attribute, or null for INBOX and label mailboxes. */
  special_use: Schema.NullOr(Schema.String)
})
export type MailboxInfo = typeof MailboxInfo.Type

export const MailboxMessage = Schema.Struct({
  uid: Schema.Number,
  message_id: Schema.String,
  flags: Schema.Array(Schema.String),
  size: Schema.Number,
  internal_date: Schema.String,
  /** CONDSTORE's mod-sequence (RFC 7162): the inbox's change counter at the message's last change this mailbox shows (migration 0051). */
  modseq: Schema.Number
})
export type MailboxMessage = typeof MailboxMessage.Type

export const MailboxState = Schema.Struct({
  name: Schema.String,
  uidvalidity: Schema.Number,
  uidnext: Schema.Number,
  /**
   * Changes when a message enters or leaves the mailbox or its flags change (the inbox's
   * change counter, migration 0049: it may change for changes of other mailboxes too).
   */
  fingerprint: Schema.String,
  /**
   * CONDSTORE's HIGHESTMODSEQ: at least every message's `modseq`, and higher after every change
   * of the mailbox (the inbox's change counter, so it also rises for changes of other mailboxes).
   */
  highest_modseq: Schema.Number,
  /** true when the caller's `known` fingerprint is still the mailbox's: `messages` is then empty. */
  unchanged: Schema.Boolean,
  messages: Schema.Array(MailboxMessage),
  /**
   * Present when the answer holds only the messages changed since `known` (asked with
   * `changesOnly`): every UID of the mailbox now, in order; a UID not among `messages` is the
   * message as the known answer had it.
   */
  uids: Schema.optionalKey(Schema.Array(Schema.Number))
})
export type MailboxState = typeof MailboxState.Type

export const FlagsResult = Schema.Struct({
  ...MailboxState.fields,
  /** UIDs left as they were because they changed after `unchanged_since` (RFC 7162 UNCHANGEDSINCE, the MODIFIED answer). */
  modified: Schema.Array(Schema.Number)
})

export const SearchMatches = Schema.Struct({
  /** Ids of the mailbox's messages that match, in id order (not ranked). */
  message_ids: Schema.Array(Schema.String),
  /** The UID in the mailbox of each of `message_ids`, in the same order. */
  uids: Schema.Array(Schema.Number),
  /** Present when more matches follow: pass it as `page_token`. */
  next_page_token: Schema.optionalKey(Schema.String)
})

/**
 * Ids per page of `search` (and its most): each page's query finds every match again, so a
 * page holds as many ids as a command may name UIDs, and SEARCH of a mailbox of that size
 * reads its matches once.
 */
export const SEARCH_PAGE = 100_000

export const CopyResult = Schema.Struct({
  uidvalidity: Schema.Number,
  /** [source uid, destination uid] for each message copied, in the order of the source. */
  uids: Schema.Array(Schema.Tuple([Schema.Number, Schema.Number]))
})

export const AppendResult = Schema.Struct({
  /** null when the mailbox lists no messages of its own (Drafts: the draft is in the API). */
  uidvalidity: Schema.NullOr(Schema.Number),
  uid: Schema.NullOr(Schema.Number),
  message_id: Schema.String
})

/** IMAP flags that are labels. */
const FLAG_LABELS: Readonly<Record<string, string>> = { "\\flagged": "starred", "\\draft": "draft" }
const CANONICAL: Readonly<Record<string, string>> = {
  "\\seen": "\\Seen",
  "\\flagged": "\\Flagged",
  "\\draft": "\\Draft",
  "\\deleted": "\\Deleted",
  "\\answered": "\\Answered"
}
/** Flags kept beside the UID: system flags without a label, and keywords. */
const keptFlag = (flag: string) => CANONICAL[flag.toLowerCase()] ?? flag

type Kind =
  | { readonly _tag: "inbox" }
  | { readonly _tag: "special"; readonly use: SpecialUse; readonly label: string }
  | { readonly _tag: "label"; readonly label: string }

const SPECIAL: ReadonlyArray<{ readonly name: string; readonly use: SpecialUse; readonly label: string }> = [
  { name: "Sent", use: "\\Sent", label: "sent" },
  { name: "Drafts", use: "\\Drafts", label: "draft" },
  { name: "Trash", use: "\\Trash", label: "trash" },
  { name: "Junk", use: "\\Junk", label: "spam" }
]
/**
 * Changes of an inbox that the log of changed messages (migration 0053) keeps for a mailbox
 * not synced since: one further behind compares every message at its next sync.
 */
const KEPT_CHANGES = 10_000
/** UIDs given by one sync past which imap_uids' statistics are renewed at once (autovacuum would take its minute). */
const ANALYZE_AFTER = 1_000

/** Labels that are no user mailbox of their own. */
const NOT_MAILBOXES = new Set(["received", "sent", "unread", "draft", "scheduled", "spam", "blocked", "unauthenticated", "trash", "starred"])

export class Mailboxes extends Context.Service<Mailboxes, {
  /** The inbox a mail client signs in to (by address or id), as the principal sees it. */
  inbox(principal: Principal, idOrEmail: string): Effect.Effect<InboxRow, ApiError>
  list(principal: Principal, inboxId: string): Effect.Effect<ReadonlyArray<MailboxInfo>, ApiError>
  create(principal: Principal, inboxId: string, name: string): Effect.Effect<MailboxInfo, ApiError>
  /**
   * Gives UIDs to the messages new to the mailbox, drops those gone, and answers its state;
   * with the `known` fingerprint of an earlier answer, only whether anything changed (IDLE
   * asks every moment, and most answers are "nothing"). With `changesOnly` too, a changed
   * mailbox is answered as the messages changed since `known` and the list of its UIDs (`uids`),
   * not every message: the caller holds the known answer (an IMAP server's sessions do).
   */
  sync(principal: Principal, inboxId: string, mailbox: string, known?: string, changesOnly?: boolean): Effect.Effect<MailboxState, ApiError>
  /**
   * Adds and removes flags; with `unchangedSince` (CONDSTORE's UNCHANGEDSINCE), only on the
   * messages whose modseq is not above it, checked and changed holding the inbox's change
   * counter so no change from anywhere slips between; the others are answered in `modified`.
   */
  flags(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number>, add: ReadonlyArray<string>, remove: ReadonlyArray<string>, unchangedSince?: number): Effect.Effect<typeof FlagsResult.Type, ApiError>
  copy(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number>, to: string, move: boolean): Effect.Effect<typeof CopyResult.Type, ApiError>
  expunge(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number> | undefined): Effect.Effect<ReadonlyArray<number>, ApiError>
  append(principal: Principal, inboxId: string, mailbox: string, raw: Uint8Array, flags: ReadonlyArray<string>): Effect.Effect<typeof AppendResult.Type, ApiError>
  /**
   * Every message of the mailbox that the search query `q` matches (IMAP SEARCH TEXT, FROM,
   * SUBJECT …), in pages of `limit` ids (SEARCH_PAGE by default): all of them, where
   * `messages.search` ranks the newest 500.
   */
  search(principal: Principal, inboxId: string, mailbox: string, q: string, page: { readonly page_token?: string; readonly limit?: number }): Effect.Effect<typeof SearchMatches.Type, ApiError>
}>()("inbox/Mailboxes") {
  static readonly layerNoDeps = Layer.effect(Mailboxes, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inboxes = yield* Inboxes
    const store = yield* MessageStore
    const messages = yield* Messages
    const parser = yield* MailParser
    const drafts = yield* Drafts
    const signals = yield* Signals
    const searching = yield* Search

    const mayRead = (principal: Principal, label: string) =>
      label === "trash" ? holds(principal, "label_trash_read") : label === "spam" ? holds(principal, "label_spam_read") : true

    const noMailbox = (name: string) => notFound("Mailbox", name)

    /** What a mailbox name means: INBOX (any case), a special mailbox, or a label. */
    const kindOf = (principal: Principal, name: string): Effect.Effect<Kind & { readonly name: string }, ApiError> => {
      if (name.toUpperCase() === "INBOX") return Effect.succeed({ _tag: "inbox", name: "INBOX" })
      const special = SPECIAL.find((s) => s.name.toLowerCase() === name.toLowerCase())
      if (special !== undefined) {
        return mayRead(principal, special.label) ? Effect.succeed({ _tag: "special", use: special.use, label: special.label, name: special.name }) : Effect.fail(noMailbox(name))
      }
      const label = name.toLowerCase()
      if (NOT_MAILBOXES.has(label) || label.length > MAX_LABEL_LENGTH || label.trim() === "") return Effect.fail(noMailbox(name))
      return Effect.succeed({ _tag: "label", label, name: label })
    }

    /** The SQL condition that a message (alias m) is in the mailbox. */
    const member = (principal: Principal, kind: Kind) => {
      const notTrash = sql`NOT ('trash' = ANY(m.labels))`
      switch (kind._tag) {
        case "inbox":
          return holds(principal, "label_unauthenticated_read")
            ? sql`'received' = ANY(m.labels) AND NOT (m.labels && ARRAY['trash', 'spam', 'blocked']::text[])`
            : sql`'received' = ANY(m.labels) AND NOT (m.labels && ARRAY['trash', 'spam', 'blocked', 'unauthenticated']::text[])`
        case "special":
          return kind.label === "trash" ? sql`'trash' = ANY(m.labels)` : sql`${kind.label} = ANY(m.labels) AND ${notTrash}`
        case "label":
          return sql`${kind.label} = ANY(m.labels) AND ${notTrash} AND NOT ('blocked' = ANY(m.labels))`
      }
    }

    const Row = Schema.Struct({
      uid: Int8,
      message_id: Schema.String,
      labels: Schema.Array(Schema.String),
      flags: Schema.Array(Schema.String),
      size: Schema.Number,
      timestamp: Schema.Date,
      modseq: Int8
    })
    const StateRow = Schema.Struct({ uidvalidity: Int8, uidnext: Int8 })
    const LockedRow = Schema.Struct({ uidvalidity: Int8, uidnext: Int8, synced: Schema.NullOr(Schema.String), synced_rule: Schema.NullOr(Schema.String) })

    /**
     * Drops the log of changed messages (migration 0053) that no mailbox of the inbox needs:
     * up to the lowest point a mailbox synced to. A mailbox more than KEPT_CHANGES behind is
     * set back to compare every message at its next sync instead of holding the log. Only
     * when every mailbox row of the inbox can be locked at once (SKIP LOCKED: it never waits),
     * so no sync is between reading its point and using it; otherwise a later sync prunes.
     */
    const prune = (inboxId: string, modseq: string) =>
      Effect.gen(function*() {
        const rows = yield* sql<{ name: string; synced: string | null; total: number }>`SELECT name, synced::text AS synced,
            (SELECT count(*) FROM imap_mailboxes WHERE inbox_id = ${inboxId})::int AS total
          FROM imap_mailboxes WHERE inbox_id = ${inboxId} FOR UPDATE SKIP LOCKED`
        if (rows.length === 0 || rows.length < rows[0]!.total) return
        const behind = BigInt(modseq) - BigInt(KEPT_CHANGES)
        const stale = rows.filter((r) => r.synced !== null && BigInt(r.synced) < behind).map((r) => r.name)
        if (stale.length > 0) yield* sql`UPDATE imap_mailboxes SET synced = NULL WHERE inbox_id = ${inboxId} AND name = ANY(${stale}::text[])`
        const points = rows.filter((r) => r.synced !== null && !stale.includes(r.name)).map((r) => BigInt(r.synced!))
        const floor = points.reduce((a, b) => (b < a ? b : a), BigInt(modseq))
        yield* sql`DELETE FROM imap_changed WHERE inbox_id = ${inboxId} AND modseq <= ${String(floor)}::bigint`
      })

    const flagsOf = (labels: ReadonlyArray<string>, kept: ReadonlyArray<string>): ReadonlyArray<string> => [
      ...(labels.includes("unread") ? [] : ["\\Seen"]),
      ...(labels.includes("starred") ? ["\\Flagged"] : []),
      ...(labels.includes("draft") ? ["\\Draft"] : []),
      ...kept
    ]

    /** The mailbox's row, created on first use; UIDVALIDITY is the second it was made. */
    const ensure = (inboxId: string, name: string, created: boolean) =>
      Effect.gen(function*() {
        const at = yield* now
        yield* sql`INSERT INTO imap_mailboxes (inbox_id, name, uidvalidity, uidnext, created)
          VALUES (${inboxId}, ${name}, ${Math.floor(at.getTime() / 1000) % 4_294_967_295 || 1}, 1, ${created})
          ON CONFLICT (inbox_id, name) DO ${created ? sql`UPDATE SET created = true` : sql`NOTHING`}`
      })

    const sync = Effect.fn("Mailboxes.sync")(function*(principal: Principal, inboxId: string, mailbox: string, known?: string, changesOnly?: boolean) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const kind = yield* kindOf(principal, mailbox)
      const inMailbox = member(principal, kind)
      // Most syncs find nothing changed (IDLE asks at every signal of the inbox, and every
      // session of it asks): the inbox's change counter (migration 0049) answers in one row.
      // It is read before anything else, so a change made during this sync shows in the next.
      const counted = (yield* sql<{ modseq: string; uidvalidity: string | null; uidnext: string | null; synced: string | null; synced_rule: string | null }>`SELECT c.modseq::text AS modseq,
          b.uidvalidity::text AS uidvalidity, b.uidnext::text AS uidnext, b.synced::text AS synced, b.synced_rule
        FROM imap_changes c LEFT JOIN imap_mailboxes b ON b.inbox_id = c.inbox_id AND b.name = ${kind.name}
        WHERE c.inbox_id = ${inbox.id}`.pipe(Effect.orDie))[0]
      if (counted !== undefined && counted.uidvalidity !== null && known === `${counted.uidvalidity}:${counted.modseq}`) {
        return { name: kind.name, uidvalidity: Number(counted.uidvalidity), uidnext: Number(counted.uidnext), fingerprint: known, highest_modseq: Number(counted.modseq), unchanged: true, messages: [] }
      }
      if (counted === undefined) yield* sql`INSERT INTO imap_changes (inbox_id, modseq) VALUES (${inbox.id}, 1) ON CONFLICT (inbox_id) DO NOTHING`.pipe(Effect.orDie)
      const modseq = counted?.modseq ?? (yield* sql<{ modseq: string }>`SELECT modseq::text AS modseq FROM imap_changes WHERE inbox_id = ${inbox.id}`.pipe(Effect.orDie))[0]!.modseq
      // Which rule of the mailbox the UIDs follow: INBOX shows a key without
      // label_unauthenticated_read less, so a key of the other kind compares the whole mailbox.
      const rule = kind._tag === "inbox" && !holds(principal, "label_unauthenticated_read") ? "authenticated" : "all"
      let bulk = false
      const answer = yield* sql.withTransaction(Effect.gen(function*() {
        if (counted?.synced == null || counted.synced_rule !== rule || BigInt(counted.synced) < BigInt(modseq)) {
          yield* ensure(inbox.id, kind.name, false)
          // The row's lock orders every process's UID assignment for this mailbox.
          const state = (yield* sql`SELECT uidvalidity, uidnext, synced::text AS synced, synced_rule FROM imap_mailboxes
            WHERE inbox_id = ${inbox.id} AND name = ${kind.name} FOR UPDATE`.pipe(decodeRows(LockedRow)))[0]!
          // Changes up to `modseq` are committed and logged (migration 0053): only their messages
          // can have come or gone. Without a known point (a first sync, the other rule, a
          // mailbox set back by pruning), every message is compared.
          const since = state.synced !== null && state.synced_rule === rule ? BigInt(state.synced) : undefined
          if (since === undefined || since < BigInt(modseq)) {
            const changed = since === undefined ? undefined : (yield* sql<{ message_id: string }>`SELECT DISTINCT message_id FROM imap_changed
              WHERE inbox_id = ${inbox.id} AND modseq > ${String(since)}::bigint AND modseq <= ${modseq}::bigint`).map((r) => r.message_id)
            const among = changed === undefined ? sql`TRUE` : sql`m.id = ANY(${changed}::text[])`
            if (changed === undefined || changed.length > 0) {
              yield* sql`DELETE FROM imap_uids u WHERE u.inbox_id = ${inbox.id} AND u.mailbox = ${kind.name}
                ${changed === undefined ? sql`` : sql`AND u.message_id = ANY(${changed}::text[])`}
                AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = u.message_id AND ${inMailbox})`
              const added = yield* sql<{ n: number }>`WITH fresh AS (
                  INSERT INTO imap_uids (inbox_id, mailbox, uid, message_id, modseq, labels, size, internal_date)
                  SELECT ${inbox.id}, ${kind.name}, ${state.uidnext}::bigint + row_number() OVER (ORDER BY m."timestamp", m.id) - 1, m.id,
                    (SELECT c.modseq FROM imap_changes c WHERE c.inbox_id = ${inbox.id}), m.labels, m.size, m."timestamp"
                  FROM messages m WHERE m.inbox_id = ${inbox.id} AND ${among} AND ${inMailbox}
                    AND NOT EXISTS (SELECT 1 FROM imap_uids u WHERE u.inbox_id = ${inbox.id} AND u.mailbox = ${kind.name} AND u.message_id = m.id)
                  RETURNING 1)
                SELECT count(*)::int AS n FROM fresh`
              // The UID rows' copy of the labels (migration 0053), renewed for the messages looked
              // at: one given a UID while a relabel of it was in flight kept the labels before it.
              yield* sql`UPDATE imap_uids u SET labels = m.labels,
                  modseq = GREATEST(u.modseq, (SELECT c.modseq FROM imap_changes c WHERE c.inbox_id = ${inbox.id}))
                FROM messages m
                WHERE u.inbox_id = ${inbox.id} AND u.mailbox = ${kind.name} AND m.id = u.message_id AND ${among}
                  AND u.labels IS DISTINCT FROM m.labels`
              const n = added[0]?.n ?? 0
              if (n > 0) yield* sql`UPDATE imap_mailboxes SET uidnext = uidnext + ${n} WHERE inbox_id = ${inbox.id} AND name = ${kind.name}`
              bulk = n >= ANALYZE_AFTER
            }
            // A counter this sync made itself may have missed a change whose trigger ran before
            // it existed and that commits later: the next sync compares every message once more.
            yield* sql`UPDATE imap_mailboxes SET synced = ${counted === undefined ? null : modseq}::bigint, synced_rule = ${rule}
              WHERE inbox_id = ${inbox.id} AND name = ${kind.name}`
            if (since !== undefined) yield* prune(inbox.id, modseq)
          }
        }
        const state = (yield* sql`SELECT uidvalidity, uidnext FROM imap_mailboxes WHERE inbox_id = ${inbox.id} AND name = ${kind.name}`.pipe(decodeRows(StateRow)))[0]!
        const stamp = `${state.uidvalidity}:${modseq}`
        if (known !== undefined && known === stamp) {
          return { name: kind.name, uidvalidity: Number(state.uidvalidity), uidnext: Number(state.uidnext), fingerprint: stamp, highest_modseq: Number(modseq), unchanged: true, messages: [] }
        }
        // Every row changed since the known answer carries a modseq above it (migration 0051):
        // given the UIDs, the caller has the rest already.
        const [knownValidity, knownModseq] = (known ?? "").split(":")
        const since = changesOnly === true && knownValidity === String(state.uidvalidity) && /^\d+$/.test(knownModseq ?? "") ? knownModseq! : undefined
        // The mailbox's own rows only (their copy of labels, size and date, migration 0053), in
        // the order of their key: no join with the inbox's message rows, no sort.
        const rows = yield* sql`SELECT uid, message_id, labels, flags, size, internal_date AS "timestamp", modseq FROM imap_uids
          WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name} ${since === undefined ? sql`` : sql`AND modseq > ${since}::bigint`}
          ORDER BY uid`.pipe(decodeRows(Row))
        const uids = since === undefined ? undefined : (yield* sql<{ uids: ReadonlyArray<number | string> | null }>`SELECT array_agg(uid::float8 ORDER BY uid) AS uids
          FROM imap_uids WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name}`)[0]?.uids ?? []
        return {
          name: kind.name,
          uidvalidity: Number(state.uidvalidity),
          uidnext: Number(state.uidnext),
          fingerprint: stamp,
          // A UID given in this sync took the counter as its statement saw it, which may be past
          // the value read first: the highest is the greater of the two.
          highest_modseq: rows.reduce((n, r) => Math.max(n, Number(r.modseq)), Number(modseq)),
          unchanged: false,
          messages: rows.map((r) => ({
            uid: Number(r.uid),
            message_id: r.message_id,
            flags: flagsOf(r.labels, r.flags),
            size: r.size,
            internal_date: r.timestamp.toISOString(),
            modseq: Number(r.modseq)
          })),
          ...(uids === undefined ? {} : { uids: uids.map(Number) })
        }
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      // A mailbox's first sync gives every message its UID at once; until the statistics know,
      // the planner takes imap_uids for nearly empty and a whole-mailbox comparison runs as a
      // nested loop over both sides (17 s instead of 0.1 s at 20,000 messages, pnpm bench imap).
      if (bulk) yield* sql`ANALYZE imap_uids`.pipe(Effect.orDie)
      return answer
    })

    /** The messages of these UIDs in the mailbox (after a sync), in UID order. */
    const byUid = (inboxId: string, mailbox: string, uids: ReadonlyArray<number>) =>
      sql<{ uid: number; message_id: string; thread_id: string }>`SELECT u.uid::float8 AS uid, u.message_id, m.thread_id FROM imap_uids u JOIN messages m ON m.id = u.message_id
        WHERE u.inbox_id = ${inboxId} AND u.mailbox = ${mailbox} AND u.uid = ANY(${uids.map(String)}::bigint[]) ORDER BY u.uid`.pipe(Effect.orDie)

    const list = Effect.fn("Mailboxes.list")(function*(principal: Principal, inboxId: string) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const labels = yield* sql<{ name: string }>`SELECT DISTINCT l AS name FROM messages m, unnest(m.labels) l WHERE m.inbox_id = ${inbox.id}
        UNION SELECT name FROM imap_mailboxes WHERE inbox_id = ${inbox.id} AND created ORDER BY 1`.pipe(Effect.orDie)
      const special = SPECIAL.filter((s) => mayRead(principal, s.label)).map((s) => ({ name: s.name, special_use: s.use as string }))
      const user = labels.map((l) => l.name).filter((l) => !NOT_MAILBOXES.has(l) && SPECIAL.every((s) => s.name.toLowerCase() !== l) && l !== "inbox")
      return [{ name: "INBOX", special_use: null }, ...special, ...user.map((name) => ({ name, special_use: null }))]
    })

    const create = Effect.fn("Mailboxes.create")(function*(principal: Principal, inboxId: string, name: string) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const label = name.toLowerCase()
      if (label.toUpperCase() === "INBOX" || NOT_MAILBOXES.has(label) || SPECIAL.some((s) => s.name.toLowerCase() === label) || label.length > MAX_LABEL_LENGTH || label.trim() === "" || /[\x00-\x1f]/.test(label)) {
        return yield* new ValidationError({ message: `${name} cannot be a mailbox: it is a system mailbox or label, or not a label name.`, errors: [{ path: ["name"], message: "not a user label" }] })
      }
      yield* ensure(inbox.id, label, true).pipe(Effect.orDie)
      return { name: label, special_use: null }
    })

    /** The labels that put a message into a mailbox, and those that take it out. */
    const entering = (kind: Kind): { add: ReadonlyArray<string>; remove: ReadonlyArray<string> } => {
      switch (kind._tag) {
        case "inbox":
          return { add: ["received"], remove: ["trash", "spam", "blocked"] }
        case "special":
          return kind.label === "trash" ? { add: ["trash"], remove: [] } : { add: [kind.label], remove: ["trash"] }
        case "label":
          return { add: [kind.label], remove: ["trash"] }
      }
    }
    /** Labels whose removal takes a message out of a mailbox; INBOX has none (labels are not folders). */
    const leaving = (kind: Kind): ReadonlyArray<string> => kind._tag === "inbox" ? [] : [kind.label]

    const flags = Effect.fn("Mailboxes.flags")(function*(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number>, add: ReadonlyArray<string>, remove: ReadonlyArray<string>, unchangedSince?: number) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const kind = yield* kindOf(principal, mailbox)
      const targets = yield* byUid(inbox.id, kind.name, uids)
      const labelAdd: Array<string> = []
      const labelRemove: Array<string> = []
      const keptAdd: Array<string> = []
      const keptRemove: Array<string> = []
      for (const flag of add) {
        const f = flag.toLowerCase()
        if (f === "\\seen") labelRemove.push("unread")
        else if (FLAG_LABELS[f] !== undefined) labelAdd.push(FLAG_LABELS[f])
        else if (f !== "\\recent") keptAdd.push(keptFlag(flag))
      }
      for (const flag of remove) {
        const f = flag.toLowerCase()
        if (f === "\\seen") labelAdd.push("unread")
        else if (FLAG_LABELS[f] !== undefined) labelRemove.push(FLAG_LABELS[f])
        else keptRemove.push(keptFlag(flag))
      }
      const modified = targets.length === 0 ? [] : yield* sql.withTransaction(Effect.gen(function*() {
        let ids = targets.map((t) => t.message_id)
        let modified: ReadonlyArray<number> = []
        if (unchangedSince !== undefined) {
          // Every change of a modseq raises the inbox's counter in its transaction, so the
          // counter's row, held to the end of this one, keeps the modseqs read below as read.
          // Locks are taken in the order every change takes them (a relabel: its threads in id
          // order, the messages, then through its trigger the counter), so none waits in a circle.
          const threads = yield* sql<{ thread_id: string }>`SELECT DISTINCT thread_id FROM messages
            WHERE inbox_id = ${inbox.id} AND id = ANY(${ids}::text[]) ORDER BY thread_id`
          for (const t of threads) yield* store.lockThread(t.thread_id)
          yield* sql`SELECT id FROM messages WHERE inbox_id = ${inbox.id} AND id = ANY(${ids}::text[]) ORDER BY id FOR UPDATE`
          yield* sql`SELECT 1 FROM imap_changes WHERE inbox_id = ${inbox.id} FOR UPDATE`
          const now = yield* sql<{ uid: number; message_id: string; modseq: string }>`SELECT uid::float8 AS uid, message_id, modseq::text AS modseq FROM imap_uids
            WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name} AND message_id = ANY(${ids}::text[]) ORDER BY uid`
          modified = now.filter((r) => Number(r.modseq) > unchangedSince).map((r) => Number(r.uid))
          ids = now.filter((r) => Number(r.modseq) <= unchangedSince).map((r) => r.message_id)
        }
        if (ids.length === 0) return modified
        if (labelAdd.length > 0 || labelRemove.length > 0) yield* store.relabel(inbox.id, ids, labelAdd, labelRemove)
        if (keptAdd.length > 0 || keptRemove.length > 0) {
          // The inbox's change counter goes up in the same statement (migration 0049), and the
          // rows take its new value as their modseq (migration 0051).
          yield* sql`WITH raised AS (UPDATE imap_changes SET modseq = modseq + 1 WHERE inbox_id = ${inbox.id} RETURNING modseq)
            UPDATE imap_uids SET flags = ARRAY(
              SELECT DISTINCT f FROM unnest(flags || ${keptAdd}::text[]) f WHERE NOT (lower(f) = ANY(${keptRemove.map((f) => f.toLowerCase())}::text[])) ORDER BY f),
              modseq = COALESCE((SELECT modseq FROM raised), modseq)
            WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name} AND message_id = ANY(${ids}::text[])`
          // Kept flags are no label: their change is told here, as MessageStore tells a label's.
          yield* signals.notify(MESSAGES_CHANGED, inbox.id)
        }
        return modified
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      return { ...(yield* sync(principal, inbox.id, kind.name)), modified }
    })

    const copy = Effect.fn("Mailboxes.copy")(function*(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number>, to: string, move: boolean) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const source = yield* kindOf(principal, mailbox)
      const target = yield* kindOf(principal, to)
      if (target._tag === "special" && target.label === "draft") {
        return yield* new ValidationError({ message: "Messages cannot be copied into Drafts; APPEND a new draft instead.", errors: [{ path: ["to"], message: "Drafts takes APPEND only" }] })
      }
      const targets = yield* byUid(inbox.id, source.name, uids)
      const ids = targets.map((t) => t.message_id)
      if (ids.length > 0) {
        const enter = entering(target)
        const leave = move && source.name !== target.name ? leaving(source).filter((l) => !enter.add.includes(l)) : []
        yield* store.relabel(inbox.id, ids, enter.add, [...enter.remove.filter((l) => !enter.add.includes(l)), ...leave])
      }
      const state = yield* sync(principal, inbox.id, target.name)
      const uidOf = new Map(state.messages.map((m) => [m.message_id, m.uid]))
      return {
        uidvalidity: state.uidvalidity,
        uids: targets.flatMap((t) => {
          const uid = uidOf.get(t.message_id)
          return uid === undefined ? [] : [[Number(t.uid), uid] as const]
        })
      }
    })

    const expunge = Effect.fn("Mailboxes.expunge")(function*(principal: Principal, inboxId: string, mailbox: string, uids: ReadonlyArray<number> | undefined) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const kind = yield* kindOf(principal, mailbox)
      const deleted = yield* sql<{ uid: number; message_id: string }>`SELECT uid::float8 AS uid, message_id FROM imap_uids
        WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name} AND '\\Deleted' = ANY(flags)
        ${uids === undefined ? sql`` : sql`AND uid = ANY(${uids.map(String)}::bigint[])`} ORDER BY uid`.pipe(Effect.orDie)
      if (deleted.length === 0) return []
      if (kind._tag === "special" && kind.label === "trash") {
        // Expunged from Trash is gone for good, as deleting it through the API.
        yield* Effect.forEach(deleted, (d) => messages.delete(principal, inbox.id, d.message_id).pipe(Effect.catchTag("NotFound", () => Effect.void)), { discard: true })
      } else {
        yield* store.relabel(inbox.id, deleted.map((d) => d.message_id), ["trash"], leaving(kind))
      }
      yield* sql`DELETE FROM imap_uids WHERE inbox_id = ${inbox.id} AND mailbox = ${kind.name} AND uid = ANY(${deleted.map((d) => String(d.uid))}::bigint[])`.pipe(Effect.orDie)
      return deleted.map((d) => Number(d.uid))
    })

    const append = Effect.fn("Mailboxes.append")(function*(principal: Principal, inboxId: string, mailbox: string, raw: Uint8Array, flagList: ReadonlyArray<string>) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const kind = yield* kindOf(principal, mailbox)
      const parsed = yield* parser.parse(raw).pipe(Effect.mapError((e) => new ValidationError({ message: `The message cannot be read: ${e.message}`, errors: [] })))
      const m = parsed.message
      const lower = flagList.map((f) => f.toLowerCase())
      if (kind._tag === "special" && kind.label === "draft") {
        const draft = yield* drafts.create(principal, inbox.id, {
          ...(m.to.length === 0 ? {} : { to: m.to.map(addressOf) }),
          ...(m.cc === undefined || m.cc.length === 0 ? {} : { cc: m.cc.map(addressOf) }),
          ...(m.subject === "" ? {} : { subject: m.subject }),
          ...(m.text === undefined ? {} : { text: m.text }),
          ...(m.html === undefined ? {} : { html: m.html }),
          // A client's draft carries its attachments (and inline images): kept, or saving a
          // draft in a mail client would lose them without a word.
          ...(parsed.attachments.length === 0 ? {} : {
            attachments: parsed.attachments.map((a) => ({
              ...(a.meta.filename === undefined ? {} : { filename: a.meta.filename }),
              content_type: a.meta.content_type,
              content_disposition: a.meta.content_disposition,
              ...(a.meta.content_id === undefined ? {} : { content_id: a.meta.content_id }),
              content: Buffer.from(a.content).toString("base64")
            }))
          })
        })
        return { uidvalidity: null, uid: null, message_id: draft.draft_id }
      }
      const sent = kind._tag === "special" && kind.label === "sent"
      const labels = [
        ...(sent ? ["sent"] : kind._tag === "label" ? [] : ["received"]),
        ...(kind._tag === "special" && !sent ? [kind.label] : kind._tag === "label" ? [kind.label] : []),
        ...(sent || lower.includes("\\seen") ? [] : ["unread"]),
        ...(lower.includes("\\flagged") ? ["starred"] : [])
      ]
      const stored = yield* sql.withTransaction(store.insert({
        inbox,
        direction: sent ? "sent" : "received",
        state: "stored",
        rfc_message_id: m.rfc_message_id ?? `<${sha256Of(raw)}@message-id.invalid>`,
        ...(m.in_reply_to === undefined ? {} : { in_reply_to: m.in_reply_to }),
        ...(m.references === undefined ? {} : { references: m.references }),
        from: m.from,
        from_address: addressOf(m.from),
        to: m.to,
        ...(m.cc === undefined ? {} : { cc: m.cc }),
        recipient_addresses: [...m.to, ...(m.cc ?? [])].map(addressOf),
        subject: m.subject,
        preview: m.preview,
        size: raw.byteLength,
        ...(m.text === undefined ? {} : { text: m.text }),
        ...(m.html === undefined ? {} : { html: m.html }),
        ...(m.extracted_text === undefined ? {} : { extracted_text: m.extracted_text }),
        ...(m.extracted_html === undefined ? {} : { extracted_html: m.extracted_html }),
        headers: m.headers,
        attachments: parsed.attachments.map(attachmentBlob),
        raw: { sha256: sha256Of(raw), bytes: raw },
        labels
      })).pipe(Effect.orDie)
      const state = yield* sync(principal, inbox.id, kind.name)
      const uid = state.messages.find((x) => x.message_id === stored.message.id)?.uid ?? null
      const kept = flagList.filter((f) => !["\\seen", "\\flagged", "\\draft", "\\recent"].includes(f.toLowerCase()))
      if (uid !== null && kept.length > 0) yield* flags(principal, inbox.id, kind.name, [uid], kept, [])
      return { uidvalidity: state.uidvalidity, uid, message_id: stored.message.id }
    })

    const search = Effect.fn("Mailboxes.search")(function*(principal: Principal, inboxId: string, mailbox: string, q: string, page: { readonly page_token?: string; readonly limit?: number }) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const kind = yield* kindOf(principal, mailbox)
      // Trash and Junk hold hidden messages, which a search leaves out unless asked for;
      // kindOf has checked the key may read them.
      const scoped = kind._tag === "special" && (kind.label === "trash" || kind.label === "spam") ? `${q} label:${kind.label}` : q
      // The token is the page's last id: pages follow each other by id, so none repeats or skips a match.
      const after = page.page_token === undefined ? undefined : Buffer.from(page.page_token, "base64url").toString("utf8")
      if (after !== undefined && !/^[\w-]{1,128}$/.test(after)) return yield* new ValidationError({ message: "Invalid page token", errors: [{ path: ["page_token"], message: "Invalid page token" }] })
      const limit = page.limit ?? SEARCH_PAGE
      // Only the mailbox's own messages (those with a UID in it, as the client sees it) are
      // read: a label mailbox's search never reads the rest of the inbox's matches.
      // Each match carries its UID (one per message and mailbox), by which the IMAP server
      // places it in the client's view without reading the whole mailbox.
      const rows = yield* searching.allMatches(principal, inbox, scoped, after, limit + 1, {
        join: sql`JOIN imap_uids u ON u.inbox_id = ${inbox.id} AND u.mailbox = ${kind.name} AND u.message_id = s.message_id`,
        key: sql`u.uid`
      })
      const found = rows.slice(0, limit)
      const answer = { message_ids: found.map((r) => r.id), uids: found.map((r) => r.key ?? 0) }
      return rows.length > limit ? { ...answer, next_page_token: Buffer.from(found.at(-1)!.id).toString("base64url") } : answer
    })

    return Mailboxes.of({
      search,
      inbox: (principal, idOrEmail) => inboxes.find(principal, idOrEmail),
      list,
      create,
      sync,
      flags,
      copy,
      expunge,
      append
    })
  }))

  /** With the services it uses (Drafts, Inboxes, MailParser, Messages, MessageStore, Search); the ports are the caller's. */
  static readonly layer = Mailboxes.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Drafts.layer, Inboxes.layer, MailParser.layer, Messages.layer, MessageStore.layer, Search.layer)))
}
