/**
 * Dns: the engine's only way to ask the Domain Name System, for domain verification and for
 * the SMTP receiver's SPF, DKIM and DMARC checks.
 *
 * Contract: `txt`, `mx` answer the records at a name; a name or type with no records
 * (NXDOMAIN, NODATA) is an empty list, never an error, because "not published yet" is the
 * common case of verification. A lookup that cannot be answered (timeout, SERVFAIL,
 * refused) fails with `DnsUnavailable`: the caller must not read it as "missing".
 * `resolve` is the raw form with `dns.promises.resolve`'s signature, for libraries that
 * take a resolver (mailauth); it keeps a small cache (60 s) so the SPF, DKIM and DMARC
 * checks of a burst of mail from one sender ask once: answers and "no such records"
 * (NXDOMAIN, NODATA) are remembered, a failure to ask is not.
 *
 * Layer: `layer` uses Node's resolver, with the servers of INBOX_DNS_SERVERS (`host:port`)
 * when set, else the system's; each query times out after 2 s and is tried twice.
 */
import { Context, Data, Effect, Layer } from "effect"
import { Resolver } from "node:dns/promises"
import { Settings } from "../settings/Settings.ts"

export class DnsUnavailable extends Data.TaggedError("DnsUnavailable")<{ readonly name: string; readonly code: string }> {}

export interface MxRecord {
  readonly exchange: string
  readonly priority: number
}

/** DNS failure codes meaning "no such records", as opposed to "could not ask". */
const ABSENT = new Set(["ENOTFOUND", "ENODATA", "NOTFOUND", "NODATA"])

const CACHE_MS = 60_000
const CACHE_MAX = 10_000

export type RawResolver = (name: string, rrtype: string) => Promise<unknown>

export class Dns extends Context.Service<Dns, {
  /** TXT records at `name`, each joined from its strings. */
  txt(name: string): Effect.Effect<ReadonlyArray<string>, DnsUnavailable>
  mx(name: string): Effect.Effect<ReadonlyArray<MxRecord>, DnsUnavailable>
  /** `dns.promises.resolve`-shaped, cached: for mailauth. */
  readonly resolve: RawResolver
}>()("inbox/Dns") {
  /** Over a raw resolver (Node's, or one a test or embedding application gives). */
  static readonly make = (raw: RawResolver) => {
    // One cache of promises: concurrent checks of the same name share one query.
    const cache = new Map<string, { readonly at: number; readonly answer: Promise<unknown> }>()
    const resolve: RawResolver = (name, rrtype) => {
      const key = `${rrtype}:${name.toLowerCase()}`
      const at = performance.now()
      const hit = cache.get(key)
      if (hit !== undefined && at - hit.at < CACHE_MS) return hit.answer
      if (cache.size >= CACHE_MAX) cache.clear()
      const answer = raw(name, rrtype)
      cache.set(key, { at, answer })
      // "No such records" is an answer and is remembered like one (negative caching): mail
      // from a sender whose IP has no PTR record, or whose domain publishes no DMARC policy,
      // used to ask again for each message. A failure to ask is not: the next check asks again.
      answer.catch((e: { code?: string }) => {
        if (!ABSENT.has(e?.code ?? "") && cache.get(key)?.answer === answer) cache.delete(key)
      })
      return answer
    }
    const lookup = <A>(name: string, rrtype: string) =>
      Effect.tryPromise({ try: () => raw(name, rrtype) as Promise<ReadonlyArray<A>>, catch: (e) => e as { code?: string } }).pipe(
        Effect.catch((e) =>
          ABSENT.has(e.code ?? "") ? Effect.succeed([] as ReadonlyArray<A>) : Effect.fail(new DnsUnavailable({ name, code: e.code ?? "EUNKNOWN" }))
        )
      )
    return Dns.of({
      txt: (name) => Effect.map(lookup<ReadonlyArray<string>>(name, "TXT"), (records) => records.map((parts) => parts.join(""))),
      mx: (name) =>
        Effect.map(lookup<MxRecord>(name, "MX"), (records) =>
          records.map((r) => ({ exchange: r.exchange.toLowerCase().replace(/\.$/, ""), priority: r.priority }))),
      resolve
    })
  }

  static readonly layer = Layer.effect(Dns, Effect.gen(function*() {
    const settings = yield* Settings
    const resolver = new Resolver({ timeout: 2000, tries: 2 })
    if (settings.dnsServers.length > 0) resolver.setServers([...settings.dnsServers])
    return Dns.make((name, rrtype) => resolver.resolve(name, rrtype))
  }))
}
