/**
 * The operator's operations: what the person running the server does without an API key
 * (`access.kind: "local"`: inboxctl, or an application embedding the engine; never a route),
 * and readiness, which load balancers ask anonymously. Each is an operation of the catalogue
 * like the rest, so the CLI runs it through `runOperation` on the server it reaches, with the
 * same validation and errors, and no adapter touches a service or SQL to do it.
 *
 * - create an organization with a full organization-level key (`inboxctl org create`), or
 *   issue another such key to an existing one (recovery: `org key`);
 * - assign a plan as the operator (billing source `admin`: `org plan`);
 * - suppress an address in an organization (`suppressions add`);
 * - read the local outbox, where mail waits when no relay is configured (`outbox`);
 * - the applied migrations (`migrate` prints them), and readiness (`GET /ready`).
 * Filing a local message as inbound mail is `inbound.raw` itself, which admits the local
 * operator without the forwarder's secret.
 */
import { Cause, Clock, Effect, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeys } from "../apikeys/ApiKeys.ts"
import { Billing, BillingSummary } from "../billing/Billing.ts"
import { operation, Output } from "../catalogue/Operation.ts"
import { Availability } from "../db/Availability.ts"
import { loadMigrations } from "../db/Database.ts"
import { NotFound } from "../errors/errors.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { Organizations } from "../organizations/Organizations.ts"
import { PLAN_IDS } from "../plans/plans.ts"
import { EmailAddress, Line, Name } from "../shared/fields.ts"
import { decodeRows } from "../shared/sql.ts"
import { Suppressions, SUPPRESSION_REASONS } from "../suppressions/Suppressions.ts"
import { readLocalOutbox } from "../transport/MailTransport.ts"

const OPERATOR = "the operator's own: no API key reaches it"
const OrganizationId = Line(512)

export const CreatedOrganization = Schema.Struct({
  organization_id: Schema.String,
  owner_email: Schema.String,
  email_verified: Schema.Boolean,
  plan: Schema.String,
  api_key_id: Schema.String,
  /** Shown once: only its hash is kept. */
  api_key: Schema.String
})

export const createOrganization = operation({
  name: "operator.createOrganization",
  summary: "Create an organization and an organization-level API key with full permissions (the key is shown once).",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({
    owner_email: EmailAddress,
    name: Schema.optionalKey(Name),
    /** Mark the owner's address verified (sending and creating keys need it). */
    verified: Schema.optionalKey(Schema.Boolean),
    /** A plan assigned by the operator (billing source admin). */
    plan: Schema.optionalKey(Schema.Literals(PLAN_IDS))
  }),
  output: Output.json(CreatedOrganization),
  mutates: true,
  mcp: { exclude: OPERATOR },
  // --json prints what DESIGN.md's operator contract promises scripts: the id and the key.
  cli: { command: "org create", columns: ["organization_id", "owner_email", "email_verified", "plan", "api_key"], jsonFields: ["organization_id", "api_key"] },
  run: ({ input }) =>
    Effect.gen(function*() {
      const { organization } = yield* (yield* Organizations).create({
        ownerEmail: input.owner_email,
        verified: input.verified === true,
        ...(input.name === undefined ? {} : { name: input.name }),
        ...(input.plan === undefined ? {} : { plan: input.plan })
      })
      const key = yield* (yield* ApiKeys).issue(organization.id, { name: "owner" })
      return {
        organization_id: organization.id,
        owner_email: organization.owner_email,
        email_verified: organization.email_verified,
        plan: organization.plan,
        api_key_id: key.api_key_id,
        api_key: key.api_key
      }
    })
})

export const issueOrganizationKey = operation({
  name: "operator.issueOrganizationKey",
  summary: "Issue a new organization-level key with every permission to an existing organization (recovery when its last full key was revoked).",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ organization_id: OrganizationId, name: Schema.optionalKey(Name) }),
  output: Output.json(Schema.Struct({ organization_id: Schema.String, api_key_id: Schema.String, api_key: Schema.String })),
  mutates: true,
  mcp: { exclude: OPERATOR },
  cli: { command: "org key", arguments: ["organization_id"], columns: ["organization_id", "api_key_id", "api_key"], jsonFields: ["organization_id", "api_key"] },
  run: ({ input }) =>
    Effect.gen(function*() {
      const organization = yield* (yield* Organizations).get(input.organization_id)
      const key = yield* (yield* ApiKeys).issue(organization.id, { name: input.name ?? "operator recovery" })
      return { organization_id: organization.id, api_key_id: key.api_key_id, api_key: key.api_key }
    })
})

export const assignPlan = operation({
  name: "operator.assignPlan",
  summary: "Assign a plan as the operator (billing source admin, which wins over any subscription); free withdraws the assignment.",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ organization_id: OrganizationId, plan: Schema.Literals(PLAN_IDS) }),
  output: Output.json(BillingSummary),
  mutates: true,
  mcp: { exclude: OPERATOR },
  cli: { command: "org plan", arguments: ["organization_id"], columns: ["plan", "source", "status"] },
  run: ({ input }) =>
    Effect.gen(function*() {
      yield* (yield* Organizations).get(input.organization_id)
      return yield* (yield* Billing).assignPlan(input.organization_id, input.plan)
    })
})

export const addSuppression = operation({
  name: "operator.addSuppression",
  summary: "Suppress an address in an organization, as a hard bounce or complaint would: sends to it are refused until the suppression is deleted.",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({
    organization_id: OrganizationId,
    address: EmailAddress,
    reason: Schema.optionalKey(Schema.Literals(SUPPRESSION_REASONS))
  }),
  output: Output.json(Schema.Struct({ organization_id: Schema.String, address: Schema.String, reason: Schema.String })),
  mutates: true,
  mcp: { exclude: OPERATOR },
  cli: { command: "suppressions add", arguments: ["address"], columns: ["organization_id", "address", "reason"] },
  run: ({ input }) =>
    Effect.gen(function*() {
      const organization = yield* (yield* Organizations).get(input.organization_id)
      const address = input.address.toLowerCase()
      const reason = input.reason ?? "manual"
      yield* (yield* Suppressions).add(organization.id, { address, reason })
      return { organization_id: organization.id, address, reason }
    })
})

export const OutboxMessage = Schema.Struct({
  id: Schema.String,
  created_at: Schema.String,
  from: Schema.String,
  to: Schema.Array(Schema.String),
  subject: Schema.String
})

/** The local outbox is a development aid, not an archive: reads look among the newest. */
export const OUTBOX_WINDOW = 1000

export const listOutbox = operation({
  name: "operator.listOutbox",
  summary: "The newest messages of the local outbox: mail kept when no relay is configured (verification codes in development).",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: OUTBOX_WINDOW }))) }),
  output: Output.list("messages", OutboxMessage),
  mutates: false,
  mcp: { exclude: OPERATOR },
  cli: { command: "outbox list", aliases: ["outbox"], columns: ["id", "created_at", "from", "to", "subject"] },
  run: ({ input }) =>
    Effect.map(readLocalOutbox(input.limit ?? 20), (rows) => {
      const messages = rows.map((r) => ({
        id: String(r.id),
        created_at: r.created_at.toISOString(),
        from: r.envelope_from,
        to: r.envelope_to,
        subject: r.subject ?? ""
      }))
      return { count: messages.length, limit: input.limit ?? 20, messages }
    })
})

export const getOutboxMessage = operation({
  name: "operator.getOutboxMessage",
  summary: "One message of the local outbox as raw RFC 822 (default: the newest).",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ id: Schema.optionalKey(Line(32)) }),
  output: Output.download,
  mutates: false,
  mcp: { exclude: OPERATOR },
  cli: { command: "outbox get", arguments: ["id"], aliases: ["outbox show"] },
  run: ({ input }) =>
    Effect.gen(function*() {
      const rows = yield* readLocalOutbox(input.id === undefined ? 1 : OUTBOX_WINDOW)
      const row = input.id === undefined ? rows[0] : rows.find((r) => String(r.id) === input.id)
      if (row === undefined) {
        return yield* new NotFound({
          message: input.id === undefined ? "The local outbox is empty." : `No message ${input.id} among the newest ${OUTBOX_WINDOW} in the local outbox.`
        })
      }
      return { contentType: "message/rfc822", size: row.raw.byteLength, body: Stream.make(row.raw) }
    })
})

const MigrationRow = Schema.Struct({ migration_id: Schema.Number, name: Schema.String })

export const listMigrations = operation({
  name: "operator.listMigrations",
  summary: "The database migrations applied, in order, and how many this version knows.",
  routes: [],
  access: { kind: "local" },
  output: Output.json(Schema.Struct({
    known: Schema.Number,
    applied: Schema.Array(Schema.Struct({ id: Schema.Number, name: Schema.String }))
  })),
  mutates: false,
  mcp: { exclude: OPERATOR },
  cli: { exclude: "inboxctl migrate prints them after applying what is pending" },
  run: () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT migration_id, name FROM inbox_migrations ORDER BY migration_id`.pipe(decodeRows(MigrationRow), Effect.orDie)
      return { known: Object.keys(loadMigrations()).length, applied: rows.map((r) => ({ id: r.migration_id, name: r.name })) }
    })
})

/** A job worker that has not looked for work this long is not running. */
const READY_WORKER_SECONDS = 10

export const Readiness = Schema.Struct({
  status: Schema.Literals(["ready", "not_ready"]),
  checks: Schema.Struct({ database: Schema.String, migrations: Schema.String, job_worker: Schema.String })
})

export const ready = operation({
  name: "operator.ready",
  summary: "Ready when the database answers, every migration this version knows is applied, and the job worker looked for work within 10 seconds (503 otherwise).",
  routes: [{ method: "GET", path: "/ready" }],
  access: { kind: "public" },
  output: Output.json(Readiness, { statusOf: (r: typeof Readiness.Type) => (r.status === "ready" ? 200 : 503) }),
  mutates: false,
  mcp: { exclude: "a probe for load balancers" },
  cli: { command: "ready", columns: ["status"] },
  run: () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const availability = yield* Availability
      const known = Object.keys(loadMigrations()).length
      const applied = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM inbox_migrations`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.timeoutOption("2 seconds"),
        Effect.map((n) => (n._tag === "Some" ? n.value : undefined)),
        // A database found unreachable here starts an outage like a request would (db/Availability.ts).
        Effect.catch((error) => Effect.as(availability.unavailable(Cause.fail(error)), undefined))
      )
      const lastPass = yield* (yield* Jobs).lastPass
      const at = yield* Clock.currentTimeMillis
      const checks = {
        database: applied === undefined ? "unreachable" : "ok",
        migrations: applied === undefined ? "unknown" : applied === known ? "ok" : `${applied} of ${known} applied`,
        job_worker: lastPass !== undefined && at - lastPass.getTime() < READY_WORKER_SECONDS * 1000 ? "ok" : "not running"
      }
      const isReady = Object.values(checks).every((c) => c === "ok")
      return { status: isReady ? "ready" as const : "not_ready" as const, checks }
    })
})

export const operatorOperations = [
  createOrganization,
  issueOrganizationKey,
  assignPlan,
  addSuppression,
  listOutbox,
  getOutboxMessage,
  listMigrations,
  ready
]
