/**
 * Small helpers shared by the SQL-backed services: decode rows with a Schema (a storage
 * failure or an unexpected row shape is a defect, never a domain error) and recognise a
 * unique-constraint conflict so a service can turn it into its domain error.
 */
import { Effect, Schema, SchemaGetter } from "effect"
import type { SqlClient, SqlError } from "effect/sql"

// Decoders are compiled once per row schema: building one per query showed up in profiles.
const decoders = new WeakMap<Schema.Top, (rows: unknown) => Effect.Effect<ReadonlyArray<unknown>, unknown, unknown>>()

export const decodeRows = <S extends Schema.Top>(schema: S) => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEffect(Schema.Array(schema)) as never
    decoders.set(schema, decode)
  }
  const decodeArray = decode as (rows: unknown) => Effect.Effect<ReadonlyArray<S["Type"]>, Schema.SchemaError, S["DecodingServices"]>
  return <E, R>(effect: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<ReadonlyArray<S["Type"]>, never, R | S["DecodingServices"]> =>
    effect.pipe(Effect.flatMap(decodeArray), Effect.orDie)
}

export const isUniqueViolation = (error: SqlError.SqlError): boolean => error.reason._tag === "UniqueViolation"

/** jsonb decodes to a value; text fallback covers drivers that hand back the JSON text. */
export const Json = <S extends Schema.Top>(schema: S) =>
  Schema.Union([schema, Schema.fromJsonString(schema)])

/** An int8 column (`bigint`, `count(*)`): the driver gives a bigint or its text; the engine uses numbers. */
export const Int8 = Schema.Union([Schema.Number, Schema.BigInt, Schema.String]).pipe(
  Schema.decodeTo(Schema.Number, {
    decode: SchemaGetter.transform((v: number | bigint | string) => Number(v)),
    encode: SchemaGetter.transform((n: number) => n)
  })
)

/**
 * Whether the database runs no autovacuum: PGlite has no background processes at all, and a
 * server may be configured without it. Tables that churn (rows inserted and deleted all the
 * time) then need a VACUUM from us, or their space is never reused.
 */
export const noAutovacuum = (sql: SqlClient.SqlClient) =>
  sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum launcher'`.pipe(
    Effect.map((rows) => (rows[0]?.n ?? 0) === 0),
    Effect.orDie
  )


/** A value matched literally inside a LIKE / ILIKE pattern (the default escape character, backslash). */
export const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)
