/**
 * API keys: the secret `am_...` is shown once at creation; only its SHA-256 is stored (the
 * secret is 256 random bits, so a fast hash is enough and keeps authentication one indexed
 * lookup). Revocation is immediate: every request looks the key up again.
 *
 * Scope rules (spec, "Key scopes"): a new key is never wider than its creator (pod-scoped
 * creators make keys for their pod or its inboxes, inbox-scoped creators for their inbox
 * only; anything wider is 403 missing_permission, a pod or inbox outside the creator's
 * scope is 404 not_found); a creator with a permission list silently narrows the requested
 * list to its own; omitting `permissions` inherits the creator's (full access for an
 * unrestricted creator). Creating keys needs a verified owner email (403 email_unverified).
 * A key whose scoped inbox or pod is deleted is deleted with it, so it no longer
 * authenticates (401).
 *
 * Authenticated keys are cached (KeyCache), so a request pays no database round trip for
 * its key; revocation stays immediate (KeyCache's contract: the revoking process forgets
 * the key before it answers, the others when the change's signal reaches them).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { PERMISSIONS, type Permission, parsePermissions, PermissionsInput } from "../access/permissions.ts"
import { notFound, type Principal, type Scope } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import type { EmailUnverified, NotFound, ValidationError } from "../errors/errors.ts"
import { MissingPermission, Unauthorized } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Organizations } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { Pods } from "../pods/Pods.ts"
import { KeyCache } from "./KeyCache.ts"
import { compact, Id, Name } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { traced } from "../shared/span.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"

export const KEY_PREFIX = "am_"

export const hashSecret = (secret: string): string => createHash("sha256").update(secret).digest("hex")

const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  permissions: Schema.NullOr(Json(Schema.Array(Schema.String))),
  created_at: Schema.Date,
  updated_at: Schema.optionalKey(Schema.NullOr(Schema.Date))
})
type ApiKeyRow = typeof ApiKeyRow.Type

const scopeName = (row: { pod_id: string | null; inbox_id: string | null }): ApiKey["scope"] =>
  row.inbox_id !== null ? "inbox" : row.pod_id !== null ? "pod" : "organization"

/**
 * A key as lists show it (no secret). `permissions` is an object of every permission name to
 * whether the key has it, the agentmail SDK's shape (the spec names the field, not its form,
 * and takes either form on input); `type` (always `bearer`: a secret sent as a Bearer token)
 * and `updated_at` are the SDK's too (docs/client-compatibility.md).
 */
export const ApiKey = Schema.Struct({
  type: Schema.Literal("bearer"),
  api_key_id: Schema.String,
  prefix: Schema.String,
  name: Schema.String,
  scope: Schema.Literals(["organization", "pod", "inbox"]),
  pod_id: Schema.optionalKey(Schema.String),
  inbox_id: Schema.optionalKey(Schema.String),
  permissions: Schema.Record(Schema.String, Schema.Boolean),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type ApiKey = typeof ApiKey.Type

/** A key as its creation answers it: with the secret, shown once. */
export const CreatedApiKey = Schema.Struct({ ...ApiKey.fields, api_key: Schema.String })
export type CreatedApiKey = typeof CreatedApiKey.Type

/** Every permission name to whether the key has it; an unrestricted key has each. */
const permissionObject = (granted: ReadonlyArray<string> | null): Record<string, boolean> => {
  const has = granted === null ? undefined : new Set(granted)
  return Object.fromEntries(PERMISSIONS.map((name) => [name, has === undefined || has.has(name)]))
}

export const toApiKey = (row: ApiKeyRow): ApiKey =>
  compact({
    type: "bearer" as const,
    api_key_id: row.id,
    prefix: row.prefix,
    name: row.name,
    scope: scopeName(row),
    pod_id: row.pod_id,
    inbox_id: row.inbox_id,
    permissions: permissionObject(row.permissions),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at ?? row.created_at)
  })

export const CreateApiKeyInput = Schema.Struct({
  name: Name,
  pod_id: Schema.optionalKey(Id),
  inbox_id: Schema.optionalKey(Id),
  permissions: Schema.optionalKey(PermissionsInput)
})
export type CreateApiKeyInput = typeof CreateApiKeyInput.Type

/** Under a pod's or an inbox's path, which gives the scope. */
export const CreateScopedApiKeyInput = Schema.Struct({ name: Name, permissions: Schema.optionalKey(PermissionsInput) })

export const ListApiKeysQuery = Schema.Struct(PageQueryFields)

/** A key's name and permissions, changed; permissions outside the changer's own are dropped, as on creation. */
export const UpdateApiKeyInput = Schema.Struct({
  name: Schema.optionalKey(Name),
  permissions: Schema.optionalKey(PermissionsInput)
})
export type UpdateApiKeyInput = typeof UpdateApiKeyInput.Type

/**
 * The keys of one pod or inbox (`/v0/pods/:pod_id/api-keys`, `/v0/inboxes/:inbox_id/api-keys`,
 * the agentmail SDK's paths): a pod's are the keys scoped to it or to one of its inboxes.
 * Neither: every key the caller sees.
 */
export interface KeyPlace {
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

export interface IssueKey {
  readonly name: string
  readonly podId?: string
  readonly inboxId?: string
  /** Absent: full access within the scope. */
  readonly permissions?: ReadonlyArray<Permission>
}

const AuthRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  inbox_pod_id: Schema.NullOr(Schema.String),
  permissions: Schema.NullOr(Json(Schema.Array(Schema.String)))
})

// Built only when a key is refused: an error captures a stack trace and checks its fields
// with Schema, which cost several percent of every authenticated request when built eagerly.
const unauthorized = () =>
  new Unauthorized({ message: "The API key is missing, unknown or revoked.", fix: "Send Authorization: Bearer am_..." })

const narrower = (message: string) =>
  new MissingPermission({ message, fix: "A key cannot have a wider scope than the key that creates it." })

export class ApiKeys extends Context.Service<ApiKeys, {
  /** Resolves a secret to its principal, or 401 unauthorized. */
  authenticate(secret: string): Effect.Effect<Principal, Unauthorized>
  create(principal: Principal, input: CreateApiKeyInput | typeof CreateScopedApiKeyInput.Type, place?: KeyPlace): Effect.Effect<CreatedApiKey, MissingPermission | NotFound | ValidationError | EmailUnverified>
  list(principal: Principal, query: typeof ListApiKeysQuery.Type, place?: KeyPlace): Effect.Effect<Page<ApiKey>, MissingPermission | NotFound | ValidationError>
  get(principal: Principal, keyId: string, place?: KeyPlace): Effect.Effect<ApiKey, NotFound>
  update(principal: Principal, keyId: string, input: UpdateApiKeyInput, place?: KeyPlace): Effect.Effect<ApiKey, NotFound | ValidationError>
  revoke(principal: Principal, keyId: string, place?: KeyPlace): Effect.Effect<void, MissingPermission | NotFound>
  /** Creates a key with no principal checks (operator CLI, agent sign-up). */
  issue(organizationId: string, key: IssueKey): Effect.Effect<CreatedApiKey>
}>()("inbox/ApiKeys") {
  static readonly layerNoDeps = Layer.effect(ApiKeys, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const organizations = yield* Organizations
    const pods = yield* Pods
    const inboxes = yield* Inboxes
    const cache = yield* KeyCache

    const issue = Effect.fn("ApiKeys.issue")(function*(organizationId: string, key: IssueKey) {
      const secret = `${KEY_PREFIX}${yield* ids.secret(32)}`
      const row: ApiKeyRow = {
        id: yield* ids.make("key"),
        organization_id: organizationId,
        name: key.name,
        prefix: secret.slice(0, KEY_PREFIX.length + 8),
        pod_id: key.podId ?? null,
        inbox_id: key.inboxId ?? null,
        permissions: key.permissions ?? null,
        created_at: yield* now
      }
      yield* sql`INSERT INTO api_keys ${
        sql.insert({ ...row, permissions: row.permissions === null ? null : JSON.stringify(row.permissions), secret_hash: hashSecret(secret) })
      }`.pipe(Effect.orDie)
      return { ...toApiKey(row), api_key: secret }
    })

    /** The scope of the new key, checked against the creator's. */
    const resolveScope = Effect.fn("ApiKeys.resolveScope")(function*(principal: Principal, input: CreateApiKeyInput) {
      if (input.inbox_id !== undefined) {
        const inbox = yield* inboxes.find(principal, input.inbox_id)
        return { inboxId: inbox.id, podId: inbox.pod_id }
      }
      if (input.pod_id !== undefined) {
        if (principal.scope.type === "inbox") return yield* narrower("An inbox-scoped key cannot create a pod-scoped key.")
        const pod = yield* pods.find(principal, input.pod_id)
        return { podId: pod.id }
      }
      if (principal.scope.type !== "organization") {
        return yield* narrower(`A ${principal.scope.type}-scoped key cannot create an organization-level key.`)
      }
      return {}
    })

    // An inbox-scoped key's row carries its inbox's pod too, so a pod sees its inboxes' keys.
    const visibleKeys = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    /** The condition of a place's keys; a pod or inbox the caller cannot see is 404. */
    const inPlace = (principal: Principal, place: KeyPlace | undefined) =>
      place?.inboxId !== undefined
        ? Effect.map(inboxes.find(principal, place.inboxId), (inbox) => sql`AND inbox_id = ${inbox.id}`)
        : place?.podId !== undefined
        ? Effect.map(pods.find(principal, place.podId), (pod) => sql`AND pod_id = ${pod.id}`)
        : Effect.succeed(sql``)

    const COLUMNS = sql`id, organization_id, name, prefix, pod_id, inbox_id, permissions, created_at, updated_at`

    const findKey = Effect.fn("ApiKeys.find")(function*(principal: Principal, keyId: string, place: KeyPlace | undefined) {
      const where = yield* inPlace(principal, place)
      const rows = yield* sql`SELECT ${COLUMNS} FROM api_keys
        WHERE id = ${keyId} AND revoked_at IS NULL AND ${visibleKeys(principal)} ${where}`.pipe(decodeRows(ApiKeyRow))
      if (rows[0] === undefined) return yield* notFound("API key", keyId)
      return rows[0]
    })

    /** The requested permissions, narrowed to the caller's own (silently, the spec's rule on creation). */
    const narrowed = (principal: Principal, requested: ReadonlyArray<Permission> | undefined) => {
      const creator = principal.permissions
      return creator === undefined ? requested : (requested ?? [...creator]).filter((p) => creator.has(p)).sort()
    }

    /** A key not in the cache: looked up, and remembered unless a change was announced meanwhile (KeyCache). */
    const lookUp = Effect.fnUntraced(function*(hash: string) {
      const mark = yield* cache.mark
      const rows = yield* sql`SELECT k.id, k.organization_id, k.pod_id, k.inbox_id, k.permissions, i.pod_id AS inbox_pod_id
        FROM api_keys k LEFT JOIN inboxes i ON i.id = k.inbox_id
        WHERE k.secret_hash = ${hash} AND k.revoked_at IS NULL`.pipe(decodeRows(AuthRow))
      const row = rows[0]
      if (row === undefined) return yield* unauthorized()
      const scope: Scope = row.inbox_id !== null
        ? { type: "inbox", inboxId: row.inbox_id, podId: row.inbox_pod_id ?? "" }
        : row.pod_id !== null
        ? { type: "pod", podId: row.pod_id }
        : { type: "organization" }
      const principal: Principal = {
        organizationId: row.organization_id,
        scope,
        keyId: row.id,
        ...(row.permissions === null ? {} : { permissions: new Set(row.permissions as ReadonlyArray<Permission>) })
      }
      yield* cache.remember(hash, principal, mark)
      return principal
    })

    return ApiKeys.of({
      issue,
      // Nearly every request's key is in the cache: that way takes no generator.
      authenticate: (secret: string) => {
        if (!secret.startsWith(KEY_PREFIX)) return Effect.fail(unauthorized())
        const hash = hashSecret(secret)
        return Effect.flatMap(cache.get(hash), (cached) => cached !== undefined ? Effect.succeed(cached) : lookUp(hash)).pipe(
          traced("ApiKeys.authenticate")
        )
      },
      create: Effect.fn("ApiKeys.create")(function*(principal, body: CreateApiKeyInput, place) {
        if (body.pod_id !== undefined && body.inbox_id !== undefined) {
          return yield* validationError([{ path: ["inbox_id"], message: "Give pod_id or inbox_id, not both" }])
        }
        const input: CreateApiKeyInput = {
          ...body,
          ...(place?.inboxId !== undefined ? { inbox_id: place.inboxId } : place?.podId !== undefined ? { pod_id: place.podId } : {})
        }
        const requested = input.permissions === undefined ? undefined : yield* parsePermissions(input.permissions)
        yield* organizations.requireVerifiedEmail(principal.organizationId).pipe(
          Effect.catchTag("NotFound", Effect.die)
        )
        const permissions = narrowed(principal, requested)
        const scope = yield* resolveScope(principal, input)
        return yield* issue(principal.organizationId, {
          name: input.name,
          ...scope,
          ...(permissions === undefined ? {} : { permissions })
        })
      }),
      list: Effect.fn("ApiKeys.list")(function*(principal, query, place) {
        const where = yield* inPlace(principal, place)
        const page = yield* newestFirst(sql, query)
        const rows = yield* sql`SELECT ${COLUMNS} FROM api_keys
          WHERE revoked_at IS NULL AND ${visibleKeys(principal)} ${where} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(ApiKeyRow))
        return toPage(rows, page.limit, toApiKey)
      }),
      get: Effect.fn("ApiKeys.get")(function*(principal, keyId, place) {
        return toApiKey(yield* findKey(principal, keyId, place))
      }),
      update: Effect.fn("ApiKeys.update")(function*(principal, keyId, input, place) {
        const requested = input.permissions === undefined ? undefined : yield* parsePermissions(input.permissions)
        const row = yield* findKey(principal, keyId, place)
        const permissions = requested === undefined ? undefined : narrowed(principal, requested)
        const rows = yield* sql`UPDATE api_keys SET updated_at = ${yield* now}
            ${input.name === undefined ? sql`` : sql`, name = ${input.name}`}
            ${permissions === undefined ? sql`` : sql`, permissions = ${JSON.stringify(permissions)}::jsonb`}
          WHERE id = ${row.id} AND revoked_at IS NULL RETURNING ${COLUMNS}`.pipe(decodeRows(ApiKeyRow))
        if (rows[0] === undefined) return yield* notFound("API key", keyId)
        // Its permissions may have changed: this process reads the key again on its next request.
        yield* cache.forgetKey(keyId)
        return toApiKey(rows[0])
      }),
      revoke: Effect.fn("ApiKeys.revoke")(function*(principal, keyId, place) {
        const at = yield* now
        const where = yield* inPlace(principal, place).pipe(Effect.catchTag("NotFound", () => Effect.succeed(sql`AND false`)))
        const rows = yield* sql`UPDATE api_keys SET revoked_at = ${at}
          WHERE id = ${keyId} AND revoked_at IS NULL AND ${visibleKeys(principal)} ${where}
          RETURNING id`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound("API key", keyId)
        // Committed (a single statement): this process refuses the key from its next request.
        yield* cache.forgetKey(keyId)
      })
    })
  }))

  /** With the services it uses (Inboxes, KeyCache, Organizations, Pods); the ports are the caller's. */
  static readonly layer = ApiKeys.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Inboxes.layer, KeyCache.layer, Organizations.layer, Pods.layer)))
}

