/**
 * The kill -9 test on one storage (testkit crash.ts): crash.test.ts runs it on PGlite,
 * crash-postgres.test.ts on PostgreSQL, side by side.
 */
import { assert, describe, it } from "@effect/vitest"
import { type CrashStorage, crashFailures, crashOnce } from "@inbox/testkit"

/** The crash test on one storage; crash-postgres.test.ts runs it on PostgreSQL in parallel. */
export const crashSuite = (name: string, make: () => Promise<CrashStorage>) =>
  describe(`kill -9 mid-burst on ${name}`, () => {
    it("an acknowledged message is never lost, even on kill -9 right after; nothing is half-stored, and the clients' retries store nothing twice", async () => {
      const storage = await make()
      try {
        // No sends here: a send cut by the kill is retried only after its key's lease (2 minutes);
        // sending.test.ts tests that rule, and `pnpm crash` kills mid-send too.
        const result = await crashOnce(storage, { messages: 60, sends: 0, crashAfter: 20 })
        assert.isAtLeast(result.ackedBeforeKill, 20)
        assert.isAbove(result.retried, 0, "the kill came after the burst: nothing was in flight")
        assert.deepStrictEqual(crashFailures(result), [])
      } finally {
        await storage.done()
      }
    }, 600_000)
  })

