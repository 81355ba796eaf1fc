/**
 * The API key cache (apikeys/KeyCache.ts): a request pays no database round trip for a key
 * it has seen, revocation stays immediate in the process that revokes, a lookup that raced a
 * change is not kept, and an entry is trusted for KEY_CACHE_TTL_MS at most when no signal
 * comes (here: a row changed behind the engine's back, which sends none to this process on
 * PGlite). The cross-process half (a revocation on process A refused on process B within
 * 100 ms) is in http/test/shared-limits.test.ts, on PostgreSQL.
 */
import { assert, it, layer } from "@effect/vitest"
import { ApiKeys, KEY_CACHE_TTL_MS, KeyCache, type Principal } from "@inbox/core/internal"
import { engineLayer, newOrganization, pglite } from "@inbox/testkit"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"

const principal: Principal = { organizationId: "org_1", scope: { type: "organization" }, keyId: "key_1" }

layer(engineLayer(pglite), { timeout: "60 seconds" })("the API key cache", (it) => {
  it.effect("a key seen once is answered from memory until KEY_CACHE_TTL_MS passes without a signal", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const sql = yield* SqlClient.SqlClient
      const org = yield* newOrganization()
      assert.strictEqual((yield* keys.authenticate(org.key)).organizationId, org.organizationId)
      // Revoked behind the engine's back: no forget, no signal in this process.
      yield* sql`UPDATE api_keys SET revoked_at = now() WHERE organization_id = ${org.organizationId}`
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(keys.authenticate(org.key))), "answered from the cache")
      yield* TestClock.adjust(KEY_CACHE_TTL_MS + 1)
      const after = yield* Effect.exit(keys.authenticate(org.key))
      assert.isTrue(Exit.isFailure(after), "looked up again once the entry expired")
    }))

  it.effect("revocation forgets the key in the revoking process before it answers", () =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const org = yield* newOrganization()
      const owner = yield* keys.authenticate(org.key)
      const doomed = yield* keys.create(owner, { name: "doomed" })
      yield* keys.authenticate(doomed.api_key)
      yield* keys.revoke(owner, doomed.api_key_id)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(keys.authenticate(doomed.api_key))))
    }))

  it.effect("a lookup that raced a change is not kept: remember after the mark moved keeps nothing", () =>
    Effect.gen(function*() {
      const cache = yield* KeyCache
      const mark = yield* cache.mark
      yield* cache.forgetKey("key_other")
      yield* cache.remember("hash_raced", principal, mark)
      assert.isUndefined(yield* cache.get("hash_raced"))
      yield* cache.remember("hash_raced", principal, yield* cache.mark)
      assert.deepStrictEqual(yield* cache.get("hash_raced"), principal)
    }))

  it.effect("forgetScope drops the keys of a deleted inbox or pod, and only those", () =>
    Effect.gen(function*() {
      const cache = yield* KeyCache
      const inboxKey: Principal = { organizationId: "org_1", scope: { type: "inbox", inboxId: "a@x.test", podId: "pod_1" }, keyId: "key_i" }
      const podKey: Principal = { organizationId: "org_1", scope: { type: "pod", podId: "pod_1" }, keyId: "key_p" }
      const otherPod: Principal = { organizationId: "org_1", scope: { type: "pod", podId: "pod_2" }, keyId: "key_q" }
      for (const [hash, p] of [["h_i", inboxKey], ["h_p", podKey], ["h_q", otherPod]] as const) {
        yield* cache.remember(hash, p, yield* cache.mark)
      }
      yield* cache.forgetScope("a@x.test")
      assert.isUndefined(yield* cache.get("h_i"))
      assert.isDefined(yield* cache.get("h_p"))
      yield* cache.forgetScope("pod_1")
      assert.isUndefined(yield* cache.get("h_p"))
      assert.isDefined(yield* cache.get("h_q"))
    }))
})
