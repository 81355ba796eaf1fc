/**
 * Lists: the envelope `{ count, limit, next_page_token?, <plural>: [] }` and keyset paging.
 *
 * Every list is ordered by (created_at, id), newest first unless stated. A page token is
 * the opaque base64url of the last row's key, so a page boundary never shifts when rows are
 * inserted meanwhile (new rows sort before the cursor) and never repeats or skips a row.
 */
import { Effect, Schema, SchemaGetter } from "effect"
import type { SqlClient } from "effect/sql"
import type { ValidationError } from "../errors/errors.ts"
import { Line } from "./fields.ts"
import { findUnstorable, parseJson } from "./json.ts"
import { validationError } from "./validation.ts"

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 100

const Limit = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_LIMIT }))

// Plain decimal digits only: Number() would read "0x10" as 16 and "1e2" as 100.
const DecimalString = Schema.String.check(Schema.isPattern(/^[0-9]{1,6}$/, { message: "Expected a whole number in decimal digits" }))

/** An integer field of a query string or a body: a number, or decimal digits in a string. */
export const IntegerParam = <S extends Schema.Codec<number, number>>(schema: S) =>
  Schema.Union([schema, DecimalString.pipe(Schema.decodeTo(schema, {
    decode: SchemaGetter.transform((s: string) => Number(s)),
    encode: SchemaGetter.transform((n: number) => String(n))
  }))])

/** A boolean query parameter: a JSON boolean (MCP, CLI) or the string `true` / `false` (a URL). */
export const BooleanParam = Schema.Union([Schema.Boolean, Schema.Literals(["true", "false"])])
export const isTrue = (value: boolean | "true" | "false" | undefined) => value === true || value === "true"

/** `ascending`: a list in the other order, oldest first (the agentmail SDK's parameter on its lists). */
export const AscendingField = { ascending: Schema.optionalKey(BooleanParam) }

/** Query fields of every list: `limit` (1..100, also as a numeric string) and `page_token`. */
export const PageQueryFields = {
  limit: Schema.optionalKey(IntegerParam(Limit)),
  page_token: Schema.optionalKey(Line(1024))
}

export interface Cursor {
  readonly at: Date
  readonly id: string
}

export const encodeCursor = (c: Cursor): string =>
  Buffer.from(JSON.stringify([c.at.toISOString(), c.id])).toString("base64url")

export const decodeCursor = (token: string): Effect.Effect<Cursor, ValidationError> =>
  Effect.suspend(() => {
    const bad = validationError([{ path: ["page_token"], message: "Invalid page token" }])
    const json = parseJson(Buffer.from(token, "base64url").toString("utf8"))
    const parsed = json.ok ? json.value : undefined
    // A token is only ever one we made; anything else, even a forged one naming a string
    // the database cannot hold, is simply invalid.
    if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") return Effect.fail(bad)
    if (findUnstorable(parsed[1]) !== undefined) return Effect.fail(bad)
    const at = new Date(parsed[0])
    return Number.isNaN(at.getTime()) ? Effect.fail(bad) : Effect.succeed({ at, id: parsed[1] })
  })

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly limit: number
  readonly next_page_token?: string
}

/** Given up to limit+1 rows fetched past the cursor, cut the page and make the next token. */
export const toPage = <Row extends { readonly created_at: Date; readonly id: string }, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  map: (row: Row) => A
): Page<A> => toPageBy(rows, limit, map, (row) => ({ at: row.created_at, id: row.id }))

/** `toPage` for rows ordered by another key (a message's timestamp, a thread's last activity). */
export const toPageBy = <Row, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  map: (row: Row) => A,
  keyOf: (row: Row) => Cursor
): Page<A> => {
  const pageRows = rows.slice(0, limit)
  const last = pageRows[pageRows.length - 1]
  return rows.length > limit && last !== undefined
    ? { items: pageRows.map(map), limit, next_page_token: encodeCursor(keyOf(last)) }
    : { items: pageRows.map(map), limit }
}

export const listBody = <A, K extends string>(plural: K, page: Page<A>) =>
  ({
    count: page.items.length,
    limit: page.limit,
    ...(page.next_page_token === undefined ? {} : { next_page_token: page.next_page_token }),
    [plural]: page.items
  }) as { count: number; limit: number; next_page_token?: string } & Record<K, ReadonlyArray<A>>

export interface PageQuery {
  readonly limit?: number
  readonly page_token?: string
}

/**
 * The SQL pieces of one newest-first page over a table with (created_at, id): the cursor
 * condition to AND into the WHERE clause, and the ordering with one row more than the page
 * so `toPage` can tell whether another page follows.
 */
export const newestFirst = (sql: SqlClient.SqlClient, query: PageQuery) => keyset(sql, query, { column: "created_at" })

/**
 * `newestFirst` over any (time column, id column) key, in either direction. Columns are
 * identifiers (possibly `table.column`); the page is stable under inserts in both
 * directions because the key is unique.
 */
export const keyset = (
  sql: SqlClient.SqlClient,
  query: PageQuery,
  options: { readonly column: string; readonly id?: string; readonly ascending?: boolean }
) =>
  Effect.map(
    query.page_token === undefined ? Effect.succeed(undefined) : decodeCursor(query.page_token),
    (cursor) => {
      const limit = query.limit ?? DEFAULT_LIMIT
      const at = sql(options.column)
      const id = sql(options.id ?? "id")
      const ascending = options.ascending === true
      return {
        limit,
        after: cursor === undefined
          ? sql``
          : ascending
          ? sql`AND (${at}, ${id}) > (${cursor.at}, ${cursor.id})`
          : sql`AND (${at}, ${id}) < (${cursor.at}, ${cursor.id})`,
        orderAndLimit: ascending
          ? sql`ORDER BY ${at} ASC, ${id} ASC LIMIT ${limit + 1}`
          : sql`ORDER BY ${at} DESC, ${id} DESC LIMIT ${limit + 1}`
      }
    }
  )
