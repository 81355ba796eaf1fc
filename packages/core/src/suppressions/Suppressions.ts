/**
 * Suppressions (spec: Suppression): addresses that bounced hard or complained. Sends to a
 * suppressed address are refused with 422 recipient_suppressed until the suppression is
 * deleted. They are created by the mail provider's events (a hard bounce, a complaint) and
 * by the operator (`inboxctl suppressions add`).
 *
 * A suppression belongs to the organization: a send from any of its inboxes to that
 * address is refused, whichever inbox's mail bounced. It remembers where it came from
 * (`inbox_id`, `thread_id`, `source_message_id`, and the inbox's pod), and that decides
 * who sees it: an organization key sees every suppression; a pod key those recorded for
 * its pod's inboxes; an inbox key those recorded for its inbox; one the operator added
 * (no inbox) only organization keys. Addresses are stored in their normal form, lower
 * case whole, so lookups are plain equality on the primary key (organization_id, address).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import type { NotFound, ValidationError } from "../errors/errors.ts"
import { compact, normaliseAddress } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"

export const SUPPRESSION_REASONS = ["bounce", "complaint", "manual"] as const
export type SuppressionReason = typeof SUPPRESSION_REASONS[number]

export interface NewSuppression {
  readonly address: string
  readonly reason: SuppressionReason
  readonly source_message_id?: string
  /** Found from the inbox when only inbox_id is given. */
  readonly pod_id?: string
  readonly inbox_id?: string
  readonly thread_id?: string
}

/** An address in the form suppressions are stored and looked up in: normalised, lower case whole. */
export const suppressionAddress = (address: string): string => (normaliseAddress(address) ?? address.trim()).toLowerCase()

export const SuppressionRow = Schema.Struct({
  organization_id: Schema.String,
  address: Schema.String,
  reason: Schema.Literals(SUPPRESSION_REASONS),
  source_message_id: Schema.NullOr(Schema.String),
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  thread_id: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type SuppressionRow = typeof SuppressionRow.Type

// A page is keyed by (created_at, address): the address stands in for the id newestFirst pages by.
const PagedRow = Schema.Struct({ ...SuppressionRow.fields, id: Schema.String })

/** A suppression as the API shows it; fields never set are absent. */
export const Suppression = Schema.Struct({
  address: Schema.String,
  reason: Schema.Literals(SUPPRESSION_REASONS),
  source_message_id: Schema.optionalKey(Schema.String),
  inbox_id: Schema.optionalKey(Schema.String),
  thread_id: Schema.optionalKey(Schema.String),
  created_at: Timestamp
})
export type Suppression = typeof Suppression.Type

export const toSuppression = (row: SuppressionRow): Suppression =>
  compact({
    address: row.address,
    reason: row.reason,
    source_message_id: row.source_message_id,
    inbox_id: row.inbox_id,
    thread_id: row.thread_id,
    created_at: iso(row.created_at)
  })

export const ListSuppressionsQuery = Schema.Struct(PageQueryFields)

export class Suppressions extends Context.Service<Suppressions, {
  /** The given addresses that are suppressed in the organization (lower-cased). */
  suppressed(organizationId: string, addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>>
  /** Records a suppression; an address already suppressed keeps its first record. */
  add(organizationId: string, suppression: NewSuppression): Effect.Effect<void>
  list(principal: Principal, query: typeof ListSuppressionsQuery.Type): Effect.Effect<Page<Suppression>, ValidationError>
  /** `address` in its normal form (suppressionAddress). */
  delete(principal: Principal, address: string): Effect.Effect<void, NotFound>
}>()("inbox/Suppressions") {
  static readonly layerNoDeps = Layer.effect(Suppressions, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    return Suppressions.of({
      suppressed: Effect.fn("Suppressions.suppressed")(function*(organizationId, addresses) {
        if (addresses.length === 0) return []
        const given = addresses.map((a) => ({ key: a.toLowerCase(), address: suppressionAddress(a) }))
        const rows = yield* sql<{ address: string }>`SELECT address FROM suppressions
          WHERE organization_id = ${organizationId} AND address IN ${sql.in([...new Set(given.map((g) => g.address))])}`.pipe(Effect.orDie)
        const found = new Set(rows.map((r) => r.address))
        return [...new Set(given.filter((g) => found.has(g.address)).map((g) => g.key))]
      }),
      add: Effect.fn("Suppressions.add")(function*(organizationId, suppression) {
        const inbox = suppression.inbox_id ?? null
        // First record wins: a later bounce of the same address changes nothing, so the
        // suppression keeps pointing at the message that caused it.
        yield* sql`INSERT INTO suppressions (organization_id, address, reason, source_message_id, pod_id, inbox_id, thread_id, created_at)
          VALUES (${organizationId}, ${suppressionAddress(suppression.address)}, ${suppression.reason},
            ${suppression.source_message_id ?? null},
            COALESCE(${suppression.pod_id ?? null}::text, (SELECT pod_id FROM inboxes WHERE id = ${inbox})),
            ${inbox}, ${suppression.thread_id ?? null}, ${yield* now})
          ON CONFLICT (organization_id, address) DO NOTHING`.pipe(Effect.orDie)
      }),
      list: Effect.fn("Suppressions.list")(function*(principal, query) {
        const page = yield* newestFirst(sql, query)
        const rows = yield* sql`SELECT * FROM (SELECT *, address AS id FROM suppressions WHERE ${visible(principal)}) s
          WHERE TRUE ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(PagedRow))
        return toPage(rows, page.limit, toSuppression)
      }),
      delete: Effect.fn("Suppressions.delete")(function*(principal, address) {
        const deleted = yield* sql`DELETE FROM suppressions WHERE address = ${address} AND ${visible(principal)}
          RETURNING address`.pipe(Effect.orDie)
        if (deleted.length === 0) return yield* notFound("Suppression", address)
      })
    })
  }))

  static readonly layer = Suppressions.layerNoDeps
}
