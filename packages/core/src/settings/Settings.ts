/**
 * Settings: the operator's choices that core needs, read once from Config in the layer.
 *
 * Core modules never read the environment; they ask this service. Each field maps to an
 * INBOX_* variable of the registry (registry.ts: its flag, default and meaning). `make` builds
 * settings in code, for tests and embedding applications.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { settingDefault } from "./registry.ts"

export interface SettingsShape {
  /** Domain of new inbox addresses. */
  readonly baseDomain: string
  /** External URL of the server, for links in responses. */
  readonly publicUrl: string
  /** Per-IP and per-key request limits; `INBOX_RATE_LIMITS=off` disables them (tests). */
  readonly rateLimits: boolean
  /** Sender of system mail (verification codes). */
  readonly systemFrom: string
  /** Requests per minute per API key, and per client IP for requests without a key. */
  readonly requestsPerMinute: number
  /** INBOX_INBOUND_SECRET: admits the forwarder on /inbound/raw; unset, the route is 503. */
  readonly inboundSecret?: string
  /** INBOX_PROVIDER_EVENTS_SECRET (`whsec_...`): verifies the mail provider's events. */
  readonly providerEventsSecret?: string
  /**
   * Host names the server answers to: the host of the public URL, the listen address,
   * localhost and its loopback addresses, and INBOX_ALLOWED_HOSTS. Other Host headers are
   * refused, so a DNS-rebinding page cannot reach the API through a victim's browser.
   */
  readonly allowedHosts: ReadonlyArray<string>
  /** INBOX_TRUSTED_PROXIES: addresses whose X-Forwarded-For names the client. */
  readonly trustedProxies: ReadonlyArray<string>
  /** INBOX_OPEN_TRACKING=off: `track_opens` is refused with 422 tracking_disabled. */
  readonly openTracking: boolean
  /** INBOX_SIGNUP: who may create a dashboard account (open, invite or closed; default invite). */
  readonly signup: SignupMode
  /** INBOX_METRICS_TOKEN: the bearer token `/metrics` asks for; unset, `/metrics` is not served. */
  readonly metricsToken?: string
  /** INBOX_WEBHOOK_ALLOW_PRIVATE=1: webhooks may target http and private addresses (development and tests only). */
  readonly webhookAllowPrivate: boolean,
  /** INBOX_DNS_SERVERS: resolvers (`host:port`) for domain checks and mail authentication; empty: the system's. */
  readonly dnsServers: ReadonlyArray<string>
  /**
   * INBOX_MAIL_HOST: the host custom domains point their MX record at (default `mx.` + base
   * domain), and the host mail clients are told to use for IMAP and submission.
   */
  readonly mailHost: string
  /**
   * The IMAP and submission servers a mail client can reach, from INBOX_IMAP_LISTEN,
   * INBOX_IMAPS_LISTEN, INBOX_SUBMISSION_LISTEN and INBOX_SUBMISSIONS_LISTEN (their ports, or
   * the INBOX_*_PUBLIC_PORT that a proxy in front publishes); empty when none is configured.
   */
  readonly mailClientServers: MailClientServers
  /** INBOX_SECRET_KEY: encrypts secrets at rest (DKIM private keys); unset, custom domains are 503 not_configured. */
  readonly secretKey?: string
  /** INBOX_SECRET_KEY_PREVIOUS: the key before a rotation; secrets sealed under it are re-sealed at startup. */
  readonly previousSecretKey?: string
  /**
   * INBOX_INTAKE_MEMORY_MB: bytes of request bodies and SMTP DATA held at once, across all
   * clients (default 128 MiB); past it, new bytes are refused (HTTP 503 service_unavailable
   * with Retry-After, SMTP 452 4.3.1) until others finish.
   */
  readonly intakeMemoryBytes: number
  /** INBOX_MAX_WEBSOCKETS: WebSocket connections this process holds at most (default 1000), beside INBOX_MAX_CONNECTIONS for HTTP. */
  readonly maxWebSockets: number
  /** INBOX_MAX_WEBSOCKETS_PER_KEY: WebSocket connections one API key (or dashboard session) holds at most (default 100). */
  readonly maxWebSocketsPerKey: number
  /** The payment providers this server offers (billing/providers.ts); each absent unless all its settings are set. */
  readonly billing?: BillingSettings
}

/** Price or plan ids of one provider, per paid plan and interval. */
export interface BillingPrices {
  readonly pro: { readonly monthly: string; readonly yearly: string }
  readonly scale: { readonly monthly: string; readonly yearly: string }
}

export interface BillingSettings {
  /** The card provider: INBOX_STRIPE_SECRET_KEY, INBOX_STRIPE_WEBHOOK_SECRET, INBOX_STRIPE_PRICE_{PRO,SCALE}_{MONTHLY,YEARLY}. */
  readonly stripe?: {
    readonly secretKey: string
    readonly webhookSecret: string
    readonly prices: BillingPrices
    /** INBOX_STRIPE_API_URL: another API address (tests point it at a local fake). */
    readonly apiUrl?: string
  }
  /** The India provider: INBOX_RAZORPAY_KEY_ID, INBOX_RAZORPAY_KEY_SECRET, INBOX_RAZORPAY_WEBHOOK_SECRET, INBOX_RAZORPAY_PLAN_{PRO,SCALE}_{MONTHLY,YEARLY}. */
  readonly razorpay?: {
    readonly keyId: string
    readonly keySecret: string
    readonly webhookSecret: string
    readonly plans: BillingPrices
    /** INBOX_RAZORPAY_API_URL: another API address (tests point it at a local fake). */
    readonly apiUrl?: string
  }
}

export type SignupMode = "open" | "invite" | "closed"

const signupMode = (value: string): SignupMode | undefined =>
  value === "open" || value === "invite" || value === "closed" ? value : undefined

const list = (value: string): ReadonlyArray<string> =>
  value.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0)

const hostOf = (url: string): string | undefined => {
  const parsed = URL.parse(url)
  return parsed === null ? undefined : parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase()
}

const LOCAL_HOSTS = ["localhost", "127.0.0.1", "::1"]

export const allowedHostsFor = (publicUrl: string, listenHost: string, extra: ReadonlyArray<string>): ReadonlyArray<string> => {
  const publicHost = hostOf(publicUrl)
  return [...new Set([...LOCAL_HOSTS, listenHost.toLowerCase(), ...(publicHost === undefined ? [] : [publicHost]), ...extra])]
}

/**
 * INBOX_SECRET_KEY, or with the embedded database and no key set, a key generated once into
 * the data folder (`secret.key`, mode 0600) so a single-machine install encrypts its DKIM
 * keys without a step to forget. A PostgreSQL deployment has several processes and no
 * shared folder: it must set the key itself.
 */
const secretKeyConfig = Effect.gen(function*() {
  const key = yield* Config.option(Config.String("INBOX_SECRET_KEY"))
  if (Option.isSome(key) && key.value !== "") return key.value
  if (Option.isSome(yield* Config.option(Config.String("INBOX_DATABASE_URL")))) return undefined
  const dir = yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR")))
  if (/^[a-z]+:\/\//i.test(dir)) return undefined
  return yield* Effect.sync(() => {
    const file = join(dir, "secret.key")
    if (!existsSync(file)) {
      mkdirSync(dir, { recursive: true })
      writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" })
    }
    chmodSync(file, 0o600)
    return readFileSync(file, "utf8").trim()
  })
})

/**
 * One provider's settings: all of them, or none (the provider is off). Some but not all is
 * an operator's mistake that would surface only at a customer's checkout, so the server
 * refuses to start and names what is missing.
 */
const providerConfig = <const K extends string>(provider: string, names: Readonly<Record<K, string>>) =>
  Effect.gen(function*() {
    const values: Partial<Record<K, string>> = {}
    const missing: Array<string> = []
    for (const [key, name] of Object.entries(names) as Array<[K, string]>) {
      const value = yield* Config.option(Config.String(name))
      if (Option.isSome(value) && value.value.trim() !== "") values[key] = value.value.trim()
      else missing.push(name)
    }
    if (missing.length === Object.keys(names).length) return undefined
    if (missing.length > 0) return yield* Effect.die(new Error(`${provider} billing is partly configured: set ${missing.join(", ")} (or unset the others)`))
    return values as Record<K, string>
  })

const billingConfig = Effect.gen(function*() {
  const stripe = yield* providerConfig("Stripe", {
    secretKey: "INBOX_STRIPE_SECRET_KEY",
    webhookSecret: "INBOX_STRIPE_WEBHOOK_SECRET",
    proMonthly: "INBOX_STRIPE_PRICE_PRO_MONTHLY",
    proYearly: "INBOX_STRIPE_PRICE_PRO_YEARLY",
    scaleMonthly: "INBOX_STRIPE_PRICE_SCALE_MONTHLY",
    scaleYearly: "INBOX_STRIPE_PRICE_SCALE_YEARLY"
  })
  const razorpay = yield* providerConfig("Razorpay", {
    keyId: "INBOX_RAZORPAY_KEY_ID",
    keySecret: "INBOX_RAZORPAY_KEY_SECRET",
    webhookSecret: "INBOX_RAZORPAY_WEBHOOK_SECRET",
    proMonthly: "INBOX_RAZORPAY_PLAN_PRO_MONTHLY",
    proYearly: "INBOX_RAZORPAY_PLAN_PRO_YEARLY",
    scaleMonthly: "INBOX_RAZORPAY_PLAN_SCALE_MONTHLY",
    scaleYearly: "INBOX_RAZORPAY_PLAN_SCALE_YEARLY"
  })
  const stripeUrl = yield* Config.option(Config.String("INBOX_STRIPE_API_URL"))
  const razorpayUrl = yield* Config.option(Config.String("INBOX_RAZORPAY_API_URL"))
  const prices = (c: { proMonthly: string; proYearly: string; scaleMonthly: string; scaleYearly: string }): BillingPrices => ({
    pro: { monthly: c.proMonthly, yearly: c.proYearly },
    scale: { monthly: c.scaleMonthly, yearly: c.scaleYearly }
  })
  const billing: BillingSettings = {
    ...(stripe === undefined ? {} : {
      stripe: {
        secretKey: stripe.secretKey,
        webhookSecret: stripe.webhookSecret,
        prices: prices(stripe),
        ...(Option.isSome(stripeUrl) && stripeUrl.value !== "" ? { apiUrl: stripeUrl.value } : {})
      }
    }),
    ...(razorpay === undefined ? {} : {
      razorpay: {
        keyId: razorpay.keyId,
        keySecret: razorpay.keySecret,
        webhookSecret: razorpay.webhookSecret,
        plans: prices(razorpay),
        ...(Option.isSome(razorpayUrl) && razorpayUrl.value !== "" ? { apiUrl: razorpayUrl.value } : {})
      }
    })
  }
  return billing
})

const MIB = 1024 * 1024

/** Defaults of the limits above. */
export const SETTING_DEFAULTS = {
  intakeMemoryBytes: settingDefault("INBOX_INTAKE_MEMORY_MB") * MIB,
  maxWebSockets: settingDefault("INBOX_MAX_WEBSOCKETS"),
  maxWebSocketsPerKey: settingDefault("INBOX_MAX_WEBSOCKETS_PER_KEY")
} as const

/** One server a mail client connects to: its port and how it starts TLS. */
export interface MailClientServer {
  readonly port: number
  readonly security: "starttls" | "tls"
}
export interface MailClientServers {
  readonly imap: ReadonlyArray<MailClientServer>
  readonly smtp: ReadonlyArray<MailClientServer>
}

/** The port of a `host:port` (or bare port) listen setting, or of its public-port setting. */
const clientServer = (listenName: string, publicName: string, security: MailClientServer["security"]) =>
  Effect.gen(function*() {
    const listen = Option.getOrElse(yield* Config.option(Config.String(listenName)), () => "").trim()
    if (listen === "") return []
    const published = Option.getOrElse(yield* Config.option(Config.String(publicName)), () => "").trim()
    const port = Number(published !== "" ? published : listen.slice(listen.lastIndexOf(":") + 1))
    if (!Number.isInteger(port) || port < 1 || port > 65535) return yield* Effect.die(new Error(`${published !== "" ? publicName : listenName}: ${published !== "" ? published : listen} names no port`))
    return [{ port, security }]
  })

const mailClientConfig = Effect.gen(function*() {
  const imap = [
    ...(yield* clientServer("INBOX_IMAPS_LISTEN", "INBOX_IMAPS_PUBLIC_PORT", "tls")),
    ...(yield* clientServer("INBOX_IMAP_LISTEN", "INBOX_IMAP_PUBLIC_PORT", "starttls"))
  ]
  const smtp = [
    ...(yield* clientServer("INBOX_SUBMISSIONS_LISTEN", "INBOX_SUBMISSIONS_PUBLIC_PORT", "tls")),
    ...(yield* clientServer("INBOX_SUBMISSION_LISTEN", "INBOX_SUBMISSION_PUBLIC_PORT", "starttls"))
  ]
  return { imap, smtp } satisfies MailClientServers
})

export class Settings extends Context.Service<Settings, SettingsShape>()("inbox/Settings") {
  static readonly layer = Layer.effect(Settings, Effect.gen(function*() {
    const baseDomain = (yield* Config.String("INBOX_BASE_DOMAIN").pipe(Config.withDefault(settingDefault("INBOX_BASE_DOMAIN")))).toLowerCase()
    const port = yield* Config.Int("INBOX_PORT").pipe(Config.withDefault(settingDefault("INBOX_PORT")))
    const host = yield* Config.String("INBOX_HOST").pipe(Config.withDefault(settingDefault("INBOX_HOST")))
    const publicUrl = Option.getOrElse(yield* Config.option(Config.String("INBOX_PUBLIC_URL")), () => `http://${host.includes(":") ? `[${host}]` : host}:${port}`)
      .replace(/\/+$/, "")
    const rateLimits = yield* Config.String("INBOX_RATE_LIMITS").pipe(Config.withDefault(settingDefault("INBOX_RATE_LIMITS")))
    const requestsPerMinute = yield* Config.Int("INBOX_REQUESTS_PER_MINUTE").pipe(Config.withDefault(settingDefault("INBOX_REQUESTS_PER_MINUTE")))
    const inboundSecret = yield* Config.option(Config.String("INBOX_INBOUND_SECRET"))
    const providerEventsSecret = yield* Config.option(Config.String("INBOX_PROVIDER_EVENTS_SECRET"))
    const extraHosts = list(yield* Config.String("INBOX_ALLOWED_HOSTS").pipe(Config.withDefault("")))
    const trustedProxies = list(yield* Config.String("INBOX_TRUSTED_PROXIES").pipe(Config.withDefault("")))
    const webhookAllowPrivate = (yield* Config.String("INBOX_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(""))).trim() === "1"
    const openTracking = (yield* Config.String("INBOX_OPEN_TRACKING").pipe(Config.withDefault(settingDefault("INBOX_OPEN_TRACKING")))).toLowerCase() !== "off"
    const signupText = (yield* Config.String("INBOX_SIGNUP").pipe(Config.withDefault(settingDefault("INBOX_SIGNUP")))).trim().toLowerCase()
    const signup = signupMode(signupText)
    if (signup === undefined) return yield* Effect.die(new Error(`INBOX_SIGNUP must be open, invite or closed, not ${JSON.stringify(signupText)}`))
    const metricsToken = yield* Config.option(Config.String("INBOX_METRICS_TOKEN"))
    const dnsServers = list(yield* Config.String("INBOX_DNS_SERVERS").pipe(Config.withDefault("")))
    const mailHost = Option.getOrElse(yield* Config.option(Config.String("INBOX_MAIL_HOST")), () => `mx.${baseDomain}`).toLowerCase()
    const mailClientServers = yield* mailClientConfig
    const secretKey = yield* secretKeyConfig
    const previousSecretKey = yield* Config.option(Config.String("INBOX_SECRET_KEY_PREVIOUS"))
    const billing = yield* billingConfig
    const intakeMemoryMb = yield* Config.Int("INBOX_INTAKE_MEMORY_MB").pipe(Config.withDefault(SETTING_DEFAULTS.intakeMemoryBytes / MIB))
    const maxWebSockets = yield* Config.Int("INBOX_MAX_WEBSOCKETS").pipe(Config.withDefault(SETTING_DEFAULTS.maxWebSockets))
    const maxWebSocketsPerKey = yield* Config.Int("INBOX_MAX_WEBSOCKETS_PER_KEY").pipe(Config.withDefault(SETTING_DEFAULTS.maxWebSocketsPerKey))
    return Settings.of({
      intakeMemoryBytes: Math.max(1, intakeMemoryMb) * MIB,
      maxWebSockets: Math.max(0, maxWebSockets),
      maxWebSocketsPerKey: Math.max(0, maxWebSocketsPerKey),
      billing,
      baseDomain,
      publicUrl,
      rateLimits: rateLimits.toLowerCase() !== "off",
      systemFrom: `no-reply@${baseDomain}`,
      requestsPerMinute,
      ...(Option.isSome(inboundSecret) && inboundSecret.value !== "" ? { inboundSecret: inboundSecret.value } : {}),
      ...(Option.isSome(providerEventsSecret) && providerEventsSecret.value !== "" ? { providerEventsSecret: providerEventsSecret.value } : {}),
      allowedHosts: allowedHostsFor(publicUrl, host, extraHosts),
      trustedProxies,
      openTracking,
      signup,
      ...(Option.isSome(metricsToken) && metricsToken.value !== "" ? { metricsToken: metricsToken.value } : {}),
      webhookAllowPrivate,
      dnsServers,
      mailHost,
      mailClientServers,
      ...(secretKey === undefined ? {} : { secretKey }),
      ...(Option.isSome(previousSecretKey) && previousSecretKey.value !== "" ? { previousSecretKey: previousSecretKey.value } : {})
    })
  }).pipe(Effect.orDie))

  static readonly make = (overrides: Partial<SettingsShape> = {}): SettingsShape => {
    const baseDomain = overrides.baseDomain ?? "inbox.localhost"
    const publicUrl = overrides.publicUrl ?? "http://127.0.0.1:3000"
    return {
      baseDomain,
      publicUrl,
      rateLimits: false,
      systemFrom: `no-reply@${baseDomain}`,
      requestsPerMinute: 6000,
      allowedHosts: allowedHostsFor(publicUrl, "127.0.0.1", []),
      trustedProxies: [],
      openTracking: true,
      signup: "invite",
      webhookAllowPrivate: false,
      dnsServers: [],
      mailHost: `mx.${baseDomain}`,
      mailClientServers: { imap: [], smtp: [] },
      ...SETTING_DEFAULTS,
      ...overrides
    }
  }
}
