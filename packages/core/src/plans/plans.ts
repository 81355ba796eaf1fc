/**
 * Plans and their limits. Free is as the spec records it; Pro and Scale are our choice
 * (the spec does not show them) and are listed in docs/api.md.
 */
import { Effect, Schema } from "effect"
import { PlanLimitExceeded } from "../errors/errors.ts"

export type PlanId = "free" | "pro" | "scale"

export interface PlanLimits {
  readonly inboxes: number
  readonly sends_per_month: number
  /** null: no daily cap. */
  readonly sends_per_day: number | null
  readonly domains: number
  readonly webhooks: number
}

export interface Plan {
  readonly id: PlanId
  readonly name: string
  readonly prices: {
    readonly usd: { readonly monthly: number; readonly yearly: number }
    readonly inr: { readonly monthly: number; readonly yearly: number }
  }
  readonly limits: PlanLimits
}

export const PLANS: Readonly<Record<PlanId, Plan>> = {
  free: {
    id: "free",
    name: "Free",
    prices: { usd: { monthly: 0, yearly: 0 }, inr: { monthly: 0, yearly: 0 } },
    limits: { inboxes: 3, sends_per_month: 300, sends_per_day: 100, domains: 0, webhooks: 1 }
  },
  pro: {
    id: "pro",
    name: "Pro",
    prices: { usd: { monthly: 20, yearly: 200 }, inr: { monthly: 1699, yearly: 16990 } },
    limits: { inboxes: 50, sends_per_month: 50_000, sends_per_day: null, domains: 5, webhooks: 10 }
  },
  scale: {
    id: "scale",
    name: "Scale",
    prices: { usd: { monthly: 200, yearly: 2000 }, inr: { monthly: 16999, yearly: 169990 } },
    limits: { inboxes: 500, sends_per_month: 500_000, sends_per_day: null, domains: 50, webhooks: 50 }
  }
}

export const PLAN_IDS: ReadonlyArray<PlanId> = ["free", "pro", "scale"]

export const isPlanId = (s: string): s is PlanId => s === "free" || s === "pro" || s === "scale"

const UPGRADE: Readonly<Record<PlanId, PlanId | undefined>> = { free: "pro", pro: "scale", scale: undefined }

/** Fails with 402 plan_limit_exceeded when one more `limit` would pass the plan's maximum. */
export const checkLimit = (
  planId: PlanId,
  limit: "inboxes" | "domains" | "webhooks" | "sends_per_month" | "sends_per_day",
  current: number
): Effect.Effect<void, PlanLimitExceeded> => {
  const max = PLANS[planId].limits[limit]
  if (max === null || current < max) return Effect.void
  const upgrade = UPGRADE[planId]
  return Effect.fail(new PlanLimitExceeded({
    message: `The ${PLANS[planId].name} plan allows ${max} ${limit.replace(/_/g, " ")}; you have ${current}.`,
    ...(upgrade === undefined ? {} : { fix: `Upgrade to the ${PLANS[upgrade].name} plan.` }),
    errors: [{ limit, current, max, plan: planId, ...(upgrade === undefined ? {} : { upgrade_to: upgrade }) }]
  }))
}

const Prices = Schema.Struct({ monthly: Schema.Number, yearly: Schema.Number })

/** A plan as `/public/plans` shows it. */
export const PlanSchema = Schema.Struct({
  id: Schema.Literals(["free", "pro", "scale"]),
  name: Schema.String,
  prices: Schema.Struct({ usd: Prices, inr: Prices }),
  limits: Schema.Struct({
    inboxes: Schema.Number,
    sends_per_month: Schema.Number,
    sends_per_day: Schema.NullOr(Schema.Number),
    domains: Schema.Number,
    webhooks: Schema.Number
  })
})
