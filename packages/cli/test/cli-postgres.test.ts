/**
 * inboxctl on PostgreSQL (the flow of cli-flow.ts, when INBOX_TEST_DATABASE_URL is set), and
 * the usage rules, which need no storage.
 */
import { assert, describe, it } from "@effect/vitest"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { childEnv, cliFlow, inboxctl, postgresStorage } from "./cli-flow.ts"

const url = process.env["INBOX_TEST_DATABASE_URL"]
if (url !== undefined && url !== "") cliFlow(postgresStorage(url))

describe("inboxctl usage", () => {
  it("an unknown flag is a usage error: exit 2", async () => {
    const run = await inboxctl(["inbox", "list", "--bogus"], childEnv({}))
    assert.strictEqual(run.code, 2)
    assert.match(run.stderr, /unknown option '--bogus'/)
  })

  it("a resource command without an API key fails with unauthorized before opening storage", async () => {
    const run = await inboxctl(["pod", "list"], childEnv({ INBOX_DATA_DIR: join(tmpdir(), "inboxctl-never-created") }))
    assert.strictEqual(run.code, 1)
    assert.match(run.stderr, /^error: unauthorized: No API key given\.\nfix: Pass --api-key am_\.\.\. or set INBOX_API_KEY\.\n$/)
  })
})
