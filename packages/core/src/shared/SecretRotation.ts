/**
 * Rotating INBOX_SECRET_KEY: with the old key in INBOX_SECRET_KEY_PREVIOUS, every sealed
 * secret (DKIM private keys, webhook signing secrets and header values, authenticator
 * secrets) that does not open with the new key is opened with the old one and sealed again
 * under the new one, once, when the engine starts. After one start the old key can be
 * dropped from the environment.
 *
 * Also at start, with a key: webhook header values still plain (written before they were
 * sealed, by migration 0034, or by a server without a key) are sealed. A plain value there is
 * JSON (`{...}`), never taken for a sealed one.
 *
 * Each row is rewritten only if it still holds the value that was read, so several
 * processes starting together re-seal each row once and never overwrite each other.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Settings } from "../settings/Settings.ts"
import { isSealed, open, seal, type SealPurpose } from "./sealing.ts"

/** Where sealed secrets live: table, key column (the sealing owner), secret column. */
const SEALED_COLUMNS: ReadonlyArray<{ readonly purpose: SealPurpose; readonly table: string; readonly owner: string; readonly column: string }> = [
  { purpose: "dkim", table: "domains", owner: "id", column: "dkim_private_key" },
  { purpose: "webhook", table: "webhooks", owner: "id", column: "secret" },
  { purpose: "webhook_headers", table: "webhooks", owner: "id", column: "header_values" },
  { purpose: "totp", table: "users", owner: "id", column: "totp_secret" }
]

/** Places whose plain values are sealed at start once there is a key (their plain form cannot start with `v1:`). */
const SEALED_AT_START = SEALED_COLUMNS.filter((place) => place.purpose === "webhook_headers")

export interface ResealReport {
  /** rows now sealed under the current key that were sealed under the previous one */
  readonly resealed: number
  /** rows that open with neither key: left as they are, and logged */
  readonly unopenable: number
}

/** The sealed rows of every kind, with the owner each was sealed for. */
const sealedRows = (sql: SqlClient.SqlClient, place: (typeof SEALED_COLUMNS)[number]) =>
  sql<{ owner: string; value: string }>`SELECT ${sql(place.owner)} AS owner, ${sql(place.column)} AS value
    FROM ${sql(place.table)} WHERE ${sql(place.column)} LIKE 'v1:%'`

/**
 * The sealed secrets that do not open with `key` (a move checks its key with it): what
 * they are (`dkim`, `webhook`, `webhook_headers`, `totp`) and whose. Storage failures are defects.
 */
export const unopenableWith = (key: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const found: Array<{ readonly purpose: SealPurpose; readonly owner: string }> = []
    let sealed = 0
    for (const place of SEALED_COLUMNS) {
      for (const row of yield* sealedRows(sql, place)) {
        sealed++
        if ((yield* open(key, place.purpose, row.owner, row.value)) === undefined) found.push({ purpose: place.purpose, owner: row.owner })
      }
    }
    return { sealed, unopenable: found }
  }).pipe(Effect.orDie)

/** Re-seals under `current` what was sealed under `previous`; storage failures are defects. */
export const reseal = (current: string, previous: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let resealed = 0
    let unopenable = 0
    for (const place of SEALED_COLUMNS) {
      for (const row of yield* sealedRows(sql, place)) {
        if (!isSealed(row.value) || (yield* open(current, place.purpose, row.owner, row.value)) !== undefined) continue
        const plaintext = yield* open(previous, place.purpose, row.owner, row.value)
        if (plaintext === undefined) {
          unopenable++
          yield* Effect.logError(`a sealed ${place.purpose} secret of ${row.owner} opens with neither INBOX_SECRET_KEY nor INBOX_SECRET_KEY_PREVIOUS`)
          continue
        }
        const updated = yield* sql`UPDATE ${sql(place.table)} SET ${sql(place.column)} = ${seal(current, place.purpose, row.owner, plaintext)}
          WHERE ${sql(place.owner)} = ${row.owner} AND ${sql(place.column)} = ${row.value} RETURNING 1`
        resealed += updated.length
      }
    }
    return { resealed, unopenable } satisfies ResealReport
  }).pipe(Effect.orDie, Effect.withSpan("SecretRotation.reseal"))

/** Seals under `current` the plain values of SEALED_AT_START; answers how many rows it sealed. */
export const sealPlain = (current: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let sealed = 0
    for (const place of SEALED_AT_START) {
      const rows = yield* sql<{ owner: string; value: string }>`SELECT ${sql(place.owner)} AS owner, ${sql(place.column)} AS value
        FROM ${sql(place.table)} WHERE ${sql(place.column)} NOT LIKE 'v1:%'`
      for (const row of rows) {
        const updated = yield* sql`UPDATE ${sql(place.table)} SET ${sql(place.column)} = ${seal(current, place.purpose, row.owner, row.value)}
          WHERE ${sql(place.owner)} = ${row.owner} AND ${sql(place.column)} = ${row.value} RETURNING 1`
        sealed += updated.length
      }
    }
    return sealed
  }).pipe(Effect.orDie, Effect.withSpan("SecretRotation.sealPlain"))

export class SecretRotation {
  /**
   * At startup, with INBOX_SECRET_KEY: seal the plain values of SEALED_AT_START; when
   * INBOX_SECRET_KEY_PREVIOUS is set too, re-seal; say how many rows changed.
   */
  static readonly layer = Layer.effectDiscard(Effect.gen(function*() {
    const settings = yield* Settings
    if (settings.secretKey === undefined) return
    const sealed = yield* sealPlain(settings.secretKey)
    if (sealed > 0) yield* Effect.logInfo(`sealed ${sealed} webhooks' header values under INBOX_SECRET_KEY`)
    if (settings.previousSecretKey === undefined || settings.secretKey === settings.previousSecretKey) return
    const report = yield* reseal(settings.secretKey, settings.previousSecretKey)
    yield* Effect.logInfo(`re-sealed ${report.resealed} secrets under the new INBOX_SECRET_KEY; ${report.unopenable} open with neither key`)
  }))
}
