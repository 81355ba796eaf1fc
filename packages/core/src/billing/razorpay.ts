/**
 * The India provider, Razorpay, through its official Node SDK (the BillingProvider
 * contract is in Provider.ts). Checkout creates a Razorpay subscription on the operator's
 * plan id, with the organization id in its notes, and answers its hosted payment page
 * (`short_url`); Razorpay has no customer portal, so the portal answers instructions;
 * cancelling cancels at the end of the billing cycle. Webhooks carry the
 * `x-razorpay-signature` header, HMAC-SHA256 (hex) of the raw body keyed with the webhook
 * secret, checked by the SDK's `validateWebhookSignature`; the event id is the
 * `x-razorpay-event-id` header and the event's time its `created_at`. Only
 * `subscription.*` events change anything; each carries the whole subscription entity.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type Razorpay from "razorpay"
import { BillingProviderError, InvalidSignature } from "../errors/errors.ts"
import type { BillingSettings } from "../settings/Settings.ts"
import { parseJson } from "../shared/json.ts"
import { type BillingProvider, planOfPrice, providerText, type SubscriptionStatus } from "./Provider.ts"

type RazorpaySettings = NonNullable<BillingSettings["razorpay"]>

/** Razorpay's subscription statuses in ours (docs/billing.md). */
const STATUS: Readonly<Record<string, SubscriptionStatus>> = {
  created: "incomplete",
  authenticated: "incomplete",
  active: "active",
  pending: "past_due",
  halted: "past_due",
  paused: "incomplete",
  cancelled: "canceled",
  completed: "canceled",
  expired: "canceled"
}

/** Billing cycles a subscription is created for (Razorpay requires a count): ten years either way. */
const CYCLES = { monthly: 120, yearly: 10 } as const

export const PORTAL_INSTRUCTIONS =
  "Razorpay has no customer portal: the card or UPI mandate is managed from the link in Razorpay's subscription emails. " +
  "To cancel, call POST /v0/billing/cancel (the plan stays active until the period ends); to change plans, cancel and start a new checkout."

/**
 * The SDK hard-codes https://api.razorpay.com as its API host and has no option for
 * another. It builds one axios instance at construction (`client.api.rq`, see
 * node_modules/razorpay/dist/api.js) whose `defaults.baseURL` every request is resolved
 * against, so setting it afterwards moves every call while the SDK's own request building,
 * authentication and error handling stay as they are. Kept in this one function because it
 * reaches into the SDK's internals: an SDK upgrade that renames them fails here, loudly.
 */
const pointAt = (client: Razorpay, apiUrl: string): void => {
  const api = client.api as unknown as { rq?: { defaults?: { baseURL?: string } } }
  if (api.rq?.defaults === undefined) throw new Error("razorpay SDK: no axios instance at client.api.rq; INBOX_RAZORPAY_API_URL cannot be applied")
  api.rq.defaults.baseURL = apiUrl.replace(/\/+$/, "")
}

/** The SDK rejects with `{ statusCode, error: { code, description } }`, or an Error when the API is unreachable. */
const failed = (error: unknown) => {
  const e = error as { error?: { description?: unknown }; message?: unknown } | null
  const text = e?.error?.description ?? (error instanceof Error ? error.message : e?.message)
  return new BillingProviderError({
    message: `Razorpay: ${providerText(text)}`,
    fix: "Try again later; if it persists, the operator checks the Razorpay settings and status."
  })
}

interface WebhookBody {
  readonly event?: string
  readonly created_at?: number
  readonly payload?: {
    readonly subscription?: {
      readonly entity?: {
        readonly id?: string
        readonly plan_id?: string
        readonly customer_id?: string | null
        readonly status?: string
        readonly current_end?: number | null
        readonly notes?: Record<string, unknown> | ReadonlyArray<unknown>
        readonly cancel_at_cycle_end?: boolean | number
      }
    }
  }
}

export const razorpayProvider = (settings: RazorpaySettings): Effect.Effect<BillingProvider> =>
  // The SDK is loaded only when Razorpay is configured, so an unconfigured server never pays for it at start.
  Effect.map(Effect.promise(() => import("razorpay")), ({ default: RazorpaySdk }) => makeRazorpayProvider(RazorpaySdk, settings))

const makeRazorpayProvider = (RazorpaySdk: typeof Razorpay, settings: RazorpaySettings): BillingProvider => {
  const client = new RazorpaySdk({ key_id: settings.keyId, key_secret: settings.keySecret })
  if (settings.apiUrl !== undefined) pointAt(client, settings.apiUrl)
  const call = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: failed })
  const invalid = () =>
    new InvalidSignature({ message: "The x-razorpay-signature header is missing or wrong.", fix: "Check INBOX_RAZORPAY_WEBHOOK_SECRET against the webhook's secret." })

  return {
    id: "razorpay",
    checkout: (request) =>
      Effect.map(
        call(() =>
          client.subscriptions.create({
            plan_id: settings.plans[request.plan][request.interval],
            total_count: CYCLES[request.interval],
            customer_notify: 1,
            notes: { organization_id: request.organizationId, email: request.email }
          })
        ),
        (sub) => ({ url: sub.short_url })
      ),
    portal: () => Effect.succeed({ instructions: PORTAL_INSTRUCTIONS }),
    cancelAtPeriodEnd: (subscriptionId) => Effect.asVoid(call(() => client.subscriptions.cancel(subscriptionId, true))),
    verify: (headers, body) =>
      Effect.gen(function*() {
        const text = Buffer.from(body).toString("utf8")
        const signature = headers["x-razorpay-signature"]
        // The SDK throws when an argument is missing: that is a missing signature too.
        const valid = signature !== undefined && (yield* Effect.try({ try: () => RazorpaySdk.validateWebhookSignature(text, signature, settings.webhookSecret), catch: invalid }))
        if (!valid) return yield* invalid()
        // Razorpay sends the id in a header; a body without one is named by its digest, so a replay is still a replay.
        const eventId = headers["x-razorpay-event-id"] ?? `sha256:${createHash("sha256").update(body).digest("hex")}`
        const parsed = parseJson(text)
        const event: WebhookBody = parsed.ok && typeof parsed.value === "object" && parsed.value !== null ? parsed.value as WebhookBody : {}
        const entity = event.payload?.subscription?.entity
        if (event.event?.startsWith("subscription.") !== true || entity?.id === undefined || typeof event.created_at !== "number") {
          return { kind: "ignored" as const, eventId }
        }
        const notes = entity.notes !== undefined && !Array.isArray(entity.notes) ? entity.notes as Record<string, unknown> : {}
        const organizationId = typeof notes["organization_id"] === "string" ? notes["organization_id"] : undefined
        const priced = planOfPrice(settings.plans, entity.plan_id)
        const cancel = entity.cancel_at_cycle_end
        return {
          kind: "change" as const,
          change: {
            eventId,
            occurredAt: new Date(event.created_at * 1000),
            subscriptionId: entity.id,
            status: STATUS[entity.status ?? ""] ?? "incomplete",
            ...(organizationId === undefined ? {} : { organizationId }),
            ...(typeof entity.customer_id === "string" ? { customerId: entity.customer_id } : {}),
            ...(priced === undefined ? {} : priced),
            ...(typeof entity.current_end === "number" ? { currentPeriodEnd: new Date(entity.current_end * 1000) } : {}),
            ...(cancel === undefined ? {} : { cancelAtPeriodEnd: cancel === true || cancel === 1 })
          }
        }
      })
  }
}
