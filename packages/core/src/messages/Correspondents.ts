/**
 * Correspondents of an inbox: the people it received mail from or sent mail to, for the
 * compose box's recipient suggestions (docs/messages.md, "Correspondents").
 *
 * The database keeps them in `correspondents` as messages are inserted (migration 0047):
 * the newest name seen, the newest message's time and the number of messages, leaving out
 * hidden mail and the inbox's own address. A suggestion reads that table alone, newest
 * first, so its cost follows the inbox's number of correspondents, not of messages. `q`
 * matches, case-insensitively, the start of the address or of any word of the name.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../access/Principal.ts"
import type { NotFound, ValidationError } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Text } from "../shared/fields.ts"
import { IntegerParam } from "../shared/pagination.ts"
import { decodeRows, escapeLike } from "../shared/sql.ts"
import { iso } from "../shared/time.ts"

export const DEFAULT_CORRESPONDENTS = 10
export const MAX_CORRESPONDENTS = 50

export const CorrespondentsQuery = Schema.Struct({
  /** What the user typed so far; empty or absent: the most recent correspondents. */
  q: Schema.optionalKey(Text(320)),
  limit: Schema.optionalKey(IntegerParam(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_CORRESPONDENTS }))))
})
export type CorrespondentsQuery = typeof CorrespondentsQuery.Type

export const Correspondent = Schema.Struct({
  address: Schema.String,
  name: Schema.NullOr(Schema.String),
  last_seen_at: Schema.String,
  messages: Schema.Int
})
export type Correspondent = typeof Correspondent.Type

export const CorrespondentsAnswer = Schema.Struct({
  count: Schema.Int,
  correspondents: Schema.Array(Correspondent)
})
export type CorrespondentsAnswer = typeof CorrespondentsAnswer.Type

const Row = Schema.Struct({
  address: Schema.String,
  name: Schema.NullOr(Schema.String),
  last_seen_at: Schema.Date,
  messages: Schema.Number
})

export class Correspondents extends Context.Service<Correspondents, {
  suggest(principal: Principal, inboxId: string, query: CorrespondentsQuery): Effect.Effect<CorrespondentsAnswer, NotFound | ValidationError>
}>()("inbox/Correspondents") {
  static readonly layerNoDeps = Layer.effect(Correspondents, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inboxes = yield* Inboxes

    return Correspondents.of({
      suggest: Effect.fn("Correspondents.suggest")(function*(principal, inboxId, query) {
        const inbox = yield* inboxes.find(principal, inboxId)
        const q = (query.q ?? "").trim()
        // A prefix of the address, or of a word of the name (after a space, or at its start).
        const match = q === ""
          ? sql``
          : sql`AND (address LIKE lower(${`${escapeLike(q)}%`}) OR lower(name) LIKE lower(${`${escapeLike(q)}%`})
              OR lower(name) LIKE lower(${`% ${escapeLike(q)}%`}))`
        const rows = yield* sql`SELECT address, name, last_seen_at, messages FROM correspondents
          WHERE inbox_id = ${inbox.id} ${match}
          ORDER BY last_seen_at DESC, address LIMIT ${query.limit ?? DEFAULT_CORRESPONDENTS}`.pipe(decodeRows(Row))
        const correspondents = rows.map((r) => ({ address: r.address, name: r.name, last_seen_at: iso(r.last_seen_at), messages: r.messages }))
        return { count: correspondents.length, correspondents }
      })
    })
  }))

  /** With the service it uses (Inboxes); the ports are the caller's. */
  static readonly layer = Correspondents.layerNoDeps.pipe(Layer.provide(Inboxes.layer))
}
