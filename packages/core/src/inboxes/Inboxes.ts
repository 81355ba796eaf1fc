/**
 * Inboxes: addresses that receive and send mail, each inside a pod.
 *
 * Rules of the spec kept here: every route accepts the inbox id or its full email address;
 * the username is random when omitted and reserved names are refused (422
 * reserved_username); an address that exists is 403 already_exists; `client_id` makes
 * creation idempotent; the plan caps the number of inboxes (402 plan_limit_exceeded),
 * checked under a lock on the organization row so concurrent creates cannot overshoot;
 * lists are newest first; deleting an inbox removes its data (and keys scoped to it).
 * Any domain other than the base domain must be a VERIFIED custom domain of the
 * organization (422 domain_not_verified), or a subdomain of one with subdomains_enabled
 * (422 subdomains_not_enabled): Domains.admitInbox decides, under the organization lock.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleText, visibleTo } from "../access/visibility.ts"
import {
  AlreadyExists,
  DomainNotVerified,
  type NotFound,
  type PlanLimitExceeded,
  ReservedUsername,
  type SubdomainsNotEnabled,
  type ValidationError
} from "../errors/errors.ts"
import { KeyCache } from "../apikeys/KeyCache.ts"
import { Domains } from "../domains/Domains.ts"
import { Organizations, planNow } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { checkLimit } from "../plans/plans.ts"
import { fixedStatements } from "../db/prepared.ts"
import { Pods } from "../pods/Pods.ts"
import { Settings } from "../settings/Settings.ts"
import { ClientId, compact, Line, MAX_METADATA_KEYS, Metadata, MetadataChanges, Name, normaliseDomain, Username } from "../shared/fields.ts"
import { idempotentInsert } from "../shared/idempotency.ts"
import { AscendingField, isTrue, keyset, newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { traced } from "../shared/span.ts"
import { decodeRows, escapeLike, Json } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { RESERVED_USERNAMES } from "../shared/usernames.ts"

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

/** An inbox as the API shows it. */
export const Inbox = Schema.Struct({
  pod_id: Schema.String,
  inbox_id: Schema.String,
  email: Schema.String,
  display_name: Schema.optionalKey(Schema.String),
  client_id: Schema.optionalKey(Schema.String),
  status: Schema.Literals(["active", "paused"]),
  metadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Inbox = typeof Inbox.Type

// Fields set one by one, absent ones left out (as `compact` would): every inbox answer is made here.
export const toInbox = (row: InboxRow): Inbox => {
  const inbox: { -readonly [K in keyof Inbox]: Inbox[K] } = { pod_id: row.pod_id, inbox_id: row.id, email: row.email } as Inbox
  if (row.display_name !== null) inbox.display_name = row.display_name
  if (row.client_id !== null) inbox.client_id = row.client_id
  inbox.status = row.status
  if (row.metadata !== null) inbox.metadata = row.metadata
  inbox.created_at = iso(row.created_at)
  inbox.updated_at = iso(row.updated_at)
  return inbox
}

export const CreateInboxInput = Schema.Struct({
  username: Schema.optionalKey(Username),
  domain: Schema.optionalKey(Line(253)),
  display_name: Schema.optionalKey(Name),
  client_id: Schema.optionalKey(ClientId),
  metadata: Schema.optionalKey(Metadata)
})
export type CreateInboxInput = typeof CreateInboxInput.Type

export const UpdateInboxInput = Schema.Struct({
  display_name: Schema.optionalKey(Schema.NullOr(Name)),
  status: Schema.optionalKey(Schema.Literals(["active", "paused"])),
  /** Merged: keys given are set, keys given as null removed, others kept; `null` clears it all. */
  metadata: Schema.optionalKey(Schema.NullOr(MetadataChanges))
})
export type UpdateInboxInput = typeof UpdateInboxInput.Type

export const ListInboxesQuery = Schema.Struct({ ...PageQueryFields, ...AscendingField })

/**
 * Metadata after a PATCH: `null` clears it; otherwise the change is merged (keys set, keys
 * given as null removed; the agentmail SDK's rule, the spec not saying). The result keeps
 * the limit of MAX_METADATA_KEYS; none left is no metadata.
 */
const mergeMetadata = (stored: Readonly<Record<string, string>> | null, change: Readonly<Record<string, string | null>> | null) => {
  if (change === null) return Effect.succeed(null)
  const merged: Record<string, string> = { ...stored }
  for (const [key, value] of Object.entries(change)) {
    if (value === null) delete merged[key]
    else merged[key] = value
  }
  const count = Object.keys(merged).length
  if (count > MAX_METADATA_KEYS) {
    return Effect.fail(validationError([{ path: ["metadata"], message: `metadata would hold ${count} keys; at most ${MAX_METADATA_KEYS}` }]))
  }
  return Effect.succeed(count === 0 ? null : merged)
}

/** `q`: words that must each occur in the address, display name, id or client_id (case-insensitive). */
export const SearchInboxesQuery = Schema.Struct({
  q: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  ...PageQueryFields
})


type Refusal = ValidationError | ReservedUsername | DomainNotVerified

/** The scope columns of `inboxes`. */
const INBOX_SCOPE = { pod: "pod_id", inbox: "id" } as const

export class Inboxes extends Context.Service<Inboxes, {
  create(principal: Principal, input: CreateInboxInput, podId?: string): Effect.Effect<Inbox, Refusal | SubdomainsNotEnabled | NotFound | AlreadyExists | PlanLimitExceeded>
  list(principal: Principal, query: typeof ListInboxesQuery.Type, podId?: string): Effect.Effect<Page<Inbox>, NotFound | ValidationError>
  /** The inboxes matching every word of `q`, newest first (the agentmail SDK's inbox search). */
  search(principal: Principal, query: typeof SearchInboxesQuery.Type, podId?: string): Effect.Effect<Page<Inbox>, NotFound | ValidationError>
  get(principal: Principal, idOrEmail: string): Effect.Effect<Inbox, NotFound>
  update(principal: Principal, idOrEmail: string, input: UpdateInboxInput): Effect.Effect<Inbox, NotFound | ValidationError>
  delete(principal: Principal, idOrEmail: string, podId?: string): Effect.Effect<void, NotFound>
  /** The inbox row by id or email if it exists and is visible to the principal. */
  find(principal: Principal, idOrEmail: string): Effect.Effect<InboxRow, NotFound>
  /**
   * The checks a new inbox must pass before any state is read (username, reserved names,
   * domain), giving the address it will have. A custom domain is refused unless
   * `customDomains` (then the caller asks Domains.admitInbox).
   */
  address(input: CreateInboxInput, customDomains?: boolean): Effect.Effect<{ readonly username: string; readonly domain: string }, Refusal>
  /** Creates an inbox with no principal checks: for agent sign-up, inside its transaction. */
  insert(organizationId: string, podId: string, input: CreateInboxInput, address: { readonly username: string; readonly domain: string }): Effect.Effect<InboxRow, AlreadyExists>
}>()("inbox/Inboxes") {
  static readonly layerNoDeps = Layer.effect(Inboxes, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const keyCache = yield* KeyCache
    const organizations = yield* Organizations
    const pods = yield* Pods
    const domains = yield* Domains

    const visible = (principal: Principal) => visibleTo(sql, principal, INBOX_SCOPE)

    const fixed = fixedStatements(sql)
    const decodeInboxRows = decodeRows(InboxRow)

    // Every GET, PATCH and DELETE of an inbox starts here, so it reads by a fixed statement
    // (db/prepared.ts) whose text is made once for each key column and kind of scope.
    const findTexts = { id: new Map<string, string>(), email: new Map<string, string>() }
    const find = (principal: Principal, idOrEmail: string): Effect.Effect<InboxRow, NotFound> => {
      const column = idOrEmail.includes("@") ? "email" : "id"
      const params: Array<unknown> = [column === "email" ? idOrEmail.toLowerCase() : idOrEmail]
      const where = visibleText(principal, INBOX_SCOPE, 2, params)
      let text = findTexts[column].get(where)
      if (text === undefined) findTexts[column].set(where, text = `SELECT * FROM inboxes WHERE ${column} = $1 AND ${where}`)
      return fixed(text, params as Array<string>).pipe(
        decodeInboxRows,
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(notFound("Inbox", idOrEmail)) : Effect.succeed(rows[0])),
        traced("Inboxes.find")
      )
    }

    const address = Effect.fn("Inboxes.address")(function*(input: CreateInboxInput, customDomains = false) {
      const username = input.username ?? (yield* ids.secret(5))
      if (RESERVED_USERNAMES.has(username)) {
        return yield* new ReservedUsername({ message: `The username "${username}" is reserved.`, fix: "Choose another username." })
      }
      const domain = input.domain === undefined ? settings.baseDomain : normaliseDomain(input.domain)
      if (domain === undefined) return yield* validationError([{ path: ["domain"], message: "Expected a domain name" }])
      if (domain !== settings.baseDomain && !customDomains) {
        return yield* new DomainNotVerified({
          message: `The domain ${domain} is not a verified domain of this organization.`,
          fix: `Omit domain to use ${settings.baseDomain}, or add and verify ${domain} first.`
        })
      }
      return { username, domain }
    })

    const newRow = (organizationId: string, podId: string, input: CreateInboxInput, at: Date, id: string, addr: { readonly username: string; readonly domain: string }): InboxRow => ({
      id,
      organization_id: organizationId,
      pod_id: podId,
      username: addr.username,
      domain: addr.domain,
      email: `${addr.username}@${addr.domain}`,
      display_name: input.display_name ?? null,
      client_id: input.client_id ?? null,
      status: "active",
      metadata: input.metadata ?? null,
      created_at: at,
      updated_at: at
    })

    const columns = (row: InboxRow) => ({ ...row, metadata: row.metadata === null ? null : JSON.stringify(row.metadata) })
    const taken = (email: string) => () => new AlreadyExists({ message: `The address ${email} is already taken.`, fix: "Choose another username." })

    const insert = Effect.fn("Inboxes.insert")(function*(organizationId: string, podId: string, input: CreateInboxInput, addr: { readonly username: string; readonly domain: string }) {
      const row = newRow(organizationId, podId, input, yield* now, yield* ids.make("inbox"), addr)
      return yield* idempotentInsert(sql, { table: "inboxes", row, organizationId, clientId: undefined, decode: InboxRow, columns, conflict: taken(row.email) })
    })

    const targetPod = (principal: Principal, podId: string | undefined) =>
      podId !== undefined
        ? Effect.map(pods.lock(principal, podId), (p) => p.id)
        : principal.scope.type === "pod"
        ? Effect.map(pods.lock(principal, principal.scope.podId), (p) => p.id)
        : pods.defaultPodId(principal.organizationId)

    return Inboxes.of({
      find,
      address,
      insert,
      create: Effect.fn("Inboxes.create")(function*(principal, input, podId) {
        const addr = yield* address(input, true)
        return yield* sql.withTransaction(Effect.gen(function*() {
          // The organization row lock serialises creates: the count below cannot go stale
          // and two creates with one client_id make one inbox. The pod row lock keeps the
          // pod from being deleted under the new inbox.
          const org = yield* organizations.lock(principal.organizationId).pipe(Effect.orDie)
          const pod = yield* targetPod(principal, podId)
          if (addr.domain !== settings.baseDomain) yield* domains.admitInbox(org.id, pod, addr.domain)
          const row = newRow(org.id, pod, input, yield* now, yield* ids.make("inbox"), addr)
          const stored = yield* idempotentInsert(sql, {
            table: "inboxes",
            row,
            organizationId: org.id,
            clientId: input.client_id,
            decode: InboxRow,
            visible: visible(principal),
            columns,
            conflict: taken(row.email),
            before: Effect.gen(function*() {
              const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inboxes WHERE organization_id = ${org.id}`.pipe(Effect.orDie)
              yield* checkLimit(yield* planNow(org), "inboxes", count[0]?.n ?? 0)
            })
          })
          return toInbox(stored)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      list: Effect.fn("Inboxes.list")(function*(principal, query, podId) {
        if (podId !== undefined) yield* pods.find(principal, podId)
        // Newest first, as the spec's lists; `ascending` (the SDK's) oldest first.
        const page = yield* keyset(sql, query, { column: "created_at", ascending: isTrue(query.ascending) })
        const pod = podId === undefined ? sql`` : sql`AND pod_id = ${podId}`
        const rows = yield* sql`SELECT * FROM inboxes WHERE ${visible(principal)} ${pod} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(InboxRow))
        return toPage(rows, page.limit, toInbox)
      }),
      search: Effect.fn("Inboxes.search")(function*(principal, query, podId) {
        if (podId !== undefined) yield* pods.find(principal, podId)
        const page = yield* newestFirst(sql, query)
        const pod = podId === undefined ? sql`` : sql`AND pod_id = ${podId}`
        const words = query.q.trim().split(/\s+/).filter((w) => w !== "").map((w) => `%${escapeLike(w)}%`)
        const matches = words.map((w) =>
          sql`AND (email ILIKE ${w} OR COALESCE(display_name, '') ILIKE ${w} OR id ILIKE ${w} OR COALESCE(client_id, '') ILIKE ${w})`)
        const rows = yield* sql`SELECT * FROM inboxes WHERE ${visible(principal)} ${pod}
          ${matches.reduce((all, m) => sql`${all} ${m}`, sql``)} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(InboxRow))
        return toPage(rows, page.limit, toInbox)
      }),
      get: (principal, idOrEmail) => Effect.map(find(principal, idOrEmail), toInbox).pipe(traced("Inboxes.get")),
      update: Effect.fn("Inboxes.update")(function*(principal, idOrEmail, input) {
        const found = yield* find(principal, idOrEmail)
        // Under the row's lock: two PATCHes of different keys at once both land.
        return yield* sql.withTransaction(Effect.gen(function*() {
          const row = (yield* sql`SELECT * FROM inboxes WHERE id = ${found.id} FOR UPDATE`.pipe(decodeRows(InboxRow)))[0] ?? found
          const at = yield* now
          const metadata = input.metadata === undefined ? row.metadata : yield* mergeMetadata(row.metadata, input.metadata)
          const next: InboxRow = {
            ...row,
            ...(input.display_name === undefined ? {} : { display_name: input.display_name }),
            ...(input.status === undefined ? {} : { status: input.status }),
            metadata,
            updated_at: at
          }
          yield* sql`UPDATE inboxes SET display_name = ${next.display_name}, status = ${next.status},
            metadata = ${next.metadata === null ? null : JSON.stringify(next.metadata)}::jsonb, updated_at = ${at}
            WHERE id = ${row.id}`
          return toInbox(next)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      delete: Effect.fn("Inboxes.delete")(function*(principal, idOrEmail, podId) {
        const row = yield* find(principal, idOrEmail)
        if (podId !== undefined && row.pod_id !== podId) return yield* notFound("Inbox", idOrEmail)
        yield* sql`DELETE FROM inboxes WHERE id = ${row.id}`.pipe(Effect.orDie)
        // The inbox's keys went with it (cascade): this process refuses them from its next request.
        yield* keyCache.forgetScope(row.id)
      })
    })
  }))

  /** With the services it uses (Domains, KeyCache, Organizations, Pods); the ports are the caller's. */
  static readonly layer = Inboxes.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Domains.layer, KeyCache.layer, Organizations.layer, Pods.layer)))
}
