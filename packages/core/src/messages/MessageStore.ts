/**
 * MessageStore: writes messages into an inbox, places them in threads and keeps each
 * thread's summary in step. Arrival (inbound/), sending (sending/) and label changes all
 * write through here, so a thread is consistent with its messages whichever path changed it.
 *
 * Contract: every method must run inside the caller's transaction; the caller commits the
 * message, its thread, its event and its blobs together.
 *
 * `insertMany` (messages into inboxes, in order; `insert` is a batch of one):
 * 1. Takes transaction-scoped advisory locks on each message's own Message-ID (exclusive)
 *    and on every id it names as a parent (shared), per inbox, in one statement in a fixed
 *    order, so no deadlock. A reply and its parent arriving at once on two processes meet
 *    on the parent's lock: one commits first and the other sees it, so they end in one
 *    thread; two deliveries of the same message meet on its own lock, so the second sees
 *    the first and is a duplicate; replies to one parent do not wait for each other.
 * 2. A message already stored in the inbox (same direction and Message-ID), or written
 *    earlier in the batch, is a duplicate: nothing is written and the stored one is answered
 *    (a forwarder's retry).
 * 3. The thread is decided by the mail engine's `decideThread` over the stored rows it asks
 *    for and the batch's earlier messages (or given by the caller: a reply joins its
 *    parent's thread). Threads a late parent ties together are merged into the chosen one;
 *    a batch with such a message is written one message at a time instead (`insertOne`).
 * 4. The threads joined are locked (in id order), every thread row is created or extended
 *    and every message row inserted, in one statement (its trigger takes references on the
 *    blobs), then the bytes are stored (Blobs.ts explains why in that order).
 * The result is the same as inserting the messages one after another; on any failure the
 * caller's transaction rolls back and nothing of the batch is kept.
 *
 * Every write signals the inboxes it changed on MESSAGES_CHANGED (db/Signals.ts: once the
 * caller's transaction commits, to every process on the database), so a mail client's IDLE
 * learns of a message stored, relabelled or deleted from anywhere without asking.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Blobs } from "../blobs/Blobs.ts"
import { Signals } from "../db/Signals.ts"
import type { ValidationError } from "../errors/errors.ts"
import { decideThread, type ThreadDecision } from "../mail/thread.ts"
import { Ids } from "../platform/Ids.ts"
import { decodeRows } from "../shared/sql.ts"
import { now } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { extend, type MessageFacts, start, summarise, type ThreadFacts } from "./aggregate.ts"
import { FullMessageRow, MAX_LABELS, type StoredAttachment, ThreadRow } from "./model.ts"

/** A stored message related to a new one (MessageStore.related). */
interface RelatedRow {
  readonly kind: "same" | "parent" | "child"
  readonly id: string
  readonly thread_id: string
  readonly rfc_message_id: string
  readonly timestamp: Date | string
}

export interface InboxRef {
  readonly id: string
  readonly organization_id: string
  readonly pod_id: string
}

export interface NewMessage {
  readonly inbox: InboxRef
  readonly direction: "received" | "sent"
  readonly state: "stored" | "sending"
  readonly rfc_message_id: string
  readonly in_reply_to?: string
  readonly references?: ReadonlyArray<string>
  readonly from: string
  readonly from_address: string
  readonly to: ReadonlyArray<string>
  readonly cc?: ReadonlyArray<string>
  readonly bcc?: ReadonlyArray<string>
  /** lower-case addresses of every recipient, for the `to` filter */
  readonly recipient_addresses: ReadonlyArray<string>
  readonly subject: string
  readonly preview: string
  readonly size: number
  readonly text?: string
  readonly html?: string
  readonly extracted_text?: string
  readonly extracted_html?: string
  readonly headers: Readonly<Record<string, string>>
  /** Each with its bytes (stored as a blob), or with the `part` of the raw message that holds them (blobs/parts.ts). */
  readonly attachments: ReadonlyArray<NewAttachment>
  readonly raw: { readonly sha256: string; readonly bytes: Uint8Array }
  readonly labels: ReadonlyArray<string>
  /** A reply joins this thread (its parent's); otherwise the thread is decided from headers. */
  readonly thread_id?: string
  /** The forward route: always a new thread. */
  readonly is_forward?: boolean
  readonly open_token?: string
}

export type NewAttachment = { readonly meta: Omit<StoredAttachment, "attachment_id" | "sha256" | "part">; readonly sha256: string } & (
  | { readonly bytes: Uint8Array; readonly part?: undefined }
  | { readonly part: number; readonly bytes?: undefined }
)

export interface Stored {
  readonly message: FullMessageRow
  readonly thread: ThreadRow
  /** true when the inbox already had this message: nothing was written. */
  readonly duplicate: boolean
}



/** The identity and place a message gets when it is written. */
interface Placement {
  readonly id: string
  readonly threadId: string
  readonly at: Date
  readonly parents: ReadonlyArray<string>
  readonly labels: ReadonlyArray<string>
  readonly attachments: ReadonlyArray<StoredAttachment>
}

/** The ids a message names as parents: In-Reply-To, then References, each once. */
const parentsOf = (m: NewMessage): ReadonlyArray<string> =>
  [...new Set([...(m.in_reply_to === undefined ? [] : [m.in_reply_to]), ...(m.references ?? [])])]

/** The `messages` row of a new message, as both insert paths write it. */
const messageRow = (m: NewMessage, p: Placement) => ({
  id: p.id,
  organization_id: m.inbox.organization_id,
  pod_id: m.inbox.pod_id,
  inbox_id: m.inbox.id,
  thread_id: p.threadId,
  direction: m.direction,
  state: m.state,
  rfc_message_id: m.rfc_message_id,
  in_reply_to: m.in_reply_to ?? null,
  references: m.references ?? null,
  parents: p.parents,
  labels: p.labels,
  timestamp: p.at,
  sender: m.from,
  sender_address: m.from_address.toLowerCase(),
  recipients: m.to,
  cc: m.cc ?? null,
  bcc: m.bcc ?? null,
  recipient_addresses: [...new Set(m.recipient_addresses.map((a) => a.toLowerCase()))],
  subject: m.subject,
  preview: m.preview,
  size: m.size,
  text: m.text ?? null,
  html: m.html ?? null,
  // An extract that is the whole body is stored once: the flag, not a second copy (0055).
  extracted_text: m.extracted_text === undefined || m.extracted_text === m.text ? null : m.extracted_text,
  extracted_html: m.extracted_html === undefined || m.extracted_html === m.html ? null : m.extracted_html,
  extracted_text_is_text: m.extracted_text !== undefined && m.extracted_text === m.text,
  extracted_html_is_html: m.extracted_html !== undefined && m.extracted_html === m.html,
  headers: JSON.stringify(m.headers),
  attachments: JSON.stringify(p.attachments),
  raw_sha256: m.raw.sha256,
  open_token: m.open_token ?? null,
  created_at: p.at,
  updated_at: p.at
})

/**
 * The row `messageRow` writes, as FullMessageRow reads it back. The batch answers its
 * messages with these rather than with `RETURNING *`, which sent every body back over the
 * wire to be decoded again (bench/PROFILE.md, "What a delivery's scavenges keep"). They are
 * the same row: only AFTER triggers run on `messages`, and the text written is storable as
 * it is (mail/storable.ts for parsed mail, validation for the API's input). jsonb's key
 * order is the one difference, and no reader sees it: the event's payload is jsonb too.
 */
const writtenRow = (row: ReturnType<typeof messageRow>, m: NewMessage, p: Placement): FullMessageRow => ({
  id: row.id,
  organization_id: row.organization_id,
  pod_id: row.pod_id,
  inbox_id: row.inbox_id,
  thread_id: row.thread_id,
  direction: row.direction,
  state: row.state,
  rfc_message_id: row.rfc_message_id,
  in_reply_to: row.in_reply_to,
  references: row.references,
  labels: row.labels,
  timestamp: row.timestamp,
  sender: row.sender,
  recipients: row.recipients,
  cc: row.cc,
  bcc: row.bcc,
  subject: row.subject,
  preview: row.preview,
  size: row.size,
  created_at: row.created_at,
  updated_at: row.updated_at,
  text: row.text,
  html: row.html,
  extracted_text: row.extracted_text,
  extracted_html: row.extracted_html,
  extracted_text_is_text: row.extracted_text_is_text,
  extracted_html_is_html: row.extracted_html_is_html,
  headers: m.headers,
  attachments: p.attachments,
  raw_sha256: row.raw_sha256
})

/** What the thread rules know of a message (aggregate.ts). */
const factsOf = (m: NewMessage, id: string, labels: ReadonlyArray<string>, timestamp: Date): MessageFacts => ({
  id,
  direction: m.direction,
  timestamp,
  sender: m.from,
  recipients: m.to,
  labels,
  subject: m.subject,
  preview: m.preview,
  size: m.size
})

const threadColumns = (t: ThreadFacts) => ({
  subject: t.subject,
  preview: t.preview,
  senders: t.senders,
  recipients: t.recipients,
  labels: t.labels,
  last_message_id: t.last_message_id,
  message_count: t.message_count,
  size: t.size,
  received_at: t.received_at,
  sent_at: t.sent_at,
  last_at: t.last_at,
  hidden: t.hidden
})

/** The row of a thread a message starts. */
const startedThread = (m: NewMessage, threadId: string, facts: MessageFacts): ThreadRow => ({
  id: threadId,
  organization_id: m.inbox.organization_id,
  pod_id: m.inbox.pod_id,
  inbox_id: m.inbox.id,
  ...threadColumns(start(facts)),
  created_at: facts.timestamp,
  updated_at: facts.timestamp
})

/** A thread's row once a message joins it; the message is never older than the thread's newest. */
const extendedThread = (current: ThreadRow, m: NewMessage, id: string, labels: ReadonlyArray<string>, clock: Date) => {
  // A thread's messages keep their order even within one millisecond (or with clocks a
  // little apart between processes): a new message is never older than the newest.
  const at = clock.getTime() <= current.last_at.getTime() ? new Date(current.last_at.getTime() + 1) : clock
  return { at, thread: { ...current, ...threadColumns(extend(current, factsOf(m, id, labels, at))), updated_at: at } satisfies ThreadRow }
}

/** A message written earlier in the same batch, as the thread rules of later ones see it. */
interface Written {
  readonly inbox_id: string
  readonly rfc_message_id: string
  readonly parents: ReadonlyArray<string>
  readonly id: string
  readonly thread_id: string
}

/** The Signals channel of inbox ids whose messages were stored, relabelled or deleted (IMAP's IDLE listens). */
export const MESSAGES_CHANGED = "inbox_messages"

/** Oldest first, as the engine's rule wants ("joins the thread of its oldest reply"). */
const oldestFirst = (a: { readonly timestamp: Date | string; readonly id: string }, b: { readonly timestamp: Date | string; readonly id: string }) =>
  new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export class MessageStore extends Context.Service<MessageStore, {
  insert(message: NewMessage): Effect.Effect<Stored>
  /** Messages inserted as by `insert` one after another, in the same transaction, in fewer statements. */
  insertMany(messages: ReadonlyArray<NewMessage>): Effect.Effect<ReadonlyArray<Stored>>
  /** The thread's summary recomputed from its messages; the thread is deleted when it has none. */
  refreshThread(threadId: string): Effect.Effect<ThreadRow | undefined>
  /** Locks the thread row until the transaction ends (label changes and deletes take it first). */
  lockThread(threadId: string): Effect.Effect<void>
  /**
   * Adds and removes labels on messages of one inbox, in its own transaction, and refreshes
   * their threads: the one way labels change after arrival. A change that would leave a
   * message with more than MAX_LABELS labels changes nothing (400 validation_error on
   * `add_labels`): checked here, after the union, for the message, batch and thread updates alike.
   */
  relabel(
    inboxId: string,
    messageIds: ReadonlyArray<string>,
    add: ReadonlyArray<string>,
    remove: ReadonlyArray<string>
  ): Effect.Effect<void, ValidationError>
  /**
   * Retention: deletes up to `limit` messages labelled trash whose labels last changed before
   * `before`, in one transaction that locks their threads (in a fixed order) and refreshes
   * them; answers how many. Their blobs go with the sweeper, as for any deleted message.
   */
  purgeTrash(before: Date, limit: number): Effect.Effect<number>
  /** Deletes a thread and its messages, in the caller's transaction, its row locked first. */
  deleteThread(threadId: string): Effect.Effect<void>
  /** Deletes a message, in the caller's transaction: its thread locked first and refreshed after (gone with its last message). */
  deleteMessage(messageId: string, threadId: string): Effect.Effect<void>
  /** The statement that marks a sent message `sent`, for the transaction that records its event (Events `alongside`). */
  markSent(messageId: string, at: Date): Statement.Statement<unknown>
  /**
   * Claims a message still `sending` for this process (its updated_at set to `at`), if it is
   * one and, given `olderThan`, was last touched before it: one claimant wins.
   */
  claimSending(messageId: string, at: Date, olderThan: Date | undefined): Effect.Effect<ReadonlyArray<unknown>>
}>()("inbox/MessageStore") {
  static readonly layerNoDeps = Layer.effect(MessageStore, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const blobs = yield* Blobs
    const signals = yield* Signals
    /** Signals each inbox once: sent after the caller's transaction commits, never when it rolls back. */
    const changed = (inboxIds: Iterable<string>) => Effect.forEach(new Set(inboxIds), (id) => signals.notify(MESSAGES_CHANGED, id), { discard: true })

    // Exclusive on the message's own id, shared on the ids it names as parents: a message and
    // its reply (or a second delivery of the same message) still take turns, while replies to
    // one parent (a thread everyone answers, a list's mail) no longer wait for each other.
    // Their threads are decided from stored parents and children only, never from siblings,
    // and a thread they join is locked by its row. One statement for every message of a
    // batch, in the order of the hashes, whatever the mode: two transactions never wait for
    // each other in a circle.
    const lockIds = (ms: ReadonlyArray<NewMessage>) => {
      const keys: Array<string> = []
      const exclusive: Array<boolean> = []
      for (const m of ms) {
        keys.push(`${m.inbox.id} ${m.rfc_message_id}`)
        exclusive.push(true)
        for (const parent of parentsOf(m)) {
          keys.push(`${m.inbox.id} ${parent}`)
          exclusive.push(false)
        }
      }
      return sql`SELECT CASE WHEN own THEN pg_advisory_xact_lock(h)::text ELSE pg_advisory_xact_lock_shared(h)::text END
        FROM (SELECT hashtextextended(k, 0) AS h, bool_or(own) AS own FROM unnest(${keys}::text[], ${exclusive}::boolean[]) AS u (k, own)
          GROUP BY 1 ORDER BY 1) AS locks`
    }

    const updateThread = (threadId: string, t: ThreadFacts, at: Date) =>
      sql`UPDATE threads SET subject = ${t.subject}, preview = ${t.preview}, senders = ${t.senders}::text[],
        recipients = ${t.recipients}::text[], labels = ${t.labels}::text[], last_message_id = ${t.last_message_id},
        message_count = ${t.message_count}, size = ${t.size}, received_at = ${t.received_at}, sent_at = ${t.sent_at},
        last_at = ${t.last_at}, hidden = ${t.hidden}, updated_at = ${at}
        WHERE id = ${threadId}`

    const writeThread = (threadId: string, t: ThreadFacts, at: Date) =>
      sql`${updateThread(threadId, t, at)} RETURNING *`.pipe(decodeRows(ThreadRow))

    const refreshThread = Effect.fn("MessageStore.refreshThread")(function*(threadId: string) {
      const rows = yield* sql`SELECT id, direction, "timestamp", sender, recipients, labels, subject, preview, size FROM messages
        WHERE thread_id = ${threadId} ORDER BY "timestamp", id`.pipe(decodeRows(FactsRow))
      const summary = summarise(rows)
      if (summary === undefined) {
        yield* sql`DELETE FROM threads WHERE id = ${threadId}`
        return undefined
      }
      return (yield* writeThread(threadId, summary, yield* now))[0]
    }, Effect.orDie)

    /**
     * What the store already holds about a new message, in one statement (a delivery's
     * round trips are most of its cost): the same message already stored (a retry), the
     * stored messages it names as parents, and the stored messages that name it (a parent
     * arriving after its replies). Parents are looked up with both directions bound, so
     * the lookup uses all three columns of messages_rfc: with the inbox alone it walked
     * the whole inbox, growing with it. Children are found by
     * the Message-ID alone (few messages anywhere name it) and only then kept to the inbox:
     * `OFFSET 0` keeps the planner from ANDing in an index of the inbox's messages, which
     * it did (a bitmap over the whole inbox per delivery, growing with the inbox).
     */
    const relatedOf = (m: NewMessage, item: number) => {
      const threading = m.thread_id === undefined
      const candidates = parentsOf(m)
      return sql`SELECT ${item}::int AS item, 'same' AS kind, id, thread_id, rfc_message_id, "timestamp" FROM messages
          WHERE inbox_id = ${m.inbox.id} AND direction = ${m.direction} AND rfc_message_id = ${m.rfc_message_id}
        ${threading && candidates.length > 0 ? sql`UNION ALL SELECT ${item}::int, 'parent', id, thread_id, rfc_message_id, "timestamp" FROM messages
          WHERE inbox_id = ${m.inbox.id} AND direction = ANY(ARRAY['received', 'sent']) AND rfc_message_id = ANY(${candidates}::text[])` : sql``}
        ${threading ? sql`UNION ALL SELECT ${item}::int, 'child', id, thread_id, rfc_message_id, "timestamp" FROM (
            SELECT id, thread_id, rfc_message_id, "timestamp", inbox_id FROM messages WHERE parents @> ARRAY[${m.rfc_message_id}]::text[] OFFSET 0
          ) AS naming WHERE inbox_id = ${m.inbox.id}` : sql``}`
    }
    const related = (ms: ReadonlyArray<NewMessage>) =>
      sql<RelatedRow & { readonly item: number }>`${sql.join(" UNION ALL ", false)(ms.map(relatedOf))}`

    /**
     * The thread of a new message, from the stored messages around it and the messages
     * written before it in the same batch (`earlier`, of any inbox: only its own count).
     * Stored children come oldest first, then the batch's in their order: a batch's messages
     * are newer than anything stored.
     */
    const decide = (
      m: NewMessage,
      rows: ReadonlyArray<RelatedRow>,
      earlier: ReadonlyArray<Written> = []
    ): ThreadDecision | { readonly _tag: "Given"; readonly thread_id: string } => {
      if (m.thread_id !== undefined) return { _tag: "Given" as const, thread_id: m.thread_id }
      const parents = parentsOf(m)
      const near = earlier.filter((w) => w.inbox_id === m.inbox.id)
      const known = [...rows.filter((r) => r.kind === "parent"), ...near.filter((w) => parents.includes(w.rfc_message_id))]
      const children = [
        ...rows.filter((r) => r.kind === "child").sort(oldestFirst),
        ...near.filter((w) => w.parents.includes(m.rfc_message_id))
      ]
      return decideThread(
        {
          subject: m.subject,
          rfc_message_id: m.rfc_message_id,
          ...(m.in_reply_to === undefined ? {} : { in_reply_to: m.in_reply_to }),
          ...(m.references === undefined ? {} : { references: m.references }),
          ...(m.is_forward === true ? { is_forward: true } : {})
        },
        {
          byRfcMessageId: (id) => known.find((k) => k.rfc_message_id === id),
          referencing: () => children
        }
      )
    }

    const attachmentsOf = (m: NewMessage) =>
      Effect.forEach(m.attachments, (a) =>
        Effect.map(ids.make("att"), (attachment_id): StoredAttachment => ({ ...a.meta, attachment_id, sha256: a.sha256, ...(a.part === undefined ? {} : { part: a.part }) })))

    const blobsOf = (ms: ReadonlyArray<NewMessage>) => {
      const all = new Map<string, { readonly sha256: string; readonly bytes: Uint8Array }>()
      for (const m of ms) {
        all.set(m.raw.sha256, m.raw)
        for (const a of m.attachments) if (a.bytes !== undefined) all.set(a.sha256, { sha256: a.sha256, bytes: a.bytes })
      }
      return [...all.values()]
    }

    /**
     * One message at a time, a statement or more each: the way for a message whose arrival
     * ties threads together (a late parent), which `insertMany` leaves to it.
     */
    const insertOne = Effect.fn("MessageStore.insertOne")(function*(m: NewMessage) {
      const parents = parentsOf(m)
      yield* lockIds([m])
      const around = yield* related([m])
      const same = around.find((r) => r.kind === "same")
      if (same !== undefined) {
        const existing = yield* sql`SELECT * FROM messages WHERE id = ${same.id}`.pipe(decodeRows(FullMessageRow))
        if (existing[0] === undefined) return yield* Effect.die(new Error(`message ${same.id} vanished`))
        const thread = yield* sql`SELECT * FROM threads WHERE id = ${existing[0].thread_id}`.pipe(decodeRows(ThreadRow))
        if (thread[0] === undefined) return yield* Effect.die(new Error(`message ${existing[0].id} has no thread`))
        return { message: existing[0], thread: thread[0], duplicate: true } satisfies Stored
      }

      const clock = yield* now
      const id = yield* ids.make("msg")
      const attachments = yield* attachmentsOf(m)
      const labels = [...new Set(m.labels)]
      const decision = decide(m, around)
      let at = clock
      let threadId: string
      let thread: ThreadRow | undefined
      // The thread's own write goes into the message's INSERT; its row is known without reading it back.
      let threadWrite: Statement.Fragment | undefined
      if (decision._tag === "New") {
        threadId = yield* ids.make("thr")
        thread = startedThread(m, threadId, factsOf(m, id, labels, at))
        threadWrite = sql`INSERT INTO threads ${sql.insert(thread as never)}`
      } else {
        threadId = decision.thread_id
        const merged = decision._tag === "Join" ? decision.merge_thread_ids : []
        if (merged.length > 0) {
          // A late parent ties threads together: their messages move into the chosen thread.
          yield* sql`UPDATE messages SET thread_id = ${threadId} WHERE thread_id = ANY(${merged}::text[])`
          yield* sql`DELETE FROM threads WHERE id = ANY(${merged}::text[])`
        }
        const current = yield* sql`SELECT * FROM threads WHERE id = ${threadId} FOR UPDATE`.pipe(decodeRows(ThreadRow))
        if (current[0] === undefined) return yield* Effect.die(new Error(`thread ${threadId} vanished`))
        const joined = extendedThread(current[0], m, id, labels, clock)
        at = joined.at
        if (merged.length > 0) {
          thread = current[0]
        } else {
          thread = joined.thread
          threadWrite = updateThread(threadId, joined.thread, at)
        }
      }

      const [row] = yield* sql`${threadWrite === undefined ? sql`` : sql`WITH thread_write AS (${threadWrite})`}
        INSERT INTO messages ${sql.insert(messageRow(m, { id, threadId, at, parents, labels, attachments }) as never)} RETURNING *`.pipe(decodeRows(FullMessageRow))
      if (row === undefined) return yield* Effect.die(new Error("insert returned no row"))
      if (decision._tag === "Join" && decision.merge_thread_ids.length > 0) thread = yield* refreshThread(threadId)
      if (thread === undefined) return yield* Effect.die(new Error(`thread ${threadId} vanished`))

      yield* blobs.store(blobsOf([m]))
      yield* changed([row.inbox_id])
      return { message: row, thread, duplicate: false } satisfies Stored
    })

    /**
     * Messages of one transaction, in order, with the result of inserting them one after
     * another, in a fixed number of statements whatever their number (inbound mail's group
     * commit: at load, a statement's fixed cost is most of a delivery's): the locks of all,
     * what is stored around all, the stored threads they join (locked, in id order), one
     * statement that writes every thread and every message, and the bytes. A message
     * already stored, or written earlier in the batch, is a duplicate; a message whose
     * thread is decided by one written earlier in the batch finds it as if it were stored.
     * When one of them ties threads together (a late parent), nothing has been written yet:
     * the batch goes one message at a time (`insertOne`), as that rare case needs.
     */
    const insertMany = Effect.fn("MessageStore.insertMany")(function*(ms: ReadonlyArray<NewMessage>) {
      if (ms.length === 0) return []
      yield* lockIds(ms)
      const around = yield* related(ms)
      const rowsOf = Array.from(ms, () => [] as Array<RelatedRow>)
      for (const r of around) rowsOf[r.item]!.push(r)

      // First pass: what each message is (a duplicate, or a message of which thread).
      type Plan =
        | { readonly _tag: "Stored"; readonly id: string }
        | { readonly _tag: "Earlier"; readonly index: number }
        | { readonly _tag: "Write"; readonly m: NewMessage; readonly id: string; readonly threadId: string; readonly labels: ReadonlyArray<string>; readonly attachments: ReadonlyArray<StoredAttachment>; readonly isNew: boolean }
      const plans: Array<Plan> = []
      const written: Array<Written & { readonly index: number; readonly direction: string }> = []
      for (let i = 0; i < ms.length; i++) {
        const m = ms[i]!
        const same = rowsOf[i]!.find((r) => r.kind === "same")
        if (same !== undefined) {
          plans.push({ _tag: "Stored", id: same.id })
          continue
        }
        const twin = written.find((w) => w.inbox_id === m.inbox.id && w.direction === m.direction && w.rfc_message_id === m.rfc_message_id)
        if (twin !== undefined) {
          plans.push({ _tag: "Earlier", index: twin.index })
          continue
        }
        const decision = decide(m, rowsOf[i]!, written)
        if (decision._tag === "Join" && decision.merge_thread_ids.length > 0) {
          return yield* Effect.forEach(ms, insertOne)
        }
        const id = yield* ids.make("msg")
        const threadId = decision._tag === "New" ? yield* ids.make("thr") : decision.thread_id
        plans.push({ _tag: "Write", m, id, threadId, labels: [...new Set(m.labels)], attachments: yield* attachmentsOf(m), isNew: decision._tag === "New" })
        written.push({ index: i, inbox_id: m.inbox.id, direction: m.direction, rfc_message_id: m.rfc_message_id, parents: parentsOf(m), id, thread_id: threadId })
      }

      // The stored rows the batch needs: messages it duplicates, threads it joins (locked).
      const storedIds = plans.flatMap((p) => p._tag === "Stored" ? [p.id] : [])
      const duplicates = storedIds.length === 0
        ? []
        : yield* sql`SELECT * FROM messages WHERE id = ANY(${storedIds}::text[])`.pipe(decodeRows(FullMessageRow))
      const fresh = new Set(plans.flatMap((p) => p._tag === "Write" && p.isNew ? [p.threadId] : []))
      const wanted = [...new Set([
        ...plans.flatMap((p) => p._tag === "Write" && !fresh.has(p.threadId) ? [p.threadId] : []),
        ...duplicates.map((d) => d.thread_id)
      ])]
      const threads = new Map<string, ThreadRow>()
      if (wanted.length > 0) {
        const rows = yield* sql`SELECT * FROM threads WHERE id = ANY(${wanted}::text[]) ORDER BY id FOR UPDATE`.pipe(decodeRows(ThreadRow))
        for (const t of rows) threads.set(t.id, t)
      }

      // Second pass: each thread's row after each message, in order.
      const clock = yield* now
      const touched = new Set<string>()
      const after: Array<ThreadRow> = []
      const messageRows: Array<ReturnType<typeof messageRow>> = []
      const inserted = new Map<string, FullMessageRow>()
      for (const plan of plans) {
        if (plan._tag !== "Write") {
          const threadId = plan._tag === "Stored"
            ? duplicates.find((d) => d.id === plan.id)?.thread_id
            : after[plan.index]?.id
          const thread = threadId === undefined ? undefined : threads.get(threadId)
          if (thread === undefined) return yield* Effect.die(new Error(`the message duplicated at ${after.length} has no thread`))
          after.push(thread)
          continue
        }
        const current = threads.get(plan.threadId)
        let at = clock
        let thread: ThreadRow
        if (plan.isNew) {
          thread = startedThread(plan.m, plan.threadId, factsOf(plan.m, plan.id, plan.labels, clock))
        } else {
          if (current === undefined) return yield* Effect.die(new Error(`thread ${plan.threadId} vanished`))
          ;({ at, thread } = extendedThread(current, plan.m, plan.id, plan.labels, clock))
        }
        threads.set(plan.threadId, thread)
        touched.add(plan.threadId)
        after.push(thread)
        const placement = { id: plan.id, threadId: plan.threadId, at, parents: parentsOf(plan.m), labels: plan.labels, attachments: plan.attachments }
        const row = messageRow(plan.m, placement)
        messageRows.push(row)
        inserted.set(row.id, writtenRow(row, plan.m, placement))
      }

      if (messageRows.length > 0) {
        const threadRows = [...touched].map((id) => threads.get(id)!)
        // New threads are inserted, joined ones updated, by one upsert in the messages' statement.
        const rows = yield* sql`WITH thread_write AS (
            INSERT INTO threads ${sql.insert(threadRows as never)} ON CONFLICT (id) DO UPDATE SET
              subject = EXCLUDED.subject, preview = EXCLUDED.preview, senders = EXCLUDED.senders,
              recipients = EXCLUDED.recipients, labels = EXCLUDED.labels, last_message_id = EXCLUDED.last_message_id,
              message_count = EXCLUDED.message_count, size = EXCLUDED.size, received_at = EXCLUDED.received_at,
              sent_at = EXCLUDED.sent_at, last_at = EXCLUDED.last_at, hidden = EXCLUDED.hidden, updated_at = EXCLUDED.updated_at)
          INSERT INTO messages ${sql.insert(messageRows as never)} RETURNING id`
        if (rows.length !== messageRows.length) return yield* Effect.die(new Error(`a batch of ${messageRows.length} messages wrote ${rows.length}`))
        yield* blobs.store(blobsOf(plans.flatMap((p) => p._tag === "Write" ? [p.m] : [])))
        yield* changed(messageRows.map((r) => r.inbox_id))
      }

      const results: Array<Stored> = []
      for (let i = 0; i < plans.length; i++) {
        const plan = plans[i]!
        const message = plan._tag === "Write"
          ? inserted.get(plan.id)
          : plan._tag === "Stored"
          ? duplicates.find((d) => d.id === plan.id)
          : results[plan.index]?.message
        if (message === undefined) return yield* Effect.die(new Error(`message ${i} of the batch was not written`))
        results.push({ message, thread: after[i]!, duplicate: plan._tag !== "Write" })
      }
      return results
    }, (effect) => Effect.catchTag(effect, "SqlError", Effect.die))

    const lockThread = (threadId: string) => sql`SELECT 1 FROM threads WHERE id = ${threadId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie)

    return MessageStore.of({
      insert: (m) => Effect.map(insertMany([m]), (stored) => stored[0]!),
      insertMany,
      refreshThread,
      lockThread,
      relabel: (inboxId, ids, add, remove) =>
        sql.withTransaction(Effect.gen(function*() {
          const at = yield* now
          const threads = yield* sql<{ thread_id: string }>`SELECT DISTINCT thread_id FROM messages
            WHERE inbox_id = ${inboxId} AND id = ANY(${ids}::text[]) ORDER BY thread_id`
          // Thread rows are locked first, in a fixed order, so concurrent changes cannot deadlock.
          for (const t of threads) yield* lockThread(t.thread_id)
          // Added labels go after the present ones, each label once, in order of first appearance.
          const over = yield* sql<{ id: string; n: number }>`WITH changed AS (
              UPDATE messages SET labels = ARRAY(
                SELECT l FROM unnest(labels || ${add}::text[]) WITH ORDINALITY AS u(l, n)
                WHERE NOT (l = ANY(${remove}::text[])) GROUP BY l ORDER BY min(n)
              ), updated_at = ${at}
              WHERE inbox_id = ${inboxId} AND id = ANY(${ids}::text[])
              RETURNING id, cardinality(labels) AS n)
            SELECT id, n FROM changed WHERE n > ${MAX_LABELS} ORDER BY id LIMIT 1`
          // Only an addition can go over; failing here rolls the whole change back.
          if (add.length > 0 && over[0] !== undefined) {
            return yield* validationError([{
              path: ["add_labels"],
              message: `A message holds at most ${MAX_LABELS} labels; ${over[0].id} would hold ${over[0].n}`
            }])
          }
          for (const t of threads) yield* refreshThread(t.thread_id)
          yield* changed([inboxId])
        })).pipe(Effect.catchTag("SqlError", Effect.die)),
      purgeTrash: (before, limit) =>
        sql.withTransaction(Effect.gen(function*() {
          const doomed = yield* sql<{ id: string; thread_id: string }>`SELECT id, thread_id FROM messages
            WHERE 'trash' = ANY(labels) AND updated_at < ${before} ORDER BY updated_at LIMIT ${limit}`
          if (doomed.length === 0) return 0
          const threads = [...new Set(doomed.map((m) => m.thread_id))].sort()
          for (const t of threads) yield* lockThread(t)
          // Labels read before the locks may have changed since: only what is still trash goes.
          const deleted = yield* sql<{ id: string; inbox_id: string }>`DELETE FROM messages
            WHERE id = ANY(${doomed.map((m) => m.id)}::text[]) AND 'trash' = ANY(labels) AND updated_at < ${before} RETURNING id, inbox_id`
          for (const t of threads) yield* refreshThread(t)
          yield* changed(deleted.map((d) => d.inbox_id))
          return deleted.length
        })).pipe(Effect.orDie),
      deleteThread: (threadId) =>
        Effect.gen(function*() {
          yield* lockThread(threadId)
          const deleted = yield* sql<{ inbox_id: string }>`DELETE FROM messages WHERE thread_id = ${threadId} RETURNING inbox_id`
          yield* sql`DELETE FROM threads WHERE id = ${threadId}`
          yield* changed(deleted.map((d) => d.inbox_id))
        }).pipe(Effect.orDie),
      deleteMessage: (messageId, threadId) =>
        Effect.gen(function*() {
          yield* lockThread(threadId)
          const deleted = yield* sql<{ inbox_id: string }>`DELETE FROM messages WHERE id = ${messageId} RETURNING inbox_id`
          yield* refreshThread(threadId)
          yield* changed(deleted.map((d) => d.inbox_id))
        }).pipe(Effect.orDie),
      markSent: (messageId, at) => sql`UPDATE messages SET state = 'sent', updated_at = ${at} WHERE id = ${messageId}`,
      claimSending: (messageId, at, olderThan) =>
        sql`UPDATE messages SET updated_at = ${at}
          WHERE id = ${messageId} AND state = 'sending' ${olderThan === undefined ? sql`` : sql`AND updated_at < ${olderThan}`}
          RETURNING id, organization_id, pod_id, inbox_id, thread_id, raw_sha256, recipient_addresses, subject, "timestamp"`.pipe(Effect.orDie)
    })
  }))

  /** With the services it uses (Blobs); the ports are the caller's. */
  static readonly layer = MessageStore.layerNoDeps.pipe(Layer.provide(Blobs.layer))
}


const FactsRow = Schema.Struct({
  id: Schema.String,
  direction: Schema.Literals(["received", "sent"]),
  timestamp: Schema.Date,
  sender: Schema.String,
  recipients: Schema.Array(Schema.String),
  labels: Schema.Array(Schema.String),
  subject: Schema.String,
  preview: Schema.String,
  size: Schema.Number
})
