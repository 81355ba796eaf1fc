/**
 * Every setting, once: its INBOX_* variable, its `inboxctl` flag, its default and what it
 * means. The CLI's flags (through its generated manifest) and docs/settings.md (`pnpm docs`)
 * are written from this list, and the code that reads a setting takes its default from here
 * (`settingDefault`), so the flag, the page and the behaviour cannot drift apart. A test
 * (packages/cli/test/settings.test.ts) finds every INBOX_* name the sources read in it.
 *
 * Plain data with no imports: the CLI's generator and the docs script read it without
 * loading the engine.
 */

/** Where a setting is taken: a flag of `inboxctl serve`, of every storage command, or of the client alone. */
export type SettingScope = "serve" | "storage" | "client"

export interface Setting {
  /** The environment variable. */
  readonly env: string
  /** The `inboxctl` flag, as commander spells it (`--port <port>`; a switch has no value and sets `1`). */
  readonly flag: string
  readonly scope: SettingScope
  /** The heading it is listed under in docs/settings.md. */
  readonly group: string
  /** The value the code uses when the variable is unset; absent: unset means off or none. */
  readonly default?: string | number
  /** How the default reads when it is worked out rather than a value (Markdown; `--help` drops the backticks). */
  readonly shownDefault?: string
  /** One line for `--help`. */
  readonly help: string
  /** What docs/settings.md says (Markdown, links relative to docs/); `help` when absent. */
  readonly meaning?: string
}

/** A billing provider's id of each paid plan and interval, as created in its dashboard. */
const providerIds = (provider: "Stripe" | "Razorpay", key: string, noun: "price" | "plan"): ReadonlyArray<Setting> =>
  (["pro", "scale"] as const).flatMap((plan) =>
    (["monthly", "yearly"] as const).map((interval) => ({
      env: `INBOX_${key}_${plan.toUpperCase()}_${interval.toUpperCase()}`,
      flag: `--${key.toLowerCase().replace("_", "-")}-${plan}-${interval} <id>`,
      scope: "serve",
      group: "Billing providers",
      help: `${provider} ${noun} id of ${plan === "pro" ? "Pro" : "Scale"}, billed ${interval}`
    }))
  )

/** Another address for a provider's API, which tests point at a local fake. */
const providerApiUrl = (provider: "Stripe" | "Razorpay"): Setting => ({
  env: `INBOX_${provider.toUpperCase()}_API_URL`,
  flag: `--${provider.toLowerCase()}-api-url <url>`,
  scope: "serve",
  group: "Billing providers",
  shownDefault: `${provider}'s`,
  help: `another address for ${provider}'s API (tests point it at a local fake)`
})

export const SETTINGS = [
  // Storage: flags of every command that opens storage.
  {
    env: "INBOX_DATA_DIR",
    flag: "--data-dir <dir>",
    scope: "storage",
    group: "Storage",
    default: "./.inbox",
    help: "embedded database folder",
    meaning: "embedded database folder (PGlite), and the blob files when neither `INBOX_DATABASE_URL` nor `INBOX_BLOB_URL` is set"
  },
  {
    env: "INBOX_EMBEDDED_SHARED_BUFFERS",
    flag: "--embedded-shared-buffers <size>",
    scope: "storage",
    group: "Storage",
    default: "32MB",
    help: "page cache of the embedded database, resident from its start (PostgreSQL sizes: 32MB, 128MB, 1GB)",
    meaning:
      "the embedded database's shared buffers (PostgreSQL's `shared_buffers`: `kB`, `MB` or `GB`), its cache of table and index pages, all of it resident from the start; a page beyond it is read again from the data folder through the system's file cache. Raise it for a large mailbox on a machine with memory to spare ([Memory](operating.md#memory))"
  },
  {
    env: "INBOX_DATABASE_URL",
    flag: "--database-url <url>",
    scope: "storage",
    group: "Storage",
    help: "PostgreSQL server; replaces the embedded database",
    meaning: "PostgreSQL server; when set, the embedded database is not used (and blobs go to the database, unless `INBOX_BLOB_URL` is set)"
  },
  {
    env: "INBOX_BLOB_URL",
    flag: "--blob-url <url>",
    scope: "storage",
    group: "Storage",
    help: "S3-compatible store for raw mail and attachments, s3://bucket?endpoint=...&region=...",
    meaning: "S3-compatible store for raw mail and attachments, `s3://bucket[/prefix]?endpoint=...&region=...` ([Storage](operating.md#storage))"
  },

  // The server.
  { env: "INBOX_PORT", flag: "--port <port>", scope: "serve", group: "The server", default: 3000, help: "HTTP port" },
  { env: "INBOX_HOST", flag: "--host <host>", scope: "serve", group: "The server", default: "127.0.0.1", help: "HTTP listen address" },
  {
    env: "INBOX_NODE_FLAGS",
    flag: "--node-flags <flags>",
    scope: "serve",
    group: "The server",
    default: "--max-semi-space-size=16 --heap-growing-percent=100",
    help: "Node (V8) flags `inboxctl serve` runs with; empty for Node's defaults",
    meaning:
      "Node (V8) flags the server runs with, space-separated: by default a young generation of at most 16 MB per semi-space and an old generation collected when it has grown by as much as is live, which hold a busy server's memory to about half of Node's defaults for a few per cent more CPU per request ([Memory](operating.md#memory)). V8 sizes the young generation only when the process starts, so `serve` replaces itself with these flags before it loads the engine (the same process id and output); a flag also given in `NODE_OPTIONS` or on node's command line is left to that. Empty: Node's defaults"
  },
  {
    env: "INBOX_PUBLIC_URL",
    flag: "--public-url <url>",
    scope: "serve",
    group: "The server",
    shownDefault: "`http://HOST:PORT`",
    help: "external URL of the server, for links"
  },
  {
    env: "INBOX_ALLOWED_HOSTS",
    flag: "--allowed-hosts <list>",
    scope: "serve",
    group: "The server",
    help: "more host names the server answers to, name,...; * answers any Host",
    meaning:
      "more host names the server answers to, `name,...`, besides the host of `INBOX_PUBLIC_URL`, `INBOX_HOST`, `localhost`, `127.0.0.1` and `::1`; `*` answers any `Host` (only behind a proxy that checks it)"
  },
  {
    env: "INBOX_TRUSTED_PROXIES",
    flag: "--trusted-proxies <list>",
    scope: "serve",
    group: "The server",
    help: "proxy addresses whose X-Forwarded-For names the client, ip,...",
    meaning: "addresses of proxies in front of the server, `ip,...`; only from them is `X-Forwarded-For` believed for the client IP"
  },
  {
    env: "INBOX_SIGNUP",
    flag: "--signup <open|invite|closed>",
    scope: "serve",
    group: "The server",
    default: "invite",
    help: "who may create a dashboard account: open, invite (the first person, then invitees) or closed",
    meaning:
      "who may create a dashboard account: `open` (anyone; each sign-up owns a new organization once its address is verified), `invite` (only with an invitation, except the first person on a fresh server, who owns the first organization once verified), `closed` (nobody: 403 `forbidden`) ([Dashboard accounts](auth.md))"
  },
  {
    env: "INBOX_SECRET_KEY",
    flag: "--secret-key <key>",
    scope: "serve",
    group: "The server",
    shownDefault: "generated",
    help: "encrypts secrets at rest (DKIM keys, webhook secrets); embedded: generated into the data folder",
    meaning:
      "encrypts DKIM private keys, webhook signing secrets and two-step authenticator secrets at rest (AES-256-GCM, a key derived per kind of secret); embedded database: generated once into `INBOX_DATA_DIR/secret.key` (mode 0600); with `INBOX_DATABASE_URL` it must be set, else custom domains answer 503 `not_configured`"
  },
  {
    env: "INBOX_SECRET_KEY_PREVIOUS",
    flag: "--secret-key-previous <key>",
    scope: "serve",
    group: "The server",
    help: "the secret key before a rotation: what it sealed is re-sealed under --secret-key at start",
    meaning:
      "the `INBOX_SECRET_KEY` before a rotation: at start, every secret sealed under it is re-sealed under the current key (see [Rotating `INBOX_SECRET_KEY`](domains.md)); drop it after one start"
  },
  {
    env: "INBOX_SHUTDOWN_TIMEOUT",
    flag: "--shutdown-timeout <seconds>",
    scope: "serve",
    group: "The server",
    default: 20,
    help: "on SIGTERM, seconds for requests and jobs under way to finish",
    meaning: "seconds that requests, and separately jobs, under way get to finish after SIGTERM ([Stopping](operating.md#stopping))"
  },
  {
    env: "INBOX_LOG_LEVEL",
    flag: "--log-level <level>",
    scope: "serve",
    group: "The server",
    default: "info",
    help: "least level logged: trace, debug, info, warning, error, fatal, none",
    meaning: "least level the server logs: `trace`, `debug`, `info`, `warning`, `error`, `fatal`, `none`"
  },
  {
    env: "INBOX_LOG_FORMAT",
    flag: "--log-format <json|pretty>",
    scope: "serve",
    group: "The server",
    default: "json",
    help: "one JSON object a line, or pretty for a terminal",
    meaning: "`json`: one JSON object a line (request lines included); `pretty`: for a terminal"
  },
  {
    env: "INBOX_METRICS_TOKEN",
    flag: "--metrics-token <token>",
    scope: "serve",
    group: "The server",
    help: "bearer token that /metrics asks for; unset, /metrics is off",
    meaning: "bearer token `GET /metrics` asks for; unset, `/metrics` answers 404 ([Observing](operating.md#observing))"
  },

  // Limits.
  {
    env: "INBOX_RATE_LIMITS",
    flag: "--rate-limits <on|off>",
    scope: "serve",
    group: "Limits",
    default: "on",
    help: "per-IP and per-key request limits",
    meaning: "`off` disables per-IP and per-key request limits (tests, benchmarks)"
  },
  {
    env: "INBOX_REQUESTS_PER_MINUTE",
    flag: "--requests-per-minute <n>",
    scope: "serve",
    group: "Limits",
    default: 6000,
    help: "request limit per API key, and per IP without a key",
    meaning: "requests per minute per API key, and per client IP for requests without a key (REST and `/mcp`)"
  },
  {
    env: "INBOX_MAX_CONNECTIONS",
    flag: "--max-connections <n>",
    scope: "serve",
    group: "Limits",
    default: 1000,
    help: "open HTTP connections at most, WebSockets apart; more are closed at once",
    meaning: "open HTTP connections at most (WebSockets apart); Node closes any beyond it as it opens"
  },
  {
    env: "INBOX_MAX_WEBSOCKETS",
    flag: "--max-websockets <n>",
    scope: "serve",
    group: "Limits",
    default: 1000,
    help: "WebSocket connections at most; more are closed with 1013",
    meaning: "WebSocket connections the process holds at most; one more is closed with code 1013 (try again later)"
  },
  {
    env: "INBOX_MAX_WEBSOCKETS_PER_KEY",
    flag: "--max-websockets-per-key <n>",
    scope: "serve",
    group: "Limits",
    default: 100,
    help: "WebSocket connections per API key or dashboard user; more are closed with 4029",
    meaning: "WebSocket connections of one API key (or dashboard user) at most; one more is closed with code 4029"
  },
  {
    env: "INBOX_INTAKE_MEMORY_MB",
    flag: "--intake-memory-mb <n>",
    scope: "serve",
    group: "Limits",
    default: 128,
    help: "MiB of request bodies and SMTP messages held at once; beyond, 503 / 452",
    meaning:
      "MiB of request bodies and SMTP messages held at once, across all clients; beyond it, 503 `service_unavailable` with `Retry-After` (SMTP `452 4.3.1`) until others finish"
  },
  {
    env: "INBOX_HEADERS_TIMEOUT",
    flag: "--headers-timeout <seconds>",
    scope: "serve",
    group: "Limits",
    default: 10,
    help: "seconds for a request's headers to arrive",
    meaning: "seconds for a request's headers to arrive; later is 408 `request_timeout`"
  },
  {
    env: "INBOX_REQUEST_TIMEOUT",
    flag: "--request-timeout <seconds>",
    scope: "serve",
    group: "Limits",
    default: 30,
    help: "seconds for a whole request to arrive",
    meaning: "seconds for a whole request (headers and body) to arrive; later is 408 `request_timeout`"
  },

  // Mail.
  {
    env: "INBOX_BASE_DOMAIN",
    flag: "--base-domain <domain>",
    scope: "serve",
    group: "Mail",
    default: "inbox.localhost",
    help: "domain of new inbox addresses",
    meaning: "domain of new inbox addresses and of system mail"
  },
  {
    env: "INBOX_SMTP_URL",
    flag: "--smtp-url <url>",
    scope: "serve",
    group: "Mail",
    help: "outbound relay, smtp:// or smtps://; unset keeps mail in the local outbox",
    meaning:
      "outbound relay, `smtp://user:pass@host:port` or `smtps://`; unset: local outbox. Connections are pooled (nodemailer's pool: up to 5, reused for 100 messages each) unless the URL ends in `?pool=false`: many relays hold each new connection 100 ms before their greeting"
  },
  {
    env: "INBOX_INBOUND_SECRET",
    flag: "--inbound-secret <secret>",
    scope: "serve",
    group: "Mail",
    help: "enables POST /inbound/raw",
    meaning: "for `/inbound/raw` (arrives with inbound mail); unset, the route answers 503 `not_configured` ([Receiving mail](receiving.md))"
  },
  {
    env: "INBOX_PROVIDER_EVENTS_SECRET",
    flag: "--provider-events-secret <whsec>",
    scope: "serve",
    group: "Mail",
    help: "secret signing /inbound/mail-provider-events",
    meaning: "`whsec_` secret for `/inbound/mail-provider-events` (arrives with delivery events)"
  },
  {
    env: "INBOX_DNS_SERVERS",
    flag: "--dns-servers <list>",
    scope: "serve",
    group: "Mail",
    shownDefault: "system",
    help: "resolvers for domain verification and mail authentication, host:port,...",
    meaning: "resolvers for domain verification and mail authentication, `host:port,...` ([Custom domains](domains.md))"
  },
  {
    env: "INBOX_MAIL_HOST",
    flag: "--mail-host <host>",
    scope: "serve",
    group: "Mail",
    shownDefault: "`mx.` + base domain",
    help: "host custom domains point their MX and SPF at, and mail clients connect to",
    meaning: "host name of this server's mail servers: custom domains publish MX and SPF naming it, and each inbox's client settings (`GET /v0/inboxes/{inbox_id}/client-settings`) tell IMAP and SMTP clients to connect to it ([Client settings](mail-servers.md#client-settings))"
  },
  {
    env: "INBOX_WEBHOOK_ALLOW_PRIVATE",
    flag: "--webhook-allow-private",
    scope: "serve",
    group: "Mail",
    help: "let webhooks target http and private addresses (development only)",
    meaning:
      "`1` lets webhooks target http and private addresses, and URL attachments of sends be fetched from private addresses (development and tests only; see [Events and webhooks](events.md))"
  },
  {
    env: "INBOX_OPEN_TRACKING",
    flag: "--open-tracking <on|off>",
    scope: "serve",
    group: "Mail",
    default: "on",
    help: "off refuses track_opens with 422 tracking_disabled",
    meaning: "`off` stops counting opens and refuses `track_opens` with 422 `tracking_disabled` (see [Events and webhooks](events.md))"
  },

  // Mail servers.
  {
    env: "INBOX_SMTP_LISTEN",
    flag: "--smtp-listen <host:port>",
    scope: "serve",
    group: "Mail servers",
    help: "starts the built-in SMTP receiver there (off when unset)",
    meaning: "`host:port` of the built-in SMTP receiver (e.g. `0.0.0.0:25`); unset, no receiver ([SMTP receiver](mail-servers.md#smtp-receiver))"
  },
  {
    env: "INBOX_SMTP_TLS_CERT",
    flag: "--smtp-tls-cert <file>",
    scope: "serve",
    group: "Mail servers",
    help: "PEM certificate for STARTTLS and implicit TLS of the mail servers",
    meaning: "PEM certificate file; with the key, the SMTP receiver, IMAP and submission offer STARTTLS (and implicit TLS on `INBOX_IMAPS_LISTEN` and `INBOX_SUBMISSIONS_LISTEN`)"
  },
  {
    env: "INBOX_SMTP_TLS_KEY",
    flag: "--smtp-tls-key <file>",
    scope: "serve",
    group: "Mail servers",
    help: "PEM private key for the SMTP receiver's STARTTLS",
    meaning: "PEM private key file of that certificate"
  },
  {
    env: "INBOX_SMTP_MAX_CONNECTIONS",
    flag: "--smtp-max-connections <n>",
    scope: "serve",
    group: "Mail servers",
    default: 20,
    help: "open SMTP connections per client IP at most",
    meaning: "open SMTP connections per client IP at most (`421` beyond)"
  },
  {
    env: "INBOX_SMTP_MESSAGES_PER_MINUTE",
    flag: "--smtp-messages-per-minute <n>",
    scope: "serve",
    group: "Mail servers",
    default: 6000,
    help: "messages per minute per client IP at most",
    meaning: "messages per minute per client IP (a token bucket; `451 4.7.1` beyond)"
  },
  {
    env: "INBOX_IMAP_LISTEN",
    flag: "--imap-listen <host:port>",
    scope: "serve",
    group: "Mail servers",
    help: "starts the IMAP server there, with STARTTLS (off when unset)",
    meaning: "`host:port` of the IMAP server (e.g. `0.0.0.0:143`), offering STARTTLS with the SMTP certificate; unset, no IMAP ([IMAP and SMTP submission](mail-servers.md#imap-and-smtp-submission))"
  },
  {
    env: "INBOX_IMAPS_LISTEN",
    flag: "--imaps-listen <host:port>",
    scope: "serve",
    group: "Mail servers",
    help: "starts the IMAP server with implicit TLS there (off when unset)",
    meaning: "`host:port` of the IMAP server with implicit TLS (e.g. `0.0.0.0:993`); needs `INBOX_SMTP_TLS_CERT` and `INBOX_SMTP_TLS_KEY`"
  },
  {
    env: "INBOX_SUBMISSION_LISTEN",
    flag: "--submission-listen <host:port>",
    scope: "serve",
    group: "Mail servers",
    help: "starts SMTP submission there, with STARTTLS (off when unset)",
    meaning: "`host:port` of SMTP submission (e.g. `0.0.0.0:587`): inboxes send through any SMTP client, offering STARTTLS with the SMTP certificate; unset, no submission ([IMAP and SMTP submission](mail-servers.md#imap-and-smtp-submission))"
  },
  {
    env: "INBOX_SUBMISSIONS_LISTEN",
    flag: "--submissions-listen <host:port>",
    scope: "serve",
    group: "Mail servers",
    help: "starts SMTP submission with implicit TLS there (off when unset)",
    meaning: "`host:port` of SMTP submission with implicit TLS (e.g. `0.0.0.0:465`); needs `INBOX_SMTP_TLS_CERT` and `INBOX_SMTP_TLS_KEY`"
  },
  {
    env: "INBOX_IMAP_PUBLIC_PORT",
    flag: "--imap-public-port <port>",
    scope: "serve",
    group: "Mail servers",
    shownDefault: "the port of `INBOX_IMAP_LISTEN`",
    help: "the port mail clients are told for `INBOX_IMAP_LISTEN` (when a proxy publishes another)",
    meaning: "the port each inbox's client settings give for `INBOX_IMAP_LISTEN`, when a proxy or port mapping publishes another than the one it listens on ([Client settings](mail-servers.md#client-settings))"
  },
  {
    env: "INBOX_IMAPS_PUBLIC_PORT",
    flag: "--imaps-public-port <port>",
    scope: "serve",
    group: "Mail servers",
    shownDefault: "the port of `INBOX_IMAPS_LISTEN`",
    help: "the port mail clients are told for `INBOX_IMAPS_LISTEN` (when a proxy publishes another)",
    meaning: "the port each inbox's client settings give for `INBOX_IMAPS_LISTEN`, when a proxy or port mapping publishes another than the one it listens on ([Client settings](mail-servers.md#client-settings))"
  },
  {
    env: "INBOX_SUBMISSION_PUBLIC_PORT",
    flag: "--submission-public-port <port>",
    scope: "serve",
    group: "Mail servers",
    shownDefault: "the port of `INBOX_SUBMISSION_LISTEN`",
    help: "the port mail clients are told for `INBOX_SUBMISSION_LISTEN` (when a proxy publishes another)",
    meaning: "the port each inbox's client settings give for `INBOX_SUBMISSION_LISTEN`, when a proxy or port mapping publishes another than the one it listens on ([Client settings](mail-servers.md#client-settings))"
  },
  {
    env: "INBOX_SUBMISSIONS_PUBLIC_PORT",
    flag: "--submissions-public-port <port>",
    scope: "serve",
    group: "Mail servers",
    shownDefault: "the port of `INBOX_SUBMISSIONS_LISTEN`",
    help: "the port mail clients are told for `INBOX_SUBMISSIONS_LISTEN` (when a proxy publishes another)",
    meaning: "the port each inbox's client settings give for `INBOX_SUBMISSIONS_LISTEN`, when a proxy or port mapping publishes another than the one it listens on ([Client settings](mail-servers.md#client-settings))"
  },
  {
    env: "INBOX_IMAP_ALLOW_PLAIN_LOOPBACK",
    flag: "--imap-allow-plain-loopback",
    scope: "serve",
    group: "Mail servers",
    help: "let IMAP and submission take passwords over plain loopback connections (development only)",
    meaning: "`1` lets IMAP and SMTP submission take passwords over a plain-text connection from a loopback address (development and tests only); otherwise credentials are refused until TLS is on"
  },

  // Retention.
  {
    env: "INBOX_RETENTION_TRASH_DAYS",
    flag: "--retention-trash-days <n>",
    scope: "serve",
    group: "Retention",
    default: 30,
    help: "days a message stays in trash before it is purged",
    meaning: "days a message stays in trash before it is purged (0: kept forever; [Retention](operating.md#retention))"
  },
  { env: "INBOX_RETENTION_JOBS_DAYS", flag: "--retention-jobs-days <n>", scope: "serve", group: "Retention", default: 7, help: "days finished jobs are kept" },
  { env: "INBOX_RETENTION_EVENTS_DAYS", flag: "--retention-events-days <n>", scope: "serve", group: "Retention", default: 90, help: "days events are kept" },
  { env: "INBOX_RETENTION_BATCH", flag: "--retention-batch <n>", scope: "serve", group: "Retention", default: 500, help: "rows a purge statement deletes at most" },
  { env: "INBOX_RETENTION_INTERVAL_MINUTES", flag: "--retention-interval-minutes <n>", scope: "serve", group: "Retention", default: 60, help: "minutes between purges" },

  // Billing providers: each on only when all of its settings are set.
  {
    env: "INBOX_STRIPE_SECRET_KEY",
    flag: "--stripe-secret-key <key>",
    scope: "serve",
    group: "Billing providers",
    help: "Stripe secret API key (billing: the card provider)",
    meaning: "Stripe secret API key (`sk_...`)"
  },
  {
    env: "INBOX_STRIPE_WEBHOOK_SECRET",
    flag: "--stripe-webhook-secret <whsec>",
    scope: "serve",
    group: "Billing providers",
    help: "signing secret of the Stripe endpoint /inbound/billing/stripe",
    meaning: "signing secret (`whsec_...`) of the Stripe webhook endpoint `/inbound/billing/stripe`"
  },
  ...providerIds("Stripe", "STRIPE_PRICE", "price"),
  providerApiUrl("Stripe"),
  {
    env: "INBOX_RAZORPAY_KEY_ID",
    flag: "--razorpay-key-id <id>",
    scope: "serve",
    group: "Billing providers",
    help: "Razorpay key id (billing: the India provider)",
    meaning: "Razorpay key id (`rzp_...`)"
  },
  { env: "INBOX_RAZORPAY_KEY_SECRET", flag: "--razorpay-key-secret <secret>", scope: "serve", group: "Billing providers", help: "Razorpay key secret" },
  {
    env: "INBOX_RAZORPAY_WEBHOOK_SECRET",
    flag: "--razorpay-webhook-secret <secret>",
    scope: "serve",
    group: "Billing providers",
    help: "secret of the Razorpay webhook /inbound/billing/razorpay",
    meaning: "secret of the Razorpay webhook `/inbound/billing/razorpay`"
  },
  ...providerIds("Razorpay", "RAZORPAY_PLAN", "plan"),
  providerApiUrl("Razorpay"),

  // The client.
  {
    env: "INBOX_API_KEY",
    flag: "--api-key <key>",
    scope: "client",
    group: "inboxctl",
    help: "API key of resource commands, events tail and mcp",
    meaning: "the API key `inboxctl`'s resource commands, `events tail` and `mcp` use ([inboxctl reference](cli.md))"
  }
] as const satisfies ReadonlyArray<Setting>

type Entry = (typeof SETTINGS)[number]

/** The INBOX_* variables. */
export type SettingName = Entry["env"]

/** Each setting that has a default, to its default. */
type Defaults = {
  readonly [E in Entry as E extends { readonly default: string | number } ? E["env"] : never]: Extract<E, { readonly default: unknown }>["default"]
}

const DEFAULTS = Object.fromEntries(SETTINGS.flatMap((s) => "default" in s ? [[s.env, s.default]] : [])) as Defaults

/** The default a setting's reader uses, from the registry. */
export const settingDefault = <N extends keyof Defaults>(name: N): Defaults[N] => DEFAULTS[name]

/** The default as `--help` shows it; undefined when unset means off. */
export const defaultText = (setting: Setting): string | undefined =>
  setting.shownDefault?.replaceAll("`", "") ?? (setting.default === undefined ? undefined : String(setting.default))
