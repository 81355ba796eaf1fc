/**
 * The webhook URL rule (docs/events.md): every refused range by literal
 * address and by a host name resolving to it, answered by a DNS server on loopback, and a
 * rebinding name whose second answer is private (refused at the second check, which is the
 * one a delivery connects by).
 */
import { assert, describe, it } from "@effect/vitest"
import { checkWebhookUrl, HostResolver, isPublicAddress } from "@inbox/core/internal"
import { Effect } from "effect"
import { createSocket } from "node:dgram"
import { isIPv4 } from "node:net"

const REFUSED = [
  "0.0.0.1", "10.0.0.1", "100.64.0.1", "100.127.255.254", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.1",
  "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.0.1", "198.18.0.1", "198.19.255.1", "198.51.100.1", "203.0.113.1",
  "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
  "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "64:ff9b::a00:1", "100::1", "2001::1", "2001:db8::1",
  "2002:a00:1::", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1", "ff02::1",
  // SIIT (RFC 6145), which passed the hand-written list: an IPv4 address in other words.
  "::ffff:0:a00:1", "::ffff:0:7f00:1", "::ffff:0:808:808",
  // The well-known NAT64 prefix embedding a private, loopback, link-local or CGNAT IPv4 address;
  // the local-use NAT64 prefix whatever it embeds.
  "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::c0a8:101", "64:ff9b::6440:1", "64:ff9b:1::a00:1", "64:ff9b:1::808:808",
  // 6to4 and Teredo embedding a private or loopback IPv4 address (the relay's, or the client's
  // XORed with ones), and Teredo by a private server.
  "2002:7f00:1::1", "2002:a9fe:a9fe::1", "2002:c0a8:101::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:a00:1::1",
  // The rest of the IANA special-purpose registries: IPv4-compatible, the dummy prefix, ORCHID,
  // AMT, AS112, benchmarking, drone ids, documentation, segment routing, the IETF anycast services.
  "::a00:1", "::808:808", "100:0:0:1::1", "2001:10::1", "2001:20::1", "2001:3::1", "2001:4:112::1", "2620:4f:8000::1",
  "2001:2::1", "2001:30::1", "3fff::1", "5f00::1", "2001:1::1", "192.0.0.9", "192.0.0.170", "192.31.196.1",
  "192.52.193.1", "192.175.48.1", "0.0.0.0"
]
// A NAT64 address embedding a public IPv4 address is that address, as DNS64 gives an IPv6-only host.
const ALLOWED = [
  "8.8.8.8", "93.184.215.14", "1.1.1.1", "100.128.0.1", "172.32.0.1", "2606:4700:4700::1111", "2a00:1450:4001::200e",
  "64:ff9b::808:808"
]

/** A DNS server on loopback answering A and AAAA queries from `answer(name, type, n)` (n: how many times the name was asked). */
const dnsServer = (answer: (name: string, type: "A" | "AAAA", n: number) => ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ port: number; close: () => void }>((resolve) => {
        const socket = createSocket("udp4")
        const asked = new Map<string, number>()
        socket.on("message", (msg, rinfo) => {
          let at = 12
          const labels: Array<string> = []
          while (msg[at]! > 0) {
            labels.push(msg.subarray(at + 1, at + 1 + msg[at]!).toString("ascii"))
            at += 1 + msg[at]!
          }
          const qtype = msg.readUInt16BE(at + 1)
          const question = msg.subarray(12, at + 5)
          const name = labels.join(".").toLowerCase()
          const type = qtype === 28 ? "AAAA" : "A"
          const n = (asked.get(`${name}/${type}`) ?? 0) + 1
          asked.set(`${name}/${type}`, n)
          const addresses = qtype === 1 || qtype === 28 ? answer(name, type, n).filter((a) => isIPv4(a) === (type === "A")) : []
          const header = Buffer.alloc(12)
          header.writeUInt16BE(msg.readUInt16BE(0), 0)
          header.writeUInt16BE(0x8180, 2)
          header.writeUInt16BE(1, 4)
          header.writeUInt16BE(addresses.length, 6)
          const records = addresses.map((a) => {
            const data = type === "A" ? Buffer.from(a.split(".").map(Number)) : ipv6Bytes(a)
            const rr = Buffer.alloc(12)
            rr.writeUInt16BE(0xc00c, 0)
            rr.writeUInt16BE(qtype, 2)
            rr.writeUInt16BE(1, 4)
            rr.writeUInt32BE(0, 6)
            rr.writeUInt16BE(data.length, 10)
            return Buffer.concat([rr, data])
          })
          socket.send(Buffer.concat([header, question, ...records]), rinfo.port, rinfo.address)
        })
        socket.bind(0, "127.0.0.1", () => resolve({ port: socket.address().port, close: () => socket.close() }))
      })
    ),
    (s) => Effect.sync(() => s.close())
  )

const ipv6Bytes = (address: string): Buffer => {
  const [head = "", tail = ""] = address.split("::")
  const h = head === "" ? [] : head.split(":")
  const t = tail === "" ? [] : tail.split(":")
  const groups = address.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h
  const out = Buffer.alloc(16)
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2))
  return out
}

const check = (url: string, port: number) =>
  checkWebhookUrl(url, false).pipe(Effect.provide(HostResolver.layerServers([`127.0.0.1:${port}`])), Effect.result)

describe("webhook URL rule", () => {
  it("classifies every refused range (SIIT, NAT64, 6to4 and Teredo embedding private IPv4 included) and public addresses", () => {
    for (const a of REFUSED) assert.isFalse(isPublicAddress(a), a)
    for (const a of ALLOWED) assert.isTrue(isPublicAddress(a), a)
    for (const a of ["", "not an address", "10.0.0.1/8", "0x7f.1"]) assert.isFalse(isPublicAddress(a), a)
  })

  it.live("refuses every refused range by literal address and by a host name resolving to it", () =>
    Effect.gen(function*() {
      const names = new Map(REFUSED.map((a, i) => [`r${i}.private.test`, a]))
      const dns = yield* dnsServer((name) => {
        const a = names.get(name)
        return a !== undefined ? [a] : name === "public.test" ? ["93.184.215.14"] : name === "mixed.test" ? ["93.184.215.14", "10.0.0.1"] : []
      })
      for (const a of REFUSED) {
        const literal = yield* check(`https://${a.includes(":") ? `[${a}]` : a}/hook`, dns.port)
        assert.strictEqual(literal._tag, "Failure", `literal ${a}`)
      }
      for (const [name, a] of names) {
        const byName = yield* check(`https://${name}/hook`, dns.port)
        assert.strictEqual(byName._tag, "Failure", `${name} -> ${a}`)
      }
      const ok = yield* check("https://public.test/hook", dns.port)
      assert.strictEqual(ok._tag, "Success")
      if (ok._tag === "Success") assert.deepStrictEqual(ok.success.addresses, [{ address: "93.184.215.14", family: 4 }])
      // One private address among several is enough to refuse.
      assert.strictEqual((yield* check("https://mixed.test/hook", dns.port))._tag, "Failure")
    }).pipe(Effect.scoped))

  it.live("a rebinding host name whose second answer is private is refused at the second check", () =>
    Effect.gen(function*() {
      const dns = yield* dnsServer((name, _type, n) => name === "rebind.test" ? [n === 1 ? "93.184.215.14" : "127.0.0.1"] : [])
      assert.strictEqual((yield* check("https://rebind.test/hook", dns.port))._tag, "Success")
      const second = yield* check("https://rebind.test/hook", dns.port)
      assert.strictEqual(second._tag, "Failure")
      if (second._tag === "Failure") assert.include(second.failure.message, "127.0.0.1")
    }).pipe(Effect.scoped))
})
