/**
 * Custom domains: a customer's own domain, proved by DNS, for inbox addresses and for mail
 * signed as theirs (spec: Domain, Domains; docs/domains.md).
 *
 * Rules kept here: the id is the name (IDNA to ASCII, lower case, no trailing dot), and any
 * route accepts the name in any of its spellings; an organization holds a name once (403
 * already_exists), and several organizations may hold the same name, each with its own
 * verification token and DKIM key, as mail providers do: an unverified holder blocks
 * nobody. Of a name's holders one at most is VERIFIED (a unique index): the first to
 * verify owns it, the others are FAILED with reason `verified_by_another_organization`,
 * and adding a name another organization has VERIFIED is 403 already_exists. Only the
 * verified holder of a name (or, while nobody holds it verified, the organizations whose
 * inboxes are on it) receives and sends mail at it (`permitted`). The plan caps domains
 * (402), checked under the organization row lock; pod-scoped keys see their pod's domains
 * only. Each domain gets its own DKIM key pair, the private half sealed at rest and never
 * shown. Verification grades every record from DNS and moves the domain through the state
 * machine below; `domain.verified` is written in the transaction that makes the domain
 * VERIFIED, and only then, so it fires once however many checks run at the same time (the
 * row locks of every holder of the name order them, across organizations too).
 *
 * States: NOT_STARTED (never checked; updating its flags makes it PENDING with
 * dns_records_missing, as the spec observed); PENDING (never verified; some record MISSING
 * or INVALID: reason dns_records_missing or dns_records_invalid); VERIFYING (a check could
 * not reach DNS: reason dns_unavailable; the records keep their last grades); VERIFIED
 * (every record VALID); FAILED (was VERIFIED, then a check found a record gone or changed:
 * reported with its reason, never silently kept VERIFIED; or another organization holds the
 * name VERIFIED, whatever DNS says). A DNS outage never demotes a VERIFIED domain. A check
 * job re-examines every domain: unverified ones every 15 minutes, verified ones daily.
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { notFound, type Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import { Dns } from "../dns/Dns.ts"
import {
  AlreadyExists,
  DomainNotVerified,
  NotConfigured,
  type NotFound,
  type PlanLimitExceeded,
  SubdomainsNotEnabled,
  type ValidationError
} from "../errors/errors.ts"
import { Events } from "../events/Events.ts"
import { JobDeferred, JobFailed, Jobs } from "../jobs/Jobs.ts"
import { RETRY_POLICIES } from "../jobs/policies.ts"
import { Organizations, planNow } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { checkLimit } from "../plans/plans.ts"
import { Pods } from "../pods/Pods.ts"
import { Settings } from "../settings/Settings.ts"
import { resealing, type SealedPlace } from "../shared/SecretRotation.ts"
import { compact, Line, normaliseDomain } from "../shared/fields.ts"
import { newestFirst, type Page, PageQueryFields, toPage } from "../shared/pagination.ts"
import { decodeRows, Json } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { generateDkimKey, open, seal, sign } from "./dkim.ts"
import { check, type DnsRecord, recordsOf, type RecordStatus, zoneFile } from "./records.ts"

export const DOMAIN_STATUSES = ["NOT_STARTED", "PENDING", "VERIFYING", "VERIFIED", "FAILED"] as const
export type DomainStatus = typeof DOMAIN_STATUSES[number]
const RECORD_STATUSES = ["MISSING", "INVALID", "VALID"] as const

/** How often the check job looks at a domain. */
export const RECHECK_UNVERIFIED = Duration.minutes(15)
export const RECHECK_VERIFIED = Duration.days(1)
export const DOMAIN_CHECK_JOB = "domain.check"

const Graded = Schema.Struct({ type: Schema.String, name: Schema.String, status: Schema.Literals(RECORD_STATUSES) })

export const DomainRow = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  pod_id: Schema.NullOr(Schema.String),
  feedback_enabled: Schema.Boolean,
  subdomains_enabled: Schema.Boolean,
  tracking_enabled: Schema.Boolean,
  status: Schema.Literals(DOMAIN_STATUSES),
  reason: Schema.NullOr(Schema.String),
  record_status: Json(Schema.Array(Graded)),
  verification_token: Schema.String,
  dkim_selector: Schema.String,
  dkim_public_key: Schema.String,
  verified_at: Schema.NullOr(Schema.Date),
  checked_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type DomainRow = typeof DomainRow.Type

/** Every column but the sealed private key, which only `signer` reads. */
const COLUMNS = "id, organization_id, pod_id, feedback_enabled, subdomains_enabled, tracking_enabled, status, reason, record_status, verification_token, dkim_selector, dkim_public_key, verified_at, checked_at, created_at, updated_at"

export const DomainRecord = Schema.Struct({
  type: Schema.Literals(["TXT", "MX"]),
  name: Schema.String,
  value: Schema.String,
  priority: Schema.optionalKey(Schema.Int),
  status: Schema.Literals(RECORD_STATUSES)
})

const Flags = {
  feedback_enabled: Schema.Boolean,
  subdomains_enabled: Schema.Boolean,
  tracking_enabled: Schema.Boolean
}

/** A domain as get, create and update show it. */
export const Domain = Schema.Struct({
  domain_id: Schema.String,
  domain: Schema.String,
  ...Flags,
  status: Schema.Literals(DOMAIN_STATUSES),
  reason: Schema.optionalKey(Schema.String),
  records: Schema.Array(DomainRecord),
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Domain = typeof Domain.Type

/** A list item: the spec's summary, without status, reason and records. */
export const DomainSummary = Schema.Struct({
  domain_id: Schema.String,
  domain: Schema.String,
  ...Flags,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type DomainSummary = typeof DomainSummary.Type

export const CreateDomainInput = Schema.Struct({
  domain: Line(253),
  feedback_enabled: Schema.optionalKey(Schema.Boolean),
  subdomains_enabled: Schema.optionalKey(Schema.Boolean),
  tracking_enabled: Schema.optionalKey(Schema.Boolean)
})
export type CreateDomainInput = typeof CreateDomainInput.Type

export const UpdateDomainInput = Schema.Struct({
  feedback_enabled: Schema.optionalKey(Schema.Boolean),
  subdomains_enabled: Schema.optionalKey(Schema.Boolean),
  tracking_enabled: Schema.optionalKey(Schema.Boolean)
})
export type UpdateDomainInput = typeof UpdateDomainInput.Type

export const ListDomainsQuery = Schema.Struct(PageQueryFields)

/** What one check found: every record graded, or DNS could not be asked. */
export type CheckOutcome = { readonly kind: "graded"; readonly grades: ReadonlyArray<RecordStatus> } | { readonly kind: "unavailable" }

/** The reason of a holder that another organization beat to verification (docs/domains.md). */
export const VERIFIED_ELSEWHERE = "verified_by_another_organization"

/**
 * The state machine of the module comment, as one function: (state now, check, whether
 * another organization holds the name VERIFIED) → state next.
 */
export const transition = (
  current: DomainStatus,
  outcome: CheckOutcome,
  verifiedElsewhere = false
): { readonly status: DomainStatus; readonly reason: string | null } => {
  if (verifiedElsewhere) return { status: "FAILED", reason: VERIFIED_ELSEWHERE }
  if (outcome.kind === "unavailable") {
    return current === "VERIFIED" ? { status: "VERIFIED", reason: null } : { status: "VERIFYING", reason: "dns_unavailable" }
  }
  if (outcome.grades.every((g) => g === "VALID")) return { status: "VERIFIED", reason: null }
  const reason = outcome.grades.includes("INVALID") ? "dns_records_invalid" : "dns_records_missing"
  return { status: current === "VERIFIED" || current === "FAILED" ? "FAILED" : "PENDING", reason }
}

/** The names that may own an address's domain: itself and each parent of two labels or more (the longest match wins). */
const ownersOf = (domain: string): ReadonlyArray<string> => {
  const labels = domain.split(".")
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join("."))
}

const domainOf = (address: string) => address.slice(address.lastIndexOf("@") + 1).toLowerCase()

/** An inbox as `permitted` needs it: its organization and its address. */
export interface Addressed {
  readonly organization_id: string
  readonly email: string
}

/** A domain's check job is keyed by its organization and name: two holders of a name are checked apart. */
const checkKey = (organizationId: string, name: string) => `${organizationId}/${name}`

/** Where Domains keeps a sealed secret: each domain's DKIM private key. */
export const DOMAIN_SEALED: ReadonlyArray<SealedPlace> = [{ purpose: "dkim", table: "domains", owner: "id", column: "dkim_private_key" }]

export class Domains extends Context.Service<Domains, {
  create(principal: Principal, input: CreateDomainInput, podId?: string): Effect.Effect<Domain, ValidationError | NotFound | AlreadyExists | PlanLimitExceeded | NotConfigured>
  list(principal: Principal, query: typeof ListDomainsQuery.Type, podId?: string): Effect.Effect<Page<DomainSummary>, NotFound | ValidationError>
  get(principal: Principal, idOrName: string, podId?: string): Effect.Effect<Domain, NotFound>
  update(principal: Principal, idOrName: string, input: UpdateDomainInput, podId?: string): Effect.Effect<Domain, NotFound>
  delete(principal: Principal, idOrName: string, podId?: string): Effect.Effect<void, NotFound>
  /** Re-grades the records from DNS and moves the state (the spec's POST verify). */
  verify(principal: Principal, idOrName: string, podId?: string): Effect.Effect<void, NotFound>
  zoneFile(principal: Principal, idOrName: string, podId?: string): Effect.Effect<string, NotFound>
  /** The check the job runs, of one organization's domain, with no principal: answers the state it left. */
  recheck(organizationId: string, name: string): Effect.Effect<DomainStatus | undefined>
  /**
   * Refuses an inbox address on `domain` unless it is a VERIFIED domain of the organization
   * (visible to the pod the inbox goes in), or a subdomain of one with subdomains_enabled,
   * and no other organization holds a nearer name of it VERIFIED.
   */
  admitInbox(organizationId: string, podId: string, domain: string): Effect.Effect<void, DomainNotVerified | SubdomainsNotEnabled>
  /**
   * Of `inboxes`, those whose organization may receive and send mail at their address: all
   * but an address on a custom domain whose verified holder (of the name or of its nearest
   * verified parent) is another organization. While nobody holds the name verified, the
   * inboxes on it keep working (each was made while its organization held it verified).
   */
  permitted<T extends Addressed>(inboxes: ReadonlyArray<T>): Effect.Effect<ReadonlyArray<T>>
  /** Refuses mail from `address` (422 domain_not_verified) when `permitted` leaves it out. */
  admitSender(organizationId: string, address: string): Effect.Effect<void, DomainNotVerified>
  /** Signs `raw` with the DKIM key of the organization's verified domain `from` belongs to; unsigned otherwise. */
  signOutgoing(organizationId: string, from: string, raw: Uint8Array): Effect.Effect<Uint8Array>
}>()("inbox/Domains") {
  static readonly layerNoDeps = Layer.effect(Domains, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const organizations = yield* Organizations
    const pods = yield* Pods
    const events = yield* Events
    const jobs = yield* Jobs
    const dns = yield* Dns

    const visible = (principal: Principal) => visibleTo(sql, principal, { pod: "pod_id" })

    const records = (row: DomainRow): ReadonlyArray<DnsRecord> =>
      recordsOf({ domain: row.id, verificationToken: row.verification_token, dkimSelector: row.dkim_selector, dkimPublicKey: row.dkim_public_key }, settings.mailHost)

    const toDomain = (row: DomainRow): Domain =>
      compact({
        domain_id: row.id,
        domain: row.id,
        feedback_enabled: row.feedback_enabled,
        subdomains_enabled: row.subdomains_enabled,
        tracking_enabled: row.tracking_enabled,
        status: row.status,
        reason: row.status === "VERIFIED" ? null : row.reason,
        records: records(row).map((r) =>
          compact({
            type: r.type,
            name: r.name,
            value: r.value,
            priority: r.priority,
            status: row.record_status.find((g) => g.type === r.type && g.name === r.name)?.status ?? "MISSING"
          })
        ),
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at)
      })

    const toSummary = (row: DomainRow): DomainSummary => ({
      domain_id: row.id,
      domain: row.id,
      feedback_enabled: row.feedback_enabled,
      subdomains_enabled: row.subdomains_enabled,
      tracking_enabled: row.tracking_enabled,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    })

    const find = Effect.fnUntraced(function*(principal: Principal, idOrName: string, podId: string | undefined, lock = false) {
      const name = normaliseDomain(idOrName) ?? idOrName.toLowerCase()
      const pod = podId === undefined ? sql`` : sql`AND pod_id = ${podId}`
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE id = ${name} AND ${visible(principal)} ${pod}
        ${lock ? sql`FOR UPDATE` : sql``}`.pipe(decodeRows(DomainRow))
      const row = rows[0]
      if (row === undefined) return yield* notFound("Domain", idOrName)
      return row
    })

    const nextCheckAt = (status: DomainStatus, at: Date) =>
      new Date(at.getTime() + Duration.toMillis(status === "VERIFIED" ? RECHECK_VERIFIED : RECHECK_UNVERIFIED))

    const scheduleCheck = (organizationId: string, name: string, status: DomainStatus, at: Date) =>
      jobs.enqueue({
        kind: DOMAIN_CHECK_JOB,
        key: checkKey(organizationId, name),
        payload: { domain: name, organization_id: organizationId },
        runAt: nextCheckAt(status, at)
      })

    /** Grades every record; any lookup DNS cannot answer makes the whole check unavailable. */
    const grade = (row: DomainRow) =>
      Effect.forEach(records(row), (r) => Effect.map(check(r, settings.mailHost), (status) => ({ type: r.type, name: r.name, status })), {
        concurrency: "unbounded"
      }).pipe(
        Effect.provideService(Dns, dns),
        Effect.map((graded) => ({ kind: "graded" as const, graded })),
        Effect.catchTag("DnsUnavailable", () => Effect.succeed({ kind: "unavailable" as const }))
      )

    /**
     * One check of one organization's domain: DNS is asked outside any transaction, then
     * every holder of the name is locked, in one order, and the domain moved from the state
     * it has then. Checks of the name, by any organization, therefore apply in turn: the
     * first that makes a holder VERIFIED writes the event and moves the other holders to
     * FAILED, and the later ones find the name verified elsewhere.
     */
    const runCheck = (organizationId: string, name: string, schedule = true) =>
      Effect.gen(function*() {
        const before = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE id = ${name} AND organization_id = ${organizationId}`.pipe(
          decodeRows(DomainRow)
        )
        const first = before[0]
        if (first === undefined) return undefined
        const found = yield* grade(first)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const holders = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE id = ${name} ORDER BY organization_id FOR UPDATE`.pipe(
            decodeRows(DomainRow)
          )
          const row = holders.find((h) => h.organization_id === organizationId)
          if (row === undefined) return undefined
          const others = holders.filter((h) => h !== row)
          const at = yield* now
          const next = transition(
            row.status,
            found.kind === "graded" ? { kind: "graded", grades: found.graded.map((g) => g.status) } : found,
            others.some((h) => h.status === "VERIFIED")
          )
          const grades = found.kind === "graded" ? found.graded : row.record_status
          const becameVerified = next.status === "VERIFIED" && row.status !== "VERIFIED"
          yield* sql`UPDATE domains SET status = ${next.status}, reason = ${next.reason}, record_status = ${JSON.stringify(grades)}::jsonb,
            checked_at = ${at}, updated_at = ${at}, verified_at = ${becameVerified ? at : row.verified_at}
            WHERE id = ${name} AND organization_id = ${organizationId}`
          const losers = becameVerified
            ? others.filter((h) => !(h.status === "FAILED" && h.reason === VERIFIED_ELSEWHERE)).map((h) => h.organization_id)
            : []
          if (losers.length > 0) {
            yield* sql`UPDATE domains SET status = 'FAILED', reason = ${VERIFIED_ELSEWHERE}, updated_at = ${at}
              WHERE id = ${name} AND organization_id = ANY(${losers}::text[])`
            yield* Effect.logInfo(`domain ${name} verified by ${organizationId}; its other holders are FAILED: ${losers.join(", ")}`)
          }
          if (becameVerified) {
            const updated: DomainRow = { ...row, status: next.status, reason: next.reason, record_status: grades, updated_at: at }
            yield* events.record({
              organizationId: row.organization_id,
              ...(row.pod_id === null ? {} : { podId: row.pod_id }),
              type: "domain.verified",
              payload: { domain: toDomain(updated) }
            })
          }
          if (next.status === "FAILED" && row.status === "VERIFIED") {
            yield* Effect.logWarning(`domain ${name} failed verification: ${next.reason}`)
          }
          if (schedule) yield* scheduleCheck(organizationId, name, next.status, at)
          return next.status
        }))
      }).pipe(Effect.orDie)

    const secretKey = Effect.suspend(() =>
      settings.secretKey === undefined
        ? Effect.fail(new NotConfigured({
          message: "Custom domains need a secret key to encrypt their DKIM keys.",
          fix: "Set INBOX_SECRET_KEY on the server."
        }))
        : Effect.succeed(settings.secretKey)
    )

    const targetPod = (principal: Principal, podId: string | undefined) =>
      podId !== undefined
        ? Effect.map(pods.lock(principal, podId), (p): string | null => p.id)
        : principal.scope.type === "pod"
        ? Effect.map(pods.lock(principal, principal.scope.podId), (p): string | null => p.id)
        : Effect.succeed(null)

    const taken = (name: string) =>
      new AlreadyExists({ message: `The domain ${name} has already been added to this organization.`, fix: `Use it: GET /v0/domains/${name}.` })
    const verifiedElsewhere = (name: string) =>
      new AlreadyExists({
        message: `The domain ${name} is verified by another organization on this server.`,
        fix: "It can be added here once that organization deletes it, or once its DNS records no longer check out there (FAILED)."
      })

    const isCustom = (domain: string) => domain !== settings.baseDomain && !domain.endsWith(`.${settings.baseDomain}`)

    /** For each domain, the organization holding the VERIFIED name it falls under (itself or its nearest parent), if any. */
    const verifiedHolders = (domains: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const custom = [...new Set(domains.filter(isCustom))]
        const holders = new Map<string, string>()
        if (custom.length === 0) return holders
        const names = [...new Set(custom.flatMap(ownersOf))]
        const rows = yield* sql<{ id: string; organization_id: string }>`SELECT id, organization_id FROM domains
          WHERE id = ANY(${names}::text[]) AND status = 'VERIFIED'`.pipe(Effect.orDie)
        const byName = new Map(rows.map((r) => [r.id, r.organization_id]))
        for (const domain of custom) {
          const holder = ownersOf(domain).map((n) => byName.get(n)).find((o) => o !== undefined)
          if (holder !== undefined) holders.set(domain, holder)
        }
        return holders
      })

    const permitted = <T extends Addressed>(inboxes: ReadonlyArray<T>) =>
      Effect.map(verifiedHolders(inboxes.map((i) => domainOf(i.email))), (holders) =>
        holders.size === 0 ? inboxes : inboxes.filter((i) => {
          const holder = holders.get(domainOf(i.email))
          return holder === undefined || holder === i.organization_id
        }))

    // The job handler: registered with the service, so any process with a job worker checks domains.
    yield* jobs.register({
      kind: DOMAIN_CHECK_JOB,
      policy: RETRY_POLICIES.transient,
      concurrency: 4,
      // The check job is the domain's schedule: it gives itself back, due at the next check,
      // rather than enqueueing a successor under its own key, which a running job holds (the
      // successor only moved the running job's time, and the schedule ended with it).
      run: (job) => {
        const { domain: name, organization_id: organizationId } = job.payload as { domain?: unknown; organization_id?: unknown }
        if (typeof name !== "string" || typeof organizationId !== "string") {
          return Effect.fail(new JobFailed({ message: "no domain or organization in payload", retry: false }))
        }
        return Effect.gen(function*() {
          const status = yield* runCheck(organizationId, name, false)
          if (status === undefined) return
          return yield* new JobDeferred({ until: nextCheckAt(status, yield* now) })
        })
      }
    })

    return Domains.of({
      create: Effect.fn("Domains.create")(function*(principal, input, podId) {
        const name = normaliseDomain(input.domain)
        if (name === undefined) return yield* validationError([{ path: ["domain"], message: "Expected a domain name" }])
        if (name === settings.baseDomain || name.endsWith(`.${settings.baseDomain}`)) {
          return yield* validationError([{ path: ["domain"], message: `${name} belongs to this server's base domain` }])
        }
        const secret = yield* secretKey
        // Another organization's unverified hold on the name blocks nobody; its verified one does.
        const held = yield* sql<{ organization_id: string }>`SELECT organization_id FROM domains
          WHERE id = ${name} AND (organization_id = ${principal.organizationId} OR status = 'VERIFIED')`.pipe(Effect.orDie)
        if (held.some((h) => h.organization_id === principal.organizationId)) return yield* taken(name)
        if (held.length > 0) return yield* verifiedElsewhere(name)
        // RSA key generation takes tens of milliseconds: done before the transaction holds locks.
        const key = yield* generateDkimKey
        const token = yield* ids.secret(16)
        const selector = `inbox${(yield* ids.secret(3))}`
        const sealed = seal(secret, name, key.privateKeyPem)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const org = yield* organizations.lock(principal.organizationId).pipe(Effect.orDie)
          const pod = yield* targetPod(principal, podId)
          const count = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM domains WHERE organization_id = ${org.id}`
          yield* checkLimit(yield* planNow(org), "domains", count[0]?.n ?? 0)
          const at = yield* now
          const row: DomainRow = {
            id: name,
            organization_id: org.id,
            pod_id: pod,
            feedback_enabled: input.feedback_enabled ?? false,
            subdomains_enabled: input.subdomains_enabled ?? false,
            tracking_enabled: input.tracking_enabled ?? false,
            status: "NOT_STARTED",
            reason: null,
            record_status: [],
            verification_token: token,
            dkim_selector: selector,
            dkim_public_key: key.publicKey,
            verified_at: null,
            checked_at: null,
            created_at: at,
            updated_at: at
          }
          const inserted = yield* sql`INSERT INTO domains (id, organization_id, pod_id, feedback_enabled, subdomains_enabled, tracking_enabled,
              status, reason, record_status, verification_token, dkim_selector, dkim_public_key, dkim_private_key, created_at, updated_at)
            VALUES (${name}, ${org.id}, ${pod}, ${row.feedback_enabled}, ${row.subdomains_enabled}, ${row.tracking_enabled},
              'NOT_STARTED', NULL, '[]'::jsonb, ${token}, ${selector}, ${key.publicKey}, ${sealed}, ${at}, ${at})
            ON CONFLICT (id, organization_id) DO NOTHING RETURNING id`
          if (inserted.length === 0) return yield* taken(name)
          yield* scheduleCheck(org.id, name, "NOT_STARTED", at)
          return toDomain(row)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      list: Effect.fn("Domains.list")(function*(principal, query, podId) {
        if (podId !== undefined) yield* pods.find(principal, podId)
        const page = yield* newestFirst(sql, query)
        const pod = podId === undefined ? sql`` : sql`AND pod_id = ${podId}`
        const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE ${visible(principal)} ${pod} ${page.after}
          ${page.orderAndLimit}`.pipe(decodeRows(DomainRow))
        return toPage(rows, page.limit, toSummary)
      }),
      get: Effect.fn("Domains.get")(function*(principal, idOrName, podId) {
        return toDomain(yield* find(principal, idOrName, podId))
      }),
      update: Effect.fn("Domains.update")(function*(principal, idOrName, input, podId) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const row = yield* find(principal, idOrName, podId, true)
          const at = yield* now
          const next: DomainRow = {
            ...row,
            ...input,
            // Observed by the spec: a domain never checked reports PENDING once it is touched.
            ...(row.status === "NOT_STARTED" ? { status: "PENDING" as const, reason: "dns_records_missing" } : {}),
            updated_at: at
          }
          yield* sql`UPDATE domains SET feedback_enabled = ${next.feedback_enabled}, subdomains_enabled = ${next.subdomains_enabled},
            tracking_enabled = ${next.tracking_enabled}, status = ${next.status}, reason = ${next.reason}, updated_at = ${at}
            WHERE id = ${row.id} AND organization_id = ${row.organization_id}`
          return toDomain(next)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      delete: Effect.fn("Domains.delete")(function*(principal, idOrName, podId) {
        const row = yield* find(principal, idOrName, podId)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM domains WHERE id = ${row.id} AND organization_id = ${row.organization_id}`
          yield* jobs.cancel(DOMAIN_CHECK_JOB, checkKey(row.organization_id, row.id))
        })).pipe(Effect.orDie)
      }),
      verify: Effect.fn("Domains.verify")(function*(principal, idOrName, podId) {
        const row = yield* find(principal, idOrName, podId)
        yield* runCheck(row.organization_id, row.id)
      }),
      zoneFile: Effect.fn("Domains.zoneFile")(function*(principal, idOrName, podId) {
        return zoneFile(records(yield* find(principal, idOrName, podId)))
      }),
      recheck: (organizationId, name) => runCheck(organizationId, name),
      admitInbox: Effect.fn("Domains.admitInbox")(function*(organizationId, podId, domain) {
        const candidates = ownersOf(domain)
        const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains
          WHERE id = ANY(${candidates}::text[]) AND organization_id = ${organizationId} AND (pod_id IS NULL OR pod_id = ${podId})
          ORDER BY length(id) DESC LIMIT 1`.pipe(decodeRows(DomainRow))
        const owner = rows[0]
        if (owner === undefined) {
          return yield* new DomainNotVerified({
            message: `The domain ${domain} is not a domain of this organization.`,
            fix: `Add ${domain} with POST /v0/domains and verify it, or omit domain to use ${settings.baseDomain}.`
          })
        }
        if (owner.id !== domain && !owner.subdomains_enabled) {
          return yield* new SubdomainsNotEnabled({
            message: `${domain} is a subdomain of ${owner.id}, which does not have subdomains_enabled.`,
            fix: `PATCH the domain ${owner.id} with subdomains_enabled: true.`
          })
        }
        if (owner.status !== "VERIFIED") {
          return yield* new DomainNotVerified({
            message: `The domain ${owner.id} is not verified (status ${owner.status}).`,
            fix: `Publish its DNS records (GET /v0/domains/${owner.id}/zone-file), then POST /v0/domains/${owner.id}/verify.`
          })
        }
        // A subdomain that another organization holds verified is theirs, whatever the parent's flags.
        if ((yield* verifiedHolders([domain])).get(domain) !== organizationId) {
          return yield* new DomainNotVerified({
            message: `The domain ${domain} is verified by another organization.`,
            fix: `Omit domain to use ${settings.baseDomain}, or use a domain of this organization.`
          })
        }
      }),
      permitted,
      admitSender: Effect.fn("Domains.admitSender")(function*(organizationId, address) {
        if ((yield* permitted([{ organization_id: organizationId, email: address }])).length > 0) return
        return yield* new DomainNotVerified({
          message: `The domain of ${address} is verified by another organization: this inbox can no longer send or receive mail.`,
          fix: `Send from an inbox on a domain this organization holds verified, or on ${settings.baseDomain}.`
        })
      }),
      signOutgoing: Effect.fn("Domains.signOutgoing")(function*(organizationId, from, raw) {
        const at = from.lastIndexOf("@")
        const domain = domainOf(from)
        if (at < 0 || !isCustom(domain) || settings.secretKey === undefined) return raw
        const candidates = ownersOf(domain)
        const rows = yield* sql<{ id: string; organization_id: string; dkim_selector: string; dkim_private_key: string }>`SELECT id, organization_id,
            dkim_selector, dkim_private_key
          FROM domains WHERE id = ANY(${candidates}::text[]) AND status = 'VERIFIED' ORDER BY length(id) DESC LIMIT 1`.pipe(Effect.orDie)
        const key = rows[0]
        // Only the verified holder's key signs: never another organization's, for any sender.
        if (key === undefined || key.organization_id !== organizationId) return raw
        const privateKeyPem = yield* open(settings.secretKey, key.id, key.dkim_private_key)
        if (privateKeyPem === undefined) {
          // A key sealed under another INBOX_SECRET_KEY: mail still goes, unsigned, and the operator is told.
          yield* Effect.logError(`the DKIM key of ${key.id} does not open with INBOX_SECRET_KEY; mail from it is sent unsigned`)
          return raw
        }
        return yield* sign(raw, { domain: key.id, selector: key.dkim_selector, privateKeyPem })
      })
    })
  }))

  /** The DKIM keys re-sealed under a rotated INBOX_SECRET_KEY before Domains opens any. */
  static readonly resealing = resealing(DOMAIN_SEALED)

  /** With the services it uses (Events, Jobs, Organizations, Pods), after its own rotation; the ports are the caller's. */
  static readonly layer = Domains.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Events.layer, Jobs.layer, Organizations.layer, Pods.layer, Domains.resealing)))
}
