/**
 * The card provider, Stripe, through its official Node SDK (the BillingProvider contract
 * is in Provider.ts). Checkout is a hosted Checkout Session in subscription mode whose
 * subscription carries the organization id in its metadata; the portal is Stripe's hosted
 * customer portal; cancelling sets `cancel_at_period_end`. Webhooks are verified by the
 * SDK's `webhooks.constructEvent` (the `stripe-signature` header: HMAC-SHA256 of
 * `timestamp.body` with the endpoint's `whsec_` secret, five minutes of tolerance measured
 * on our Clock), and only `customer.subscription.*` events change anything: they carry the
 * whole subscription, so each one is a complete state.
 */
import { Effect } from "effect"
import type Stripe from "stripe"
import { BillingProviderError, InvalidSignature } from "../errors/errors.ts"
import type { BillingSettings } from "../settings/Settings.ts"
import { type BillingProvider, planOfPrice, providerText, type SubscriptionStatus } from "./Provider.ts"

type StripeSettings = NonNullable<BillingSettings["stripe"]>

/** Stripe's subscription statuses in ours (docs/billing.md). */
const STATUS: Readonly<Record<string, SubscriptionStatus>> = {
  active: "active",
  trialing: "active",
  past_due: "past_due",
  unpaid: "past_due",
  canceled: "canceled",
  incomplete_expired: "canceled",
  incomplete: "incomplete",
  paused: "incomplete"
}

const failed = (error: unknown) =>
  new BillingProviderError({
    message: `Stripe: ${providerText(error instanceof Error ? error.message : undefined)}`,
    fix: "Try again later; if it persists, the operator checks the Stripe settings and status."
  })

/** The SDK's options for INBOX_STRIPE_API_URL (host, port and protocol are its documented overrides). */
const endpoint = (apiUrl: string | undefined): Stripe.StripeConfig => {
  if (apiUrl === undefined) return {}
  const url = new URL(apiUrl)
  const protocol = url.protocol === "http:" ? "http" : "https"
  return { host: url.hostname, protocol, port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port) }
}

interface SubscriptionFields {
  readonly id: string
  readonly customer: string | { readonly id: string } | null
  readonly status: string
  readonly cancel_at_period_end?: boolean
  readonly current_period_end?: number
  readonly metadata?: Record<string, string> | null
  readonly items?: { readonly data: ReadonlyArray<{ readonly price?: { readonly id: string }; readonly current_period_end?: number }> }
}

export const stripeProvider = (settings: StripeSettings): Effect.Effect<BillingProvider> =>
  // The SDK is loaded only when Stripe is configured: it is a third of a second of every start.
  Effect.map(Effect.promise(() => import("stripe")), ({ default: StripeSdk }) => makeStripeProvider(StripeSdk, settings))

const makeStripeProvider = (StripeSdk: typeof Stripe, settings: StripeSettings): BillingProvider => {
  // No automatic retries: a customer is waiting on checkout, portal or cancel, and a retry
  // would double the wait of an outage before its 502; they can simply ask again.
  const client = new StripeSdk(settings.secretKey, { ...endpoint(settings.apiUrl), maxNetworkRetries: 0 })
  const call = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: failed })

  return {
    id: "stripe",
    checkout: (request) =>
      call(() =>
        client.checkout.sessions.create({
          mode: "subscription",
          line_items: [{ price: settings.prices[request.plan][request.interval], quantity: 1 }],
          customer_email: request.email,
          client_reference_id: request.organizationId,
          subscription_data: { metadata: { organization_id: request.organizationId } },
          metadata: { organization_id: request.organizationId },
          success_url: `${request.returnUrl}?checkout=success`,
          cancel_url: `${request.returnUrl}?checkout=canceled`
        })
      ).pipe(Effect.flatMap((session) => session.url === null ? Effect.fail(failed(new Error("the checkout session has no URL"))) : Effect.succeed({ url: session.url }))),
    portal: ({ customerId, returnUrl }) =>
      customerId === null
        ? Effect.fail(failed(new Error("the subscription has no customer")))
        : Effect.map(call(() => client.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl })), (s) => ({ url: s.url })),
    cancelAtPeriodEnd: (subscriptionId) => Effect.asVoid(call(() => client.subscriptions.update(subscriptionId, { cancel_at_period_end: true }))),
    verify: (headers, body, nowMillis) =>
      Effect.gen(function*() {
        const signature = headers["stripe-signature"]
        const event = yield* Effect.try({
          try: () => client.webhooks.constructEvent(Buffer.from(body), signature ?? "", settings.webhookSecret, undefined, undefined, nowMillis),
          catch: () => new InvalidSignature({ message: "The stripe-signature header is missing, wrong or too old.", fix: "Check INBOX_STRIPE_WEBHOOK_SECRET against the endpoint's signing secret." })
        })
        if (!event.type.startsWith("customer.subscription.")) return { kind: "ignored" as const, eventId: event.id }
        const sub = event.data.object as unknown as SubscriptionFields
        const item = sub.items?.data[0]
        const priced = planOfPrice(settings.prices, item?.price?.id)
        // Since API version 2025-03-31 the period lives on the items; older versions keep it on the subscription.
        const periodEnd = item?.current_period_end ?? sub.current_period_end
        const organizationId = sub.metadata?.["organization_id"]
        const customerId = typeof sub.customer === "string" ? sub.customer : sub.customer?.id
        return {
          kind: "change" as const,
          change: {
            eventId: event.id,
            occurredAt: new Date(event.created * 1000),
            subscriptionId: sub.id,
            // A deleted subscription is over whatever status it last had.
            status: event.type === "customer.subscription.deleted" ? "canceled" : STATUS[sub.status] ?? "incomplete",
            ...(organizationId === undefined ? {} : { organizationId }),
            ...(customerId === undefined ? {} : { customerId }),
            ...(priced === undefined ? {} : priced),
            ...(periodEnd === undefined ? {} : { currentPeriodEnd: new Date(periodEnd * 1000) }),
            ...(sub.cancel_at_period_end === undefined ? {} : { cancelAtPeriodEnd: sub.cancel_at_period_end })
          }
        }
      })
  }
}
