/**
 * Organizations: the tenant. Each has an owner email with a verified flag, a plan, and a
 * default pod created with it in the same transaction.
 *
 * An agent-created organization starts with its owner email unverified and sending locked;
 * both clear when the human submits the emailed code (agent/Agents.ts). Sending and
 * creating API keys need a verified owner email (403 email_unverified); an agent account
 * without a verified human gets 403 send_locked for sends.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { EmailUnverified, NotFound, SendLocked } from "../errors/errors.ts"
import { Ids } from "../platform/Ids.ts"
import { Pods } from "../pods/Pods.ts"
import { isPlanId, type PlanId } from "../plans/plans.ts"
import { decodeRows } from "../shared/sql.ts"
import { now } from "../shared/time.ts"

export const OrganizationRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  owner_email: Schema.String,
  email_verified: Schema.Boolean,
  is_agent: Schema.Boolean,
  send_locked: Schema.Boolean,
  plan: Schema.String,
  plan_source: Schema.String,
  /** While a subscription is past_due: the end of its grace period, after which the plan is Free (migration 0019). */
  plan_until: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type OrganizationRow = typeof OrganizationRow.Type

export interface NewOrganization {
  readonly ownerEmail: string
  readonly name?: string
  readonly verified?: boolean
  readonly plan?: PlanId
  readonly isAgent?: boolean
}

/** The plan in force at `at`: the row's, unless its grace period (`plan_until`) has passed. */
export const planOf = (org: OrganizationRow, at: Date): PlanId =>
  !isPlanId(org.plan) || (org.plan_until !== null && org.plan_until.getTime() <= at.getTime()) ? "free" : org.plan

/** The plan in force now, by the Clock: what every plan-limit check asks. */
export const planNow = (org: OrganizationRow): Effect.Effect<PlanId> => Effect.map(now, (at) => planOf(org, at))

export class Organizations extends Context.Service<Organizations, {
  /** Creates the organization and its default pod atomically. */
  create(input: NewOrganization): Effect.Effect<{ readonly organization: OrganizationRow; readonly defaultPodId: string }>
  get(id: string): Effect.Effect<OrganizationRow, NotFound>
  /** Locks the organization row until the surrounding transaction ends; serialises plan-limit checks. */
  lock(id: string): Effect.Effect<OrganizationRow, NotFound>
  requireVerifiedEmail(id: string): Effect.Effect<void, EmailUnverified | NotFound>
  /** The organization, if it may send now (the send path reads its plan from it). */
  requireCanSend(id: string): Effect.Effect<OrganizationRow, EmailUnverified | SendLocked | NotFound>
  /** Sets the plan in force; `until`: the end of a past_due subscription's grace period. Only Billing calls it. */
  setPlan(id: string, plan: PlanId, source: "free" | "admin" | "subscription", until?: Date): Effect.Effect<void>
  /** Marks the owner email verified on every organization whose owner email is `email` (a dashboard account proved it). */
  verifyOwnerEmail(email: string): Effect.Effect<void>
  /**
   * Deletes an organization whose owner email was never verified, with everything in it
   * (its rows go by cascade): one set up by someone who signed up with another person's
   * address, discarded when that person takes the account over. A verified or agent
   * organization is kept.
   */
  discardUnverified(id: string): Effect.Effect<void>
  /** An agent organization's human verified: the owner email becomes theirs, verified, and sending unlocks (in the caller's transaction). */
  humanVerified(id: string, email: string): Effect.Effect<void>
}>()("inbox/Organizations") {
  static readonly layerNoDeps = Layer.effect(Organizations, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const pods = yield* Pods

    const select = (id: string, forUpdate: boolean) =>
      Effect.gen(function*() {
        const rows = yield* (forUpdate
          ? sql`SELECT * FROM organizations WHERE id = ${id} FOR UPDATE`
          : sql`SELECT * FROM organizations WHERE id = ${id}`).pipe(decodeRows(OrganizationRow))
        const row = rows[0]
        if (row === undefined) return yield* new NotFound({ message: `Organization ${id} was not found.` })
        return row
      })

    const get = (id: string) => select(id, false)

    return Organizations.of({
      create: Effect.fn("Organizations.create")(function*(input: NewOrganization) {
        const id = yield* ids.make("org")
        const at = yield* now
        const plan = input.plan ?? "free"
        const organization: OrganizationRow = {
          id,
          name: input.name ?? input.ownerEmail,
          owner_email: input.ownerEmail.toLowerCase(),
          email_verified: input.verified ?? false,
          is_agent: input.isAgent ?? false,
          send_locked: input.isAgent ?? false,
          plan,
          plan_source: plan === "free" ? "free" : "admin",
          plan_until: null,
          created_at: at,
          updated_at: at
        }
        // An organization never exists without its default pod: one transaction, the pod's row written by Pods.
        const podId = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO organizations ${sql.insert(organization)}`.pipe(Effect.orDie)
          return yield* pods.createDefault(id)
        })).pipe(Effect.orDie)
        return { organization, defaultPodId: podId }
      }),
      get,
      lock: (id) => select(id, true),
      requireVerifiedEmail: Effect.fn("Organizations.requireVerifiedEmail")(function*(id: string) {
        const org = yield* get(id)
        if (!org.email_verified) {
          return yield* new EmailUnverified({
            message: "The organization's owner email is not verified.",
            fix: org.is_agent ? "Attach a human with POST /v0/agent/attach-human and submit the code with POST /v0/agent/verify." : "Verify the owner email."
          })
        }
      }),
      requireCanSend: Effect.fn("Organizations.requireCanSend")(function*(id: string) {
        const org = yield* get(id)
        if (org.send_locked) {
          return yield* new SendLocked({
            message: "Sending is locked until a human verifies this agent account.",
            fix: "Attach a human with POST /v0/agent/attach-human and submit the emailed code with POST /v0/agent/verify."
          })
        }
        if (!org.email_verified) return yield* new EmailUnverified({ message: "The organization's owner email is not verified." })
        return org
      }),
      setPlan: (id, plan, source, until) =>
        Effect.gen(function*() {
          const at = yield* now
          yield* sql`UPDATE organizations SET plan = ${plan}, plan_source = ${source}, plan_until = ${until ?? null}, updated_at = ${at} WHERE id = ${id}`
        }).pipe(Effect.orDie),
      verifyOwnerEmail: (email) =>
        Effect.gen(function*() {
          const at = yield* now
          yield* sql`UPDATE organizations SET email_verified = true, updated_at = ${at}
            WHERE owner_email = ${email.toLowerCase()} AND NOT email_verified AND NOT is_agent`
        }).pipe(Effect.orDie),
      discardUnverified: (id) =>
        sql`DELETE FROM organizations WHERE id = ${id} AND NOT email_verified AND NOT is_agent`.pipe(Effect.orDie, Effect.asVoid),
      humanVerified: (id, email) =>
        Effect.gen(function*() {
          const at = yield* now
          yield* sql`UPDATE organizations SET owner_email = ${email}, email_verified = true, send_locked = false,
            updated_at = ${at} WHERE id = ${id}`
        }).pipe(Effect.orDie)
    })
  }))

  /** With the services it uses (Pods); the ports are the caller's. */
  static readonly layer = Organizations.layerNoDeps.pipe(Layer.provide(Pods.layer))
}
