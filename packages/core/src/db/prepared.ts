/**
 * Fixed statements for the hottest reads: a text written once, with `$n` placeholders, run
 * on the client's connection as effect/sql runs any statement (the pool's connection, or the
 * current transaction's; prepared by the driver, on PostgreSQL and PGlite alike), without the
 * per-call work of a template statement: compiling its fragments, a span with its attributes
 * and a fiber step to read the statement transformer. Under a tracer that keeps spans it runs
 * as a template statement does, so the trace shows the statement as before. On `GET /v0/inboxes/:id` that work
 * was a large share of the request's allocation (bench/PROFILE.md).
 *
 * The client's connection comes from the fields every effect/sql statement carries (its
 * borrower, or its scoped acquirer). Where a client's statements lack them (another driver,
 * another version of effect/sql), the text runs as `sql.unsafe` does: the same rows, at the
 * template statement's cost.
 */
import { Effect, Tracer } from "effect"
import type { SqlClient, SqlConnection, SqlError } from "effect/sql"

type Param = string | number | boolean | null

/** What every effect/sql statement holds besides its fragments (Statement.ts's makeUnsafe). */
interface StatementFields {
  readonly acquirer?: Effect.Effect<SqlConnection.Connection, SqlError.SqlError, never>
  readonly borrower?: SqlConnection.Borrower
  readonly transformRows?: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
}

/** A runner of fixed texts on `sql`'s connections: `run(text, params)` gives the rows. */
export const fixedStatements = (sql: SqlClient.SqlClient) => {
  const fields = sql.unsafe("SELECT 1") as unknown as StatementFields
  const borrower = fields.borrower
  const acquirer = fields.acquirer
  const transform = fields.transformRows
  if (typeof borrower !== "function" && acquirer === undefined) {
    return <A extends object>(text: string, params: ReadonlyArray<Param>): Effect.Effect<ReadonlyArray<A>, SqlError.SqlError> =>
      sql.unsafe<A>(text, params as Array<Param>)
  }
  return <A extends object>(text: string, params: ReadonlyArray<Param>): Effect.Effect<ReadonlyArray<A>, SqlError.SqlError> =>
    Effect.withFiber((fiber) => {
      // A tracer that keeps spans sees the statement's span as from any statement (shared/span.ts).
      if (fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer) return sql.unsafe<A>(text, params as Array<Param>)
      const run = (connection: SqlConnection.Connection) =>
        connection.execute(text, params as Array<Param>, transform) as Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>
      return typeof borrower === "function" ? borrower(run) : Effect.scoped(Effect.flatMap(acquirer!, run))
    })
}

export type FixedStatements = ReturnType<typeof fixedStatements>
