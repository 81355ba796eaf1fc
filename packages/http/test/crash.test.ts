/**
 * kill -9 under load (issue 7, Receive and Proof): a real server process gets SIGKILL in
 * the middle of a burst of inbound deliveries and sends, and is restarted on the same
 * storage (testkit crash.ts; `pnpm crash` runs the same with larger numbers and writes the
 * counts to BENCHMARKS.md). On PGlite always, on PostgreSQL when INBOX_TEST_DATABASE_URL
 * is set.
 */
import { assert, describe, it } from "@effect/vitest"
import { crashFailures, crashOnce, pgliteStorage, POSTGRES_ENV, postgresStorage } from "@inbox/testkit"

const url = process.env[POSTGRES_ENV]
const storages = [
  { name: "PGlite", make: pgliteStorage },
  ...(url === undefined || url === "" ? [] : [{ name: "PostgreSQL", make: () => postgresStorage(url) }])
]

for (const { name, make } of storages) {
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
}
