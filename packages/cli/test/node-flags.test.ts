/**
 * `inboxctl serve` runs with the Node flags of INBOX_NODE_FLAGS (settings registry): it
 * replaces itself with them on its command line before loading the engine, so the young
 * generation V8 sizes at start is the small one; a flag the operator gave in NODE_OPTIONS
 * stays theirs; empty means Node's defaults. Read from /proc: the process keeps its id.
 */
import { serverEnv, startServer } from "@inbox/testkit"
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "")

const serveWith = async (extra: Record<string, string>) => {
  const dir = mkdtempSync(join(tmpdir(), "inbox-node-flags-"))
  const server = await startServer(serverEnv({ INBOX_DATA_DIR: dir, ...extra }))
  try {
    const health = await fetch(`${server.url}/health`)
    assert.strictEqual(health.status, 200)
    return commandLine(server.child.pid!)
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("inboxctl serve: the Node flags it runs with (INBOX_NODE_FLAGS)", () => {
  it("by default, the server process runs with a small young generation and slower old-generation growth", async () => {
    const args = await serveWith({})
    assert.includeMembers(args, ["--max-semi-space-size=16", "--heap-growing-percent=100", "serve"])
    // The flags come before the script, where node reads its own options.
    assert.isBelow(args.indexOf("--max-semi-space-size=16"), args.findIndex((a) => a.endsWith("main.ts")))
  }, 60_000)

  it("a flag the operator gave in NODE_OPTIONS is left to them; the others still apply", async () => {
    const args = await serveWith({ NODE_OPTIONS: "--max-semi-space-size=8" })
    assert.notInclude(args, "--max-semi-space-size=16")
    assert.include(args, "--heap-growing-percent=100")
  }, 60_000)

  it("empty: Node's defaults, the command line as it was started", async () => {
    const args = await serveWith({ INBOX_NODE_FLAGS: "" })
    assert.isFalse(args.some((a) => a.startsWith("--max-semi-space-size") || a.startsWith("--heap-growing-percent")), args.join(" "))
  }, 60_000)
})
