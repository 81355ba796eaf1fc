/**
 * Pods: isolated sub-tenants of an organization. A default pod exists from the start and
 * cannot be deleted (403 pod_protected); a pod with inboxes cannot be deleted
 * (409 pod_not_empty). `client_id` makes creation idempotent: the same client_id in the
 * same organization returns the existing pod.
 *
 * Deleting a pod and creating an inbox in it are serialised by a lock on the pod row (taken
 * by both), so a concurrent create either lands first (and the delete answers
 * pod_not_empty) or sees the pod gone (404): never a foreign-key failure.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { KeyCache } from "../apikeys/KeyCache.ts"
import { visibleTo } from "../access/visibility.ts"
import { type AlreadyExists, type NotFound, PodNotEmpty, PodProtected, type ValidationError } from "../errors/errors.ts"
import { Ids } from "../platform/Ids.ts"
import { ClientId, compact, Name } from "../shared/fields.ts"
import { idempotentInsert } from "../shared/idempotency.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"

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

/** A pod as the API shows it. */
export const Pod = Schema.Struct({
  pod_id: Schema.String,
  name: Schema.String,
  client_id: Schema.optionalKey(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Pod = typeof Pod.Type

export const toPod = (row: PodRow): Pod =>
  compact({
    pod_id: row.id,
    name: row.name,
    client_id: row.client_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })

export const CreatePodInput = Schema.Struct({ name: Name, client_id: Schema.optionalKey(ClientId) })
export const ListPodsQuery = Schema.Struct(PageQueryFields)

export class Pods extends Context.Service<Pods, {
  create(principal: Principal, input: typeof CreatePodInput.Type): Effect.Effect<Pod, AlreadyExists>
  list(principal: Principal, query: typeof ListPodsQuery.Type): Effect.Effect<Page<Pod>, ValidationError>
  get(principal: Principal, podId: string): Effect.Effect<Pod, NotFound>
  delete(principal: Principal, podId: string): Effect.Effect<void, NotFound | PodProtected | PodNotEmpty>
  /** The pod row if it exists in the organization and the principal may see it. */
  find(principal: Principal, podId: string): Effect.Effect<PodRow, NotFound>
  /** Like find, and locks the row until the surrounding transaction ends. */
  lock(principal: Principal, podId: string): Effect.Effect<PodRow, NotFound>
  defaultPodId(organizationId: string): Effect.Effect<string>
  /** The default pod of a new organization, in the caller's transaction (Organizations.create). */
  createDefault(organizationId: string): Effect.Effect<string>
}>()("inbox/Pods") {
  static readonly layerNoDeps = Layer.effect(Pods, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const keyCache = yield* KeyCache

    const select = (principal: Principal, podId: string, forUpdate: boolean) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT * FROM pods WHERE id = ${podId} AND ${visibleTo(sql, principal, { pod: "id" })}
          ${forUpdate ? sql`FOR UPDATE` : sql``}`.pipe(decodeRows(PodRow))
        const row = rows[0]
        if (row === undefined) return yield* notFound("Pod", podId)
        return row
      })

    return Pods.of({
      createDefault: (organizationId) =>
        Effect.gen(function*() {
          const id = yield* ids.make("pod")
          const at = yield* now
          yield* sql`INSERT INTO pods (id, organization_id, name, is_default, created_at, updated_at)
            VALUES (${id}, ${organizationId}, 'default', true, ${at}, ${at})`.pipe(Effect.orDie)
          return id
        }),
      find: (principal, podId) => select(principal, podId, false),
      lock: (principal, podId) => select(principal, podId, true),
      create: Effect.fn("Pods.create")(function*(principal, input) {
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
        const stored = yield* idempotentInsert(sql, {
          table: "pods",
          row,
          organizationId: principal.organizationId,
          clientId: input.client_id,
          decode: PodRow
        })
        return toPod(stored)
      }),
      list: Effect.fn("Pods.list")(function*(principal, query) {
        const page = yield* newestFirst(sql, query)
        const rows = yield* sql`SELECT * FROM pods WHERE ${visibleTo(sql, principal, { pod: "id" })} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(PodRow))
        return toPage(rows, page.limit, toPod)
      }),
      get: Effect.fn("Pods.get")(function*(principal, podId) {
        return toPod(yield* select(principal, podId, false))
      }),
      delete: Effect.fn("Pods.delete")(function*(principal, podId) {
        yield* sql.withTransaction(Effect.gen(function*() {
          // The lock makes the emptiness check and the delete one step against inbox creation.
          const pod = yield* select(principal, podId, true)
          if (pod.is_default) return yield* new PodProtected({ message: "The default pod cannot be deleted." })
          const inboxes = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inboxes WHERE pod_id = ${pod.id}`
          if ((inboxes[0]?.n ?? 0) > 0) {
            return yield* new PodNotEmpty({ message: `Pod ${podId} still has inboxes.`, fix: "Delete its inboxes first." })
          }
          yield* sql`DELETE FROM pods WHERE id = ${pod.id}`
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        // Committed; the pod's keys went with it (cascade): this process refuses them from its next request.
        yield* keyCache.forgetScope(podId)
      }),
      defaultPodId: (organizationId) =>
        sql<{ id: string }>`SELECT id FROM pods WHERE organization_id = ${organizationId} AND is_default`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.die(`organization ${organizationId} has no default pod`) : Effect.succeed(rows[0].id)
          )
        )
    })
  }))

  /** With the services it uses (KeyCache); the ports are the caller's. */
  static readonly layer = Pods.layerNoDeps.pipe(Layer.provide(KeyCache.layer))
}
