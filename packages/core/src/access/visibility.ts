/**
 * What a principal may see, written once as SQL. Every query that reads tenant rows ANDs
 * `visibleTo(...)` into its WHERE clause, naming the table's organization, pod and inbox
 * columns; rows outside the principal's organization or scope are then simply absent, and
 * the operation answers 404 not_found for them as the spec requires.
 *
 * A table without an inbox column holds pod-level or organization-level resources: an
 * inbox-scoped principal sees none of them. A table without a pod column holds
 * organization-level resources: only organization-scoped principals see them.
 */
import type { SqlClient } from "effect/sql"
import type { Principal } from "./Principal.ts"

export interface ScopeColumns {
  /** Default `organization_id`. */
  readonly organization?: string
  readonly pod?: string
  readonly inbox?: string
}

/**
 * The rule itself: the column each condition names and the value it must equal, or
 * `false` when the table holds nothing the principal may see. Both renderings below use it.
 */
const conditions = (principal: Principal, columns: ScopeColumns): ReadonlyArray<readonly [string, string]> | false => {
  const org = [columns.organization ?? "organization_id", principal.organizationId] as const
  const scope = principal.scope
  switch (scope.type) {
    case "organization":
      return [org]
    case "pod":
      return columns.pod === undefined ? false : [org, [columns.pod, scope.podId]]
    case "inbox":
      return columns.inbox === undefined ? false : [org, [columns.inbox, scope.inboxId]]
  }
}

export const visibleTo = (sql: SqlClient.SqlClient, principal: Principal, columns: ScopeColumns = {}) => {
  const found = conditions(principal, columns)
  if (found === false) return sql`FALSE`
  return found.slice(1).reduce((all, [column, value]) => sql`${all} AND ${sql(column)} = ${value}`, sql`${sql(found[0]![0])} = ${found[0]![1]}`)
}

const rendered = new WeakMap<ScopeColumns, Map<string, string>>()

/**
 * The same condition as text for a fixed statement (db/prepared.ts), with placeholders from
 * `$<from>`; their values are pushed onto `params`. The text depends only on `columns` (a
 * statement's own names, never input), the kind of scope and `from`, so it is rendered once
 * for each and the same string comes back every time.
 */
export const visibleText = (principal: Principal, columns: ScopeColumns, from: number, params: Array<unknown>): string => {
  const found = conditions(principal, columns)
  if (found === false) return "FALSE"
  for (const [, value] of found) params.push(value)
  let texts = rendered.get(columns)
  if (texts === undefined) rendered.set(columns, texts = new Map())
  const key = from === 1 ? principal.scope.type : `${principal.scope.type} ${from}`
  let text = texts.get(key)
  if (text === undefined) texts.set(key, text = found.map(([column], i) => `${column} = $${from + i}`).join(" AND "))
  return text
}
