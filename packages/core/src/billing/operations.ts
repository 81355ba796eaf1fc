/**
 * The billing operations of the catalogue (spec: Billing). Every member one needs an
 * organization-level key without a permission list (`billing_read` / `billing_manage`,
 * which cannot be granted in a list: access/Principal.ts), enforced by `access` in
 * runOperation. The payment providers' webhooks are operator routes under /inbound,
 * admitted by the provider's own signature (Billing.receive).
 */
import { Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { Billing, BillingSummary, BillingUsage, BillingWebhookResult, CancelResult, CheckoutInput, CheckoutSession, PortalSession } from "./Billing.ts"

export const getBilling = operation({
  name: "billing.get",
  summary: "The billing summary: plan, where it comes from, subscription state, limits and usage.",
  routes: [route.get("/v0/billing")],
  access: { kind: "member", permission: "billing_read", scopes: ["organization"] },
  output: Output.json(BillingSummary),
  mutates: false,
  mcp: { tool: "get_billing" },
  cli: { command: "billing get" },
  run: ({ principal }) => Billing.use((b) => b.summary(principal.organizationId))
})

export const getBillingUsage = operation({
  name: "billing.usage",
  summary: "The plan, its limits and the usage counted against them.",
  routes: [route.get("/v0/billing/usage")],
  access: { kind: "member", permission: "billing_read", scopes: ["organization"] },
  output: Output.json(BillingUsage),
  mutates: false,
  mcp: { tool: "get_billing_usage" },
  cli: { command: "billing usage" },
  run: ({ principal }) => Billing.use((b) => b.usage(principal.organizationId))
})

export const checkout = operation({
  name: "billing.checkout",
  summary: "Start a checkout for the Pro or Scale plan; answers the provider's checkout URL.",
  routes: [route.post("/v0/billing/checkout")],
  access: { kind: "member", permission: "billing_manage", scopes: ["organization"] },
  body: CheckoutInput,
  output: Output.json(CheckoutSession),
  mutates: true,
  mcp: { tool: "start_checkout" },
  cli: { command: "billing checkout" },
  run: ({ principal, input }) => Billing.use((b) => b.checkout(principal.organizationId, input))
})

export const portal = operation({
  name: "billing.portal",
  summary: "Where to manage the subscription: the card provider's portal URL, or instructions for the India provider.",
  routes: [route.post("/v0/billing/portal")],
  access: { kind: "member", permission: "billing_manage", scopes: ["organization"] },
  body: Schema.Struct({}),
  output: Output.json(PortalSession),
  mutates: true,
  mcp: { tool: "open_billing_portal" },
  cli: { command: "billing portal" },
  run: ({ principal }) => Billing.use((b) => b.portal(principal.organizationId))
})

export const cancel = operation({
  name: "billing.cancel",
  summary: "Cancel the subscription at the end of its period; it stays active until then.",
  routes: [route.post("/v0/billing/cancel")],
  access: { kind: "member", permission: "billing_manage", scopes: ["organization"] },
  body: Schema.Struct({}),
  output: Output.json(CancelResult),
  mutates: true,
  mcp: { tool: "cancel_subscription" },
  cli: { command: "billing cancel" },
  run: ({ principal }) => Billing.use((b) => b.cancel(principal.organizationId))
})

/** Webhook bodies are small JSON documents; the limit keeps a forged one from costing more. */
const WEBHOOK_MAX_BYTES = 512 * 1024

export const stripeWebhook = operation({
  name: "inbound.billingStripe",
  summary: "The card provider's (Stripe) subscription webhooks, verified by the stripe-signature header; applied once per event id, in the provider's order.",
  routes: [route.post("/inbound/billing/stripe")],
  access: { kind: "operator", credential: "billing_signature" },
  headers: Schema.Struct({ "stripe-signature": Schema.optionalKey(Schema.String) }),
  raw: { maxBytes: WEBHOOK_MAX_BYTES },
  output: Output.json(BillingWebhookResult),
  mutates: true,
  mcp: { exclude: "an operator route: Stripe calls it, signed with the webhook secret" },
  cli: { exclude: "an operator route: Stripe calls it over HTTP" },
  run: ({ headers, raw }) => Billing.use((b) => b.receive("stripe", headers, raw))
})

export const razorpayWebhook = operation({
  name: "inbound.billingRazorpay",
  summary: "The India provider's (Razorpay) subscription webhooks, verified by the x-razorpay-signature header; applied once per x-razorpay-event-id, in the provider's order.",
  routes: [route.post("/inbound/billing/razorpay")],
  access: { kind: "operator", credential: "billing_signature" },
  headers: Schema.Struct({
    "x-razorpay-signature": Schema.optionalKey(Schema.String),
    "x-razorpay-event-id": Schema.optionalKey(Schema.String)
  }),
  raw: { maxBytes: WEBHOOK_MAX_BYTES },
  output: Output.json(BillingWebhookResult),
  mutates: true,
  mcp: { exclude: "an operator route: Razorpay calls it, signed with the webhook secret" },
  cli: { exclude: "an operator route: Razorpay calls it over HTTP" },
  run: ({ headers, raw }) => Billing.use((b) => b.receive("razorpay", headers, raw))
})

export const billingOperations = [getBilling, getBillingUsage, checkout, portal, cancel, stripeWebhook, razorpayWebhook]
