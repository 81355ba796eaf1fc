/**
 * `inboxctl serve` tells the person who started it where the dashboard is: once the server
 * answers, its output has the line `dashboard: <url>/`, the address it listens on (the
 * embedded database in a fresh data folder), and that URL serves the dashboard page.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

describe("inboxctl serve", { timeout: 120_000 }, () => {
  it("prints the dashboard's URL when it starts, and the page answers there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inbox-serve-"))
    const { server, url } = await serve(ROOT, childEnv({ INBOX_DATA_DIR: join(dir, "data") }))
    try {
      const page = await fetch(`${url}/`)
      assert.strictEqual(page.status, 200)
      assert.include(await page.text(), "/dashboard/app.js")
    } finally {
      server.kill("SIGTERM")
    }
    const run = await server.output
    rmSync(dir, { recursive: true, force: true })
    assert.include(run.stdout.split("\n"), `dashboard: ${url}/`)
  })
})
