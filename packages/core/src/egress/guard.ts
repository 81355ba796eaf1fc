/**
 * The webhook URL rule, in one place: public `https` only, and every address the host
 * stands for must be public. Checked when a webhook is created or its URL changed (400
 * invalid_webhook_url) and again at every delivery: the host is resolved, every address is
 * checked, and the connection goes to a checked address (never resolved a second time), so
 * a name that answers a public address first and a private one later (DNS rebinding)
 * cannot reach inside. Redirects are never followed.
 *
 * Which addresses are public comes from a maintained classification, `ipaddr.js`'s
 * `range()` (its special ranges follow the IANA IPv4 and IPv6 special-purpose registries):
 * only what it calls `unicast` is public. Refused, therefore: unspecified, "this network",
 * private (RFC 1918, unique-local), loopback, link-local, CGNAT (100.64/10), multicast,
 * reserved and broadcast, benchmarking, documentation, IETF protocol assignments (AS112,
 * AMT, ORCHID, anycast services among them), discard-only, segment routing, IPv4-mapped
 * and SIIT (`::ffff:0:0:0/96`) addresses, 6to4 and Teredo (tunnels through relays, their
 * IPv4 addresses embedded or obfuscated), the local-use NAT64 prefix `64:ff9b:1::/48`; plus what the library does not
 * name: IPv4-compatible `::/96` (deprecated) and the dummy prefix `100:0:0:1::/64` (RFC
 * 9780). An address of the well-known NAT64 prefix `64:ff9b::/96` (globally reachable in
 * the registry: how an IPv6-only host with DNS64 reaches IPv4-only hosts) is judged by the
 * IPv4 address it embeds. INBOX_WEBHOOK_ALLOW_PRIVATE=1 lifts the rule (http and any
 * address) for development and tests only.
 */
import { Context, Effect, Layer } from "effect"
import ipaddr from "ipaddr.js"
import { lookup } from "node:dns/promises"
import { Resolver } from "node:dns/promises"
import { isIP, type LookupFunction } from "node:net"

/**
 * Ranges ipaddr.js's range() calls `unicast` that are not: IPv4-compatible addresses
 * (deprecated by RFC 4291; each names an IPv4 address) and the IANA registry's dummy prefix.
 */
const UNNAMED = [ipaddr.IPv6.parseCIDR("::/96"), ipaddr.IPv6.parseCIDR("100:0:0:1::/64")]
const NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96")

/** Whether an IP address (v4 or v6 text) may be the target of a webhook. */
export const isPublicAddress = (address: string): boolean => {
  if (isIP(address) === 0) return false
  let ip: ipaddr.IPv4 | ipaddr.IPv6
  try {
    ip = ipaddr.parse(address)
  } catch {
    return false
  }
  if (ip.kind() === "ipv6") {
    const v6 = ip as ipaddr.IPv6
    if (v6.match(NAT64)) {
      const [high = 0, low = 0] = v6.parts.slice(6)
      return isPublicAddress(`${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`)
    }
    if (UNNAMED.some((range) => v6.match(range))) return false
  }
  return ip.range() === "unicast"
}

export interface CheckedUrl {
  readonly url: URL
  /** The checked addresses of the host; a delivery connects to the first. */
  readonly addresses: ReadonlyArray<{ readonly address: string; readonly family: 4 | 6 }>
}

/**
 * A `lookup` for Node's request that answers the first checked address, whatever the
 * resolver would say now: the connection goes where the check looked (DNS rebinding).
 */
export const pinnedLookup = (target: CheckedUrl): LookupFunction => {
  const pinned = target.addresses[0]!
  return (_host, options, callback) => {
    if (options.all === true) (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned])
    else callback(null, pinned.address, pinned.family)
  }
}

/** Why a URL was refused, in words a client can act on. */
export class UrlRefused {
  readonly _tag = "UrlRefused"
  constructor(readonly message: string) {}
}

/**
 * How host names become addresses: the system's resolver (`layer`), or given DNS servers
 * (`layerServers`, INBOX_DNS_SERVERS style `host:port`), which the SSRF tests point at a
 * DNS server on loopback.
 */
export class HostResolver extends Context.Service<HostResolver, {
  resolve(host: string): Effect.Effect<ReadonlyArray<string>, UrlRefused>
}>()("inbox/HostResolver") {
  static readonly layerNoDeps = Layer.succeed(HostResolver, HostResolver.of({
    resolve: (host) =>
      Effect.tryPromise({
        try: () => lookup(host, { all: true, verbatim: true }),
        catch: () => new UrlRefused(`The host ${host} could not be resolved.`)
      }).pipe(Effect.map((answers) => answers.map((a) => a.address)))
  }))

  static readonly layerServers = (servers: ReadonlyArray<string>) =>
    Layer.sync(HostResolver, () => {
      const resolver = new Resolver({ timeout: 2000, tries: 2 })
      resolver.setServers([...servers])
      const query = (host: string, rr: "A" | "AAAA") =>
        Effect.tryPromise(() => rr === "A" ? resolver.resolve4(host) : resolver.resolve6(host)).pipe(
          Effect.orElseSucceed((): ReadonlyArray<string> => [])
        )
      return HostResolver.of({
        resolve: (host) =>
          Effect.gen(function*() {
            const [v4, v6] = yield* Effect.all([query(host, "A"), query(host, "AAAA")], { concurrency: 2 })
            const all = [...v4, ...v6]
            if (all.length === 0) return yield* Effect.fail(new UrlRefused(`The host ${host} could not be resolved.`))
            return all
          })
      })
    })

  static readonly layer = HostResolver.layerNoDeps
}

/**
 * Checks a URL by the rule above and resolves its host: webhooks need https
 * (`httpsOnly`), URL attachments of a send may be http too. `allowPrivate` admits every
 * address, and http for webhooks (INBOX_WEBHOOK_ALLOW_PRIVATE).
 */
export const checkPublicUrl = (
  raw: string,
  options: { readonly allowPrivate: boolean; readonly httpsOnly: boolean }
): Effect.Effect<CheckedUrl, UrlRefused, HostResolver> =>
  Effect.gen(function*() {
    const { allowPrivate, httpsOnly } = options
    const url = URL.parse(raw)
    if (url === null || (url.protocol !== "https:" && url.protocol !== "http:")) {
      return yield* Effect.fail(new UrlRefused(httpsOnly ? "The URL must be an absolute https URL." : "The URL must be an absolute http or https URL."))
    }
    if (httpsOnly && url.protocol !== "https:" && !allowPrivate) return yield* Effect.fail(new UrlRefused("The URL must use https."))
    if (url.username !== "" || url.password !== "") return yield* Effect.fail(new UrlRefused("The URL must not carry credentials."))
    const host = url.hostname.replace(/^\[|\]$/g, "")
    const literal = isIP(host)
    const addresses = literal !== 0 ? [host] : yield* (yield* HostResolver).resolve(host)
    if (!allowPrivate) {
      const inside = addresses.find((a) => !isPublicAddress(a))
      if (inside !== undefined) {
        return yield* Effect.fail(new UrlRefused(
          literal !== 0 ? `The address ${host} is not a public address.` : `The host ${host} resolves to ${inside}, which is not a public address.`
        ))
      }
    }
    return { url, addresses: addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 as const : 4 as const })) }
  })

/** A webhook URL: https, public addresses (unless `allowPrivate`). */
export const checkWebhookUrl = (raw: string, allowPrivate: boolean): Effect.Effect<CheckedUrl, UrlRefused, HostResolver> =>
  checkPublicUrl(raw, { allowPrivate, httpsOnly: true })
