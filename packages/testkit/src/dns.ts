/**
 * A real DNS server on loopback (UDP, `dns2`) serving a zone the test edits while it runs:
 * records published late, wrong values, names that never answer (a timeout). Point the
 * engine at it with the `dnsServers` setting (INBOX_DNS_SERVERS). It counts the queries it
 * answered, for the verification benchmark.
 */
import type { Signals, SettingsShape } from "@inbox/core/internal"
import dns2 from "dns2"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { engineLayer } from "./engine.ts"

export type RecordType = "TXT" | "MX" | "A" | "AAAA" | "CNAME"

export interface TestZone {
  /** `host:port` for INBOX_DNS_SERVERS. */
  readonly server: string
  /** Replaces the records of one type at a name (TXT values longer than 255 are split). */
  set(name: string, type: RecordType, values: ReadonlyArray<string | { readonly exchange: string; readonly priority: number }>): void
  remove(name: string, type?: RecordType): void
  /** Queries for this name get no answer at all, so the resolver times out. */
  stall(name: string): void
  readonly queries: () => number
}

const TYPE_CODES: Readonly<Record<RecordType, number>> = { A: 1, CNAME: 5, MX: 15, TXT: 16, AAAA: 28 }

export const loopbackDns = Effect.acquireRelease(
  Effect.promise(async () => {
    const records = new Map<string, ReadonlyArray<unknown>>()
    const stalled = new Set<string>()
    let queries = 0
    const key = (name: string, type: RecordType) => `${type} ${name.toLowerCase().replace(/\.$/, "")}`
    const server = dns2.createServer({
      udp: true,
      handle: (request, send) => {
        const response = dns2.Packet.createResponseFromRequest(request)
        const question = request.questions[0]
        if (question === undefined) return send(response)
        const name = question.name.toLowerCase()
        if (stalled.has(name)) return
        queries++
        const type = (Object.keys(TYPE_CODES) as Array<RecordType>).find((t) => TYPE_CODES[t] === question.type)
        const values = type === undefined ? [] : records.get(key(name, type)) ?? []
        for (const value of values) {
          const base = { name: question.name, type: question.type, class: dns2.Packet.CLASS.IN, ttl: 1 }
          if (type === "TXT") {
            const text = value as string
            response.answers.push({ ...base, data: text.match(/.{1,255}/g) ?? [""] } as never)
          } else if (type === "MX") {
            const mx = value as { exchange: string; priority: number }
            response.answers.push({ ...base, exchange: mx.exchange, priority: mx.priority } as never)
          } else if (type === "CNAME") {
            response.answers.push({ ...base, domain: value as string } as never)
          } else {
            response.answers.push({ ...base, address: value as string } as never)
          }
        }
        send(response)
      }
    })
    const addresses = await server.listen({ udp: { port: 0, address: "127.0.0.1" } })
    const zone: TestZone = {
      server: `127.0.0.1:${addresses.udp?.port ?? 0}`,
      set: (name, type, values) => records.set(key(name, type), values),
      remove: (name, type) => {
        for (const t of type === undefined ? (Object.keys(TYPE_CODES) as Array<RecordType>) : [type]) records.delete(key(name, t))
      },
      stall: (name) => stalled.add(name.toLowerCase()),
      queries: () => queries
    }
    return { server, zone }
  }),
  ({ server }) => Effect.promise(() => server.close())
).pipe(Effect.map(({ zone }) => zone))

export class LoopbackDns extends Context.Service<LoopbackDns, TestZone>()("testkit/LoopbackDns") {
  static readonly layer = Layer.effect(LoopbackDns, loopbackDns)
}

/** The test engine (engineLayer) whose DNS is a loopback server the test edits (LoopbackDns). */
export const engineWithDns = <E, R>(storage: Layer.Layer<SqlClient.SqlClient | Signals, E, R>, settings: Partial<SettingsShape> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const zone = yield* LoopbackDns
    return engineLayer(storage, { dnsServers: [zone.server], ...settings })
  })).pipe(Layer.provideMerge(LoopbackDns.layer))

/** The records a domain asks its owner to publish, as the API shows them. */
export interface DomainRecords {
  readonly records: ReadonlyArray<{ readonly type: string; readonly name: string; readonly value: string; readonly priority?: number }>
}

/** Publishes every record the domain asks for, as a customer would at their DNS host. */
export const publishDomainRecords = (zone: TestZone, domain: DomainRecords, mailHostAddress = "127.0.0.1") => {
  const txt = new Map<string, Array<string>>()
  for (const r of domain.records) {
    if (r.type === "MX") {
      zone.set(r.name, "MX", [{ exchange: r.value, priority: r.priority ?? 10 }])
      zone.set(r.value, "A", [mailHostAddress])
    } else txt.set(r.name, [...(txt.get(r.name) ?? []), r.value])
  }
  for (const [name, values] of txt) zone.set(name, "TXT", values)
}
