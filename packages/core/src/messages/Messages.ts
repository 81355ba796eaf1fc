/**
 * Messages of an inbox: list, get, label, delete, the raw message and attachments.
 *
 * Rules (spec: Message, Messages; docs/messages.md):
 * - lists are newest first (`ascending` for oldest first), keyset-paged on (timestamp, id);
 *   filters combine: `labels` (all must match), `from` (the sender's address, or `@domain`),
 *   `to` (a recipient's address), `subject` (contains, case-insensitive), `before` and
 *   `after` (timestamps); `labels` is a list or comma-separated, and `labels`, `from`, `to`
 *   and `subject` may each be a JSON array of strings, all of which must match (the form the
 *   agentmail SDK sends);
 * - messages labelled spam, blocked, unauthenticated or trash appear only when that label
 *   is requested, and a key with a permission list needs the matching `label_*_read` to
 *   request it (403 missing_permission);
 * - labels change only by the label operations here (and by arrival or sending): `received`,
 *   `sent`, `draft` and `scheduled` are the service's own and cannot be added or removed
 *   (400 validation_error); a label both added and removed is 400 too; a message holds at
 *   most MAX_LABELS (model.ts), checked by MessageStore.relabel; the thread's labels follow;
 * - batch operations take 1 to 100 ids and answer the messages found, in the order given.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Permission } from "../access/permissions.ts"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { Blobs, type SignedDownload } from "../blobs/Blobs.ts"
import type { NotFound, ValidationError } from "../errors/errors.ts"
import type { Download } from "../shared/download.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { compact, Id, Line } from "../shared/fields.ts"
import { AscendingField, BooleanParam, isTrue, keyset, type Page, PageQueryFields, toPageBy } from "../shared/pagination.ts"
import { decodeRows, escapeLike } from "../shared/sql.ts"
import { now } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { downloadOf } from "../blobs/download.ts"
import { attachmentReader } from "../blobs/parts.ts"
import { MailParser } from "../mail/parse.ts"
import { MessageStore } from "./MessageStore.ts"
import {
  AttachmentMeta,
  FullMessageRow,
  HIDDEN_LABELS,
  type HiddenLabel,
  jsonListOf,
  Labels,
  labelsOf,
  LabelsFilter,
  type Message,
  MessageRow,
  type MessageSummary,
  SUMMARY_COLUMNS,
  SYSTEM_LABELS,
  toAttachmentMeta,
  toMessage,
  toSummary
} from "./model.ts"

/**
 * A filter that may hold several values (all must match): a list (MCP, the toolkit's
 * arrays), or one string holding a JSON array (the SDK's query form) or the value itself.
 */
export const FilterValues = (max: number) => Schema.Union([Schema.Array(Line(max)).check(Schema.isMaxLength(50)), Line(4096)])

export const TimeParam = Line(64).check(Schema.makeFilter((s: string) => !Number.isNaN(Date.parse(s)) || "Expected an ISO 8601 timestamp"))
export { BooleanParam }

export const MAX_BATCH = 100

/**
 * `include_spam`, `include_blocked`, `include_unauthenticated`, `include_trash` (the agentmail
 * SDK's list parameters): list the messages with that hidden label too, beside the others,
 * where asking for the label lists only those (docs/client-compatibility.md). Each needs the
 * label's read permission, as asking for the label does.
 */
export const IncludeHiddenFields = {
  include_spam: Schema.optionalKey(BooleanParam),
  include_blocked: Schema.optionalKey(BooleanParam),
  include_unauthenticated: Schema.optionalKey(BooleanParam),
  include_trash: Schema.optionalKey(BooleanParam)
}

/** The hidden labels a query's include_* parameters let through. */
export const includedHidden = (query: { readonly [K in keyof typeof IncludeHiddenFields]?: boolean | "true" | "false" | undefined }): ReadonlyArray<HiddenLabel> =>
  HIDDEN_LABELS.filter((label) => {
    const value = query[`include_${label}`]
    return value === true || value === "true"
  })

export const ListMessagesQuery = Schema.Struct({
  ...PageQueryFields,
  ...IncludeHiddenFields,
  labels: Schema.optionalKey(LabelsFilter),
  from: Schema.optionalKey(FilterValues(320)),
  to: Schema.optionalKey(FilterValues(320)),
  subject: Schema.optionalKey(FilterValues(998)),
  before: Schema.optionalKey(TimeParam),
  after: Schema.optionalKey(TimeParam),
  ...AscendingField
})
export type ListMessagesQuery = typeof ListMessagesQuery.Type

export const LabelChanges = {
  add_labels: Schema.optionalKey(Labels),
  remove_labels: Schema.optionalKey(Labels)
}
export const UpdateLabelsInput = Schema.Struct(LabelChanges)
export type UpdateLabelsInput = typeof UpdateLabelsInput.Type

const MessageIds = Schema.Array(Id).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_BATCH))
export const BatchGetInput = Schema.Struct({ message_ids: MessageIds })
export const BatchUpdateInput = Schema.Struct({ message_ids: MessageIds, ...LabelChanges })

export const BatchResult = Schema.Struct({ count: Schema.Number, messages: Schema.Array(Schema.Unknown) })

export const RawInfo = Schema.Struct({
  message_id: Schema.String,
  size: Schema.Number,
  expires_at: Schema.String,
  download_url: Schema.String
})

export const AttachmentInfo = Schema.Struct({
  ...AttachmentMeta.fields,
  download_url: Schema.String,
  expires_at: Schema.String
})

/** The values of a filter that may hold several (all must match). */
export const filterValuesOf = (value: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  value === undefined ? [] : (typeof value === "string" ? jsonListOf(value) ?? [value] : value).filter((v) => v.trim().length > 0)

const HIDDEN_PERMISSION: Readonly<Record<HiddenLabel, Permission>> = {
  spam: "label_spam_read",
  blocked: "label_blocked_read",
  unauthenticated: "label_unauthenticated_read",
  trash: "label_trash_read"
}

/** The hidden labels among `labels`. */
export const hiddenAmong = (labels: ReadonlyArray<string>): ReadonlyArray<HiddenLabel> =>
  labels.filter((l): l is HiddenLabel => (HIDDEN_LABELS as ReadonlyArray<string>).includes(l))

/** Asking for hidden labels needs their label_*_read permissions: an operation's `permissionsFor`. */
export const hiddenLabelPermissions = (labels: ReadonlyArray<string>): ReadonlyArray<Permission> =>
  hiddenAmong(labels).map((l) => HIDDEN_PERMISSION[l])

/** Checks a label change: no system label, nothing both added and removed. */
/** Labels set by the service among `labels`, each an issue at `field`. */
const systemLabelIssues = (labels: ReadonlyArray<string>, field: string) =>
  labels.filter((l) => (SYSTEM_LABELS as ReadonlyArray<string>).includes(l)).map((l) => ({ path: [field], message: `"${l}" is set by the service and cannot be added` }))

/** Labels a message is sent with (`labels` of a send): caller-defined ones, as PATCH may add. */
export const checkSendLabels = (labels: ReadonlyArray<string> | undefined): Effect.Effect<ReadonlyArray<string>, ValidationError> => {
  const add = labelsOf(labels)
  const issues = systemLabelIssues(add, "labels")
  return issues.length > 0 ? Effect.fail(validationError(issues)) : Effect.succeed(add)
}

export const checkLabelChanges = (input: UpdateLabelsInput): Effect.Effect<{ readonly add: ReadonlyArray<string>; readonly remove: ReadonlyArray<string> }, ValidationError> => {
  const add = labelsOf(input.add_labels)
  const remove = labelsOf(input.remove_labels)
  const issues = [
    ...systemLabelIssues(add, "add_labels"),
    ...remove.filter((l) => (SYSTEM_LABELS as ReadonlyArray<string>).includes(l)).map((l) => ({ path: ["remove_labels"], message: `"${l}" is set by the service and cannot be removed` })),
    ...add.filter((l) => remove.includes(l)).map((l) => ({ path: ["add_labels"], message: `"${l}" is both added and removed` }))
  ]
  return issues.length > 0 ? Effect.fail(validationError(issues)) : Effect.succeed({ add, remove })
}

/**
 * The condition that hides messages with hidden labels the request did not ask for; `columns`
 * names the flag and the labels where a statement reads them from other tables (search reads
 * the flag from message_search, which carries it).
 */
export const hiddenCondition = (
  sql: SqlClient.SqlClient,
  requested: ReadonlyArray<HiddenLabel>,
  columns: { readonly hidden: string; readonly labels: string } = { hidden: "hidden", labels: "labels" }
) => {
  const notRequested = HIDDEN_LABELS.filter((l) => !requested.includes(l))
  return requested.length === 0
    ? sql`AND NOT ${sql.literal(columns.hidden)}`
    : sql`AND NOT (${sql.literal(columns.labels)} && ${notRequested}::text[])`
}


export class Messages extends Context.Service<Messages, {
  list(principal: Principal, inboxId: string, query: ListMessagesQuery): Effect.Effect<Page<MessageSummary>, NotFound | ValidationError>
  get(principal: Principal, inboxId: string, messageId: string): Effect.Effect<Message, NotFound>
  /** The stored row of a visible message (full form), for replies, forwards and downloads. */
  find(principal: Principal, inboxId: string, messageId: string): Effect.Effect<FullMessageRow, NotFound>
  update(principal: Principal, inboxId: string, messageId: string, input: UpdateLabelsInput): Effect.Effect<Message, NotFound | ValidationError>
  delete(principal: Principal, inboxId: string, messageId: string): Effect.Effect<void, NotFound>
  batchGet(principal: Principal, inboxId: string, ids: ReadonlyArray<string>): Effect.Effect<{ readonly count: number; readonly messages: ReadonlyArray<MessageSummary> }, NotFound>
  batchUpdate(principal: Principal, inboxId: string, ids: ReadonlyArray<string>, input: UpdateLabelsInput): Effect.Effect<{ readonly count: number; readonly messages: ReadonlyArray<MessageSummary> }, NotFound | ValidationError>
  raw(principal: Principal, inboxId: string, messageId: string): Effect.Effect<{ readonly message_id: string; readonly size: number } & SignedDownload, NotFound>
  rawDownload(principal: Principal, inboxId: string, messageId: string): Effect.Effect<Download, NotFound>
  attachment(principal: Principal, inboxId: string, messageId: string, attachmentId: string): Effect.Effect<AttachmentMeta & SignedDownload, NotFound>
  attachmentDownload(principal: Principal, inboxId: string, messageId: string, attachmentId: string): Effect.Effect<Download, NotFound>
}>()("inbox/Messages") {
  static readonly layerNoDeps = Layer.effect(Messages, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inboxes = yield* Inboxes
    const store = yield* MessageStore
    const blobs = yield* Blobs
    const parser = yield* MailParser

    const summaryColumns = sql.literal(SUMMARY_COLUMNS.map((c) => `"${c}"`).join(", "))
    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    const find = Effect.fn("Messages.find")(function*(principal: Principal, inboxId: string, messageId: string) {
      const inbox = yield* inboxes.find(principal, inboxId)
      const rows = yield* sql`SELECT * FROM messages WHERE id = ${messageId} AND inbox_id = ${inbox.id} AND ${visible(principal)}`.pipe(
        decodeRows(FullMessageRow)
      )
      if (rows[0] === undefined) return yield* notFound("Message", messageId)
      return rows[0]
    })

    const summaries = (inboxId: string, ids: ReadonlyArray<string>) =>
      sql`SELECT ${summaryColumns} FROM messages WHERE inbox_id = ${inboxId} AND id = ANY(${ids}::text[])`.pipe(
        decodeRows(MessageRow),
        Effect.map((rows) => {
          const byId = new Map(rows.map((r) => [r.id, r]))
          return ids.flatMap((id) => {
            const row = byId.get(id)
            return row === undefined ? [] : [toSummary(row)]
          })
        })
      )

    const attachmentOf = (row: FullMessageRow, attachmentId: string) => {
      const found = row.attachments.find((a) => a.attachment_id === attachmentId)
      return found === undefined ? Effect.fail(notFound("Attachment", attachmentId)) : Effect.succeed(found)
    }

    return Messages.of({
      find,
      list: Effect.fn("Messages.list")(function*(principal, inboxId, query) {
        const inbox = yield* inboxes.find(principal, inboxId)
        const labels = labelsOf(query.labels)
        // Their permissions were checked when the operation admitted the query (permissionsFor).
        const requested = [...new Set([...hiddenAmong(labels), ...includedHidden(query)])]
        const ascending = isTrue(query.ascending)
        const page = yield* keyset(sql, query, { column: "timestamp", ascending })
        // from, to and subject each take one value or a JSON array of values, all of which must match.
        const filters = [
          ...filterValuesOf(query.from).map((from) =>
            from.startsWith("@")
              ? sql`sender_address LIKE ${`%${escapeLike(from.trim().toLowerCase())}`}`
              : sql`sender_address = ${from.trim().toLowerCase()}`
          ),
          ...filterValuesOf(query.to).map((to) => sql`recipient_addresses @> ARRAY[${to.trim().toLowerCase()}]::text[]`),
          ...filterValuesOf(query.subject).map((subject) => sql`subject ILIKE ${`%${escapeLike(subject)}%`}`)
        ]
        const rows = yield* sql`SELECT ${summaryColumns} FROM messages WHERE inbox_id = ${inbox.id}
          ${hiddenCondition(sql, requested)}
          ${labels.length === 0 ? sql`` : sql`AND labels @> ${labels}::text[]`}
          ${filters.length === 0 ? sql`` : sql`AND ${sql.and(filters)}`}
          ${query.before === undefined ? sql`` : sql`AND "timestamp" < ${new Date(query.before)}`}
          ${query.after === undefined ? sql`` : sql`AND "timestamp" > ${new Date(query.after)}`}
          ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(MessageRow))
        return toPageBy(rows, page.limit, toSummary, (r) => ({ at: r.timestamp, id: r.id }))
      }),
      get: Effect.fn("Messages.get")(function*(principal, inboxId, messageId) {
        return toMessage(yield* find(principal, inboxId, messageId))
      }),
      update: Effect.fn("Messages.update")(function*(principal, inboxId, messageId, input) {
        const { add, remove } = yield* checkLabelChanges(input)
        const row = yield* find(principal, inboxId, messageId)
        yield* store.relabel(row.inbox_id, [row.id], add, remove)
        return toMessage(yield* find(principal, inboxId, messageId))
      }),
      delete: Effect.fn("Messages.delete")(function*(principal, inboxId, messageId) {
        const row = yield* find(principal, inboxId, messageId)
        yield* sql.withTransaction(store.deleteMessage(row.id, row.thread_id)).pipe(Effect.orDie)
      }),
      batchGet: Effect.fn("Messages.batchGet")(function*(principal, inboxId, ids) {
        const inbox = yield* inboxes.find(principal, inboxId)
        const messages = yield* summaries(inbox.id, ids)
        return { count: messages.length, messages }
      }),
      batchUpdate: Effect.fn("Messages.batchUpdate")(function*(principal, inboxId, ids, input) {
        const { add, remove } = yield* checkLabelChanges(input)
        const inbox = yield* inboxes.find(principal, inboxId)
        yield* store.relabel(inbox.id, ids, add, remove)
        const messages = yield* summaries(inbox.id, ids)
        return { count: messages.length, messages }
      }),
      raw: Effect.fn("Messages.raw")(function*(principal, inboxId, messageId) {
        const row = yield* find(principal, inboxId, messageId)
        const signed = yield* blobs.downloadUrl({ sha256: row.raw_sha256, contentType: "message/rfc822", filename: `${row.id}.eml` })
        return { message_id: row.id, size: row.size, ...signed }
      }),
      rawDownload: Effect.fn("Messages.rawDownload")(function*(principal, inboxId, messageId) {
        const row = yield* find(principal, inboxId, messageId)
        return downloadOf(blobs, { sha256: row.raw_sha256, contentType: "message/rfc822", filename: `${row.id}.eml`, size: row.size })
      }),
      attachment: Effect.fn("Messages.attachment")(function*(principal, inboxId, messageId, attachmentId) {
        const row = yield* find(principal, inboxId, messageId)
        const a = yield* attachmentOf(row, attachmentId)
        const signed = yield* blobs.downloadUrl({
          ...(a.part === undefined ? { sha256: a.sha256 } : { sha256: row.raw_sha256, part: a.part }),
          contentType: a.content_type,
          ...(a.filename === undefined ? {} : { filename: a.filename })
        })
        return compact({ ...toAttachmentMeta(a), ...signed }) as AttachmentMeta & SignedDownload
      }),
      attachmentDownload: Effect.fn("Messages.attachmentDownload")(function*(principal, inboxId, messageId, attachmentId) {
        const row = yield* find(principal, inboxId, messageId)
        const a = yield* attachmentOf(row, attachmentId)
        const reader = yield* attachmentReader(row.raw_sha256, a).pipe(Effect.provideService(Blobs, blobs), Effect.provideService(MailParser, parser))
        return downloadOf(reader, { sha256: a.sha256, contentType: a.content_type, size: a.size, ...(a.filename === undefined ? {} : { filename: a.filename }) })
      })
    })
  }))

  /** With the services it uses (Blobs, Inboxes, MailParser, MessageStore); the ports are the caller's. */
  static readonly layer = Messages.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Blobs.layer, Inboxes.layer, MailParser.layer, MessageStore.layer)))
}

