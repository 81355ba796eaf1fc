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

export const visibleTo = (sql: SqlClient.SqlClient, principal: Principal, columns: ScopeColumns = {}) => {
  const org = sql`${sql(columns.organization ?? "organization_id")} = ${principal.organizationId}`
  const scope = principal.scope
  switch (scope.type) {
    case "organization":
      return org
    case "pod":
      return columns.pod === undefined ? sql`FALSE` : sql`${org} AND ${sql(columns.pod)} = ${scope.podId}`
    case "inbox":
      return columns.inbox === undefined ? sql`FALSE` : sql`${org} AND ${sql(columns.inbox)} = ${scope.inboxId}`
  }
}
