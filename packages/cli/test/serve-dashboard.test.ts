/**
 * `inboxctl serve` tells the person who started it where the dashboard is: once the server
 * answers, its output has the line `dashboard: <url>/`, the address it listens on (the
 * embedded database in a fresh data folder), and that URL serves the dashboard page. The
 * line is a log line: in JSON mode (the default) every line of stdout, the first included,
 * is a JSON object.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

describe("inboxctl serve", { timeout: 120_000 }, () => {
  it("prints the dashboard's URL when it starts, as a JSON log line like every other line, and the page answers there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inbox-serve-"))
    const { server, url } = await serve(ROOT, childEnv({ INBOX_DATA_DIR: join(dir, "data") }))
    try {
      const page = await fetch(`${url}/`)
      assert.strictEqual(page.status, 200)
      assert.match(await page.text(), /src="\/dashboard\/index-[\w-]+\.js"/)
    } finally {
      server.kill("SIGTERM")
    }
    const run = await server.output
    rmSync(dir, { recursive: true, force: true })
    const lines = run.stdout.split("\n").filter((l) => l !== "")
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l) as { message: unknown }
      } catch {
        return assert.fail(`not a JSON line: ${l}`)
      }
    })
    assert.include(parsed.map((l) => l.message), `dashboard: ${url}/`)
  })
})
