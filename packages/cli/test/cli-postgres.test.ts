/**
 * inboxctl on PostgreSQL (the flow of cli-flow.ts, when INBOX_TEST_DATABASE_URL is set), and
 * the usage rules and what a command loads before it runs, which need no storage.
 */
import { assert, describe, it } from "@effect/vitest"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { childEnv, cliFlow, inboxctl, inboxctlLoading, postgresStorage } from "./cli-flow.ts"

const url = process.env["INBOX_TEST_DATABASE_URL"]
if (url !== undefined && url !== "") cliFlow(postgresStorage(url))

describe("inboxctl usage", () => {
  it("an unknown flag is a usage error: exit 2", async () => {
    const run = await inboxctl(["inboxes", "list", "--bogus"], childEnv({}))
    assert.strictEqual(run.code, 2)
    assert.match(run.stderr, /unknown option '--bogus'/)
  })

  it("--help, a group's help and a usage error load commander and the catalogue's manifest, never core", async () => {
    const env = childEnv({ INBOX_DATA_DIR: join(tmpdir(), "inboxctl-never-created") })
    for (const args of [["--help"], ["messages", "--help"], ["messages", "list", "--help"], ["messages", "list"], ["bogus"]]) {
      const { run, loaded, loadedCore } = await inboxctlLoading(args, env)
      assert.include([0, 2], run.code, `${args.join(" ")}: ${run.stderr}`)
      assert.isTrue(loaded.some((url) => url.endsWith("/packages/cli/src/manifest.generated.ts")), args.join(" "))
      assert.deepStrictEqual(loadedCore, [], args.join(" "))
      assert.deepStrictEqual(loaded.filter((url) => url.includes("/node_modules/effect/")), [], args.join(" "))
    }
  })

  it("former spellings are hidden from help: the pod, inbox and key groups, key create's --inbox-id", async () => {
    const help = await inboxctl(["--help"], childEnv({}))
    assert.notMatch(help.stdout, /^ {2}(pod|inbox|key|send|search)\s/m)
    assert.match(help.stdout, /^ {2}api-keys\s/m)
    const former = await inboxctl(["key", "create", "--help"], childEnv({}))
    assert.strictEqual(former.code, 0)
    assert.include(former.stdout, "Usage: inboxctl key create [options]")
    assert.include(former.stdout, "--inbox <inbox_id>")
    assert.notInclude(former.stdout, "--inbox-id")
  })

  it("a resource command without an API key fails with unauthorized before opening storage", async () => {
    const run = await inboxctl(["pods", "list"], childEnv({ INBOX_DATA_DIR: join(tmpdir(), "inboxctl-never-created") }))
    assert.strictEqual(run.code, 1)
    assert.match(run.stderr, /^error: unauthorized: No API key given\.\nfix: Pass --api-key am_\.\.\. or set INBOX_API_KEY\.\n$/)
  })
})
