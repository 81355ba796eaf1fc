/**
 * Settings: the operator's choices that core needs, read once from Config in the layer.
 *
 * Core modules never read the environment; they ask this service. Each field maps to an
 * INBOX_* variable documented in the README (and a flag of `inboxctl serve`).
 */
import { Config, Context, Effect, Layer, Option } from "effect"

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
}

export class Settings extends Context.Service<Settings, SettingsShape>()("inbox/Settings") {
  static readonly layer = Layer.effect(Settings, Effect.gen(function*() {
    const baseDomain = (yield* Config.String("INBOX_BASE_DOMAIN").pipe(Config.withDefault("inbox.localhost"))).toLowerCase()
    const port = yield* Config.Int("INBOX_PORT").pipe(Config.withDefault(3000))
    const host = yield* Config.String("INBOX_HOST").pipe(Config.withDefault("127.0.0.1"))
    const publicUrl = yield* Config.option(Config.String("INBOX_PUBLIC_URL"))
    const rateLimits = yield* Config.String("INBOX_RATE_LIMITS").pipe(Config.withDefault("on"))
    const requestsPerMinute = yield* Config.Int("INBOX_REQUESTS_PER_MINUTE").pipe(Config.withDefault(6000))
    return Settings.of({
      baseDomain,
      publicUrl: Option.getOrElse(publicUrl, () => `http://${host}:${port}`).replace(/\/+$/, ""),
      rateLimits: rateLimits.toLowerCase() !== "off",
      systemFrom: `no-reply@${baseDomain}`,
      requestsPerMinute
    })
  }).pipe(Effect.orDie))

  static readonly make = (overrides: Partial<SettingsShape> = {}): SettingsShape => {
    const baseDomain = overrides.baseDomain ?? "inbox.localhost"
    return {
      baseDomain,
      publicUrl: "http://127.0.0.1:3000",
      rateLimits: false,
      systemFrom: `no-reply@${baseDomain}`,
      requestsPerMinute: 6000,
      ...overrides
    }
  }
}
