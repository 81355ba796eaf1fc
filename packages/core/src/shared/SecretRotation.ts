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
 *
 * The mechanism is here; the places are their owners': each domain that keeps a sealed
 * column declares it (`SealedPlace`) and builds `resealing(places)` into its own layer, so
 * its rows are rewritten by it, before it opens any of them (Domains: DKIM keys; Webhooks:
 * signing secrets and header values; Auth: authenticator secrets).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Settings } from "../settings/Settings.ts"
import { isSealed, open, seal, type SealPurpose } from "./sealing.ts"

/** Where a sealed secret lives: its table, key column (the sealing owner), secret column. */
export interface SealedPlace {
  readonly purpose: SealPurpose
  readonly table: string
  readonly owner: string
  readonly column: string
  /** Plain values here are sealed at start once there is a key (their plain form cannot start with `v1:`). */
  readonly sealAtStart?: boolean
}

export interface ResealReport {
  /** rows now sealed under the current key that were sealed under the previous one */
  readonly resealed: number
  /** rows that open with neither key: left as they are, and logged */
  readonly unopenable: number
}

/** The sealed rows of every kind, with the owner each was sealed for. */
const sealedRows = (sql: SqlClient.SqlClient, place: SealedPlace) =>
  sql<{ owner: string; value: string }>`SELECT ${sql(place.owner)} AS owner, ${sql(place.column)} AS value
    FROM ${sql(place.table)} WHERE ${sql(place.column)} LIKE 'v1:%'`

/**
 * The sealed secrets that do not open with `key` (a move checks its key with it): what
 * they are (`dkim`, `webhook`, `webhook_headers`, `totp`) and whose. Storage failures are defects.
 */
export const unopenableWith = (key: string, places: ReadonlyArray<SealedPlace>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const found: Array<{ readonly purpose: SealPurpose; readonly owner: string }> = []
    let sealed = 0
    for (const place of places) {
      for (const row of yield* sealedRows(sql, place)) {
        sealed++
        if ((yield* open(key, place.purpose, row.owner, row.value)) === undefined) found.push({ purpose: place.purpose, owner: row.owner })
      }
    }
    return { sealed, unopenable: found }
  }).pipe(Effect.orDie)

/** Re-seals under `current` what was sealed under `previous`; storage failures are defects. */
export const reseal = (current: string, previous: string, places: ReadonlyArray<SealedPlace>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let resealed = 0
    let unopenable = 0
    for (const place of places) {
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

/** Seals under `current` the plain values of the places sealed at start; answers how many rows it sealed. */
export const sealPlain = (current: string, places: ReadonlyArray<SealedPlace>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let sealed = 0
    for (const place of places.filter((p) => p.sealAtStart === true)) {
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

/**
 * A domain's own rotation, built into its layer: at startup, with INBOX_SECRET_KEY, seal
 * the plain values of its places sealed at start; when INBOX_SECRET_KEY_PREVIOUS is set
 * too, re-seal its rows; say how many changed.
 */
export const resealing = (places: ReadonlyArray<SealedPlace>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const settings = yield* Settings
    if (settings.secretKey === undefined) return
    const sealed = yield* sealPlain(settings.secretKey, places)
    if (sealed > 0) yield* Effect.logInfo(`sealed ${sealed} plain ${places[0]?.table ?? ""} secrets under INBOX_SECRET_KEY`)
    if (settings.previousSecretKey === undefined || settings.secretKey === settings.previousSecretKey) return
    const report = yield* reseal(settings.secretKey, settings.previousSecretKey, places)
    yield* Effect.logInfo(`re-sealed ${report.resealed} ${places[0]?.table ?? ""} secrets under the new INBOX_SECRET_KEY; ${report.unopenable} open with neither key`)
  }))
