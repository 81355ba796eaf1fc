/**
 * `client_id` idempotency, one way for every resource that has it (pods, inboxes): the
 * same client_id in one organization answers the resource it already made instead of
 * making another.
 *
 * `idempotentInsert` looks for the client_id first (a resource the caller may not see is
 * 403 already_exists: the id is taken, and we do not show by whom), then runs the caller's
 * checks (plan limits), then inserts with `ON CONFLICT ... DO NOTHING` so that two
 * concurrent creates with one client_id make one row: the loser reads the winner's row.
 * Callers that check limits run this inside a transaction holding a lock that serialises
 * creates (the organization row), so the checks cannot go stale.
 */
import { Effect, type Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { AlreadyExists } from "../errors/errors.ts"
import { decodeRows, isUniqueViolation } from "./sql.ts"

export interface IdempotentInsert<S extends Schema.Top, E, R> {
  readonly table: "pods" | "inboxes"
  readonly row: S["Type"] & Record<string, unknown>
  readonly organizationId: string
  readonly clientId: string | undefined
  readonly decode: S
  /** The SQL condition under which the caller may see an existing row (visibility.ts). */
  readonly visible?: Statement.Fragment | undefined
  /** Checks to run when a new row is to be made (plan limits). */
  readonly before?: Effect.Effect<void, E, R>
  /** Turns the row into column values (JSON columns as text). */
  readonly columns?: (row: S["Type"]) => Record<string, unknown>
  /** The error for a unique violation other than the client_id's (a taken address). */
  readonly conflict?: () => AlreadyExists
}

export const idempotentInsert = <S extends Schema.Top, E = never, R = never>(
  sql: SqlClient.SqlClient,
  options: IdempotentInsert<S, E, R>
): Effect.Effect<S["Type"], E | AlreadyExists, R | S["DecodingServices"]> =>
  Effect.gen(function*() {
    const table = sql(options.table)
    // One statement finds the row and says whether the caller may see it: two separate reads
    // could straddle a concurrent create's commit and call the id taken by someone else.
    const existing = (clientId: string) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT *, (${options.visible ?? sql`TRUE`}) AS caller_sees FROM ${table}
          WHERE organization_id = ${options.organizationId} AND client_id = ${clientId}`
        const row = rows[0] as { readonly caller_sees?: boolean } | undefined
        if (row === undefined) return undefined
        if (row.caller_sees !== true) {
          return yield* new AlreadyExists({ message: `client_id ${clientId} is already used by another resource.` })
        }
        const { caller_sees: _, ...fields } = row
        return (yield* Effect.succeed([fields]).pipe(decodeRows(options.decode)))[0]
      })
    if (options.clientId !== undefined) {
      const found = yield* existing(options.clientId)
      if (found !== undefined) return found
    }
    if (options.before !== undefined) yield* options.before
    const values = options.columns === undefined ? options.row : options.columns(options.row)
    const inserted = yield* sql`INSERT INTO ${table} ${sql.insert(values)}
      ON CONFLICT (organization_id, client_id) WHERE client_id IS NOT NULL DO NOTHING RETURNING id`.pipe(
      Effect.catchIf(isUniqueViolation, (e) => options.conflict === undefined ? Effect.die(e) : Effect.fail(options.conflict()))
    )
    if (inserted.length > 0 || options.clientId === undefined) return options.row
    // A concurrent create with the same client_id won: answer with its row.
    const winner = yield* existing(options.clientId)
    return winner ?? (yield* Effect.die(`${options.table} client_id conflict without a row`))
  }).pipe(Effect.catchTag("SqlError", Effect.die))
