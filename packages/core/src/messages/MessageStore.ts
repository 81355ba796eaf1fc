/**
 * MessageStore: writes messages into an inbox, places them in threads and keeps each
 * thread's summary in step. Arrival (inbound/), sending (sending/) and label changes all
 * write through here, so a thread is consistent with its messages whichever path changed it.
 *
 * Contract: every method must run inside the caller's transaction; the caller commits the
 * message, its thread, its event and its blobs together.
 *
 * `insert` (one message into one inbox):
 * 1. Takes transaction-scoped advisory locks on the message's own Message-ID (exclusive)
 *    and on every id it names as a parent (shared), per inbox, in a fixed order, so no
 *    deadlock. A reply and its parent arriving at once on two processes meet on the
 *    parent's lock: one commits first and the other sees it, so they end in one thread; two
 *    deliveries of the same message meet on its own lock, so the second sees the first and
 *    is a duplicate; replies to one parent do not wait for each other.
 * 2. A message already stored in the inbox (same direction and Message-ID) is a duplicate:
 *    nothing is written and the stored one is answered (a forwarder's retry).
 * 3. The thread is decided by the mail engine's `decideThread` over the rows it asks for
 *    (or given by the caller: a reply joins its parent's thread); threads a late parent
 *    ties together are merged into the chosen one.
 * 4. The thread row is created or extended and the message row inserted, in one statement
 *    (its trigger takes references on the blobs), then the bytes are stored (Blobs.ts
 *    explains why in that order).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { Blobs } from "../blobs/Blobs.ts"
import { decideThread, type ThreadDecision } from "../mail/thread.ts"
import { Ids } from "../platform/Ids.ts"
import { decodeRows } from "../shared/sql.ts"
import { now } from "../shared/time.ts"
import { extend, type MessageFacts, start, summarise, type ThreadFacts } from "./aggregate.ts"
import { FullMessageRow, type StoredAttachment, ThreadRow } from "./model.ts"

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
  readonly attachments: ReadonlyArray<{ readonly meta: Omit<StoredAttachment, "attachment_id" | "sha256">; readonly sha256: string; readonly bytes: Uint8Array }>
  readonly raw: { readonly sha256: string; readonly bytes: Uint8Array }
  readonly labels: ReadonlyArray<string>
  /** A reply joins this thread (its parent's); otherwise the thread is decided from headers. */
  readonly thread_id?: string
  /** The forward route: always a new thread. */
  readonly is_forward?: boolean
  readonly open_token?: string
}

export interface Stored {
  readonly message: FullMessageRow
  readonly thread: ThreadRow
  /** true when the inbox already had this message: nothing was written. */
  readonly duplicate: boolean
}


export class MessageStore extends Context.Service<MessageStore, {
  insert(message: NewMessage): Effect.Effect<Stored>
  /** The thread's summary recomputed from its messages; the thread is deleted when it has none. */
  refreshThread(threadId: string): Effect.Effect<ThreadRow | undefined>
  /** Locks the thread row until the transaction ends (label changes and deletes take it first). */
  lockThread(threadId: string): Effect.Effect<void>
  /**
   * Adds and removes labels on messages of one inbox, in its own transaction, and refreshes
   * their threads: the one way labels change after arrival.
   */
  relabel(inboxId: string, messageIds: ReadonlyArray<string>, add: ReadonlyArray<string>, remove: ReadonlyArray<string>): Effect.Effect<void>
  /**
   * Retention: deletes up to `limit` messages labelled trash whose labels last changed before
   * `before`, in one transaction that locks their threads (in a fixed order) and refreshes
   * them; answers how many. Their blobs go with the sweeper, as for any deleted message.
   */
  purgeTrash(before: Date, limit: number): Effect.Effect<number>
}>()("inbox/MessageStore") {
  static readonly layer = Layer.effect(MessageStore, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const blobs = yield* Blobs

    // Exclusive on the message's own id, shared on the ids it names as parents: a message and
    // its reply (or a second delivery of the same message) still take turns, while replies to
    // one parent (a thread everyone answers, a list's mail) no longer wait for each other.
    // Their threads are decided from stored parents and children only, never from siblings,
    // and a thread they join is locked by its row. One statement, in the order of the hashes,
    // whatever the mode: two transactions never wait for each other in a circle.
    const lockIds = (inboxId: string, own: string, parents: ReadonlyArray<string>) => {
      const keys = [own, ...parents].map((id) => `${inboxId} ${id}`)
      const exclusive = keys.map((_, i) => i === 0)
      return sql`SELECT CASE WHEN own THEN pg_advisory_xact_lock(h)::text ELSE pg_advisory_xact_lock_shared(h)::text END
        FROM (SELECT hashtextextended(k, 0) AS h, bool_or(own) AS own FROM unnest(${keys}::text[], ${exclusive}::boolean[]) AS u (k, own)
          GROUP BY 1 ORDER BY 1) AS locks`
    }

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
     * the whole inbox (140 ms at 100,000 messages; 0.1 ms like this). Children are found by
     * the Message-ID alone (few messages anywhere name it) and only then kept to the inbox:
     * `OFFSET 0` keeps the planner from ANDing in an index of the inbox's messages, which
     * it did (a bitmap over the whole inbox, 1.1 ms per delivery at 2,000 messages, growing
     * with the inbox).
     */
    const related = (m: NewMessage, candidates: ReadonlyArray<string>) => {
      const threading = m.thread_id === undefined
      return sql<RelatedRow>`SELECT 'same' AS kind, id, thread_id, rfc_message_id, "timestamp" FROM messages
          WHERE inbox_id = ${m.inbox.id} AND direction = ${m.direction} AND rfc_message_id = ${m.rfc_message_id}
        ${threading && candidates.length > 0 ? sql`UNION ALL SELECT 'parent', id, thread_id, rfc_message_id, "timestamp" FROM messages
          WHERE inbox_id = ${m.inbox.id} AND direction = ANY(ARRAY['received', 'sent']) AND rfc_message_id = ANY(${candidates}::text[])` : sql``}
        ${threading ? sql`UNION ALL SELECT 'child', id, thread_id, rfc_message_id, "timestamp" FROM (
            SELECT id, thread_id, rfc_message_id, "timestamp", inbox_id FROM messages WHERE parents @> ARRAY[${m.rfc_message_id}]::text[] OFFSET 0
          ) AS naming WHERE inbox_id = ${m.inbox.id}` : sql``}`
    }

    const decide = (m: NewMessage, rows: ReadonlyArray<RelatedRow>): ThreadDecision | { readonly _tag: "Given"; readonly thread_id: string } => {
      if (m.thread_id !== undefined) return { _tag: "Given" as const, thread_id: m.thread_id }
      const known = rows.filter((r) => r.kind === "parent")
      // Oldest reply first, as the engine's rule wants ("joins the thread of its oldest reply").
      const children = rows.filter((r) => r.kind === "child")
        .sort((a, b) => new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
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

    const insert = Effect.fn("MessageStore.insert")(function*(m: NewMessage) {
      const parents = [...new Set([...(m.in_reply_to === undefined ? [] : [m.in_reply_to]), ...(m.references ?? [])])]
      yield* lockIds(m.inbox.id, m.rfc_message_id, parents)
      const around = yield* related(m, parents)
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
      const attachments: Array<StoredAttachment> = []
      for (const a of m.attachments) attachments.push({ ...a.meta, attachment_id: yield* ids.make("att"), sha256: a.sha256 })
      const labels = [...new Set(m.labels)]
      const factsAt = (timestamp: Date): MessageFacts => ({
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

      const decision = decide(m, around)
      let at = clock
      let threadId: string
      let thread: ThreadRow | undefined
      // The thread's own write goes into the message's INSERT (a delivery's round trips are
      // most of its cost); its row is known without reading it back.
      let threadWrite: Statement.Fragment | undefined
      if (decision._tag === "New") {
        threadId = yield* ids.make("thr")
        thread = {
          id: threadId,
          organization_id: m.inbox.organization_id,
          pod_id: m.inbox.pod_id,
          inbox_id: m.inbox.id,
          ...threadColumns(start(factsAt(at))),
          created_at: at,
          updated_at: at
        }
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
        // A thread's messages keep their order even within one millisecond (or with clocks
        // a little apart between processes): a new message is never older than the newest.
        if (at.getTime() <= current[0].last_at.getTime()) at = new Date(current[0].last_at.getTime() + 1)
        if (merged.length > 0) {
          thread = current[0]
        } else {
          const t = extend(current[0], factsAt(at))
          thread = { ...current[0], ...threadColumns(t), updated_at: at }
          threadWrite = updateThread(threadId, t, at)
        }
      }

      const [row] = yield* sql`${threadWrite === undefined ? sql`` : sql`WITH thread_write AS (${threadWrite})`}
        INSERT INTO messages ${sql.insert({
        id,
        organization_id: m.inbox.organization_id,
        pod_id: m.inbox.pod_id,
        inbox_id: m.inbox.id,
        thread_id: threadId,
        direction: m.direction,
        state: m.state,
        rfc_message_id: m.rfc_message_id,
        in_reply_to: m.in_reply_to ?? null,
        references: m.references ?? null,
        parents,
        labels,
        timestamp: at,
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
        extracted_text: m.extracted_text ?? null,
        extracted_html: m.extracted_html ?? null,
        headers: JSON.stringify(m.headers),
        attachments: JSON.stringify(attachments),
        raw_sha256: m.raw.sha256,
        open_token: m.open_token ?? null,
        created_at: at,
        updated_at: at
      } as never)} RETURNING *`.pipe(decodeRows(FullMessageRow))
      if (row === undefined) return yield* Effect.die(new Error("insert returned no row"))
      if (decision._tag === "Join" && decision.merge_thread_ids.length > 0) thread = yield* refreshThread(threadId)
      if (thread === undefined) return yield* Effect.die(new Error(`thread ${threadId} vanished`))

      yield* blobs.store([m.raw, ...m.attachments.map((a) => ({ sha256: a.sha256, bytes: a.bytes }))])
      return { message: row, thread, duplicate: false } satisfies Stored
    }, (effect) => Effect.catchTag(effect, "SqlError", Effect.die))

    const lockThread = (threadId: string) => sql`SELECT 1 FROM threads WHERE id = ${threadId} FOR UPDATE`.pipe(Effect.asVoid, Effect.orDie)

    return MessageStore.of({
      insert,
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
          yield* sql`UPDATE messages SET labels = ARRAY(
              SELECT l FROM unnest(labels || ${add}::text[]) WITH ORDINALITY AS u(l, n)
              WHERE NOT (l = ANY(${remove}::text[])) GROUP BY l ORDER BY min(n)
            ), updated_at = ${at}
            WHERE inbox_id = ${inboxId} AND id = ANY(${ids}::text[])`
          for (const t of threads) yield* refreshThread(t.thread_id)
        })).pipe(Effect.orDie),
      purgeTrash: (before, limit) =>
        sql.withTransaction(Effect.gen(function*() {
          const doomed = yield* sql<{ id: string; thread_id: string }>`SELECT id, thread_id FROM messages
            WHERE 'trash' = ANY(labels) AND updated_at < ${before} ORDER BY updated_at LIMIT ${limit}`
          if (doomed.length === 0) return 0
          const threads = [...new Set(doomed.map((m) => m.thread_id))].sort()
          for (const t of threads) yield* lockThread(t)
          // Labels read before the locks may have changed since: only what is still trash goes.
          const deleted = yield* sql<{ id: string }>`DELETE FROM messages
            WHERE id = ANY(${doomed.map((m) => m.id)}::text[]) AND 'trash' = ANY(labels) AND updated_at < ${before} RETURNING id`
          for (const t of threads) yield* refreshThread(t)
          return deleted.length
        })).pipe(Effect.orDie)
    })
  }))
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
