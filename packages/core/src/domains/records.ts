/**
 * The DNS records a custom domain publishes, and how a check grades what DNS answers.
 *
 * Five records (docs/domains.md): an ownership TXT at `_inbox-verification.<domain>`,
 * MX to this server's mail host, SPF naming the mail host, the domain's DKIM key at
 * `<selector>._domainkey.<domain>`, and DMARC at `_dmarc.<domain>`. Each is graded on its
 * own: VALID when DNS holds what we asked for, INVALID when the name holds a record of that
 * kind with another value, MISSING when it holds none. A DMARC record of the customer's
 * own policy counts as VALID: any `v=DMARC1` record gives receivers the alignment rules.
 */
import { Effect } from "effect"
import { Dns, type DnsUnavailable } from "../dns/Dns.ts"
import { dkimRecordValue, publishedKey } from "./dkim.ts"

export type RecordStatus = "MISSING" | "INVALID" | "VALID"
export type RecordKind = "verification" | "mx" | "spf" | "dkim" | "dmarc"

export interface DnsRecord {
  readonly kind: RecordKind
  readonly type: "TXT" | "MX"
  readonly name: string
  readonly value: string
  readonly priority?: number
}

export interface DomainKeys {
  readonly domain: string
  readonly verificationToken: string
  readonly dkimSelector: string
  readonly dkimPublicKey: string
}

export const MX_PRIORITY = 10

export const spfValue = (mailHost: string) => `v=spf1 a:${mailHost} mx ~all`
export const DMARC_VALUE = "v=DMARC1; p=none; adkim=r; aspf=r"

export const recordsOf = (d: DomainKeys, mailHost: string): ReadonlyArray<DnsRecord> => [
  { kind: "verification", type: "TXT", name: `_inbox-verification.${d.domain}`, value: `inbox-verification=${d.verificationToken}` },
  { kind: "mx", type: "MX", name: d.domain, value: mailHost, priority: MX_PRIORITY },
  { kind: "spf", type: "TXT", name: d.domain, value: spfValue(mailHost) },
  { kind: "dkim", type: "TXT", name: `${d.dkimSelector}._domainkey.${d.domain}`, value: dkimRecordValue(d.dkimPublicKey) },
  { kind: "dmarc", type: "TXT", name: `_dmarc.${d.domain}`, value: DMARC_VALUE }
]

const grade = (candidates: ReadonlyArray<string>, valid: (value: string) => boolean): RecordStatus =>
  candidates.length === 0 ? "MISSING" : candidates.some(valid) ? "VALID" : "INVALID"

const startsWith = (prefix: string) => (value: string) => value.trim().toLowerCase().startsWith(prefix)

/** SPF names the mail host when one of its terms is `a:`, `mx:`, or `include:` the host. */
const spfNames = (mailHost: string) => (value: string) =>
  value.toLowerCase().split(/\s+/).some((term) => /^[+]?(?:a|mx|include):/.test(term) && term.slice(term.indexOf(":") + 1) === mailHost)

/** The status of one record against what DNS answers now. */
export const check = (record: DnsRecord, mailHost: string): Effect.Effect<RecordStatus, DnsUnavailable, Dns> =>
  Effect.gen(function*() {
    const dns = yield* Dns
    switch (record.kind) {
      case "mx": {
        const mx = yield* dns.mx(record.name)
        return grade(mx.map((m) => m.exchange), (exchange) => exchange === mailHost)
      }
      case "verification": {
        const txt = (yield* dns.txt(record.name)).filter(startsWith("inbox-verification="))
        return grade(txt, (v) => v.trim() === record.value)
      }
      case "spf": {
        const txt = (yield* dns.txt(record.name)).filter(startsWith("v=spf1"))
        return grade(txt, spfNames(mailHost))
      }
      case "dkim": {
        const txt = yield* dns.txt(record.name)
        const expected = publishedKey(record.value)
        return grade(txt, (v) => publishedKey(v) === expected)
      }
      case "dmarc": {
        const txt = (yield* dns.txt(record.name)).filter(startsWith("v=dmarc1"))
        return grade(txt, () => true)
      }
    }
  })

/** TXT strings are at most 255 bytes: a longer value (a DKIM key) is split, as zone files allow. */
const quoted = (value: string) => (value.match(/.{1,255}/g) ?? [""]).map((part) => `"${part.replace(/(["\\])/g, "\\$1")}"`).join(" ")

/** One line per record, in the master-file format DNS hosts import (RFC 1035 section 5). */
export const zoneFile = (records: ReadonlyArray<DnsRecord>): string =>
  records.map((r) =>
    r.type === "MX"
      ? `${r.name}.\t3600\tIN\tMX\t${r.priority ?? MX_PRIORITY} ${r.value}.`
      : `${r.name}.\t3600\tIN\tTXT\t${quoted(r.value)}`
  ).join("\n") + "\n"
