/**
 * The settings flags: those of `serve`, and the storage flags every command accepts. Each
 * sets the INBOX_* variable of the same meaning before a command runs (program.ts), so flags
 * and environment are one mechanism.
 */
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
