/**
 * Billing (spec: Billing summary, Billing): an organization's plan, where it comes from,
 * its subscription's state, its limits and its usage against them.
 *
 * Where a plan comes from (`source`): `free` (no subscription, nothing assigned), `admin`
 * (the operator's `inboxctl org plan`, which always wins over a subscription), or
 * `subscription` (a payment provider's subscription, in the state its signed webhooks last
 * reported; table `subscriptions`, migration 0007). `provider`, `interval` and
 * `current_period_end` are null unless a subscription exists (the spec states null on
 * Free; an operator-assigned plan has no provider either); `grace_ends_at` is present
 * only while `past_due`.
 *
 * Payment providers are not wired yet: checkout answers 503 billing_not_configured, and
 * portal and cancel 409 no_subscription while no subscription exists (README, "Billing").
 * Usage counts come from counters, never scans: inboxes, domains and webhooks from the
 * metric totals (migration 0007), sends from `send_counts`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { BillingNotConfigured, NoSubscription } from "../errors/errors.ts"
import { Organizations, planOf } from "../organizations/Organizations.ts"
import { PLANS } from "../plans/plans.ts"
import { decodeRows, Int8 } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"

const Limits = Schema.Struct({
  inboxes: Schema.Number,
  sends_per_month: Schema.Number,
  sends_per_day: Schema.NullOr(Schema.Number),
  domains: Schema.Number,
  webhooks: Schema.Number
})
const Usage = Schema.Struct({
  inboxes: Schema.Number,
  sends_this_month: Schema.Number,
  sends_today: Schema.Number,
  domains: Schema.Number,
  webhooks: Schema.Number
})

export const BillingUsage = Schema.Struct({ plan: Schema.Literals(["free", "pro", "scale"]), limits: Limits, usage: Usage })
export type BillingUsage = typeof BillingUsage.Type

export const BillingSummary = Schema.Struct({
  plan: Schema.Literals(["free", "pro", "scale"]),
  plan_name: Schema.String,
  status: Schema.Literals(["none", "active", "past_due", "canceled", "incomplete"]),
  source: Schema.Literals(["free", "admin", "subscription"]),
  provider: Schema.NullOr(Schema.String),
  interval: Schema.NullOr(Schema.Literals(["monthly", "yearly"])),
  current_period_end: Schema.NullOr(Timestamp),
  cancel_at_period_end: Schema.Boolean,
  grace_ends_at: Schema.optionalKey(Timestamp),
  limits: Limits,
  usage: Usage
})
export type BillingSummary = typeof BillingSummary.Type

export const CheckoutInput = Schema.Struct({
  plan: Schema.Literals(["pro", "scale"]),
  interval: Schema.Literals(["monthly", "yearly"]),
  provider: Schema.optionalKey(Schema.Literals(["stripe", "razorpay"])),
  country: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[A-Za-z]{2}$/, { message: "Expected a two-letter country code" })))
})
export type CheckoutInput = typeof CheckoutInput.Type

export const CheckoutSession = Schema.Struct({ url: Schema.String, provider: Schema.String })
export const PortalSession = Schema.Struct({ provider: Schema.String, url: Schema.optionalKey(Schema.String), instructions: Schema.optionalKey(Schema.String) })

const SubscriptionRow = Schema.Struct({
  provider: Schema.String,
  plan: Schema.String,
  interval: Schema.Literals(["monthly", "yearly"]),
  status: Schema.Literals(["none", "active", "past_due", "canceled", "incomplete"]),
  current_period_end: Schema.NullOr(Schema.Date),
  cancel_at_period_end: Schema.Boolean,
  grace_ends_at: Schema.NullOr(Schema.Date)
})

const Count = Schema.Struct({ n: Int8 })

const monthStartOf = (at: Date) => `${at.toISOString().slice(0, 7)}-01`
const dayOf = (at: Date) => at.toISOString().slice(0, 10)

export class Billing extends Context.Service<Billing, {
  summary(organizationId: string): Effect.Effect<BillingSummary>
  usage(organizationId: string): Effect.Effect<BillingUsage>
  checkout(organizationId: string, input: CheckoutInput): Effect.Effect<typeof CheckoutSession.Type, BillingNotConfigured>
  portal(organizationId: string): Effect.Effect<typeof PortalSession.Type, NoSubscription | BillingNotConfigured>
  cancel(organizationId: string): Effect.Effect<BillingSummary & { readonly message: string }, NoSubscription | BillingNotConfigured>
}>()("inbox/Billing") {
  static readonly layer = Layer.effect(Billing, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const organizations = yield* Organizations

    const total = (organizationId: string, metric: string) =>
      Effect.map(
        sql`SELECT coalesce(sum(value), 0) AS n FROM metric_counts WHERE scope_id = ${organizationId} AND metric = ${metric} AND resolution = 0`.pipe(decodeRows(Count)),
        (rows) => Number(rows[0]?.n ?? 0)
      )

    const usage = Effect.fn("Billing.usage")(function*(organizationId: string) {
      const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
      const at = yield* now
      const sends = yield* sql`SELECT coalesce(sum(count), 0) AS n FROM send_counts
        WHERE organization_id = ${organizationId} AND day >= ${monthStartOf(at)}`.pipe(decodeRows(Count))
      const today = yield* sql`SELECT coalesce(sum(count), 0) AS n FROM send_counts
        WHERE organization_id = ${organizationId} AND day = ${dayOf(at)}`.pipe(decodeRows(Count))
      const plan = planOf(org)
      return {
        plan,
        limits: PLANS[plan].limits,
        usage: {
          inboxes: yield* total(organizationId, "inbox_count"),
          sends_this_month: Number(sends[0]?.n ?? 0),
          sends_today: Number(today[0]?.n ?? 0),
          domains: yield* total(organizationId, "domain_count"),
          webhooks: yield* total(organizationId, "webhook_count")
        }
      } satisfies BillingUsage
    })

    const subscriptionOf = (organizationId: string) =>
      Effect.map(
        sql`SELECT provider, plan, "interval", status, current_period_end, cancel_at_period_end, grace_ends_at
          FROM subscriptions WHERE organization_id = ${organizationId}`.pipe(decodeRows(SubscriptionRow)),
        (rows) => rows[0]
      )

    const summary = Effect.fn("Billing.summary")(function*(organizationId: string) {
      const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
      const { plan, limits, usage: used } = yield* usage(organizationId)
      const sub = yield* subscriptionOf(organizationId)
      const source = org.plan_source === "admin" ? "admin" : sub !== undefined && org.plan_source === "subscription" ? "subscription" : plan === "free" ? "free" : "admin"
      return {
        plan,
        plan_name: PLANS[plan].name,
        // An operator-assigned plan is in force as long as it is assigned.
        status: source === "subscription" ? sub?.status ?? "none" : source === "admin" ? "active" : "none",
        source,
        provider: sub?.provider ?? null,
        interval: sub?.interval ?? null,
        current_period_end: sub?.current_period_end == null ? null : iso(sub.current_period_end),
        cancel_at_period_end: sub?.cancel_at_period_end ?? false,
        ...(sub?.status === "past_due" && sub.grace_ends_at !== null ? { grace_ends_at: iso(sub.grace_ends_at) } : {}),
        limits,
        usage: used
      } satisfies BillingSummary
    })

    const notConfigured = () =>
      new BillingNotConfigured({
        message: "No payment provider is configured on this server.",
        fix: "The operator sets the provider's keys (README, \"Billing\"), or assigns a plan with inboxctl org plan."
      })

    const noSubscription = () =>
      new NoSubscription({ message: "This organization has no subscription.", fix: "Start one with POST /v0/billing/checkout." })

    return Billing.of({
      summary,
      usage,
      checkout: Effect.fn("Billing.checkout")(function*(_organizationId: string, _input: CheckoutInput) {
        return yield* notConfigured()
      }),
      portal: Effect.fn("Billing.portal")(function*(organizationId: string) {
        if ((yield* subscriptionOf(organizationId)) === undefined) return yield* noSubscription()
        return yield* notConfigured()
      }),
      cancel: Effect.fn("Billing.cancel")(function*(organizationId: string) {
        if ((yield* subscriptionOf(organizationId)) === undefined) return yield* noSubscription()
        return yield* notConfigured()
      })
    })
  }).pipe(Effect.orDie))
}
