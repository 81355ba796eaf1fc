/**
 * Billing through the payment providers (spec: Billing, Billing summary, Limits, Errors 402,
 * 409 already_subscribed / no_subscription, 502 billing_provider_error, 503
 * billing_not_configured, Operator routes invalid_signature; docs/billing.md).
 *
 * The real SDKs (`stripe`, `razorpay`) talk to local fakes of each provider's HTTP API on
 * loopback (a node:http server per provider, answering the few endpoints we call and
 * recording what they were sent), and webhooks are signed with each provider's own
 * scheme: Stripe's SDK signs `stripe-signature` headers; Razorpay's is HMAC-SHA256 (hex) of
 * the body with the webhook secret.
 */
import { assert, layer } from "@effect/vitest"
import { Billing, GRACE_DAYS } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Clock, Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { createHmac } from "node:crypto"
import { createServer, type Server } from "node:http"
import Stripe from "stripe"

const STRIPE_WHSEC = "whsec_test_stripe_endpoint_secret"
const RAZORPAY_WHSEC = "razorpay webhook secret"
const STRIPE_PRICES = { pro: { monthly: "price_pro_m", yearly: "price_pro_y" }, scale: { monthly: "price_scale_m", yearly: "price_scale_y" } }
const RAZORPAY_PLANS = { pro: { monthly: "plan_pro_m", yearly: "plan_pro_y" }, scale: { monthly: "plan_scale_m", yearly: "plan_scale_y" } }

interface Seen {
  readonly method: string
  readonly path: string
  readonly body: string
}

/** One provider's API on loopback: answers by `answer`, or with `outage` (status and body) when set. */
interface FakeApi {
  url: string
  readonly seen: Array<Seen>
  outage: { status: number; body: unknown } | undefined
}

const startFake = (answer: (request: Seen) => unknown) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ fake: FakeApi; server: Server }>((resolve) => {
        const fake: FakeApi = { url: "", seen: [], outage: undefined }
        const server = createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const seen = { method: req.method ?? "", path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") }
            fake.seen.push(seen)
            const status = fake.outage?.status ?? 200
            res.writeHead(status, { "content-type": "application/json" })
            res.end(JSON.stringify(fake.outage?.body ?? answer(seen)))
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          fake.url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
          resolve({ fake, server })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ fake }) => fake))

/** Stripe's API as far as we use it: checkout sessions, portal sessions, subscription updates. */
const stripeApi = (request: Seen): unknown => {
  if (request.path === "/v1/checkout/sessions") return { id: "cs_test_1", object: "checkout.session", url: "https://checkout.stripe.test/c/pay/cs_test_1" }
  if (request.path === "/v1/billing_portal/sessions") return { id: "bps_1", object: "billing_portal.session", url: "https://billing.stripe.test/p/session/bps_1" }
  const sub = /^\/v1\/subscriptions\/([^/?]+)$/.exec(request.path)
  if (sub !== null) return { id: sub[1], object: "subscription", status: "active", cancel_at_period_end: true }
  return { error: { message: `fake: no route ${request.path}` } }
}

/** Razorpay's API as far as we use it: creating and cancelling subscriptions. */
const razorpayApi = (request: Seen): unknown => {
  if (request.path === "/v1/subscriptions") return { id: "sub_rzp_new", entity: "subscription", status: "created", short_url: "https://rzp.test/i/abc123" }
  const cancel = /^\/v1\/subscriptions\/([^/]+)\/cancel$/.exec(request.path)
  if (cancel !== null) return { id: cancel[1], entity: "subscription", status: "active" }
  return { error: { code: "BAD_REQUEST_ERROR", description: `fake: no route ${request.path}` } }
}

class Fakes extends Context.Service<Fakes, { readonly stripe: FakeApi; readonly razorpay: FakeApi }>()("test/BillingFakes") {
  static readonly layer = Layer.effect(Fakes, Effect.gen(function*() {
    return { stripe: yield* startFake(stripeApi), razorpay: yield* startFake(razorpayApi) }
  }))
}

const stripeSettings = (fakes: Fakes["Service"]) => ({ secretKey: "sk_test_fake", webhookSecret: STRIPE_WHSEC, prices: STRIPE_PRICES, apiUrl: fakes.stripe.url })
const razorpaySettings = (fakes: Fakes["Service"]) => ({
  keyId: "rzp_test_fake",
  keySecret: "rzp secret",
  webhookSecret: RAZORPAY_WHSEC,
  plans: RAZORPAY_PLANS,
  apiUrl: fakes.razorpay.url
})

const appWith = (storage: ReturnType<typeof storages>[number], providers: "both" | "stripe") =>
  Layer.unwrap(Effect.map(Effect.service(Fakes), (fakes) =>
    TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, {
      billing: { stripe: stripeSettings(fakes), ...(providers === "both" ? { razorpay: razorpaySettings(fakes) } : {}) }
    })))
  )).pipe(Layer.provideMerge(Fakes.layer))

// ---- webhooks, signed as each provider signs them ----

let serial = 0
const nextId = (prefix: string) => `${prefix}_${++serial}_${Math.random().toString(36).slice(2, 8)}`
const stripeSigner = new Stripe("sk_test_signer")

interface StripeSub {
  readonly organizationId: string
  readonly id?: string
  readonly status: string
  readonly price?: string
  readonly cancelAtPeriodEnd?: boolean
  readonly periodEnd?: number
}

/** A Stripe event about a subscription, `secondsAgo` before our clock (the event's `created`). */
const stripeEvent = (type: string, sub: StripeSub, options: { id?: string; secondsAgo?: number } = {}) =>
  Effect.map(Clock.currentTimeMillis, (ms) => JSON.stringify({
    id: options.id ?? nextId("evt"),
    object: "event",
    type,
    created: Math.floor(ms / 1000) - (options.secondsAgo ?? 0),
    livemode: false,
    data: {
      object: {
        id: sub.id ?? `sub_${sub.organizationId}`,
        object: "subscription",
        customer: `cus_${sub.organizationId}`,
        status: sub.status,
        cancel_at_period_end: sub.cancelAtPeriodEnd ?? false,
        metadata: { organization_id: sub.organizationId },
        items: { object: "list", data: [{ price: { id: sub.price ?? STRIPE_PRICES.pro.monthly }, current_period_end: Math.floor(ms / 1000) + 30 * 86400 }] }
      }
    }
  }))

const postStripe = (payload: string, secret = STRIPE_WHSEC) =>
  Effect.gen(function*() {
    const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const signature = stripeSigner.webhooks.generateTestHeaderString({ payload, secret, timestamp })
    return yield* TestApp.use((app) =>
      app.request("POST", "/inbound/billing/stripe", { body: payload, headers: { "content-type": "application/json", "stripe-signature": signature } })
    )
  })

/** Stripe tells us the organization's subscription is in `status`, now. */
const stripeSays = (organizationId: string, status: string, sub: Partial<StripeSub> = {}) =>
  Effect.gen(function*() {
    const res = yield* postStripe(yield* stripeEvent("customer.subscription.updated", { organizationId, status, ...sub }))
    assert.strictEqual(res.status, 200, res.text)
    return res
  })

const razorpayEvent = (event: string, organizationId: string, status: string, options: { secondsAgo?: number; plan?: string } = {}) =>
  Effect.map(Clock.currentTimeMillis, (ms) => JSON.stringify({
    entity: "event",
    account_id: "acc_test",
    event,
    contains: ["subscription"],
    created_at: Math.floor(ms / 1000) - (options.secondsAgo ?? 0),
    payload: {
      subscription: {
        entity: {
          id: `sub_rzp_${organizationId}`,
          entity: "subscription",
          plan_id: options.plan ?? RAZORPAY_PLANS.pro.monthly,
          customer_id: `cust_${organizationId}`,
          status,
          current_end: Math.floor(ms / 1000) + 30 * 86400,
          notes: { organization_id: organizationId }
        }
      }
    }
  }))

const postRazorpay = (payload: string, options: { eventId?: string; secret?: string } = {}) =>
  TestApp.use((app) =>
    app.request("POST", "/inbound/billing/razorpay", {
      body: payload,
      headers: {
        "content-type": "application/json",
        "x-razorpay-event-id": options.eventId ?? nextId("evt_rzp"),
        "x-razorpay-signature": createHmac("sha256", options.secret ?? RAZORPAY_WHSEC).update(payload).digest("hex")
      }
    })
  )

const summaryOf = (key: string) => TestApp.use((app) => Effect.map(app.request("GET", "/v0/billing", { key }), (r) => r.body))
const createInbox = (key: string) => TestApp.use((app) => app.request("POST", "/v0/inboxes", { key, json: {} }))
const paidOrganization = Effect.gen(function*() {
  yield* TestClock.adjust("1 day") // off the epoch, so provider timestamps are ordinary
  return yield* newOrganization()
})

for (const storage of storages()) {
  layer(appWith(storage, "both"), { timeout: "180 seconds" })(`billing providers (${storage.name})`, (it) => {
    it.effect("checkout goes to the card provider by default: { url, provider: stripe }, a subscription-mode session carrying the organization", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { stripe } = yield* Fakes
        const org = yield* paidOrganization
        const res = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "scale", interval: "yearly" } })
        assert.strictEqual(res.status, 200, res.text)
        assert.deepStrictEqual(res.body, { url: "https://checkout.stripe.test/c/pay/cs_test_1", provider: "stripe" })
        const sent = new URLSearchParams(stripe.seen.findLast((s) => s.path === "/v1/checkout/sessions")?.body)
        assert.strictEqual(sent.get("mode"), "subscription")
        assert.strictEqual(sent.get("line_items[0][price]"), STRIPE_PRICES.scale.yearly)
        assert.strictEqual(sent.get("subscription_data[metadata][organization_id]"), org.organizationId)
        assert.strictEqual(sent.get("client_reference_id"), org.organizationId)
      }))

    it.effect("country IN selects the India provider (Razorpay's hosted page) unless provider is given", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { razorpay } = yield* Fakes
        const org = yield* paidOrganization
        const india = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly", country: "IN" } })
        assert.strictEqual(india.status, 200, india.text)
        assert.deepStrictEqual(india.body, { url: "https://rzp.test/i/abc123", provider: "razorpay" })
        const sent = JSON.parse(razorpay.seen.findLast((s) => s.path === "/v1/subscriptions")?.body ?? "{}")
        assert.strictEqual(sent.plan_id, RAZORPAY_PLANS.pro.monthly)
        assert.strictEqual(sent.notes.organization_id, org.organizationId)
        const chosen = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly", country: "IN", provider: "stripe" } })
        assert.strictEqual(chosen.body.provider, "stripe")
        const asked = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "yearly", provider: "razorpay" } })
        assert.strictEqual(asked.body.provider, "razorpay")
      }))

    it.effect("a provider outage is 502 billing_provider_error carrying the provider's text, for each provider", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const fakes = yield* Fakes
        const org = yield* paidOrganization
        fakes.stripe.outage = { status: 500, body: { error: { type: "api_error", message: "Stripe is having a bad day (fake)" } } }
        fakes.razorpay.outage = { status: 503, body: { error: { code: "SERVER_ERROR", description: "Razorpay gateway unavailable (fake)" } } }
        const card = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly" } })
        const india = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly", country: "IN" } })
        fakes.stripe.outage = undefined
        fakes.razorpay.outage = undefined
        assert.strictEqual(card.status, 502, card.text)
        assert.strictEqual(card.body.code, "billing_provider_error")
        assert.include(card.body.message, "Stripe is having a bad day (fake)")
        assert.strictEqual(india.status, 502, india.text)
        assert.strictEqual(india.body.code, "billing_provider_error")
        assert.include(india.body.message, "Razorpay gateway unavailable (fake)")
      }))

    it.effect("a Stripe webhook makes the subscription active: the summary shows source subscription, provider, interval, period end; checkout is then 409 already_subscribed", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* paidOrganization
        // The session's own event changes nothing: the subscription's events carry the state.
        const completed = yield* postStripe(JSON.stringify({ id: nextId("evt"), object: "event", type: "checkout.session.completed", created: 1, data: { object: { id: "cs_1" } } }))
        assert.deepStrictEqual(completed.body, { status: "ignored" }, completed.text)
        assert.strictEqual((yield* summaryOf(org.key)).status, "none")
        const res = yield* stripeSays(org.organizationId, "active", { price: STRIPE_PRICES.pro.yearly })
        assert.deepStrictEqual(res.body, { status: "applied" })
        const summary = yield* summaryOf(org.key)
        assert.strictEqual(summary.plan, "pro")
        assert.strictEqual(summary.status, "active")
        assert.strictEqual(summary.source, "subscription")
        assert.strictEqual(summary.provider, "stripe")
        assert.strictEqual(summary.interval, "yearly")
        assert.isString(summary.current_period_end)
        assert.strictEqual(summary.limits.inboxes, 50)
        const again = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "scale", interval: "monthly" } })
        assert.strictEqual(again.status, 409, again.text)
        assert.strictEqual(again.body.code, "already_subscribed")
      }))

    it.effect("portal answers { provider: stripe, url } for the card provider and { provider: razorpay, instructions } for the India provider", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const { stripe } = yield* Fakes
        const card = yield* paidOrganization
        yield* stripeSays(card.organizationId, "active")
        const portal = yield* app.request("POST", "/v0/billing/portal", { key: card.key, json: {} })
        assert.strictEqual(portal.status, 200, portal.text)
        assert.deepStrictEqual(portal.body, { provider: "stripe", url: "https://billing.stripe.test/p/session/bps_1" })
        assert.strictEqual(new URLSearchParams(stripe.seen.findLast((s) => s.path === "/v1/billing_portal/sessions")?.body).get("customer"), `cus_${card.organizationId}`)

        const india = yield* newOrganization()
        const activated = yield* postRazorpay(yield* razorpayEvent("subscription.activated", india.organizationId, "active"))
        assert.deepStrictEqual(activated.body, { status: "applied" }, activated.text)
        const instructions = yield* app.request("POST", "/v0/billing/portal", { key: india.key, json: {} })
        assert.strictEqual(instructions.status, 200, instructions.text)
        assert.strictEqual(instructions.body.provider, "razorpay")
        assert.include(instructions.body.instructions, "POST /v0/billing/cancel")
        assert.notProperty(instructions.body, "url")
      }))

    it.effect("cancel keeps the subscription active until the period ends, with cancel_at_period_end true and a message, at either provider", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const fakes = yield* Fakes
        const card = yield* paidOrganization
        yield* stripeSays(card.organizationId, "active")
        const res = yield* app.request("POST", "/v0/billing/cancel", { key: card.key, json: {} })
        assert.strictEqual(res.status, 200, res.text)
        assert.strictEqual(res.body.status, "active")
        assert.strictEqual(res.body.plan, "pro")
        assert.strictEqual(res.body.cancel_at_period_end, true)
        assert.include(res.body.message, "stays active until")
        const update = fakes.stripe.seen.findLast((s) => s.path === `/v1/subscriptions/sub_${card.organizationId}`)
        assert.strictEqual(new URLSearchParams(update?.body).get("cancel_at_period_end"), "true")
        // The period's end arrives: Stripe deletes the subscription and the limits are Free's.
        const ended = yield* postStripe(yield* stripeEvent("customer.subscription.deleted", { organizationId: card.organizationId, status: "canceled", cancelAtPeriodEnd: true }))
        assert.deepStrictEqual(ended.body, { status: "applied" })
        const after = yield* summaryOf(card.key)
        assert.strictEqual(after.status, "canceled")
        assert.strictEqual(after.plan, "free")
        assert.strictEqual(after.source, "free")
        // The spec's nulls on Free hold after a subscription too.
        assert.strictEqual(after.provider, null)
        assert.strictEqual(after.interval, null)
        assert.strictEqual(after.current_period_end, null)

        const india = yield* newOrganization()
        yield* postRazorpay(yield* razorpayEvent("subscription.activated", india.organizationId, "active"))
        const canceled = yield* app.request("POST", "/v0/billing/cancel", { key: india.key, json: {} })
        assert.strictEqual(canceled.status, 200, canceled.text)
        assert.strictEqual(canceled.body.cancel_at_period_end, true)
        const sent = JSON.parse(fakes.razorpay.seen.findLast((s) => s.path === `/v1/subscriptions/sub_rzp_${india.organizationId}/cancel`)?.body ?? "{}")
        assert.strictEqual(sent.cancel_at_cycle_end, 1)
      }))

    it.effect("portal and cancel after the subscription ended are 409 no_subscription", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* paidOrganization
        yield* stripeSays(org.organizationId, "canceled")
        for (const path of ["/v0/billing/portal", "/v0/billing/cancel"]) {
          const res = yield* app.request("POST", path, { key: org.key, json: {} })
          assert.strictEqual(res.status, 409, res.text)
          assert.strictEqual(res.body.code, "no_subscription")
        }
      }))

    it.effect("a webhook with a bad signature is 400 invalid_signature and changes nothing, for each provider's scheme", () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        const card = yield* postStripe(yield* stripeEvent("customer.subscription.updated", { organizationId: org.organizationId, status: "active" }), "whsec_not_the_secret")
        assert.strictEqual(card.status, 400, card.text)
        assert.strictEqual(card.body.code, "invalid_signature")
        const unsigned = yield* TestApp.use((app) => app.request("POST", "/inbound/billing/stripe", { body: "{}", headers: { "content-type": "application/json" } }))
        assert.strictEqual(unsigned.status, 400, unsigned.text)
        assert.strictEqual(unsigned.body.code, "invalid_signature")
        const india = yield* postRazorpay(yield* razorpayEvent("subscription.activated", org.organizationId, "active"), { secret: "not the secret" })
        assert.strictEqual(india.status, 400, india.text)
        assert.strictEqual(india.body.code, "invalid_signature")
        const summary = yield* summaryOf(org.key)
        assert.strictEqual(summary.status, "none")
        assert.strictEqual(summary.plan, "free")
      }))

    it.effect("a replayed webhook (same provider event id) answers duplicate and makes no second change", () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        const pastDue = yield* stripeEvent("customer.subscription.updated", { organizationId: org.organizationId, status: "past_due" })
        assert.deepStrictEqual((yield* postStripe(pastDue)).body, { status: "applied" })
        const before = yield* summaryOf(org.key)
        yield* TestClock.adjust("1 hour")
        const replay = yield* postStripe(pastDue)
        assert.strictEqual(replay.status, 200, replay.text)
        assert.deepStrictEqual(replay.body, { status: "duplicate" })
        assert.deepStrictEqual(yield* summaryOf(org.key), before)

        const india = yield* newOrganization()
        const activated = yield* razorpayEvent("subscription.activated", india.organizationId, "active")
        assert.deepStrictEqual((yield* postRazorpay(activated, { eventId: "evt_rzp_replayed" })).body, { status: "applied" })
        assert.deepStrictEqual((yield* postRazorpay(activated, { eventId: "evt_rzp_replayed" })).body, { status: "duplicate" })
      }))

    it.effect("the same webhook delivered twice at once is applied once: one applied, one duplicate", () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        const event = yield* stripeEvent("customer.subscription.updated", { organizationId: org.organizationId, status: "active" })
        const answers = yield* Effect.all([postStripe(event), postStripe(event)], { concurrency: 2 })
        assert.deepStrictEqual(answers.map((r) => r.body.status).sort(), ["applied", "duplicate"])
        assert.strictEqual((yield* summaryOf(org.key)).status, "active")
      }))

    it.effect("events arriving out of order: an older event never overwrites a newer state (the provider's timestamps decide)", () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        const older = yield* stripeEvent("customer.subscription.updated", { organizationId: org.organizationId, status: "active" }, { secondsAgo: 60 })
        const newer = yield* stripeEvent("customer.subscription.deleted", { organizationId: org.organizationId, status: "canceled" }, { secondsAgo: 10 })
        assert.deepStrictEqual((yield* postStripe(newer)).body, { status: "applied" })
        assert.deepStrictEqual((yield* postStripe(older)).body, { status: "stale" })
        const summary = yield* summaryOf(org.key)
        assert.strictEqual(summary.status, "canceled")
        assert.strictEqual(summary.plan, "free")

        const india = yield* newOrganization()
        const charged = yield* razorpayEvent("subscription.charged", india.organizationId, "active", { secondsAgo: 30 })
        const halted = yield* razorpayEvent("subscription.halted", india.organizationId, "halted")
        assert.deepStrictEqual((yield* postRazorpay(halted)).body, { status: "applied" })
        assert.deepStrictEqual((yield* postRazorpay(charged)).body, { status: "stale" })
        assert.strictEqual((yield* summaryOf(india.key)).status, "past_due")
      }))

    it.effect(`past_due keeps the plan for the ${GRACE_DAYS}-day grace period (grace_ends_at), then the limits are Free's`, () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        yield* stripeSays(org.organizationId, "active")
        for (let i = 0; i < 4; i++) assert.strictEqual((yield* createInbox(org.key)).status, 200)
        yield* TestClock.adjust("1 hour")
        yield* stripeSays(org.organizationId, "past_due")
        const failedAt = yield* Clock.currentTimeMillis
        const during = yield* summaryOf(org.key)
        assert.strictEqual(during.status, "past_due")
        assert.strictEqual(during.plan, "pro")
        assert.strictEqual(during.grace_ends_at, new Date(Math.floor(failedAt / 1000) * 1000 + GRACE_DAYS * 86400_000).toISOString())
        // A retried failure later in the grace period does not extend it.
        yield* TestClock.adjust("2 days")
        yield* stripeSays(org.organizationId, "past_due")
        assert.strictEqual((yield* summaryOf(org.key)).grace_ends_at, during.grace_ends_at)
        assert.strictEqual((yield* createInbox(org.key)).status, 200)
        yield* TestClock.adjust(`${GRACE_DAYS} days`)
        const after = yield* summaryOf(org.key)
        assert.strictEqual(after.status, "past_due")
        assert.strictEqual(after.plan, "free")
        assert.deepStrictEqual(after.limits.inboxes, 3)
        const refused = yield* createInbox(org.key)
        assert.strictEqual(refused.status, 402, refused.text)
        assert.strictEqual(refused.body.code, "plan_limit_exceeded")
        // Paid again: the plan is back at once.
        yield* stripeSays(org.organizationId, "active")
        assert.strictEqual((yield* createInbox(org.key)).status, 200)
      }))

    it.effect("limits follow the state: a 4th inbox on Free is 402, allowed once Pro is active; a downgrade blocks new ones but deletes nothing", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* paidOrganization
        for (let i = 0; i < 3; i++) assert.strictEqual((yield* createInbox(org.key)).status, 200)
        const fourth = yield* createInbox(org.key)
        assert.strictEqual(fourth.status, 402, fourth.text)
        assert.deepStrictEqual(fourth.body.errors[0], { limit: "inboxes", current: 3, max: 3, plan: "free", upgrade_to: "pro" })
        yield* stripeSays(org.organizationId, "active")
        for (let i = 0; i < 2; i++) assert.strictEqual((yield* createInbox(org.key)).status, 200)
        yield* TestClock.adjust("1 minute")
        const ended = yield* postStripe(yield* stripeEvent("customer.subscription.deleted", { organizationId: org.organizationId, status: "canceled" }))
        assert.deepStrictEqual(ended.body, { status: "applied" })
        const blocked = yield* createInbox(org.key)
        assert.strictEqual(blocked.status, 402, blocked.text)
        assert.strictEqual(blocked.body.errors[0].current, 5)
        const listed = yield* app.request("GET", "/v0/inboxes", { key: org.key })
        assert.strictEqual(listed.body.count, 5)
        const usage = yield* app.request("GET", "/v0/billing/usage", { key: org.key })
        assert.strictEqual(usage.body.plan, "free")
        assert.strictEqual(usage.body.usage.inboxes, 5)
      }))

    it.effect("a plan change at the provider (another price) moves the limits: Scale's price gives Scale", () =>
      Effect.gen(function*() {
        const org = yield* paidOrganization
        yield* stripeSays(org.organizationId, "active", { price: STRIPE_PRICES.scale.monthly })
        const summary = yield* summaryOf(org.key)
        assert.strictEqual(summary.plan, "scale")
        assert.strictEqual(summary.interval, "monthly")
      }))

    it.effect("the operator's plan (inboxctl org plan, source admin) always wins over a subscription; withdrawing it gives the subscription's plan back", () =>
      Effect.gen(function*() {
        const billing = yield* Billing
        const org = yield* paidOrganization
        yield* stripeSays(org.organizationId, "active")
        const assigned = yield* billing.assignPlan(org.organizationId, "scale")
        assert.strictEqual(assigned.plan, "scale")
        assert.strictEqual(assigned.source, "admin")
        yield* TestClock.adjust("1 minute")
        yield* stripeSays(org.organizationId, "past_due")
        yield* TestClock.adjust(`${GRACE_DAYS + 1} days`)
        const still = yield* summaryOf(org.key)
        assert.strictEqual(still.plan, "scale")
        assert.strictEqual(still.source, "admin")
        assert.strictEqual(still.limits.inboxes, 500)
        yield* stripeSays(org.organizationId, "active")
        const withdrawn = yield* billing.assignPlan(org.organizationId, "free")
        assert.strictEqual(withdrawn.plan, "pro")
        assert.strictEqual(withdrawn.source, "subscription")
      }))

    it.effect("/public/plans lists every plan's prices in USD and INR", () =>
      Effect.gen(function*() {
        const res = yield* TestApp.use((app) => app.request("GET", "/public/plans"))
        assert.strictEqual(res.status, 200, res.text)
        const pro = (res.body.plans ?? res.body.data ?? res.body).find((p: { id: string }) => p.id === "pro")
        assert.isNumber(pro.prices.usd.monthly)
        assert.isNumber(pro.prices.inr.yearly)
      }))
  })

  layer(appWith(storage, "stripe"), { timeout: "180 seconds" })(`billing with only the card provider (${storage.name})`, (it) => {
    it.effect("a provider that is not configured is 503 billing_not_configured, at checkout and at its webhook route; country IN falls back to the card provider", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* paidOrganization
        const asked = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly", provider: "razorpay" } })
        assert.strictEqual(asked.status, 503, asked.text)
        assert.strictEqual(asked.body.code, "billing_not_configured")
        const india = yield* app.request("POST", "/v0/billing/checkout", { key: org.key, json: { plan: "pro", interval: "monthly", country: "IN" } })
        assert.strictEqual(india.status, 200, india.text)
        assert.strictEqual(india.body.provider, "stripe")
        const hook = yield* postRazorpay(yield* razorpayEvent("subscription.activated", org.organizationId, "active"))
        assert.strictEqual(hook.status, 503, hook.text)
        assert.strictEqual(hook.body.code, "billing_not_configured")
      }))
  })
}
