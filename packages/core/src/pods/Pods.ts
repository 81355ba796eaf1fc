/**
 * Pods: isolated sub-tenants of an organization. A default pod exists from the start and
 * cannot be deleted (403 pod_protected); a pod with inboxes cannot be deleted
 * (409 pod_not_empty). `client_id` makes creation idempotent: the same client_id in the
 * same organization returns the existing pod.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { MissingPermission, NotFound, ValidationError } from "../errors/errors.ts"
import { PodNotEmpty, PodProtected } from "../errors/errors.ts"
import { canSeePod, notFound, type Principal, requirePermission, requireScope } from "../access/Principal.ts"
import { Ids } from "../platform/Ids.ts"
import { ClientId, compact, Name } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, isUniqueViolation } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"

export const PodRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  name: Schema.String,
  client_id: Schema.NullOr(Schema.String),
  is_default: Schema.Boolean,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type PodRow = typeof PodRow.Type

export const toPod = (row: PodRow) =>
  compact({
    pod_id: row.id,
    name: row.name,
    client_id: row.client_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })
export type Pod = ReturnType<typeof toPod>

export const CreatePodInput = Schema.Struct({ name: Name, client_id: Schema.optionalKey(ClientId) })
export const ListQuery = Schema.Struct(PageQueryFields)

export class Pods extends Context.Service<Pods, {
  create(principal: Principal, input: typeof CreatePodInput.Type): Effect.Effect<Pod, MissingPermission>
  list(principal: Principal, query: typeof ListQuery.Type): Effect.Effect<Page<Pod>, MissingPermission | ValidationError>
  get(principal: Principal, podId: string): Effect.Effect<Pod, MissingPermission | NotFound>
  delete(principal: Principal, podId: string): Effect.Effect<void, MissingPermission | NotFound | PodProtected | PodNotEmpty>
  /** The pod row if it exists in the organization and the principal may see it. */
  find(principal: Principal, podId: string): Effect.Effect<PodRow, NotFound>
  defaultPodId(organizationId: string): Effect.Effect<string>
}>()("inbox/Pods") {
  static readonly layer = Layer.effect(Pods, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids

    const find = Effect.fn("Pods.find")(function*(principal: Principal, podId: string) {
      const rows = yield* sql`SELECT * FROM pods WHERE id = ${podId} AND organization_id = ${principal.organizationId}`.pipe(
        decodeRows(PodRow)
      )
      const row = rows[0]
      if (row === undefined || !canSeePod(principal, row.id)) return yield* notFound("Pod", podId)
      return row
    })

    const byClientId = (organizationId: string, clientId: string) =>
      sql`SELECT * FROM pods WHERE organization_id = ${organizationId} AND client_id = ${clientId}`.pipe(decodeRows(PodRow))

    return Pods.of({
      find,
      create: Effect.fn("Pods.create")(function*(principal, input) {
        yield* requirePermission(principal, "pod_create")
        yield* requireScope(principal, ["organization"], "create pods")
        if (input.client_id !== undefined) {
          const existing = (yield* byClientId(principal.organizationId, input.client_id))[0]
          if (existing !== undefined) return toPod(existing)
        }
        const at = yield* now
        const row: PodRow = {
          id: yield* ids.make("pod"),
          organization_id: principal.organizationId,
          name: input.name,
          client_id: input.client_id ?? null,
          is_default: false,
          created_at: at,
          updated_at: at
        }
        return yield* sql`INSERT INTO pods ${sql.insert(row)}`.pipe(
          Effect.as(toPod(row)),
          // A concurrent create with the same client_id won the race: answer with its pod.
          Effect.catchIf(isUniqueViolation, () =>
            byClientId(principal.organizationId, input.client_id ?? "").pipe(
              Effect.flatMap((rows) => rows[0] === undefined ? Effect.die("pod client_id conflict without a row") : Effect.succeed(toPod(rows[0])))
            )),
          Effect.orDie
        )
      }),
      list: Effect.fn("Pods.list")(function*(principal, query) {
        yield* requirePermission(principal, "pod_read")
        const page = yield* newestFirst(sql, query)
        if (principal.scope.type === "inbox") return { items: [], limit: page.limit }
        const podFilter = principal.scope.type === "pod" ? sql`AND id = ${principal.scope.podId}` : sql``
        const rows = yield* sql`SELECT * FROM pods WHERE organization_id = ${principal.organizationId} ${podFilter} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(PodRow))
        return toPage(rows, page.limit, toPod)
      }),
      get: Effect.fn("Pods.get")(function*(principal, podId) {
        yield* requirePermission(principal, "pod_read")
        return toPod(yield* find(principal, podId))
      }),
      delete: Effect.fn("Pods.delete")(function*(principal, podId) {
        yield* requirePermission(principal, "pod_delete")
        const pod = yield* find(principal, podId)
        yield* requireScope(principal, ["organization"], "delete pods")
        if (pod.is_default) return yield* new PodProtected({ message: "The default pod cannot be deleted." })
        const inboxes = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inboxes WHERE pod_id = ${podId}`.pipe(Effect.orDie)
        if ((inboxes[0]?.n ?? 0) > 0) {
          return yield* new PodNotEmpty({ message: `Pod ${podId} still has inboxes.`, fix: "Delete its inboxes first." })
        }
        yield* sql`DELETE FROM pods WHERE id = ${podId}`.pipe(Effect.orDie)
      }),
      defaultPodId: (organizationId) =>
        sql<{ id: string }>`SELECT id FROM pods WHERE organization_id = ${organizationId} AND is_default`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows[0] === undefined ? Effect.die(`organization ${organizationId} has no default pod`) : Effect.succeed(rows[0].id))
        )
    })
  }))
}
