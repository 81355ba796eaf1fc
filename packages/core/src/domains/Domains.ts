/**
 * Custom domains: a customer's own domain, proved by DNS, for inbox addresses and for mail
 * signed as theirs (spec: Domain, Domains; README, "Custom domains").
 *
 * Rules kept here: the id is the name (IDNA to ASCII, lower case, no trailing dot), and any
 * route accepts the name in any of its spellings; a name is hosted once on the server (403
 * already_exists); the plan caps domains (402), checked under the organization row lock;
 * pod-scoped keys see their pod's domains only. Each domain gets its own DKIM key pair, the
 * private half sealed at rest and never shown. Verification grades every record from DNS
 * and moves the domain through the state machine below; `domain.verified` is written in
 * the transaction that makes the domain VERIFIED, and only then, so it fires once however
 * many checks run at the same time (the row lock orders them).
 *
 * States: NOT_STARTED (never checked; updating its flags makes it PENDING with
 * dns_records_missing, as the spec observed); PENDING (never verified; some record MISSING
 * or INVALID: reason dns_records_missing or dns_records_invalid); VERIFYING (a check could
 * not reach DNS: reason dns_unavailable; the records keep their last grades); VERIFIED
 * (every record VALID); FAILED (was VERIFIED, then a check found a record gone or changed:
 * reported with its reason, never silently kept VERIFIED). A DNS outage never demotes a
 * VERIFIED domain. A check job re-examines every domain: unverified ones every 15 minutes,
 * verified ones daily.
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

/** The state machine of the module comment, as one function: (state now, check) → state next. */
export const transition = (
  current: DomainStatus,
  outcome: CheckOutcome
): { readonly status: DomainStatus; readonly reason: string | null } => {
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

export class Domains extends Context.Service<Domains, {
  create(principal: Principal, input: CreateDomainInput, podId?: string): Effect.Effect<Domain, ValidationError | NotFound | AlreadyExists | PlanLimitExceeded | NotConfigured>
  list(principal: Principal, query: typeof ListDomainsQuery.Type, podId?: string): Effect.Effect<Page<DomainSummary>, NotFound | ValidationError>
  get(principal: Principal, idOrName: string, podId?: string): Effect.Effect<Domain, NotFound>
  update(principal: Principal, idOrName: string, input: UpdateDomainInput, podId?: string): Effect.Effect<Domain, NotFound>
  delete(principal: Principal, idOrName: string, podId?: string): Effect.Effect<void, NotFound>
  /** Re-grades the records from DNS and moves the state (the spec's POST verify). */
  verify(principal: Principal, idOrName: string, podId?: string): Effect.Effect<void, NotFound>
  zoneFile(principal: Principal, idOrName: string, podId?: string): Effect.Effect<string, NotFound>
  /** The check the job runs, by name and with no principal: answers the state it left. */
  recheck(name: string): Effect.Effect<DomainStatus | undefined>
  /**
   * Refuses an inbox address on `domain` unless it is a VERIFIED domain of the organization
   * (visible to the pod the inbox goes in), or a subdomain of one with subdomains_enabled.
   */
  admitInbox(organizationId: string, podId: string, domain: string): Effect.Effect<void, DomainNotVerified | SubdomainsNotEnabled>
  /** Signs `raw` with the DKIM key of the verified domain `from` belongs to; unsigned otherwise. */
  signOutgoing(from: string, raw: Uint8Array): Effect.Effect<Uint8Array>
}>()("inbox/Domains") {
  static readonly layer = Layer.effect(Domains, Effect.gen(function*() {
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

    const scheduleCheck = (name: string, status: DomainStatus, at: Date) =>
      jobs.enqueue({ kind: DOMAIN_CHECK_JOB, key: name, payload: { domain: name }, runAt: nextCheckAt(status, at) })

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
     * One check of one domain: DNS is asked outside any transaction, then the row is locked
     * and moved from the state it has then, so concurrent checks apply in turn and only the
     * one that makes it VERIFIED writes the event.
     */
    const runCheck = (name: string, schedule = true) =>
      Effect.gen(function*() {
        const before = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE id = ${name}`.pipe(decodeRows(DomainRow))
        const first = before[0]
        if (first === undefined) return undefined
        const found = yield* grade(first)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const locked = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM domains WHERE id = ${name} FOR UPDATE`.pipe(decodeRows(DomainRow))
          const row = locked[0]
          if (row === undefined) return undefined
          const at = yield* now
          const next = transition(row.status, found.kind === "graded" ? { kind: "graded", grades: found.graded.map((g) => g.status) } : found)
          const grades = found.kind === "graded" ? found.graded : row.record_status
          const becameVerified = next.status === "VERIFIED" && row.status !== "VERIFIED"
          yield* sql`UPDATE domains SET status = ${next.status}, reason = ${next.reason}, record_status = ${JSON.stringify(grades)}::jsonb,
            checked_at = ${at}, updated_at = ${at}, verified_at = ${becameVerified ? at : row.verified_at}
            WHERE id = ${name}`
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
          if (schedule) yield* scheduleCheck(name, next.status, at)
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

    const taken = (name: string) => new AlreadyExists({ message: `The domain ${name} has already been added.`, fix: "A domain can be added once on this server." })

    // The job handler: registered with the service, so any process with a job worker checks domains.
    yield* jobs.register({
      kind: DOMAIN_CHECK_JOB,
      policy: RETRY_POLICIES.transient,
      concurrency: 4,
      // The check job is the domain's schedule: it gives itself back, due at the next check,
      // rather than enqueueing a successor under its own key, which a running job holds (the
      // successor only moved the running job's time, and the schedule ended with it).
      run: (job) => {
        const name = (job.payload as { domain?: unknown }).domain
        if (typeof name !== "string") return Effect.fail(new JobFailed({ message: "no domain in payload", retry: false }))
        return Effect.gen(function*() {
          const status = yield* runCheck(name, false)
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
        const exists = yield* sql`SELECT 1 FROM domains WHERE id = ${name}`.pipe(Effect.orDie)
        if (exists.length > 0) return yield* taken(name)
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
            ON CONFLICT (id) DO NOTHING RETURNING id`
          if (inserted.length === 0) return yield* taken(name)
          yield* scheduleCheck(name, "NOT_STARTED", at)
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
            WHERE id = ${row.id}`
          return toDomain(next)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      }),
      delete: Effect.fn("Domains.delete")(function*(principal, idOrName, podId) {
        const row = yield* find(principal, idOrName, podId)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM domains WHERE id = ${row.id}`
          yield* jobs.cancel(DOMAIN_CHECK_JOB, row.id)
        })).pipe(Effect.orDie)
      }),
      verify: Effect.fn("Domains.verify")(function*(principal, idOrName, podId) {
        const row = yield* find(principal, idOrName, podId)
        yield* runCheck(row.id)
      }),
      zoneFile: Effect.fn("Domains.zoneFile")(function*(principal, idOrName, podId) {
        return zoneFile(records(yield* find(principal, idOrName, podId)))
      }),
      recheck: (name) => runCheck(name),
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
      }),
      signOutgoing: Effect.fn("Domains.signOutgoing")(function*(from, raw) {
        const at = from.lastIndexOf("@")
        const domain = from.slice(at + 1).toLowerCase()
        if (at < 0 || domain === settings.baseDomain || settings.secretKey === undefined) return raw
        const candidates = ownersOf(domain)
        const rows = yield* sql<{ id: string; dkim_selector: string; dkim_private_key: string }>`SELECT id, dkim_selector, dkim_private_key
          FROM domains WHERE id = ANY(${candidates}::text[]) AND status = 'VERIFIED' ORDER BY length(id) DESC LIMIT 1`.pipe(Effect.orDie)
        const key = rows[0]
        if (key === undefined) return raw
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
}
