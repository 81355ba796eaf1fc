/**
 * Inboxes: addresses that receive and send mail, each inside a pod.
 *
 * Rules of the spec kept here: every route accepts the inbox id or its full email address;
 * the username is random when omitted and reserved names are refused (422
 * reserved_username); an address that exists is 403 already_exists; `client_id` makes
 * creation idempotent; the plan caps the number of inboxes (402 plan_limit_exceeded),
 * checked under a lock on the organization row so concurrent creates cannot overshoot;
 * lists are newest first; deleting an inbox removes its data (and keys scoped to it).
 * Until custom domains land, any domain other than the base domain is 422
 * domain_not_verified.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { canSeeInbox, notFound, type Principal, requirePermission, requireScope } from "../access/Principal.ts"
import {
  AlreadyExists,
  DomainNotVerified,
  type MissingPermission,
  type NotFound,
  type PlanLimitExceeded,
  ReservedUsername,
  type ValidationError
} from "../errors/errors.ts"
import { Organizations, planOf } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { checkLimit } from "../plans/plans.ts"
import { Pods } from "../pods/Pods.ts"
import { Settings } from "../settings/Settings.ts"
import { ClientId, compact, Metadata, Name } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, isUniqueViolation, Json } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { RESERVED_USERNAMES, usernameProblem } from "./usernames.ts"

export const InboxRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.String,
  username: Schema.String,
  domain: Schema.String,
  email: Schema.String,
  display_name: Schema.NullOr(Schema.String),
  client_id: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "paused"]),
  metadata: Schema.NullOr(Json(Schema.Record(Schema.String, Schema.String))),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type InboxRow = typeof InboxRow.Type

export const toInbox = (row: InboxRow) =>
  compact({
    pod_id: row.pod_id,
    inbox_id: row.id,
    email: row.email,
    display_name: row.display_name,
    client_id: row.client_id,
    status: row.status,
    metadata: row.metadata,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  })
export type Inbox = ReturnType<typeof toInbox>

export const CreateInboxInput = Schema.Struct({
  username: Schema.optionalKey(Schema.String),
  domain: Schema.optionalKey(Schema.String),
  display_name: Schema.optionalKey(Name),
  client_id: Schema.optionalKey(ClientId),
  metadata: Schema.optionalKey(Metadata)
})
export type CreateInboxInput = typeof CreateInboxInput.Type

export const UpdateInboxInput = Schema.Struct({
  display_name: Schema.optionalKey(Schema.NullOr(Name)),
  status: Schema.optionalKey(Schema.Literals(["active", "paused"])),
  metadata: Schema.optionalKey(Schema.NullOr(Metadata))
})
export type UpdateInboxInput = typeof UpdateInboxInput.Type

export const ListInboxesQuery = Schema.Struct(PageQueryFields)

type CreateError = MissingPermission | NotFound | ValidationError | ReservedUsername | DomainNotVerified | AlreadyExists | PlanLimitExceeded

export class Inboxes extends Context.Service<Inboxes, {
  create(principal: Principal, input: CreateInboxInput, podId?: string): Effect.Effect<Inbox, CreateError>
  list(principal: Principal, query: typeof ListInboxesQuery.Type, podId?: string): Effect.Effect<Page<Inbox>, MissingPermission | NotFound | ValidationError>
  get(principal: Principal, idOrEmail: string): Effect.Effect<Inbox, MissingPermission | NotFound>
  update(principal: Principal, idOrEmail: string, input: UpdateInboxInput): Effect.Effect<Inbox, MissingPermission | NotFound>
  delete(principal: Principal, idOrEmail: string, podId?: string): Effect.Effect<void, MissingPermission | NotFound>
  /** The inbox row by id or email if it exists and is visible to the principal. */
  find(principal: Principal, idOrEmail: string): Effect.Effect<InboxRow, NotFound>
  /** Creates an inbox with no principal checks: for agent sign-up, inside its transaction. */
  insert(organizationId: string, podId: string, input: CreateInboxInput): Effect.Effect<InboxRow, ValidationError | ReservedUsername | DomainNotVerified | AlreadyExists>
}>()("inbox/Inboxes") {
  static readonly layer = Layer.effect(Inboxes, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const organizations = yield* Organizations
    const pods = yield* Pods

    const find = Effect.fn("Inboxes.find")(function*(principal: Principal, idOrEmail: string) {
      const key = idOrEmail.includes("@") ? sql`email = ${idOrEmail.toLowerCase()}` : sql`id = ${idOrEmail}`
      const rows = yield* sql`SELECT * FROM inboxes WHERE ${key} AND organization_id = ${principal.organizationId}`.pipe(
        decodeRows(InboxRow)
      )
      const row = rows[0]
      if (row === undefined || !canSeeInbox(principal, row)) return yield* notFound("Inbox", idOrEmail)
      return row
    })

    const byClientId = (organizationId: string, clientId: string) =>
      sql`SELECT * FROM inboxes WHERE organization_id = ${organizationId} AND client_id = ${clientId}`.pipe(decodeRows(InboxRow))

    const insert = Effect.fn("Inboxes.insert")(function*(organizationId: string, podId: string, input: CreateInboxInput) {
      const username = input.username === undefined ? yield* ids.secret(5) : input.username.trim().toLowerCase()
      const problem = usernameProblem(username)
      if (problem !== undefined) return yield* validationError([{ path: ["username"], message: problem }])
      if (RESERVED_USERNAMES.has(username)) {
        return yield* new ReservedUsername({ message: `The username "${username}" is reserved.`, fix: "Choose another username." })
      }
      const domain = (input.domain ?? settings.baseDomain).trim().toLowerCase()
      if (domain !== settings.baseDomain) {
        return yield* new DomainNotVerified({
          message: `The domain ${domain} is not a verified domain of this organization.`,
          fix: `Omit domain to use ${settings.baseDomain}, or add and verify ${domain} first.`
        })
      }
      const at = yield* now
      const row: InboxRow = {
        id: yield* ids.make("inbox"),
        organization_id: organizationId,
        pod_id: podId,
        username,
        domain,
        email: `${username}@${domain}`,
        display_name: input.display_name ?? null,
        client_id: input.client_id ?? null,
        status: "active",
        metadata: input.metadata ?? null,
        created_at: at,
        updated_at: at
      }
      yield* sql`INSERT INTO inboxes ${sql.insert({ ...row, metadata: row.metadata === null ? null : JSON.stringify(row.metadata) })}`.pipe(
        Effect.catchIf(isUniqueViolation, () =>
          Effect.fail(new AlreadyExists({ message: `The address ${row.email} is already taken.`, fix: "Choose another username." }))),
        Effect.catchTag("SqlError", Effect.die)
      )
      return row
    })

    const resolvePod = (principal: Principal, podId: string | undefined) =>
      podId !== undefined
        ? Effect.map(pods.find(principal, podId), (p) => p.id)
        : principal.scope.type === "pod"
        ? Effect.succeed(principal.scope.podId)
        : pods.defaultPodId(principal.organizationId)

    return Inboxes.of({
      find,
      insert,
      create: Effect.fn("Inboxes.create")(function*(principal, input, podId) {
        yield* requirePermission(principal, "inbox_create")
        yield* requireScope(principal, ["organization", "pod"], "create inboxes")
        const targetPod = yield* resolvePod(principal, podId)
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The organization row lock serialises creates: the count below cannot go stale
          // and two creates with one client_id make one inbox.
          const org = yield* organizations.lock(principal.organizationId).pipe(Effect.orDie)
          if (input.client_id !== undefined) {
            const existing = (yield* byClientId(org.id, input.client_id))[0]
            if (existing !== undefined) {
              if (canSeeInbox(principal, existing)) return toInbox(existing)
              return yield* new AlreadyExists({ message: `client_id ${input.client_id} is already used by another inbox.` })
            }
          }
          const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inboxes WHERE organization_id = ${org.id}`
          yield* checkLimit(planOf(org), "inboxes", count[0]?.n ?? 0)
          return toInbox(yield* insert(org.id, targetPod, input))
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      list: Effect.fn("Inboxes.list")(function*(principal, query, podId) {
        yield* requirePermission(principal, "inbox_read")
        if (podId !== undefined) yield* pods.find(principal, podId)
        const page = yield* newestFirst(sql, query)
        const scope = principal.scope.type === "inbox"
          ? sql`AND id = ${principal.scope.inboxId}`
          : principal.scope.type === "pod"
          ? sql`AND pod_id = ${principal.scope.podId}`
          : sql``
        const pod = podId === undefined ? sql`` : sql`AND pod_id = ${podId}`
        const rows = yield* sql`SELECT * FROM inboxes WHERE organization_id = ${principal.organizationId} ${scope} ${pod} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(InboxRow))
        return toPage(rows, page.limit, toInbox)
      }),
      get: Effect.fn("Inboxes.get")(function*(principal, idOrEmail) {
        yield* requirePermission(principal, "inbox_read")
        return toInbox(yield* find(principal, idOrEmail))
      }),
      update: Effect.fn("Inboxes.update")(function*(principal, idOrEmail, input) {
        yield* requirePermission(principal, "inbox_update")
        const row = yield* find(principal, idOrEmail)
        const at = yield* now
        const next: InboxRow = {
          ...row,
          ...(input.display_name === undefined ? {} : { display_name: input.display_name }),
          ...(input.status === undefined ? {} : { status: input.status }),
          ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
          updated_at: at
        }
        yield* sql`UPDATE inboxes SET display_name = ${next.display_name}, status = ${next.status},
          metadata = ${next.metadata === null ? null : JSON.stringify(next.metadata)}::jsonb, updated_at = ${at}
          WHERE id = ${row.id}`.pipe(Effect.orDie)
        return toInbox(next)
      }),
      delete: Effect.fn("Inboxes.delete")(function*(principal, idOrEmail, podId) {
        yield* requirePermission(principal, "inbox_delete")
        const row = yield* find(principal, idOrEmail)
        if (podId !== undefined && row.pod_id !== podId) return yield* notFound("Inbox", idOrEmail)
        yield* sql`DELETE FROM inboxes WHERE id = ${row.id}`.pipe(Effect.orDie)
      })
    })
  }))
}
