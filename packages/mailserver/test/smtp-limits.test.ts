/**
 * The SMTP receiver's per-IP limits (smtp/Receiver.ts, docs/mail-servers.md, "SMTP receiver"): which
 * client a connection counts for, and the message-rate buckets. The conversations
 * themselves are tested over SMTP in packages/http/test/smtp-receiver.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { clientOf, messageRate } from "../src/smtp.ts"

describe("SMTP per-IP limits", () => {
  it("an IPv4 address is its own client, also written as IPv4-mapped IPv6; an IPv6 address counts as its /64", () => {
    assert.strictEqual(clientOf("192.0.2.7"), "192.0.2.7")
    assert.strictEqual(clientOf("::ffff:192.0.2.7"), "192.0.2.7")
    assert.strictEqual(clientOf("2001:db8:1:2::1"), "2001:db8:1:2::/64")
    assert.strictEqual(clientOf("2001:0db8:0001:0002:ffff:1:2:3"), "2001:db8:1:2::/64")
    assert.strictEqual(clientOf("2001:DB8:1:2:abcd::9%eth0"), "2001:db8:1:2::/64")
    assert.notStrictEqual(clientOf("2001:db8:1:3::1"), clientOf("2001:db8:1:2::1"))
    assert.strictEqual(clientOf("::1"), "0:0:0:0::/64")
  })

  it("a client's bucket allows a burst of perMinute, then refills at perMinute a minute", () => {
    const rate = messageRate(2)
    assert.deepStrictEqual([rate.allow("a", 0), rate.allow("a", 0), rate.allow("a", 0)], [true, true, false])
    assert.isTrue(rate.allow("b", 0), "another client has its own bucket")
    assert.isFalse(rate.allow("a", 20_000))
    assert.isTrue(rate.allow("a", 30_000))
  })

  it("with too many clients remembered, only those idle a minute (full again) are forgotten: a throttled client stays throttled, a new one waits", () => {
    const rate = messageRate(10, 3)
    for (let i = 0; i < 10; i++) assert.isTrue(rate.allow("abuser", 0))
    assert.isFalse(rate.allow("abuser", 0))
    assert.isTrue(rate.allow("c1", 0))
    assert.isTrue(rate.allow("c2", 0))
    // Full, and nobody idle: the new client is refused (451, it retries), nobody forgotten.
    assert.isFalse(rate.allow("new", 1_000))
    assert.isFalse(rate.allow("abuser", 1_000), "still throttled: its bucket was not forgotten")
    // A minute later everyone is idle and full again: forgetting them loses nothing.
    assert.isTrue(rate.allow("new", 61_000))
  })
})
