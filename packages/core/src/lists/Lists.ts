/**
 * Allow and block lists (spec: Allow/block list entry; Allow and block lists): entries are
 * addresses or domains, at organization, pod and inbox scope, for three directions:
 * `send` (new messages and forwards), `reply` (replies), `receive` (inbound mail).
 *
 * The verdict for an address (docs/lists.md, "Allow and block lists"): scopes are checked inbox,
 * then pod, then organization; the first scope with an entry matching the address decides
 * (a block entry blocks, an allow entry allows; block wins within one scope). When no
 * scope has a match, a non-empty allow list at any of the scopes blocks, otherwise the
 * address is allowed. An entry matches an address equal to it (case-insensitive), or, for a
 * domain entry, an address at that domain or a subdomain of it.
 *
 * The verdict is asked on every inbound message and every send, so it is one indexed query
 * whatever the number of addresses: each address becomes its candidate entries (itself and
 * every parent domain), looked up by the primary key (scope_id, direction, entry,
 * list_type) at the three scopes at once, and the rule above is applied to the few rows
 * found. Entries are stored in one normal form (lower case, IDNA domains in ASCII), so
 * matching is plain equality.
 *
 * Which list a request names comes from its path: no pod or inbox is the organization's
 * list, `pod_id` a pod's, `inbox_id` an inbox's. A key manages the lists of the levels it
 * reaches; the routes refuse a narrower key the levels above it (403 missing_permission,
 * lists/operations.ts), and a pod or inbox it cannot see is 404.
 */
import { Context, Effect, Layer, Schema, SchemaGetter } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { AlreadyExists, BadRequest, type MissingPermission, type NotFound, type ValidationError } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Pods } from "../pods/Pods.ts"
import { compact, Line, normaliseAddress, normaliseDomain } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { decodeInput, validationError } from "../shared/validation.ts"

export const LIST_DIRECTIONS = ["send", "receive", "reply"] as const
export const LIST_TYPES = ["allow", "block"] as const
export type ListDirection = typeof LIST_DIRECTIONS[number]
export type ListType = typeof LIST_TYPES[number]
export type Verdict = "allow" | "block"

/** Where the mail is sent from or received into: the scopes whose lists apply. */
export interface ListScope {
  readonly organizationId: string
  readonly podId: string
  readonly inboxId: string
}

/**
 * An entry in its normal form: an address lower-cased whole (the spec's lists are
 * case-insensitive, local part included), or a domain in lower-case ASCII.
 */
export const normaliseEntry = (input: string): string | undefined =>
  input.includes("@") ? normaliseAddress(input)?.toLowerCase() : normaliseDomain(input)

/** An entry as a client gives it (body or path), decoded to its normal form. */
export const EntryValue = Schema.String.pipe(
  Schema.check(Schema.makeFilter((s: string) => normaliseEntry(s) !== undefined || "Expected an email address or a domain name")),
  Schema.decode({ decode: SchemaGetter.transform((s: string) => normaliseEntry(s) ?? s), encode: SchemaGetter.passthrough() })
)

/** A block entry's note: one line. */
export const Reason = Line(512)

export const CreateListEntryInput = Schema.Struct({
  entry: EntryValue,
  reason: Schema.optionalKey(Reason)
})
export type CreateListEntryInput = typeof CreateListEntryInput.Type

export const ListEntriesQuery = Schema.Struct(PageQueryFields)

const Scope = Schema.Literals(["organization", "pod", "inbox"])

export const ListEntryRow = Schema.Struct({
  organization_id: Schema.String,
  scope: Scope,
  scope_id: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  inbox_id: Schema.NullOr(Schema.String),
  direction: Schema.Literals(LIST_DIRECTIONS),
  list_type: Schema.Literals(LIST_TYPES),
  entry: Schema.String,
  reason: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type ListEntryRow = typeof ListEntryRow.Type

// A page is keyed by (created_at, entry): the entry stands in for the id newestFirst pages by.
const PagedRow = Schema.Struct({ ...ListEntryRow.fields, id: Schema.String })

/**
 * A list entry as the API shows it. The list it is on is named by `inbox_id` (an inbox's
 * list, `pod_id` then its inbox's pod) or `pod_id` alone (a pod's list); neither means the
 * organization's list. `entry_type` (`email` or `domain`) is the agentmail SDK's field,
 * which the spec leaves open (docs/client-compatibility.md).
 */
export const ListEntry = Schema.Struct({
  entry: Schema.String,
  entry_type: Schema.Literals(["email", "domain"]),
  direction: Schema.Literals(LIST_DIRECTIONS),
  list_type: Schema.Literals(LIST_TYPES),
  organization_id: Schema.String,
  pod_id: Schema.optionalKey(Schema.String),
  inbox_id: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String),
  created_at: Timestamp
})
export type ListEntry = typeof ListEntry.Type

export const toListEntry = (row: ListEntryRow): ListEntry =>
  compact({
    entry: row.entry,
    entry_type: row.entry.includes("@") ? "email" : "domain",
    direction: row.direction,
    list_type: row.list_type,
    organization_id: row.organization_id,
    pod_id: row.scope === "organization" ? undefined : row.pod_id,
    inbox_id: row.scope === "inbox" ? row.inbox_id : undefined,
    reason: row.reason,
    created_at: iso(row.created_at)
  })

/** One list: its direction and type, and the pod or inbox it belongs to (neither: the organization's). */
export interface ListRef {
  readonly direction: ListDirection
  readonly listType: ListType
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

const ListPath = Schema.Struct({
  direction: Schema.Literals(LIST_DIRECTIONS),
  type: Schema.Literals(LIST_TYPES)
})

/**
 * The list a request's path names. An unknown direction or type is 400 validation_error
 * naming the path parameter, not 404: the route exists, the value is wrong. REST never
 * gives both pod_id and inbox_id; MCP and the CLI could, and are refused.
 */
export const listPath = (params: {
  readonly direction: string
  readonly type: string
  readonly pod_id?: string | undefined
  readonly inbox_id?: string | undefined
}): Effect.Effect<ListRef, BadRequest | ValidationError> =>
  Effect.gen(function*() {
    if (params.pod_id !== undefined && params.inbox_id !== undefined) {
      return yield* validationError([{ path: ["inbox_id"], message: "Give pod_id or inbox_id, not both" }])
    }
    const { direction, type } = yield* decodeInput(ListPath, { direction: params.direction, type: params.type })
    return { direction, listType: type, podId: params.pod_id, inboxId: params.inbox_id }
  })

const EntryParam = Schema.Struct({ entry: EntryValue })

/** The `:entry` of a path (URL-decoded by the adapter), in its normal form. */
export const entryParam = (entry: string): Effect.Effect<string, BadRequest | ValidationError> =>
  Effect.map(decodeInput(EntryParam, { entry }), (decoded) => decoded.entry)

type Owner = Pick<ListEntryRow, "scope" | "scope_id" | "pod_id" | "inbox_id">

/** The entry itself and every parent domain of its address (with two labels or more): what may match it. */
const candidatesOf = (address: string): ReadonlyArray<string> => {
  const normal = (normaliseAddress(address) ?? address.trim()).toLowerCase()
  const labels = normal.slice(normal.lastIndexOf("@") + 1).split(".")
  return [normal, ...labels.slice(0, -1).map((_, i) => labels.slice(i).join("."))]
}

export interface VerdictQuestion {
  readonly scope: ListScope
  readonly direction: ListDirection
  readonly addresses: ReadonlyArray<string>
}

const NEAREST_FIRST = ["inbox", "pod", "organization"] as const

// SQLSTATE 23503: the driver reports every constraint but a unique one as ConstraintError.
const isForeignKeyViolation = (e: SqlError.SqlError): boolean =>
  e.reason._tag === "ConstraintError" && (e.reason.cause as { readonly code?: unknown } | undefined)?.code === "23503"

const MatchRow = Schema.Struct({ question: Schema.Number, scope: Schema.String, list_type: Schema.String, entry: Schema.NullOr(Schema.String) })

export class Lists extends Context.Service<Lists, {
  create(principal: Principal, list: ListRef, input: CreateListEntryInput): Effect.Effect<ListEntry, BadRequest | MissingPermission | NotFound | AlreadyExists>
  list(principal: Principal, list: ListRef, query: typeof ListEntriesQuery.Type): Effect.Effect<Page<ListEntry>, MissingPermission | NotFound | ValidationError>
  /** `entry` in its normal form (EntryValue). */
  get(principal: Principal, list: ListRef, entry: string): Effect.Effect<ListEntry, MissingPermission | NotFound>
  delete(principal: Principal, list: ListRef, entry: string): Effect.Effect<void, MissingPermission | NotFound>
  /**
   * The verdict for each address by the rule above, in one query. The map is keyed by each
   * given address lower-cased; matching uses its normal form (IDNA domain in ASCII).
   */
  verdicts(scope: ListScope, direction: ListDirection, addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyMap<string, Verdict>>
  /** `verdicts` for several questions (inbound mail's batch), in one query; answers in their order. */
  verdictsMany(questions: ReadonlyArray<VerdictQuestion>): Effect.Effect<ReadonlyArray<ReadonlyMap<string, Verdict>>>
}>()("inbox/Lists") {
  static readonly layerNoDeps = Layer.effect(Lists, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pods = yield* Pods
    const inboxes = yield* Inboxes

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id", inbox: "inbox_id" })

    /** The organization, pod or inbox whose list the path names, if the principal reaches it. */
    const owner = (principal: Principal, list: ListRef): Effect.Effect<Owner, MissingPermission | NotFound> => {
      if (list.inboxId !== undefined) {
        return Effect.map(inboxes.find(principal, list.inboxId), (inbox) => ({ scope: "inbox", scope_id: inbox.id, pod_id: inbox.pod_id, inbox_id: inbox.id }))
      }
      if (list.podId !== undefined) {
        return Effect.map(pods.find(principal, list.podId), (pod) => ({ scope: "pod", scope_id: pod.id, pod_id: pod.id, inbox_id: null }))
      }
      // Only an organization key reaches the organization's lists: the operations' routes
      // declare it (runOperation refuses a narrower key with 403 missing_permission).
      return Effect.succeed({ scope: "organization", scope_id: principal.organizationId, pod_id: null, inbox_id: null })
    }

    const select = (principal: Principal, list: ListRef, entry: string) =>
      Effect.gen(function*() {
        const o = yield* owner(principal, list)
        const rows = yield* sql`SELECT * FROM list_entries WHERE scope_id = ${o.scope_id} AND direction = ${list.direction}
          AND entry = ${entry} AND list_type = ${list.listType} AND ${visible(principal)}`.pipe(decodeRows(ListEntryRow))
        const row = rows[0]
        if (row === undefined) return yield* notFound(`The ${list.direction} ${list.listType} list entry`, entry)
        return row
      })

    // One statement for every question: the entries matching any candidate at the three
    // scopes (primary key lookups), and one row more ('any', 'allow') when any of the three
    // allow lists is non-empty. That test probes each scope on its own through the page
    // index: written as one `scope_id IN (...)`, PostgreSQL was seen to scan the whole table
    // for it when one organization's allow list was large.
    const verdictsMany = Effect.fn("Lists.verdicts")(function*(questions: ReadonlyArray<VerdictQuestion>) {
      const asked = questions.map(({ addresses }) => {
        const wanted = addresses.map((address) => ({ key: address.toLowerCase(), candidates: new Set(candidatesOf(address)) }))
        return { wanted, all: [...new Set(wanted.flatMap((w) => [...w.candidates]))] }
      })
      const parts = questions.flatMap(({ scope, direction }, i) => {
        const all = asked[i]!.all
        if (all.length === 0) return []
        return [sql`SELECT ${i}::int AS question, scope, list_type, entry FROM list_entries
            WHERE organization_id = ${scope.organizationId}
              AND scope_id IN ${sql.in([scope.inboxId, scope.podId, scope.organizationId])}
              AND direction = ${direction} AND entry IN ${sql.in(all)}
          UNION ALL
          SELECT ${i}::int, 'any', 'allow', NULL WHERE EXISTS (
            SELECT 1 FROM unnest(ARRAY[${scope.inboxId}, ${scope.podId}, ${scope.organizationId}]::text[]) AS s (scope_id)
              WHERE EXISTS (SELECT 1 FROM list_entries e
                WHERE e.scope_id = s.scope_id AND e.direction = ${direction} AND e.list_type = 'allow'))`]
      })
      const rows = parts.length === 0 ? [] : yield* sql`${sql.join(" UNION ALL ", false)(parts)}`.pipe(decodeRows(MatchRow))
      return asked.map(({ wanted }, i) => {
        const mine = rows.filter((r) => r.question === i)
        const allowListed = mine.some((r) => r.entry === null)
        const verdicts = new Map<string, Verdict>()
        for (const w of wanted) {
          const matches = mine.filter((r) => r.entry !== null && w.candidates.has(r.entry))
          const nearest = NEAREST_FIRST.find((s) => matches.some((m) => m.scope === s))
          verdicts.set(
            w.key,
            nearest === undefined
              ? (allowListed ? "block" : "allow")
              : matches.some((m) => m.scope === nearest && m.list_type === "block") ? "block" : "allow"
          )
        }
        return verdicts as ReadonlyMap<string, Verdict>
      })
    }, Effect.orDie)

    return Lists.of({
      create: Effect.fn("Lists.create")(function*(principal, list, input) {
        if (list.listType === "allow" && input.reason !== undefined) {
          return yield* new BadRequest({
            message: "The field \"reason\" is not allowed on allow lists.",
            fix: "Omit reason, or add the entry to a block list."
          })
        }
        const o = yield* owner(principal, list)
        const row: ListEntryRow = {
          organization_id: principal.organizationId,
          ...o,
          direction: list.direction,
          list_type: list.listType,
          entry: input.entry,
          reason: input.reason ?? null,
          created_at: yield* now
        }
        // ON CONFLICT makes a concurrent duplicate one row and one 403, never a 500.
        const inserted = yield* sql`INSERT INTO list_entries ${sql.insert(row)} ON CONFLICT DO NOTHING RETURNING entry`.pipe(
          // The pod or inbox was deleted after it was found: its list is gone with it.
          Effect.catchTag("SqlError", (e) =>
            isForeignKeyViolation(e) && o.scope !== "organization"
              ? Effect.fail(notFound(o.scope === "pod" ? "Pod" : "Inbox", o.scope_id))
              : Effect.die(e))
        )
        if (inserted.length === 0) {
          return yield* new AlreadyExists({
            message: `${input.entry} is already on this ${list.direction} ${list.listType} list.`,
            fix: "Get or delete the existing entry."
          })
        }
        return toListEntry(row)
      }),
      list: Effect.fn("Lists.list")(function*(principal, list, query) {
        const o = yield* owner(principal, list)
        const page = yield* newestFirst(sql, query)
        const rows = yield* sql`SELECT * FROM (SELECT *, entry AS id FROM list_entries WHERE scope_id = ${o.scope_id}
          AND direction = ${list.direction} AND list_type = ${list.listType} AND ${visible(principal)}) e
          WHERE TRUE ${page.after} ${page.orderAndLimit}`.pipe(decodeRows(PagedRow))
        return toPage(rows, page.limit, toListEntry)
      }),
      get: Effect.fn("Lists.get")(function*(principal, list, entry) {
        return toListEntry(yield* select(principal, list, entry))
      }),
      delete: Effect.fn("Lists.delete")(function*(principal, list, entry) {
        const row = yield* select(principal, list, entry)
        yield* sql`DELETE FROM list_entries WHERE scope_id = ${row.scope_id} AND direction = ${row.direction}
          AND entry = ${row.entry} AND list_type = ${row.list_type}`.pipe(Effect.orDie)
      }),
      verdicts: (scope, direction, addresses) => Effect.map(verdictsMany([{ scope, direction, addresses }]), (all) => all[0]!),
      verdictsMany
    })
  }))

  /** With the services it uses (Inboxes, Pods); the ports are the caller's. */
  static readonly layer = Lists.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Inboxes.layer, Pods.layer)))
}
