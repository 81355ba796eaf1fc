/**
 * The installable package: `pnpm pack` of the CLI, installed with npm into an empty folder
 * (no workspace, no TypeScript loader), must give a working `inboxctl`: it creates an
 * organization, serves on the embedded database, answers /health and an authenticated
 * request, parses mail in its worker thread (the bundle's second entry) with our
 * format=flowed fix to libmime (a pnpm patch npm would not apply, so the build bundles it),
 * and stops on SIGTERM with exit code 0.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, freePort, runProcess, startProcess, waitFor } from "./processes.ts"

const CLI = fileURLToPath(new URL("../", import.meta.url))

describe("the packed inboxctl", { timeout: 900_000 }, () => {
  let dir = ""
  let bin = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-package-"))
    const packed = await runProcess("pnpm", ["pack", "--pack-destination", dir], { cwd: CLI, env: childEnv() })
    assert.strictEqual(packed.code, 0, packed.stderr + packed.stdout)
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"))
    assert.isDefined(tarball)
    const app = join(dir, "app")
    // An empty folder with a package.json of its own, so npm installs here and not in a parent.
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), "{\"name\":\"app\",\"private\":true}\n")
    const installed = await runProcess("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", join(dir, tarball ?? "")], { cwd: app, env: childEnv() })
    assert.strictEqual(installed.code, 0, installed.stderr)
    bin = join(app, "node_modules", ".bin", "inboxctl")
  }, 900_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("installs compiled JavaScript with source maps and no TypeScript", () => {
    const dist = join(dir, "app", "node_modules", "@inbox", "cli", "dist")
    assert.isTrue(existsSync(join(dist, "inboxctl.js")))
    assert.isTrue(existsSync(join(dist, "inboxctl.js.map")))
    assert.isTrue(existsSync(join(dist, "migrations", "0001_foundation.sql")))
    assert.isTrue(existsSync(join(dist, "dashboard", "app.js")), "the dashboard files ship beside the bundle")
    assert.isFalse(existsSync(join(dir, "app", "node_modules", "tsx")))
  })

  it("serves on the embedded database: /health, an authenticated request, mail parsed in the worker, and exit 0 on SIGTERM", async () => {
    const data = join(dir, "data")
    const env = childEnv({ INBOX_DATA_DIR: data, INBOX_INBOUND_SECRET: "package-test-secret" })
    const created = await runProcess(bin, ["org", "create", "--owner-email", "ops@example.com", "--verified", "--json"], { env })
    assert.strictEqual(created.code, 0, created.stderr)
    const { api_key } = JSON.parse(created.stdout) as { api_key: string }

    const port = await freePort()
    const server = startProcess(bin, ["serve", "--port", String(port)], { env })
    const url = `http://127.0.0.1:${port}`
    await waitFor(`${url}/health`, server)
    const auth = { authorization: `Bearer ${api_key}`, "content-type": "application/json" }
    const inbox = await fetch(`${url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "ops" }) })
    assert.strictEqual(inbox.status, 200)
    const raw = "From: Ann <ann@example.org>\r\nTo: ops@inbox.localhost\r\nSubject: Packed\r\nMessage-ID: <packed-1@example.org>\r\n\r\nHello.\r\n"
    const delivered = await fetch(`${url}/inbound/raw?to=ops@inbox.localhost`, {
      method: "POST",
      headers: { "x-inbound-secret": "package-test-secret" },
      body: raw
    })
    assert.strictEqual(delivered.status, 200, await delivered.clone().text())
    const dashboard = await fetch(`${url}/dashboard/app.js`)
    assert.strictEqual(dashboard.status, 200, "the dashboard is served from the installed package")
    // The QR encoder comes from the installed qrcode-generator package, found at start.
    const qr = await fetch(`${url}/dashboard/qrcode.mjs`)
    assert.strictEqual(qr.status, 200, "the vendored QR module is served from the installed dependency")
    assert.include(await qr.text(), "export default qrcode")
    const listed = await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages`, { headers: auth })
    const body = (await listed.json()) as { messages: ReadonlyArray<{ subject: string }> }
    assert.deepStrictEqual(body.messages.map((m) => m.subject), ["Packed"])

    // Unpatched libmime runs a soft-broken quote into the reply under it (RFC 3676 4.5).
    const flowed = "From: Ann <ann@example.org>\r\nTo: ops@inbox.localhost\r\nSubject: Flowed\r\nMessage-ID: <packed-2@example.org>\r\n" +
      "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8; format=flowed\r\n\r\n> the question ends soft \r\nthe answer\r\n"
    const second = await fetch(`${url}/inbound/raw?to=ops@inbox.localhost`, {
      method: "POST",
      headers: { "x-inbound-secret": "package-test-secret" },
      body: flowed
    })
    assert.strictEqual(second.status, 200, await second.clone().text())
    const both = (await (await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages`, { headers: auth })).json()) as {
      messages: ReadonlyArray<{ subject: string; message_id: string }>
    }
    const id = both.messages.find((m) => m.subject === "Flowed")?.message_id ?? ""
    const read = (await (await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages/${encodeURIComponent(id)}`, { headers: auth })).json()) as { text?: string }
    assert.strictEqual(read.text, "> the question ends soft \nthe answer")

    server.kill("SIGTERM")
    const run = await server.output
    assert.strictEqual(run.code, 0, run.stderr)
  })
})
