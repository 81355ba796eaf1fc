/**
 * The operator's commands that are not operations of the catalogue: `serve`, `migrate`,
 * `inbound` (which reads a file for the forwarder's operation) and `mcp` (which takes a key
 * but speaks MCP on stdio). The operator's other commands (`org create`, `org key`,
 * `org plan`, `suppressions add`, `outbox`, `ready`) are the catalogue's local operations,
 * added like every resource command (resources.ts).
 */
import { Engine, LOCAL, Migrations } from "@inbox/core"
import { readFileSync } from "node:fs"
import { runStdio } from "@inbox/mcp"
import { Config, Effect, Option } from "effect"
import { callerPath } from "./ambient.ts"
import { json, print, table } from "./output.ts"
import { apiKeyFrom, authenticate, CLI_CONTEXT, CliError, storageInUse, withEngine } from "./runtime.ts"

/** Flags of `serve`, each setting the INBOX_* variable the engine reads. */
export const SERVE_SETTINGS = [
  { flag: "--port <port>", env: "INBOX_PORT", help: "HTTP port (default 3000)" },
  { flag: "--host <host>", env: "INBOX_HOST", help: "address to listen on (default 127.0.0.1)" },
  { flag: "--base-domain <domain>", env: "INBOX_BASE_DOMAIN", help: "domain of new inbox addresses (default inbox.localhost)" },
  { flag: "--public-url <url>", env: "INBOX_PUBLIC_URL", help: "external URL of the server, for download links" },
  { flag: "--inbound-secret <secret>", env: "INBOX_INBOUND_SECRET", help: "enables POST /inbound/raw" },
  { flag: "--provider-events-secret <whsec>", env: "INBOX_PROVIDER_EVENTS_SECRET", help: "secret signing /inbound/mail-provider-events" },
  { flag: "--stripe-secret-key <key>", env: "INBOX_STRIPE_SECRET_KEY", help: "Stripe secret API key (billing: the card provider)" },
  { flag: "--stripe-webhook-secret <whsec>", env: "INBOX_STRIPE_WEBHOOK_SECRET", help: "signing secret of the Stripe endpoint /inbound/billing/stripe" },
  { flag: "--stripe-price-pro-monthly <id>", env: "INBOX_STRIPE_PRICE_PRO_MONTHLY", help: "Stripe price id of Pro, monthly" },
  { flag: "--stripe-price-pro-yearly <id>", env: "INBOX_STRIPE_PRICE_PRO_YEARLY", help: "Stripe price id of Pro, yearly" },
  { flag: "--stripe-price-scale-monthly <id>", env: "INBOX_STRIPE_PRICE_SCALE_MONTHLY", help: "Stripe price id of Scale, monthly" },
  { flag: "--stripe-price-scale-yearly <id>", env: "INBOX_STRIPE_PRICE_SCALE_YEARLY", help: "Stripe price id of Scale, yearly" },
  { flag: "--stripe-api-url <url>", env: "INBOX_STRIPE_API_URL", help: "another Stripe API address (tests)" },
  { flag: "--razorpay-key-id <id>", env: "INBOX_RAZORPAY_KEY_ID", help: "Razorpay key id (billing: the India provider)" },
  { flag: "--razorpay-key-secret <secret>", env: "INBOX_RAZORPAY_KEY_SECRET", help: "Razorpay key secret" },
  { flag: "--razorpay-webhook-secret <secret>", env: "INBOX_RAZORPAY_WEBHOOK_SECRET", help: "secret of the Razorpay webhook /inbound/billing/razorpay" },
  { flag: "--razorpay-plan-pro-monthly <id>", env: "INBOX_RAZORPAY_PLAN_PRO_MONTHLY", help: "Razorpay plan id of Pro, monthly" },
  { flag: "--razorpay-plan-pro-yearly <id>", env: "INBOX_RAZORPAY_PLAN_PRO_YEARLY", help: "Razorpay plan id of Pro, yearly" },
  { flag: "--razorpay-plan-scale-monthly <id>", env: "INBOX_RAZORPAY_PLAN_SCALE_MONTHLY", help: "Razorpay plan id of Scale, monthly" },
  { flag: "--razorpay-plan-scale-yearly <id>", env: "INBOX_RAZORPAY_PLAN_SCALE_YEARLY", help: "Razorpay plan id of Scale, yearly" },
  { flag: "--razorpay-api-url <url>", env: "INBOX_RAZORPAY_API_URL", help: "another Razorpay API address (tests)" },
  { flag: "--smtp-url <url>", env: "INBOX_SMTP_URL", help: "outbound relay, smtp:// or smtps://; unset keeps mail in the local outbox" },
  { flag: "--dns-servers <list>", env: "INBOX_DNS_SERVERS", help: "resolvers for domain verification, host:port,..." },
  { flag: "--webhook-allow-private", env: "INBOX_WEBHOOK_ALLOW_PRIVATE", help: "let webhooks target http and private addresses (development only)" },
  { flag: "--rate-limits <on|off>", env: "INBOX_RATE_LIMITS", help: "per-IP and per-key request limits (default on)" },
  { flag: "--requests-per-minute <n>", env: "INBOX_REQUESTS_PER_MINUTE", help: "request limit per API key, and per IP without a key (default 6000)" },
  { flag: "--open-tracking <on|off>", env: "INBOX_OPEN_TRACKING", help: "off refuses track_opens with 422 tracking_disabled (default on)" },
  { flag: "--allowed-hosts <list>", env: "INBOX_ALLOWED_HOSTS", help: "more host names the server answers to, name,...; * answers any Host" },
  { flag: "--trusted-proxies <list>", env: "INBOX_TRUSTED_PROXIES", help: "proxy addresses whose X-Forwarded-For names the client, ip,..." },
  { flag: "--max-connections <n>", env: "INBOX_MAX_CONNECTIONS", help: "open HTTP connections at most, WebSockets apart; more are closed at once (default 1000)" },
  { flag: "--max-websockets <n>", env: "INBOX_MAX_WEBSOCKETS", help: "WebSocket connections at most; more are closed with 1013 (default 1000)" },
  { flag: "--max-websockets-per-key <n>", env: "INBOX_MAX_WEBSOCKETS_PER_KEY", help: "WebSocket connections per API key or dashboard user; more are closed with 4029 (default 100)" },
  { flag: "--intake-memory-mb <n>", env: "INBOX_INTAKE_MEMORY_MB", help: "MiB of request bodies and SMTP messages held at once; beyond, 503 / 452 (default 128)" },
  { flag: "--headers-timeout <seconds>", env: "INBOX_HEADERS_TIMEOUT", help: "time for a request's headers to arrive (default 10)" },
  { flag: "--request-timeout <seconds>", env: "INBOX_REQUEST_TIMEOUT", help: "time for a whole request to arrive (default 30)" },
  { flag: "--signup <open|invite|closed>", env: "INBOX_SIGNUP", help: "who may create a dashboard account (default invite: the first person, then invitees)" },
  { flag: "--shutdown-timeout <seconds>", env: "INBOX_SHUTDOWN_TIMEOUT", help: "on SIGTERM, time for requests and jobs under way to finish (default 20)" },
  { flag: "--log-level <level>", env: "INBOX_LOG_LEVEL", help: "least level logged: trace, debug, info, warning, error, fatal, none (default info)" },
  { flag: "--log-format <json|pretty>", env: "INBOX_LOG_FORMAT", help: "one JSON object a line, or pretty for a terminal (default json)" },
  { flag: "--metrics-token <token>", env: "INBOX_METRICS_TOKEN", help: "bearer token that /metrics asks for; unset, /metrics is off" },
  { flag: "--mail-host <host>", env: "INBOX_MAIL_HOST", help: "host custom domains point their MX and SPF at (default mx.BASE_DOMAIN)" },
  { flag: "--secret-key <key>", env: "INBOX_SECRET_KEY", help: "encrypts DKIM keys at rest; embedded default: generated into the data folder" },
  { flag: "--secret-key-previous <key>", env: "INBOX_SECRET_KEY_PREVIOUS", help: "the secret key before a rotation: what it sealed is re-sealed under --secret-key at start" },
  { flag: "--smtp-listen <host:port>", env: "INBOX_SMTP_LISTEN", help: "starts the built-in SMTP receiver there (off by default)" },
  { flag: "--smtp-tls-cert <file>", env: "INBOX_SMTP_TLS_CERT", help: "PEM certificate for the SMTP receiver's STARTTLS" },
  { flag: "--smtp-tls-key <file>", env: "INBOX_SMTP_TLS_KEY", help: "PEM private key for the SMTP receiver's STARTTLS" },
  { flag: "--smtp-max-connections <n>", env: "INBOX_SMTP_MAX_CONNECTIONS", help: "open SMTP connections per client IP at most (default 20)" },
  { flag: "--smtp-messages-per-minute <n>", env: "INBOX_SMTP_MESSAGES_PER_MINUTE", help: "messages per minute per client IP at most (default 6000)" },
  { flag: "--retention-trash-days <n>", env: "INBOX_RETENTION_TRASH_DAYS", help: "days a message stays in trash before it is purged (default 30)" },
  { flag: "--retention-jobs-days <n>", env: "INBOX_RETENTION_JOBS_DAYS", help: "days finished jobs are kept (default 7)" },
  { flag: "--retention-events-days <n>", env: "INBOX_RETENTION_EVENTS_DAYS", help: "days events are kept (default 90)" },
  { flag: "--retention-batch <n>", env: "INBOX_RETENTION_BATCH", help: "rows a purge statement deletes at most (default 500)" },
  { flag: "--retention-interval-minutes <n>", env: "INBOX_RETENTION_INTERVAL_MINUTES", help: "minutes between purges (default 60)" }
] as const

/** Flags every storage-using command accepts (defined once on the program). */
export const STORAGE_SETTINGS = [
  { flag: "--data-dir <dir>", env: "INBOX_DATA_DIR", help: "embedded database folder (default ./.inbox)" },
  { flag: "--database-url <url>", env: "INBOX_DATABASE_URL", help: "PostgreSQL server; replaces the embedded database" },
  { flag: "--blob-url <url>", env: "INBOX_BLOB_URL", help: "S3-compatible store for raw mail and attachments, s3://bucket?endpoint=...&region=..." }
] as const

export const serve = Effect.gen(function*() {
  // Loaded on demand: the other commands never need the HTTP stack.
  const { launchServerWith } = yield* Effect.promise(() => import("@inbox/http"))
  const { LocalChannelLive } = yield* Effect.promise(() => import("./local.ts"))
  yield* launchServerWith(LocalChannelLive).pipe(
    Effect.catchTag("DataFolderInUse", (e) => Effect.fail(storageInUse(e))),
    // The port is taken or the address is not ours: one line, not a stack trace.
    Effect.catchTag("ServeError", (e) =>
      Effect.fail(new CliError({ code: "listen_failed", message: e.cause instanceof Error ? e.cause.message : String(e.cause) })))
  )
})

const describeStorage = Effect.gen(function*() {
  const url = yield* Config.option(Config.String("INBOX_DATABASE_URL"))
  if (Option.isSome(url)) {
    const parsed = URL.canParse(url.value) ? new URL(url.value) : undefined
    return parsed === undefined ? "PostgreSQL" : `PostgreSQL ${parsed.host}${parsed.pathname}`
  }
  return `PGlite data folder ${yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault("./.inbox"))}`
}).pipe(Effect.orDie)

/** Opening the database applies pending migrations, and says which. */
export const migrate = Effect.gen(function*() {
  const where = yield* describeStorage
  const { applied, listed } = yield* withEngine(Effect.gen(function*() {
    // What opening the database applied (inside a running server: nothing, it migrated at start).
    const opened = yield* Effect.serviceOption(Migrations)
    const applied = opened._tag === "Some" ? opened.value.applied : []
    const listed = yield* (yield* Engine).call("operator.listMigrations", {}, LOCAL, CLI_CONTEXT)
    return { applied, listed }
  }))
  const rows = listed.applied
  const name = (id: number, n: string) => `${String(id).padStart(4, "0")}_${n}`
  yield* print(`database: ${where}`)
  for (const m of applied) yield* print(`applied: ${name(m.id, m.name)}`)
  const latest = rows.at(-1)
  yield* print(
    applied.length === 0
      ? `up to date: ${rows.length} migration${rows.length === 1 ? "" : "s"}${latest === undefined ? "" : `, latest ${name(latest.id, latest.name)}`}`
      : `done: ${applied.length} applied, ${rows.length} in total`
  )
})

/**
 * Delivers a local .eml file as the forwarder would (the same path as POST /inbound/raw,
 * without its secret: the operator holds the storage itself).
 */
export const inbound = (options: { readonly file: string; readonly to: ReadonlyArray<string>; readonly json?: boolean }) =>
  Effect.gen(function*() {
    const raw = yield* Effect.try({
      try: () => new Uint8Array(readFileSync(callerPath(options.file))),
      catch: (e) => new CliError({ code: "unreadable_file", message: e instanceof Error ? e.message : String(e) })
    })
    // The forwarder's operation, as the operator on this machine: no secret needed.
    const result = yield* withEngine(Engine.use((engine) => engine.call("inbound.raw", { to: options.to.join(","), raw }, LOCAL, CLI_CONTEXT)))
    if (options.json === true) return yield* print(json(result))
    yield* print(result.delivered.length === 0 ? "Delivered to no inbox." : table(result.delivered, ["address", "message_id", "thread_id", "duplicate"]))
    if (result.skipped.length > 0) yield* print(`Skipped (not hosted here): ${result.skipped.join(", ")}`)
  })

export const mcp = (options: { readonly apiKey?: string; readonly readOnly?: boolean }) =>
  Effect.gen(function*() {
    // Stdout carries the protocol: anything a library prints goes to stderr instead.
    console.log = console.error
    console.info = console.error
    console.debug = console.error
    const key = yield* apiKeyFrom(options.apiKey)
    yield* withEngine(Effect.gen(function*() {
      const principal = yield* authenticate(key)
      yield* runStdio(principal, { readOnly: options.readOnly === true })
    }))
  })
