/**
 * The Dns port's cached `resolve` (the SMTP receiver's SPF, DKIM and DMARC checks through
 * mailauth): an answer is asked once, "no such records" (NXDOMAIN, NODATA) is remembered like
 * an answer, and a failure to ask (a timeout, SERVFAIL) is not. The records themselves come
 * from a real DNS server on loopback in http/test/domains.test.ts and smtp-receiver.test.ts;
 * here the raw resolver counts what it is asked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Dns } from "@inbox/core/internal"

/** A raw resolver answering from `answers` (an Error with its code for a failure), counting questions. */
const counting = (answers: Record<string, unknown>) => {
  const asked: Array<string> = []
  const raw = (name: string, rrtype: string) => {
    asked.push(`${rrtype} ${name}`)
    const answer = answers[`${rrtype} ${name}`]
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)
  }
  return { asked, resolve: Dns.make(raw).resolve }
}

const failure = (code: string) => Object.assign(new Error(`queryTxt ${code}`), { code })

describe("Dns.resolve", () => {
  it("asks once for the records of a burst of mail from one sender", async () => {
    const dns = counting({ "TXT example.org": [["v=spf1 -all"]] })
    for (let i = 0; i < 3; i++) assert.deepStrictEqual(await dns.resolve("example.org", "TXT"), [["v=spf1 -all"]])
    assert.deepStrictEqual(dns.asked, ["TXT example.org"])
  })

  it("remembers that a name has no such records (NXDOMAIN, NODATA) like an answer, and gives the same error again", async () => {
    const dns = counting({
      "PTR 1.0.0.127.in-addr.arpa": failure("ENOTFOUND"),
      "TXT _dmarc.example.org": failure("ENODATA")
    })
    for (let i = 0; i < 3; i++) {
      const ptr = await dns.resolve("1.0.0.127.in-addr.arpa", "PTR").then(() => "answered", (e: { code?: string }) => e.code)
      const dmarc = await dns.resolve("_dmarc.example.org", "TXT").then(() => "answered", (e: { code?: string }) => e.code)
      assert.deepStrictEqual([ptr, dmarc], ["ENOTFOUND", "ENODATA"])
    }
    assert.deepStrictEqual(dns.asked, ["PTR 1.0.0.127.in-addr.arpa", "TXT _dmarc.example.org"])
  })

  it("forgets a failure to ask (a timeout, SERVFAIL): the next check asks again", async () => {
    const dns = counting({ "TXT slow.example": failure("ETIMEOUT"), "TXT broken.example": failure("ESERVFAIL") })
    for (let i = 0; i < 2; i++) {
      await dns.resolve("slow.example", "TXT").catch(() => undefined)
      await dns.resolve("broken.example", "TXT").catch(() => undefined)
    }
    assert.deepStrictEqual(dns.asked, ["TXT slow.example", "TXT broken.example", "TXT slow.example", "TXT broken.example"])
  })
})
