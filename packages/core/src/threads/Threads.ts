/**
 * Threads at organization, pod and inbox level (spec: Thread, Threads).
 *
 * Lists are ordered by newest activity (the newest message's time), keyset-paged; a thread
 * whose every message carries a hidden label (spam, blocked, unauthenticated, trash) is left
 * out unless the request asks for that label (`labels`, all of which the thread's labels
 * must hold), with the same `label_*_read` rule as message lists; `exclude_labels` leaves out
 * the threads that hold any of its labels (a label of any message of the thread). `senders`,
 * `recipients` and `subject` (the agentmail SDK's filters) narrow by substring, `before` and
 * `after` by last activity, and `ascending` lists oldest activity first. The detail holds every
 * message, oldest first, in full form (`count` and `limit` equal their number, so
 * `messages.length == message_count`), and the attachments of all of them; asked for a page
 * (`limit` or `page_token`, as the SDK's thread get may), it holds the newest `limit` messages
 * not yet seen, still oldest first, with `next_page_token` for the older ones. A label change
 * applies to every message of the thread; deleting a thread deletes its messages.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import type { MissingPermission, NotFound, ValidationError } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { checkLabelChanges, FilterValues, filterValuesOf, hiddenAmong, IncludeHiddenFields, includedHidden, TimeParam, type UpdateLabelsInput } from "../messages/Messages.ts"
import { MessageStore } from "../messages/MessageStore.ts"
import {
  FullMessageRow,
  labelsOf,
  LabelsFilter,
  type Thread,
  ThreadRow,
  type ThreadSummary,
  toAttachmentMeta,
  toMessage,
  toThreadSummary
} from "../messages/model.ts"
import { Pods } from "../pods/Pods.ts"
import { AscendingField, isTrue, keyset, type Page, PageQueryFields, toPageBy } from "../shared/pagination.ts"
import { decodeRows, escapeLike } from "../shared/sql.ts"

export const ListThreadsQuery = Schema.Struct({
  ...PageQueryFields,
  ...IncludeHiddenFields,
  labels: Schema.optionalKey(LabelsFilter),
  // The agentmail SDK's filters: each one value or a JSON array of values, matched as a
  // case-insensitive substring of a sender, a recipient or the subject; all must match.
  senders: Schema.optionalKey(FilterValues(320)),
  recipients: Schema.optionalKey(FilterValues(320)),
  subject: Schema.optionalKey(FilterValues(998)),
  before: Schema.optionalKey(TimeParam),
  after: Schema.optionalKey(TimeParam),
  ...AscendingField,
  // Threads with any of these labels are left out: the dashboard's Inbox is the threads not
  // labelled `archived` (an extension of the spec's list, which only narrows by labels).
  exclude_labels: Schema.optionalKey(LabelsFilter)
})
export type ListThreadsQuery = typeof ListThreadsQuery.Type

/** A page of a thread's messages (the SDK's `limit` and `pageToken` on a thread get); none asks for the whole thread. */
export const GetThreadQuery = Schema.Struct(PageQueryFields)
export type GetThreadQuery = typeof GetThreadQuery.Type

/** Where a thread route points: the whole organization, one pod, or one inbox (id or email). */
export interface ThreadPlace {
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

export class Threads extends Context.Service<Threads, {
  list(principal: Principal, place: ThreadPlace, query: ListThreadsQuery): Effect.Effect<Page<ThreadSummary>, NotFound | ValidationError | MissingPermission>
  get(principal: Principal, place: ThreadPlace, threadId: string, query?: GetThreadQuery): Effect.Effect<Thread, NotFound | ValidationError>
  update(principal: Principal, place: ThreadPlace, threadId: string, input: UpdateLabelsInput): Effect.Effect<ThreadSummary, NotFound | ValidationError>
  delete(principal: Principal, place: ThreadPlace, threadId: string): Effect.Effect<void, NotFound>
}>()("inbox/Threads") {
  static readonly layerNoDeps = Layer.effect(Threads, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inboxes = yield* Inboxes
    const pods = yield* Pods
    const store = yield* MessageStore

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    /** The SQL condition for the place, after checking the pod or inbox is visible (404 otherwise). */
    const placeCondition = Effect.fn("Threads.place")(function*(principal: Principal, place: ThreadPlace) {
      if (place.inboxId !== undefined) {
        const inbox = yield* inboxes.find(principal, place.inboxId)
        if (place.podId !== undefined && inbox.pod_id !== place.podId) return yield* notFound("Inbox", place.inboxId)
        return sql`inbox_id = ${inbox.id}`
      }
      if (place.podId !== undefined) {
        const pod = yield* pods.find(principal, place.podId)
        return sql`pod_id = ${pod.id}`
      }
      return sql`TRUE`
    })

    const find = Effect.fn("Threads.find")(function*(principal: Principal, place: ThreadPlace, threadId: string) {
      const condition = yield* placeCondition(principal, place)
      const rows = yield* sql`SELECT * FROM threads WHERE id = ${threadId} AND ${condition} AND ${visible(principal)}`.pipe(decodeRows(ThreadRow))
      if (rows[0] === undefined) return yield* notFound("Thread", threadId)
      return rows[0]
    })

    return Threads.of({
      list: Effect.fn("Threads.list")(function*(principal, place, query) {
        const condition = yield* placeCondition(principal, place)
        const labels = labelsOf(query.labels)
        const excluded = labelsOf(query.exclude_labels)
        // Their permissions were checked when the operation admitted the query (permissionsFor).
        const requested = [...new Set([...hiddenAmong(labels), ...includedHidden(query)])]
        const page = yield* keyset(sql, query, { column: "last_at", ascending: isTrue(query.ascending) })
        const contains = (column: "senders" | "recipients", value: string) =>
          sql`EXISTS (SELECT 1 FROM unnest(${sql(column)}) AS v WHERE v ILIKE ${`%${escapeLike(value.trim())}%`})`
        const filters = [
          ...filterValuesOf(query.senders).map((v) => contains("senders", v)),
          ...filterValuesOf(query.recipients).map((v) => contains("recipients", v)),
          ...filterValuesOf(query.subject).map((v) => sql`subject ILIKE ${`%${escapeLike(v.trim())}%`}`),
          ...(query.before === undefined ? [] : [sql`last_at < ${new Date(query.before)}`]),
          ...(query.after === undefined ? [] : [sql`last_at > ${new Date(query.after)}`])
        ]
        // A thread is listed unless all of its messages are hidden, or it is asked for by a hidden label it has.
        const hidden = requested.length === 0 ? sql`AND NOT hidden` : sql`AND (NOT hidden OR labels && ${requested}::text[])`
        const rows = yield* sql`SELECT * FROM threads WHERE ${condition} AND ${visible(principal)} ${hidden}
          ${labels.length === 0 ? sql`` : sql`AND labels @> ${labels}::text[]`}
          ${excluded.length === 0 ? sql`` : sql`AND NOT (labels && ${excluded}::text[])`}
          ${filters.length === 0 ? sql`` : sql`AND ${sql.and(filters)}`}
          ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(ThreadRow))
        return toPageBy(rows, page.limit, toThreadSummary, (r) => ({ at: r.last_at, id: r.id }))
      }),
      get: Effect.fn("Threads.get")(function*(principal, place, threadId, query = {}) {
        const thread = yield* find(principal, place, threadId)
        const detail = (messages: ReadonlyArray<FullMessageRow>, limit: number, next?: string) => ({
          ...toThreadSummary(thread),
          attachments: messages.flatMap((m) => m.attachments.map(toAttachmentMeta)),
          count: messages.length,
          limit,
          messages: messages.map(toMessage),
          ...(next === undefined ? {} : { next_page_token: next })
        })
        if (query.limit === undefined && query.page_token === undefined) {
          const messages = yield* sql`SELECT * FROM messages WHERE thread_id = ${thread.id} ORDER BY "timestamp", id`.pipe(
            decodeRows(FullMessageRow)
          )
          return detail(messages, messages.length)
        }
        // A page: the newest messages before the token, shown oldest first like the whole thread.
        const page = yield* keyset(sql, query, { column: "timestamp" })
        const rows = yield* sql`SELECT * FROM messages WHERE thread_id = ${thread.id} ${page.after} ${page.orderAndLimit}`.pipe(
          decodeRows(FullMessageRow)
        )
        const paged = toPageBy(rows, page.limit, (r) => r, (r) => ({ at: r.timestamp, id: r.id }))
        return detail([...paged.items].reverse(), page.limit, paged.next_page_token)
      }),
      update: Effect.fn("Threads.update")(function*(principal, place, threadId, input) {
        const { add, remove } = yield* checkLabelChanges(input)
        const thread = yield* find(principal, place, threadId)
        const ids = yield* sql<{ id: string }>`SELECT id FROM messages WHERE thread_id = ${thread.id}`.pipe(Effect.orDie)
        yield* store.relabel(thread.inbox_id, ids.map((r) => r.id), add, remove)
        return toThreadSummary(yield* find(principal, place, threadId))
      }),
      delete: Effect.fn("Threads.delete")(function*(principal, place, threadId) {
        const thread = yield* find(principal, place, threadId)
        yield* sql.withTransaction(store.deleteThread(thread.id)).pipe(Effect.orDie)
      })
    })
  }))

  /** With the services it uses (Inboxes, MessageStore, Pods); the ports are the caller's. */
  static readonly layer = Threads.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Inboxes.layer, MessageStore.layer, Pods.layer)))
}

