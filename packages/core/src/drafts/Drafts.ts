/**
 * Drafts: unsent messages of an inbox, sent on demand or at `send_at` (spec: Draft, Drafts,
 * States and transitions; docs/sending.md, "Drafts").
 *
 * Rules:
 * - a draft holds any send field (to, cc, bcc, reply_to, subject, text, html, track_opens,
 *   attachments, headers), `send_at`, and a reply context (`reply_to_message_id`, with
 *   `reply_all`); only fields ever set are shown; PATCH sets fields, `null` clears one, and
 *   `send_at: null` unschedules;
 * - labels are `draft`, plus `scheduled` while scheduled; `send_status` is `scheduled`,
 *   `sending` or `failed` (then `failure` keeps the error's code and message);
 * - sending goes through Sending.send, so every send rule is checked once, in one place,
 *   at the time of sending; a sent draft is consumed (a later GET is 404);
 * - sending claims the draft first (one claimant wins): a second send, an edit or a delete
 *   meanwhile is 409 draft_sending. The send carries the Idempotency-Key `draft_<id>`, so a
 *   sender that died after recording the message is resumed (same message, never a second)
 *   by whoever sends the draft next once its claim ran out;
 * - a scheduled draft is a durable job (`draft.send`, keyed by the draft and its schedule)
 *   written in the transaction that schedules it; it runs once across processes and after a
 *   restart (jobs/Jobs.ts). At firing time every send rule applies; a paused inbox or any
 *   other refusal marks the draft failed, never retried. A job whose schedule was replaced
 *   (reschedule, unschedule) finds another token on the draft and does nothing.
 */
import { createHash } from "node:crypto"
import { Blobs, sha256Of, type SignedDownload } from "../blobs/Blobs.ts"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { type ApiError, DraftSending, type NotFound, type ValidationError, wireOf } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { JobFailed, Jobs } from "../jobs/Jobs.ts"
import { RETRY_POLICIES } from "../jobs/policies.ts"
import { AttachmentInput, attachmentKind, SendInput } from "../mail/compose.ts"
import { preview } from "../mail/parse-core.ts"
import { Messages, TimeParam } from "../messages/Messages.ts"
import { Ids } from "../platform/Ids.ts"
import { Pods } from "../pods/Pods.ts"
import { IDEMPOTENCY_LEASE, type SendAnswer } from "../sending/Idempotency.ts"
import { Sending } from "../sending/Sending.ts"
import { ClientId, compact, Id } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"

export const DRAFT_JOB = "draft.send"
/** How long a sender holds a draft before another may take the send over (it died). */
export const DRAFT_SENDING_LEASE = IDEMPOTENCY_LEASE

const sendFields = SendInput.fields
const Recipients = Schema.Array(Schema.String)

export const CreateDraftInput = Schema.Struct({
  ...sendFields,
  /** The caller's id for the draft: a create repeated with it answers the same draft (migration 0041). */
  client_id: Schema.optionalKey(ClientId),
  send_at: Schema.optionalKey(TimeParam),
  reply_to_message_id: Schema.optionalKey(Id),
  reply_all: Schema.optionalKey(Schema.Boolean)
})
export type CreateDraftInput = typeof CreateDraftInput.Type

const nullable = <S extends Schema.Top>(s: S) => Schema.optionalKey(Schema.NullOr(s))

const SendRecipients = Schema.Union([Schema.String, Recipients])

export const UpdateDraftInput = Schema.Struct({
  to: nullable(SendRecipients),
  cc: nullable(SendRecipients),
  bcc: nullable(SendRecipients),
  reply_to: nullable(SendRecipients),
  subject: nullable(Schema.String),
  text: nullable(Schema.String),
  html: nullable(Schema.String),
  track_opens: nullable(Schema.Boolean),
  attachments: nullable(Schema.Array(AttachmentInput)),
  headers: nullable(Schema.Record(Schema.String, Schema.String)),
  send_at: nullable(TimeParam),
  reply_to_message_id: nullable(Id),
  reply_all: nullable(Schema.Boolean)
})
export type UpdateDraftInput = typeof UpdateDraftInput.Type

export const ListDraftsQuery = Schema.Struct(PageQueryFields)

/**
 * A draft's attachment as stored in its row. Given inline, its bytes go to the blob store
 * (as a message's attachments do) and the row keeps `sha256`, `size` and an `attachment_id`
 * made when it was given; the database counts the draft's references to the bytes
 * (migration 0046), so however the draft goes (sent, deleted, with its inbox) they are
 * released. Given by `url`, it is fetched when the draft is sent. Rows written before
 * 0046 hold the base64 `content` itself: they are read as they are, and converted the
 * first time one of their attachments is asked for by id or the draft's attachments change.
 */
const StoredDraftAttachment = Schema.Struct({
  ...AttachmentInput.fields,
  attachment_id: Schema.optionalKey(Schema.String),
  sha256: Schema.optionalKey(Schema.String),
  size: Schema.optionalKey(Schema.Number)
})
type StoredDraftAttachment = typeof StoredDraftAttachment.Type

/** The stored send fields: recipients always as lists. */
const Content = Schema.Struct({
  ...SendInput.fields,
  to: Schema.optionalKey(Recipients),
  cc: Schema.optionalKey(Recipients),
  bcc: Schema.optionalKey(Recipients),
  reply_to: Schema.optionalKey(Recipients),
  attachments: Schema.optionalKey(Schema.Array(StoredDraftAttachment))
})
type Content = typeof Content.Type

/**
 * A draft's attachment as shown: its metadata, with `attachment_id` and `size` (of bytes
 * given inline), the fields the agentmail SDK reads on every attachment
 * (docs/client-compatibility.md); `url` when it was given by URL. The bytes are fetched by
 * id (`drafts.attachment`, a signed `download_url`), not repeated in the draft.
 */
export const DraftAttachment = Schema.Struct({
  ...AttachmentInput.fields,
  attachment_id: Schema.String,
  size: Schema.optionalKey(Schema.Number)
})
export type DraftAttachment = typeof DraftAttachment.Type

/** One attachment of a draft by id: its metadata and a download URL (signed, or the `url` it was given by). */
export const DraftAttachmentInfo = Schema.Struct({
  attachment_id: Schema.String,
  filename: Schema.optionalKey(Schema.String),
  content_type: Schema.String,
  content_disposition: Schema.Literals(["inline", "attachment"]),
  content_id: Schema.optionalKey(Schema.String),
  size: Schema.optionalKey(Schema.Number),
  url: Schema.optionalKey(Schema.String),
  download_url: Schema.String,
  expires_at: Schema.optionalKey(Schema.String)
})
export type DraftAttachmentInfo = typeof DraftAttachmentInfo.Type

/** The id of an attachment of a row written before 0046 (bytes inline): derived, so it stays until converted, and after. */
const legacyAttachmentId = (draftId: string, i: number, a: StoredDraftAttachment) =>
  `att_${createHash("sha256").update(`${draftId}\n${i}\n${a.filename ?? ""}\n${a.content ?? a.url ?? ""}`).digest("hex").slice(0, 24)}`

const draftAttachments = (draftId: string, content: Content): ReadonlyArray<DraftAttachment> =>
  (content.attachments ?? []).map((a, i) => {
    const { sha256: _sha, attachment_id, size, ...shown } = a
    return compact({
      ...shown,
      attachment_id: attachment_id ?? legacyAttachmentId(draftId, i, a),
      size: size ?? (a.content === undefined ? undefined : Buffer.from(a.content, "base64").length)
    }) as DraftAttachment
  })

export const Draft = Schema.Struct({
  inbox_id: Schema.String,
  draft_id: Schema.String,
  client_id: Schema.optionalKey(Schema.String),
  labels: Schema.Array(Schema.String),
  ...Content.fields,
  attachments: Schema.optionalKey(Schema.Array(DraftAttachment)),
  reply_to_message_id: Schema.optionalKey(Schema.String),
  reply_all: Schema.optionalKey(Schema.Boolean),
  preview: Schema.String,
  send_status: Schema.optionalKey(Schema.Literals(["scheduled", "sending", "failed"])),
  send_at: Schema.optionalKey(Timestamp),
  failure: Schema.optionalKey(Schema.Struct({ code: Schema.String, message: Schema.String })),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Draft = typeof Draft.Type

const DraftRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  inbox_id: Schema.String,
  content: Json(Content),
  client_id: Schema.NullOr(Schema.String),
  reply_to_message_id: Schema.NullOr(Schema.String),
  reply_all: Schema.Boolean,
  send_at: Schema.NullOr(Schema.Date),
  send_status: Schema.NullOr(Schema.Literals(["scheduled", "sending", "failed"])),
  schedule_token: Schema.NullOr(Schema.String),
  sending_claim: Schema.NullOr(Schema.String),
  sending_until: Schema.NullOr(Schema.Date),
  status_before: Schema.NullOr(Schema.String),
  failure_code: Schema.NullOr(Schema.String),
  failure_message: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
type DraftRow = typeof DraftRow.Type

const JobPayload = Schema.Struct({ draft_id: Schema.String, token: Schema.String })

const CONTENT_KEYS = ["to", "cc", "bcc", "reply_to", "subject", "text", "html", "track_opens", "attachments", "headers"] as const
const RECIPIENT_KEYS: ReadonlySet<string> = new Set(["to", "cc", "bcc", "reply_to"])

const asList = (v: string | ReadonlyArray<string>) => (typeof v === "string" ? [v] : v)

/** Applies the given send fields to the stored ones: a value sets, null clears. */
const mergeContent = (content: Content, input: Partial<Record<typeof CONTENT_KEYS[number], unknown>>): Content => {
  const next: Record<string, unknown> = { ...content }
  for (const key of CONTENT_KEYS) {
    if (!Object.hasOwn(input, key)) continue
    const value = input[key]
    if (value === null || value === undefined) delete next[key]
    else next[key] = RECIPIENT_KEYS.has(key) ? asList(value as string | ReadonlyArray<string>) : value
  }
  return next as Content
}

/** Inline bytes to move to the blob store, with the content that names them by hash. */
interface Stored {
  readonly content: Content
  readonly blobs: ReadonlyArray<{ readonly sha256: string; readonly bytes: Uint8Array }>
}

/**
 * Moves the bytes of inline attachments out of the content: each gets its `sha256`, `size`
 * and an id (`idOf`); attachments by URL get an id too. The caller writes the row, then
 * stores the bytes in the same transaction (blobs/Blobs.ts, the order that keeps them safe).
 */
const storeInline = (content: Content, idOf: (a: StoredDraftAttachment, i: number) => Effect.Effect<string>) =>
  Effect.gen(function*() {
    if (content.attachments === undefined) return { content, blobs: [] } as Stored
    const blobs: Array<{ sha256: string; bytes: Uint8Array }> = []
    const attachments: Array<StoredDraftAttachment> = []
    for (const [i, a] of content.attachments.entries()) {
      const attachment_id = a.attachment_id ?? (yield* idOf(a, i))
      if (a.content === undefined) {
        attachments.push({ ...a, attachment_id })
        continue
      }
      const { content: base64, ...rest } = a
      const bytes = Buffer.from(base64, "base64")
      const sha256 = sha256Of(bytes)
      blobs.push({ sha256, bytes })
      attachments.push({ ...rest, attachment_id, sha256, size: bytes.length })
    }
    return { content: { ...content, attachments }, blobs } as Stored
  })

const hasInline = (content: Content) => (content.attachments ?? []).some((a) => a.content !== undefined)

const previewOf = (content: Content) =>
  preview(content.text ?? (content.html === undefined ? "" : content.html.replace(/<[^>]*>/g, " ")))

export const toDraft = (row: DraftRow): Draft =>
  compact({
    inbox_id: row.inbox_id,
    draft_id: row.id,
    client_id: row.client_id,
    labels: row.send_status === "scheduled" ? ["draft", "scheduled"] : ["draft"],
    ...row.content,
    attachments: row.content.attachments === undefined ? undefined : draftAttachments(row.id, row.content),
    reply_to_message_id: row.reply_to_message_id,
    reply_all: row.reply_to_message_id === null ? undefined : row.reply_all,
    preview: previewOf(row.content),
    send_status: row.send_status,
    send_at: row.send_at === null ? undefined : iso(row.send_at),
    failure: row.failure_code === null ? undefined : { code: row.failure_code, message: row.failure_message ?? "" },
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }) as Draft

/** An organization-wide principal for scheduled sends: the draft's owner scheduled it, the job sends it. */
const systemPrincipal = (organizationId: string): Principal => ({ organizationId, scope: { type: "organization" } })

type Claimed = { readonly _tag: "Claimed"; readonly row: DraftRow; readonly claim: string } | { readonly _tag: "Busy"; readonly until: Date } | { readonly _tag: "Gone" }

export class Drafts extends Context.Service<Drafts, {
  create(principal: Principal, inboxId: string, input: CreateDraftInput): Effect.Effect<Draft, NotFound | ValidationError>
  /** In the organization, one pod (`podId`) or one inbox. */
  list(principal: Principal, inboxId: string | undefined, query: typeof ListDraftsQuery.Type, podId?: string): Effect.Effect<Page<Draft>, NotFound | ValidationError>
  get(principal: Principal, inboxId: string | undefined, draftId: string, podId?: string): Effect.Effect<Draft, NotFound>
  /** One attachment of a draft, by id, with a download URL. */
  attachment(principal: Principal, inboxId: string | undefined, draftId: string, attachmentId: string, podId?: string): Effect.Effect<DraftAttachmentInfo, NotFound>
  update(principal: Principal, inboxId: string, draftId: string, input: UpdateDraftInput): Effect.Effect<Draft, NotFound | ValidationError | DraftSending>
  delete(principal: Principal, inboxId: string, draftId: string): Effect.Effect<void, NotFound | DraftSending>
  send(principal: Principal, inboxId: string, draftId: string): Effect.Effect<SendAnswer, ApiError>
}>()("inbox/Drafts") {
  static readonly layerNoDeps = Layer.effect(Drafts, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const inboxes = yield* Inboxes
    const pods = yield* Pods
    const messages = yield* Messages
    const sending = yield* Sending
    const jobs = yield* Jobs
    const blobs = yield* Blobs
    const newAttachmentId = () => ids.make("att")

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    /** The condition of a pod's drafts (a pod the caller cannot see is 404), or none. */
    const inPod = (principal: Principal, podId: string | undefined) =>
      podId === undefined ? Effect.succeed(sql``) : Effect.map(pods.find(principal, podId), (pod) => sql`AND pod_id = ${pod.id}`)

    const find = Effect.fn("Drafts.find")(function*(principal: Principal, inboxId: string | undefined, draftId: string, lock = false, podId?: string) {
      const inbox = inboxId === undefined ? undefined : yield* inboxes.find(principal, inboxId)
      const pod = yield* inPod(principal, podId)
      const rows = yield* sql`SELECT * FROM drafts WHERE id = ${draftId} AND ${visible(principal)} ${pod}
        ${inbox === undefined ? sql`` : sql`AND inbox_id = ${inbox.id}`} ${lock ? sql`FOR UPDATE` : sql``}`.pipe(decodeRows(DraftRow))
      if (rows[0] === undefined) return yield* notFound("Draft", draftId)
      return rows[0]
    })

    /** The reply context must name a message of the draft's inbox the caller can see. */
    const checkReplyContext = (principal: Principal, inboxId: string, messageId: string | null | undefined) =>
      messageId === null || messageId === undefined
        ? Effect.void
        : messages.find(principal, inboxId, messageId).pipe(
          Effect.asVoid,
          Effect.catchTag("NotFound", () =>
            Effect.fail(validationError([{ path: ["reply_to_message_id"], message: `Message ${messageId} was not found in this inbox` }])))
        )

    /** Writes the draft's schedule job, in the caller's transaction. */
    const scheduleJob = (draftId: string, token: string, runAt: Date, suffix = "") =>
      jobs.enqueue({ kind: DRAFT_JOB, key: `${draftId}:${token}${suffix}`, runAt, payload: { draft_id: draftId, token } })

    const create = Effect.fn("Drafts.create")(function*(principal: Principal, inboxId: string, input: CreateDraftInput) {
      const inbox = yield* inboxes.find(principal, inboxId)
      yield* checkReplyContext(principal, inbox.id, input.reply_to_message_id)
      const at = yield* now
      const id = yield* ids.make("draft")
      const sendAt = input.send_at === undefined ? null : new Date(input.send_at)
      const token = sendAt === null ? null : yield* ids.make("req")
      const stored = yield* storeInline(mergeContent({}, input), newAttachmentId)
      const content = stored.content
      return yield* sql.withTransaction(Effect.gen(function*() {
        const clientId = input.client_id ?? null
        const rows = yield* sql`INSERT INTO drafts ${
          sql.insert({
            id,
            organization_id: inbox.organization_id,
            pod_id: inbox.pod_id,
            inbox_id: inbox.id,
            client_id: clientId,
            content: JSON.stringify(content),
            reply_to_message_id: input.reply_to_message_id ?? null,
            reply_all: input.reply_all === true,
            send_at: sendAt,
            send_status: sendAt === null ? null : "scheduled",
            schedule_token: token,
            created_at: at,
            updated_at: at
          })
        } ${clientId === null ? sql`` : sql`ON CONFLICT (inbox_id, client_id) WHERE client_id IS NOT NULL DO NOTHING`}
        RETURNING *`.pipe(decodeRows(DraftRow))
        if (rows[0] === undefined) {
          // This client_id made a draft in this inbox already: that one is the answer.
          const existing = yield* sql`SELECT * FROM drafts WHERE inbox_id = ${inbox.id} AND client_id = ${clientId}`.pipe(decodeRows(DraftRow))
          return toDraft(existing[0]!)
        }
        yield* blobs.store(stored.blobs)
        if (sendAt !== null && token !== null) yield* scheduleJob(id, token, sendAt)
        return toDraft(rows[0])
      })).pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const beingSent = (id: string) => new DraftSending({ message: `Draft ${id} is being sent.`, fix: "Wait for the send to finish; a sent draft is gone." })
    /**
     * A draft is being sent while a sender's claim on it is live. A claim whose lease ran out
     * is a sender that died: the draft is the user's again, to edit or delete (else a crash
     * mid-send left it refusing both for ever, and only sending it would free it), with the
     * status it had before that claim.
     */
    const sendingNow = (row: DraftRow, at: Date) =>
      row.send_status === "sending" && row.sending_until !== null && row.sending_until > at
    const refuseWhileSending = (row: DraftRow) =>
      Effect.flatMap(now, (at) => sendingNow(row, at) ? Effect.fail(beingSent(row.id)) : Effect.void)
    const statusOf = (row: DraftRow) =>
      row.send_status === "sending" ? row.status_before as DraftRow["send_status"] : row.send_status

    const update = Effect.fn("Drafts.update")(function*(principal: Principal, inboxId: string, draftId: string, input: UpdateDraftInput) {
      const inbox = yield* inboxes.find(principal, inboxId)
      yield* checkReplyContext(principal, inbox.id, input.reply_to_message_id)
      return yield* sql.withTransaction(Effect.gen(function*() {
        const row = yield* find(principal, inbox.id, draftId, true)
        yield* refuseWhileSending(row)
        const at = yield* now
        // New attachments are stored; kept ones (even inline ones of a row from before 0046) stay as they are.
        const stored = Object.hasOwn(input, "attachments")
          ? yield* storeInline(mergeContent(row.content, input), newAttachmentId)
          : { content: mergeContent(row.content, input), blobs: [] }
        const content = stored.content
        const reschedule = Object.hasOwn(input, "send_at")
        const sendAt = reschedule ? (input.send_at === null || input.send_at === undefined ? null : new Date(input.send_at)) : row.send_at
        const token = reschedule ? (sendAt === null ? null : yield* ids.make("req")) : row.schedule_token
        const status = reschedule ? (sendAt === null ? null : "scheduled") : statusOf(row)
        const replyTo = Object.hasOwn(input, "reply_to_message_id") ? input.reply_to_message_id ?? null : row.reply_to_message_id
        const replyAll = Object.hasOwn(input, "reply_all") ? input.reply_all === true : row.reply_all
        const rows = yield* sql`UPDATE drafts SET content = ${JSON.stringify(content)}::jsonb, send_at = ${sendAt},
            send_status = ${status}, schedule_token = ${token}, reply_to_message_id = ${replyTo}, reply_all = ${replyAll},
            sending_claim = NULL, sending_until = NULL,
            failure_code = ${reschedule ? null : row.failure_code}, failure_message = ${reschedule ? null : row.failure_message},
            updated_at = ${at}
          WHERE id = ${row.id} RETURNING *`.pipe(decodeRows(DraftRow))
        yield* blobs.store(stored.blobs)
        if (reschedule) {
          // The old schedule's job goes; one already running finds the new token and does nothing.
          if (row.schedule_token !== null) yield* jobs.cancel(DRAFT_JOB, `${row.id}:${row.schedule_token}`)
          if (sendAt !== null && token !== null) yield* scheduleJob(row.id, token, sendAt)
        }
        return toDraft(rows[0]!)
      })).pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const remove = Effect.fn("Drafts.delete")(function*(principal: Principal, inboxId: string, draftId: string) {
      const inbox = yield* inboxes.find(principal, inboxId)
      yield* sql.withTransaction(Effect.gen(function*() {
        const row = yield* find(principal, inbox.id, draftId, true)
        yield* refuseWhileSending(row)
        yield* sql`DELETE FROM drafts WHERE id = ${row.id}`
        if (row.schedule_token !== null) yield* jobs.cancel(DRAFT_JOB, `${row.id}:${row.schedule_token}`)
      })).pipe(Effect.catchTag("SqlError", Effect.die))
    })

    /**
     * Takes the draft for sending: one claimant wins. `scheduled` (a job's token) claims only
     * a draft still scheduled under that token and due. A claim whose sender died (its
     * lease ran out) is taken over.
     */
    const claim = (draftId: string, scheduled: { readonly token: string } | undefined) =>
      Effect.gen(function*() {
        const at = yield* now
        const token = yield* ids.make("req")
        const until = new Date(at.getTime() + Duration.toMillis(DRAFT_SENDING_LEASE))
        // One statement: the row lock and the conditions, rechecked by PostgreSQL on the row
        // a concurrent claimant left, decide alone (a second claimant finds it live). A
        // taken-over claim keeps the status the first sender saw.
        const claimed = yield* sql`UPDATE drafts SET send_status = 'sending', sending_claim = ${token}, sending_until = ${until},
            status_before = CASE WHEN send_status = 'sending' THEN status_before ELSE send_status END
          WHERE id = ${draftId}
            AND (send_status IS DISTINCT FROM 'sending' OR sending_until IS NULL OR sending_until <= ${at})
            ${scheduled === undefined ? sql`` : sql`AND schedule_token = ${scheduled.token}
              AND send_status IN ('scheduled', 'sending') AND send_at <= ${at}`}
          RETURNING *`.pipe(decodeRows(DraftRow))
        if (claimed[0] !== undefined) return { _tag: "Claimed", row: claimed[0], claim: token } as Claimed
        // Not claimed: gone, being sent, or (scheduled) no longer due under that schedule.
        const rows = yield* sql<{ send_status: string | null; sending_until: Date | null }>`SELECT send_status, sending_until
          FROM drafts WHERE id = ${draftId}`
        const row = rows[0]
        if (row === undefined) return { _tag: "Gone" } as Claimed
        // A live claim is busy. A claim whose lease ran out would have been taken over, unless
        // (scheduled) it belongs to another schedule: then this schedule is gone, and a job
        // that looked again at that lease's end would find it so at once, again and again.
        if (row.send_status === "sending" && row.sending_until !== null && row.sending_until.getTime() > at.getTime()) {
          return { _tag: "Busy", until: row.sending_until } as Claimed
        }
        // On demand, the only refusal is a live claim: one that ended since is still "being sent".
        return scheduled === undefined ? { _tag: "Busy", until: at } as Claimed : { _tag: "Gone" } as Claimed
      }).pipe(Effect.orDie)

    /** The send fields with each stored attachment's bytes back inline, as Sending takes them. */
    const inflate = (content: Content) =>
      Effect.gen(function*() {
        if (content.attachments === undefined) return content as SendInput
        const attachments: Array<AttachmentInput> = []
        for (const a of content.attachments) {
          const { sha256, size: _size, attachment_id: _id, ...rest } = a
          attachments.push(sha256 === undefined ? rest : { ...rest, content: Buffer.from(yield* blobs.readAll(sha256)).toString("base64") })
        }
        return { ...content, attachments } as SendInput
      })

    /**
     * A draft's attachment by id. A row from before migration 0046 (bytes inline) is
     * converted first, under its lock: its bytes go to the blob store, keeping the ids shown.
     */
    const attachment = Effect.fn("Drafts.attachment")(function*(principal: Principal, inboxId: string | undefined, draftId: string, attachmentId: string, podId?: string) {
      let row = yield* find(principal, inboxId, draftId, false, podId)
      if (hasInline(row.content)) {
        row = yield* sql.withTransaction(Effect.gen(function*() {
          const locked = (yield* sql`SELECT * FROM drafts WHERE id = ${row.id} FOR UPDATE`.pipe(decodeRows(DraftRow)))[0]
          if (locked === undefined) return yield* notFound("Draft", draftId)
          if (!hasInline(locked.content)) return locked
          const stored = yield* storeInline(locked.content, (a, i) => Effect.succeed(legacyAttachmentId(locked.id, i, a)))
          const rows = yield* sql`UPDATE drafts SET content = ${JSON.stringify(stored.content)}::jsonb WHERE id = ${locked.id}
            RETURNING *`.pipe(decodeRows(DraftRow))
          yield* blobs.store(stored.blobs)
          return rows[0]!
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }
      const shown = draftAttachments(row.id, row.content)
      const i = shown.findIndex((a) => a.attachment_id === attachmentId)
      if (i < 0) return yield* notFound("Attachment", attachmentId)
      const a = row.content.attachments![i]!
      const meta = {
        attachment_id: attachmentId,
        filename: a.filename,
        ...attachmentKind(a, a.filename),
        content_id: a.content_id,
        size: a.size
      }
      if (a.sha256 === undefined) return compact({ ...meta, url: a.url, download_url: a.url ?? "" }) as DraftAttachmentInfo
      const signed: SignedDownload = yield* blobs.downloadUrl({ sha256: a.sha256, contentType: meta.content_type, ...(a.filename === undefined ? {} : { filename: a.filename }) })
      return compact({ ...meta, ...signed }) as DraftAttachmentInfo
    })

    /** Sends a claimed draft through Sending; consumes it on success. */
    const sendClaimed = (row: DraftRow, claimToken: string, byItsJob = false) =>
      Effect.gen(function*() {
        const kind = row.reply_to_message_id === null ? "send" : row.reply_all ? "reply_all" : "reply"
        const answer = yield* sending.send(systemPrincipal(row.organization_id), {
          kind,
          inboxId: row.inbox_id,
          ...(row.reply_to_message_id === null ? {} : { messageId: row.reply_to_message_id }),
          input: yield* inflate(row.content),
          idempotencyKey: `draft_${row.id}`
        })
        yield* sql`DELETE FROM drafts WHERE id = ${row.id} AND sending_claim = ${claimToken}`.pipe(Effect.orDie)
        // Sent on demand: its schedule's job, if any, is not needed. Sent by that job: the job
        // is running, and a key has one job at a time, so there is none to cancel.
        if (row.schedule_token !== null && !byItsJob) yield* jobs.cancel(DRAFT_JOB, `${row.id}:${row.schedule_token}`)
        return answer
      })

    const send = Effect.fn("Drafts.send")(function*(principal: Principal, inboxId: string, draftId: string) {
      const row = yield* find(principal, inboxId, draftId)
      const claimed = yield* claim(row.id, undefined)
      if (claimed._tag === "Gone") return yield* notFound("Draft", draftId)
      if (claimed._tag === "Busy") return yield* beingSent(row.id)
      const restore = Effect.gen(function*() {
        // Refused now: the draft is as it was. A scheduled one whose time has come gets a fresh job.
        const rows = yield* sql`UPDATE drafts SET send_status = status_before, sending_claim = NULL, sending_until = NULL,
            status_before = NULL
          WHERE id = ${claimed.row.id} AND sending_claim = ${claimed.claim} RETURNING *`.pipe(decodeRows(DraftRow))
        const back = rows[0]
        if (back?.send_status === "scheduled" && back.schedule_token !== null && back.send_at !== null) {
          yield* scheduleJob(back.id, back.schedule_token, back.send_at, `:${yield* ids.make("req")}`)
        }
      }).pipe(Effect.orDie)
      return yield* sendClaimed(claimed.row, claimed.claim).pipe(
        Effect.onExit((exit) => exit._tag === "Failure" ? restore : Effect.void)
      )
    })

    /** The `draft.send` job: sends the draft if its schedule still stands; a refusal marks it failed. */
    const runScheduled = (payload: typeof JobPayload.Type) =>
      Effect.gen(function*() {
        const claimed = yield* claim(payload.draft_id, { token: payload.token })
        if (claimed._tag === "Gone") return
        if (claimed._tag === "Busy") {
          // Someone is sending it on demand: look again when their claim runs out (their send
          // may be refused, or they may die); by then the draft is gone or claimable.
          yield* scheduleJob(payload.draft_id, payload.token, claimed.until, `:${yield* ids.make("req")}`)
          return
        }
        const fail = (code: string, message: string) =>
          Effect.gen(function*() {
            const at = yield* now
            yield* sql`UPDATE drafts SET send_status = 'failed', failure_code = ${code}, failure_message = ${message},
                sending_claim = NULL, sending_until = NULL, status_before = NULL, updated_at = ${at}
              WHERE id = ${claimed.row.id} AND sending_claim = ${claimed.claim}`.pipe(Effect.orDie)
            return yield* new JobFailed({ message: `${code}: ${message}`, retry: false })
          })
        yield* sendClaimed(claimed.row, claimed.claim, true).pipe(
          Effect.catch((error: ApiError) => fail(wireOf(error).code, error.message)),
          Effect.catchDefect(() => fail("internal_error", "The send failed unexpectedly."))
        )
      })

    yield* jobs.register({
      kind: DRAFT_JOB,
      policy: RETRY_POLICIES.once,
      concurrency: 8,
      run: (job) =>
        Schema.decodeUnknownEffect(JobPayload)(job.payload).pipe(
          Effect.mapError((e) => new JobFailed({ message: `bad payload: ${e.message}`, retry: false })),
          Effect.flatMap(runScheduled)
        )
    })

    return Drafts.of({
      create,
      list: Effect.fn("Drafts.list")(function*(principal, inboxId, query, podId) {
        const inbox = inboxId === undefined ? undefined : yield* inboxes.find(principal, inboxId)
        const pod = yield* inPod(principal, podId)
        const page = yield* newestFirst(sql, query)
        const rows = yield* sql`SELECT * FROM drafts WHERE ${visible(principal)} ${pod}
          ${inbox === undefined ? sql`` : sql`AND inbox_id = ${inbox.id}`} ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(DraftRow))
        return toPage(rows, page.limit, toDraft)
      }),
      get: Effect.fn("Drafts.get")(function*(principal, inboxId, draftId, podId) {
        return toDraft(yield* find(principal, inboxId, draftId, false, podId))
      }),
      attachment,
      update,
      delete: remove,
      send
    })
  }))

  /** With the services it uses (Blobs, Inboxes, Jobs, Messages, Pods, Sending); the ports are the caller's. */
  static readonly layer = Drafts.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Blobs.layer, Inboxes.layer, Jobs.layer, Messages.layer, Pods.layer, Sending.layer)))
}
