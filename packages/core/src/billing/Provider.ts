/**
 * The payment provider port (DESIGN.md, "Ports"): what Billing asks of a provider, and
 * what every implementation (stripe.ts, the card provider; razorpay.ts, the India
 * provider) must do. Billing owns every rule (who may check out, the state machine, the
 * grace period, the plan in force); a provider only talks to its API and reads its own
 * webhooks.
 *
 * Contract of an implementation:
 * - `checkout` starts a hosted checkout for the organization's plan and interval and
 *   answers its URL. The subscription it leads to must carry the organization id (Stripe's
 *   subscription metadata, Razorpay's notes), because its webhooks are how Billing learns
 *   of it; nothing is written here.
 * - `portal` answers where the customer manages the subscription: a URL, or instructions
 *   when the provider has no hosted portal.
 * - `cancelAtPeriodEnd` asks the provider to end the subscription when its period ends
 *   (never at once: the customer paid for the period).
 * - `verify` checks the webhook's signature with the provider's own scheme and secret
 *   before reading a byte of it, and answers the subscription's new state with the
 *   provider's event id and the provider's timestamp of the event (Billing orders events
 *   by it), or `ignored` for event types that change no subscription.
 * Failure: an API call that fails (refused, unreachable, an error answered) is
 * BillingProviderError carrying the provider's own text, which the caller sees as 502; a
 * bad or missing signature is InvalidSignature (400). Nothing else fails: a webhook of a
 * shape the implementation does not know is `ignored`, so the provider stops retrying it.
 */
import type { Effect } from "effect"
import type { BillingProviderError, InvalidSignature } from "../errors/errors.ts"

export type ProviderId = "stripe" | "razorpay"
export type PaidPlan = "pro" | "scale"
export type Interval = "monthly" | "yearly"
export type SubscriptionStatus = "active" | "past_due" | "canceled" | "incomplete"

export interface CheckoutRequest {
  readonly organizationId: string
  readonly email: string
  readonly plan: PaidPlan
  readonly interval: Interval
  /** Where the provider sends the customer back (our dashboard's billing page). */
  readonly returnUrl: string
}

/** A subscription as one provider event describes it. */
export interface SubscriptionChange {
  readonly eventId: string
  /** The provider's timestamp of the event: an older one never overwrites a newer state. */
  readonly occurredAt: Date
  /** From the subscription's metadata; absent when the provider did not echo it. */
  readonly organizationId?: string
  readonly subscriptionId: string
  readonly customerId?: string
  /** From the price or plan id the subscription bills (so a plan change at the provider counts). */
  readonly plan?: PaidPlan
  readonly interval?: Interval
  readonly status: SubscriptionStatus
  readonly currentPeriodEnd?: Date
  /** Absent when the event does not say (the stored value stands). */
  readonly cancelAtPeriodEnd?: boolean
}

export type WebhookOutcome =
  | { readonly kind: "change"; readonly change: SubscriptionChange }
  | { readonly kind: "ignored"; readonly eventId: string }

export type PortalAnswer = { readonly url: string } | { readonly instructions: string }

export interface BillingProvider {
  readonly id: ProviderId
  checkout(request: CheckoutRequest): Effect.Effect<{ readonly url: string }, BillingProviderError>
  portal(subscription: { readonly customerId: string | null; readonly subscriptionId: string | null; readonly returnUrl: string }): Effect.Effect<PortalAnswer, BillingProviderError>
  cancelAtPeriodEnd(subscriptionId: string): Effect.Effect<void, BillingProviderError>
  /** `nowMillis`: our Clock, against which the provider's signed timestamp is checked where its scheme has one. */
  verify(headers: Readonly<Record<string, string | undefined>>, body: Uint8Array, nowMillis: number): Effect.Effect<WebhookOutcome, InvalidSignature>
}

/** Which plan and interval a provider's price (or plan) id bills, by the operator's settings. */
export const planOfPrice = (
  prices: { readonly pro: { readonly monthly: string; readonly yearly: string }; readonly scale: { readonly monthly: string; readonly yearly: string } },
  id: string | undefined
): { readonly plan: PaidPlan; readonly interval: Interval } | undefined => {
  for (const plan of ["pro", "scale"] as const) {
    for (const interval of ["monthly", "yearly"] as const) {
      if (prices[plan][interval] === id) return { plan, interval }
    }
  }
  return undefined
}

/** The provider's words, bounded: they reach the client in a 502's message. */
export const providerText = (text: unknown): string => {
  const s = typeof text === "string" && text.trim() !== "" ? text.trim() : "no description"
  return s.length > 500 ? `${s.slice(0, 500)}...` : s
}
