/**
 * Billing (spec: Billing summary, Billing; docs/billing.md): an organization's plan,
 * where it comes from, its subscription's state, its limits and its usage against them,
 * and the subscription's life through the payment providers (Provider.ts).
 *
 * Where a plan comes from (`source`): `free` (nothing gives a paid plan), `admin` (the
 * operator's `inboxctl org plan`, which always wins over a subscription), or
 * `subscription` (a payment provider's subscription, in the state its signed webhooks last
 * reported; table `subscriptions`, migration 0007).
 *
 * The state machine is the providers': each signed webhook carries the subscription's
 * whole state and the provider's timestamp; it is applied once by the provider's event id
 * (`billing_events`), and only when it is not older than the state it would replace, so a
 * replay changes nothing and a late event never undoes a newer one. Statuses: `none` (no
 * subscription), `incomplete` (checkout started, not paid), `active`, `past_due` (a
 * renewal failed: the plan holds for GRACE_DAYS after the provider first reported it,
 * `grace_ends_at`, then the limits are Free's), `canceled`. The plan in force is written on
 * the organization row in the same transaction (`plan`, `plan_source`, `plan_until` for
 * the grace end), where every plan-limit check reads it under the row's lock, so limits
 * follow a change the moment it commits. A downgrade deletes nothing: resources over the
 * new limits stay, and creating another is 402 until usage is back under the limit.
 *
 * Usage counts come from counters, never scans: inboxes, domains and webhooks from the
 * metric totals (migration 0007), sends from `send_counts`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AlreadySubscribed, BillingNotConfigured, BillingProviderError, InvalidSignature, NoSubscription } from "../errors/errors.ts"
import { Organizations, planOf } from "../organizations/Organizations.ts"
import { PLANS, type PlanId } from "../plans/plans.ts"
import { Settings } from "../settings/Settings.ts"
import { decodeRows, Int8 } from "../shared/sql.ts"
import { iso, now, Timestamp } from "../shared/time.ts"
import type { BillingProvider, ProviderId, SubscriptionChange } from "./Provider.ts"
import { razorpayProvider } from "./razorpay.ts"
import { stripeProvider } from "./stripe.ts"

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

const Status = Schema.Literals(["none", "active", "past_due", "canceled", "incomplete"])

const SubscriptionRow = Schema.Struct({
  provider: Schema.Literals(["stripe", "razorpay"]),
  provider_customer_id: Schema.NullOr(Schema.String),
  provider_subscription_id: Schema.NullOr(Schema.String),
  plan: Schema.Literals(["pro", "scale"]),
  interval: Schema.Literals(["monthly", "yearly"]),
  status: Status,
  current_period_end: Schema.NullOr(Schema.Date),
  cancel_at_period_end: Schema.Boolean,
  grace_ends_at: Schema.NullOr(Schema.Date),
  provider_updated_at: Schema.Date
})
type SubscriptionRow = typeof SubscriptionRow.Type

export const CancelResult = Schema.Struct({ ...BillingSummary.fields, message: Schema.String })

/** What a provider's webhook did: `stale` is an event older than the state already recorded. */
export const BillingWebhookResult = Schema.Struct({ status: Schema.Literals(["applied", "duplicate", "ignored", "stale"]) })
export type BillingWebhookResult = typeof BillingWebhookResult.Type

/** How long a past_due subscription keeps its plan after the provider first reports the failed renewal. */
export const GRACE_DAYS = 7
const GRACE_MS = GRACE_DAYS * 24 * 60 * 60 * 1000

const Count = Schema.Struct({ n: Int8 })

const monthStartOf = (at: Date) => `${at.toISOString().slice(0, 7)}-01`
const dayOf = (at: Date) => at.toISOString().slice(0, 10)

/** The plan a subscription gives, as the organization row records it. */
const planFrom = (sub: SubscriptionRow | undefined): { plan: PlanId; source: "free" | "subscription"; until?: Date } => {
  if (sub?.status === "active") return { plan: sub.plan, source: "subscription" }
  if (sub?.status === "past_due" && sub.grace_ends_at !== null) return { plan: sub.plan, source: "subscription", until: sub.grace_ends_at }
  return { plan: "free", source: "free" }
}

/**
 * The provider a checkout goes to: the one asked for; else for `country: IN` the India
 * provider; else the card provider; each falling back to the other when it is the only one
 * configured.
 */
const choose = (providers: Partial<Record<ProviderId, BillingProvider>>, input: CheckoutInput): BillingProvider | undefined => {
  if (input.provider !== undefined) return providers[input.provider]
  return input.country?.toUpperCase() === "IN" ? providers.razorpay ?? providers.stripe : providers.stripe ?? providers.razorpay
}

export class Billing extends Context.Service<Billing, {
  summary(organizationId: string): Effect.Effect<BillingSummary>
  usage(organizationId: string): Effect.Effect<BillingUsage>
  checkout(organizationId: string, input: CheckoutInput): Effect.Effect<typeof CheckoutSession.Type, BillingNotConfigured | AlreadySubscribed | BillingProviderError>
  portal(organizationId: string): Effect.Effect<typeof PortalSession.Type, NoSubscription | BillingNotConfigured | BillingProviderError>
  cancel(organizationId: string): Effect.Effect<typeof CancelResult.Type, NoSubscription | BillingNotConfigured | BillingProviderError>
  /** A provider's webhook, verified by the provider's scheme, applied once (module comment). */
  receive(provider: ProviderId, headers: Readonly<Record<string, string | undefined>>, body: Uint8Array): Effect.Effect<BillingWebhookResult, BillingNotConfigured | InvalidSignature>
  /**
   * The operator's assignment (`inboxctl org plan`): a paid plan is source `admin` and wins
   * over any subscription; `free` withdraws the assignment, and the subscription (if any)
   * gives the plan again.
   */
  assignPlan(organizationId: string, plan: PlanId): Effect.Effect<BillingSummary>
}>()("inbox/Billing") {
  static readonly layerNoDeps = Layer.effect(Billing, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const organizations = yield* Organizations
    const settings = yield* Settings
    const configured = settings.billing ?? {}
    const providers: Partial<Record<ProviderId, BillingProvider>> = {
      ...(configured.stripe === undefined ? {} : { stripe: yield* stripeProvider(configured.stripe) }),
      ...(configured.razorpay === undefined ? {} : { razorpay: yield* razorpayProvider(configured.razorpay) })
    }
    const returnUrl = `${settings.publicUrl}/billing`

    const total = (organizationId: string, metric: string) =>
      Effect.map(
        sql`SELECT coalesce(sum(value), 0) AS n FROM metric_values WHERE scope_id = ${organizationId} AND metric = ${metric} AND resolution = 0`.pipe(decodeRows(Count)),
        (rows) => Number(rows[0]?.n ?? 0)
      )

    const usage = Effect.fn("Billing.usage")(function*(organizationId: string) {
      const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
      const at = yield* now
      const sends = yield* sql`SELECT coalesce(sum(count), 0) AS n FROM send_counts
        WHERE organization_id = ${organizationId} AND day >= ${monthStartOf(at)}`.pipe(decodeRows(Count))
      const today = yield* sql`SELECT coalesce(sum(count), 0) AS n FROM send_counts
        WHERE organization_id = ${organizationId} AND day = ${dayOf(at)}`.pipe(decodeRows(Count))
      const plan = planOf(org, at)
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

    const subscriptionOf = (organizationId: string, forUpdate = false) =>
      Effect.map(
        sql`SELECT provider, provider_customer_id, provider_subscription_id, plan, "interval", status, current_period_end,
            cancel_at_period_end, grace_ends_at, provider_updated_at
          FROM subscriptions WHERE organization_id = ${organizationId} ${forUpdate ? sql`FOR UPDATE` : sql``}`.pipe(decodeRows(SubscriptionRow)),
        (rows) => rows[0]
      )

    const summary = Effect.fn("Billing.summary")(function*(organizationId: string) {
      const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
      const { plan, limits, usage: used } = yield* usage(organizationId)
      const sub = yield* subscriptionOf(organizationId)
      const source = org.plan_source === "admin" ? "admin" : plan !== "free" && sub !== undefined ? "subscription" : "free"
      return {
        plan,
        plan_name: PLANS[plan].name,
        // An operator-assigned plan is in force as long as it is assigned.
        status: source === "admin" ? "active" : sub?.status ?? "none",
        source,
        // The spec states null on Free: also once a subscription ended or its grace ran out.
        provider: plan === "free" ? null : sub?.provider ?? null,
        interval: plan === "free" ? null : sub?.interval ?? null,
        current_period_end: plan === "free" || sub?.current_period_end == null ? null : iso(sub.current_period_end),
        cancel_at_period_end: sub?.cancel_at_period_end ?? false,
        ...(sub?.status === "past_due" && sub.grace_ends_at !== null ? { grace_ends_at: iso(sub.grace_ends_at) } : {}),
        limits,
        usage: used
      } satisfies BillingSummary
    })

    const notConfigured = (provider?: ProviderId) =>
      new BillingNotConfigured({
        message: provider === undefined ? "No payment provider is configured on this server." : `The payment provider ${provider} is not configured on this server.`,
        fix: "The operator sets the provider's settings (docs/billing.md and docs/settings.md), or assigns a plan with inboxctl org plan."
      })

    const noSubscription = () =>
      new NoSubscription({ message: "This organization has no subscription.", fix: "Start one with POST /v0/billing/checkout." })

    /** The subscription portal and cancel act on: one the provider still bills. */
    const current = Effect.fn("Billing.current")(function*(organizationId: string) {
      const sub = yield* subscriptionOf(organizationId)
      if (sub === undefined || sub.status === "canceled" || sub.status === "incomplete" || sub.provider_subscription_id === null) {
        return yield* noSubscription()
      }
      const provider = providers[sub.provider]
      if (provider === undefined) return yield* notConfigured(sub.provider)
      return { sub, provider, subscriptionId: sub.provider_subscription_id }
    })

    /** Writes the plan the subscription gives on the organization row, unless the operator's assignment stands. */
    const follow = (organizationId: string, adminPlan: boolean, sub: SubscriptionRow | undefined) => {
      if (adminPlan) return Effect.void
      const { plan, source, until } = planFrom(sub)
      return organizations.setPlan(organizationId, plan, source, until)
    }

    const apply = (provider: ProviderId, change: SubscriptionChange) =>
      Effect.gen(function*() {
        const organizationId = change.organizationId ?? (yield* sql<{ organization_id: string }>`SELECT organization_id FROM subscriptions
          WHERE provider = ${provider} AND provider_subscription_id = ${change.subscriptionId}`)[0]?.organization_id
        if (organizationId === undefined) return "ignored" as const
        // The organization's row lock orders this change with every plan-limit check.
        const org = yield* Effect.option(organizations.lock(organizationId))
        if (org._tag === "None") return "ignored" as const
        const stored = yield* subscriptionOf(organizationId, true)
        if (stored !== undefined && stored.provider_updated_at.getTime() > change.occurredAt.getTime()) return "stale" as const
        const same = stored !== undefined && stored.provider === provider && stored.provider_subscription_id === change.subscriptionId ? stored : undefined
        const plan = change.plan ?? same?.plan
        const interval = change.interval ?? same?.interval
        // A subscription on a price the settings do not name (and that we never saw) cannot be placed on a plan.
        if (plan === undefined || interval === undefined) return "ignored" as const
        const graceEnds = change.status !== "past_due" ? null
          : same?.status === "past_due" && same.grace_ends_at !== null ? same.grace_ends_at
          : new Date(change.occurredAt.getTime() + GRACE_MS)
        const at = yield* now
        const row: SubscriptionRow = {
          provider,
          provider_customer_id: change.customerId ?? same?.provider_customer_id ?? null,
          provider_subscription_id: change.subscriptionId,
          plan,
          interval,
          status: change.status,
          current_period_end: change.currentPeriodEnd ?? same?.current_period_end ?? null,
          cancel_at_period_end: change.cancelAtPeriodEnd ?? same?.cancel_at_period_end ?? false,
          grace_ends_at: graceEnds,
          provider_updated_at: change.occurredAt
        }
        yield* sql`INSERT INTO subscriptions ${sql.insert({ organization_id: organizationId, ...row, created_at: at, updated_at: at })}
          ON CONFLICT (organization_id) DO UPDATE SET provider = EXCLUDED.provider, provider_customer_id = EXCLUDED.provider_customer_id,
            provider_subscription_id = EXCLUDED.provider_subscription_id, plan = EXCLUDED.plan, "interval" = EXCLUDED."interval",
            status = EXCLUDED.status, current_period_end = EXCLUDED.current_period_end, cancel_at_period_end = EXCLUDED.cancel_at_period_end,
            grace_ends_at = EXCLUDED.grace_ends_at, provider_updated_at = EXCLUDED.provider_updated_at, updated_at = EXCLUDED.updated_at`
        yield* follow(organizationId, org.value.plan_source === "admin", row)
        return "applied" as const
      })

    return Billing.of({
      summary,
      usage,
      checkout: Effect.fn("Billing.checkout")(function*(organizationId: string, input: CheckoutInput) {
        const provider = choose(providers, input)
        if (provider === undefined) return yield* notConfigured(input.provider)
        const sub = yield* subscriptionOf(organizationId)
        if (sub?.status === "active" || sub?.status === "past_due") {
          return yield* new AlreadySubscribed({
            message: `This organization already has a ${PLANS[sub.plan].name} subscription (${sub.status}).`,
            fix: sub.provider === "stripe" ? "Change plans in the billing portal (POST /v0/billing/portal)." : "Cancel it (POST /v0/billing/cancel), then start a new checkout when it ends."
          })
        }
        const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
        const session = yield* provider.checkout({ organizationId, email: org.owner_email, plan: input.plan, interval: input.interval, returnUrl })
        return { url: session.url, provider: provider.id }
      }),
      portal: Effect.fn("Billing.portal")(function*(organizationId: string) {
        const { sub, provider, subscriptionId } = yield* current(organizationId)
        const answer = yield* provider.portal({ customerId: sub.provider_customer_id, subscriptionId, returnUrl })
        return { provider: provider.id, ...answer }
      }),
      cancel: Effect.fn("Billing.cancel")(function*(organizationId: string) {
        const { sub, provider, subscriptionId } = yield* current(organizationId)
        if (!sub.cancel_at_period_end) {
          yield* provider.cancelAtPeriodEnd(subscriptionId)
          // Recorded at once (the provider's webhook confirms it later); the state's timestamp is
          // left alone, so the provider's next event still orders after it.
          const at = yield* now
          yield* sql`UPDATE subscriptions SET cancel_at_period_end = true, updated_at = ${at} WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        }
        const answer = yield* summary(organizationId)
        const end = answer.current_period_end
        return {
          ...answer,
          message: `The subscription is canceled at the end of its period${end === null ? "" : ` (${end})`}; the ${answer.plan_name} plan stays active until then.`
        }
      }),
      receive: Effect.fn("Billing.receive")(function*(providerId: ProviderId, headers, body: Uint8Array) {
        const provider = providers[providerId]
        if (provider === undefined) return yield* notConfigured(providerId)
        const outcome = yield* provider.verify(headers, body, (yield* now).getTime())
        const eventId = outcome.kind === "change" ? outcome.change.eventId : outcome.eventId
        return yield* sql.withTransaction(Effect.gen(function*() {
          const at = yield* now
          // The event id is recorded in the change's transaction: both commit, or a retry applies it.
          const fresh = yield* sql`INSERT INTO billing_events (provider, event_id, received_at) VALUES (${providerId}, ${eventId}, ${at})
            ON CONFLICT (provider, event_id) DO NOTHING RETURNING event_id`
          if (fresh.length === 0) return { status: "duplicate" as const }
          if (outcome.kind === "ignored") return { status: "ignored" as const }
          return { status: yield* apply(providerId, outcome.change) }
        })).pipe(Effect.orDie)
      }),
      assignPlan: Effect.fn("Billing.assignPlan")(function*(organizationId: string, plan: PlanId) {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* organizations.lock(organizationId)
          if (plan !== "free") return yield* organizations.setPlan(organizationId, plan, "admin")
          yield* follow(organizationId, false, yield* subscriptionOf(organizationId, true))
        })).pipe(Effect.orDie)
        return yield* summary(organizationId)
      })
    })
  }).pipe(Effect.orDie))

  /** With the services it uses (Organizations); the ports are the caller's. */
  static readonly layer = Billing.layerNoDeps.pipe(Layer.provide(Organizations.layer))
}
