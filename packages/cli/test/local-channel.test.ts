/**
 * The local channel (local.ts): with the embedded database, `inboxctl` commands work while
 * `inboxctl serve` holds the data folder. A real server runs; commands run as separate
 * processes send themselves over the folder's socket (mode 0600), and
 * the server runs them on its own engine: an operator command, a catalogue command with an
 * API key, `inbound` with a file, and `backup`, whose archive restores whole. A command that
 * needs the folder to itself is refused with a message saying to stop the server. Global
 * options are read before or after the command alike.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, createOrg, runProcess, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const MAIN = ["--import", "tsx", "packages/cli/src/main.ts"]
/** From any folder: tsx's loader and the entry by their absolute places. */
const MAIN_ABSOLUTE = ["--import", new URL("../../../node_modules/tsx/dist/loader.mjs", import.meta.url).href, fileURLToPath(new URL("../src/main.ts", import.meta.url))]

describe("inboxctl while the server runs on the embedded database", { timeout: 600_000 }, () => {
  let dir = ""
  let env: Record<string, string> = {}
  let running: Awaited<ReturnType<typeof serve>> | undefined

  const inboxctl = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
    runProcess(process.execPath, [...MAIN, ...args], { cwd: ROOT, env: { ...env, ...extra } })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-local-"))
    env = childEnv({ INBOX_DATA_DIR: join(dir, "data") })
    await createOrg(ROOT, env)
    running = await serve(ROOT, env)
  }, 180_000)
  afterAll(async () => {
    if (running !== undefined) {
      running.server.kill("SIGTERM")
      await running.server.output
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it("commands reach the running server over the data folder's socket (mode 0600) and run on its engine", async () => {
    const url = running!.url
    assert.strictEqual(statSync(join(dir, "data", "inboxctl.sock")).mode & 0o777, 0o600)

    // An operator command: the key it prints works against the running server at once.
    const created = await inboxctl(["org", "create", "--owner-email", "second@example.com", "--verified", "--json"])
    assert.strictEqual(created.code, 0, created.stderr)
    const key = (JSON.parse(created.stdout) as { api_key: string }).api_key
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const inbox = await fetch(`${url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "local" }) })
    assert.strictEqual(inbox.status, 200)

    // A catalogue command with the key from INBOX_API_KEY, and `inbound` reading a file.
    const listed = await inboxctl(["inboxes", "list", "--json"], { INBOX_API_KEY: key })
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.include(listed.stdout, "local@inbox.localhost")
    const eml = join(dir, "hello.eml")
    writeFileSync(eml, "From: Ann <ann@example.org>\r\nTo: local@inbox.localhost\r\nSubject: Over the socket\r\nMessage-ID: <local-1@example.org>\r\n\r\nHello.\r\n")
    const delivered = await inboxctl(["inbound", eml, "--to", "local@inbox.localhost", "--json"])
    assert.strictEqual(delivered.code, 0, delivered.stderr)
    const messages = await fetch(`${url}/v0/inboxes/local@inbox.localhost/messages`, { headers: auth })
    assert.include(JSON.stringify(await messages.json()), "Over the socket")

    // Errors come back as the command's own: exit code and error line.
    const refused = await inboxctl(["inboxes", "get", "nobody@inbox.localhost"], { INBOX_API_KEY: key })
    assert.strictEqual(refused.code, 1)
    assert.match(refused.stderr, /^error: not_found/m)
    const serveAgain = await inboxctl(["serve", "--port", "1"])
    assert.strictEqual(serveAgain.code, 1)
    assert.include(serveAgain.stderr, "stop the server first")
  })

  it("global options are accepted before or after the command: --data-dir, --api-key and --json", async () => {
    const key = await createOrg(ROOT, env)
    // From another folder, without INBOX_DATA_DIR: only the flag names the data folder.
    const { INBOX_DATA_DIR: data = "", ...rest } = env
    const options = ["--data-dir", data, "--api-key", key, "--json"]
    const before = await runProcess(process.execPath, [...MAIN_ABSOLUTE, ...options, "pods", "list"], { cwd: dir, env: rest })
    const after = await runProcess(process.execPath, [...MAIN_ABSOLUTE, "pods", "list", ...options], { cwd: dir, env: rest })
    const between = await runProcess(process.execPath, [...MAIN_ABSOLUTE, "--json", "pods", "--data-dir", data, "list", "--api-key", key], { cwd: dir, env: rest })
    assert.strictEqual(before.code, 0, before.stderr)
    assert.strictEqual((JSON.parse(before.stdout) as { count: number }).count, 1)
    assert.strictEqual(after.stdout, before.stdout)
    assert.strictEqual(between.stdout, before.stdout)
  })

  it("`inboxctl backup` works against the running server, and the archive restores with every row and blob", async () => {
    const file = join(dir, "running.tar")
    const backup = await inboxctl(["backup", file])
    assert.strictEqual(backup.code, 0, backup.stderr)
    assert.match(backup.stdout, /^backed up .* to .*running\.tar: \d+ rows, [1-9]\d* blobs/)
    // The server went on serving during and after it.
    assert.strictEqual((await fetch(`${running!.url}/health`)).status, 200)
    const restored = await inboxctl(["restore", file], { INBOX_DATA_DIR: join(dir, "restored") })
    assert.strictEqual(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /^restored .* \d+ rows, [1-9]\d* blobs/)
    // The restored folder opens and holds the message delivered over the socket.
    const migrate = await inboxctl(["migrate"], { INBOX_DATA_DIR: join(dir, "restored") })
    assert.strictEqual(migrate.code, 0, migrate.stderr)
    assert.include(migrate.stdout, "up to date")
  })
})
