/**
 * The README's quick start, run as written so it cannot rot: its first block (the server,
 * with the SMTP receiver on a local port) in the background, its second block (an
 * organization, an inbox, a message sent over SMTP with curl, listed, answered) with bash,
 * against that real server. Only the ports move (to free ones, so the test never meets
 * another server on 3000 or 2525) and the data lives in a temp folder (INBOX_DATA_DIR).
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@inbox/testkit"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../", import.meta.url))

/** The `sh` blocks of the README's quick-start section, in order. */
const quickStart = (): ReadonlyArray<string> => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const from = readme.indexOf("## Quick start")
  const to = readme.indexOf("\n## ", from + 1)
  return [...readme.slice(from, to < 0 ? undefined : to).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "")
}

const stopped = (server: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (server.exitCode !== null || server.signalCode !== null) return resolve()
    server.once("exit", () => resolve())
    server.kill("SIGTERM")
  })

describe("the README's quick start", () => {
  it("starts the server with its SMTP receiver, creates an organization and an inbox, receives a message over SMTP, lists it and replies, as written", async () => {
    const blocks = quickStart()
    assert.strictEqual(blocks.length, 2, "the quick start has a server block and a commands block")
    const [http, smtp] = [await freePort(), await freePort()]
    const ports = (block: string) => block.replaceAll("localhost:3000", `localhost:${http}`).replaceAll("127.0.0.1:2525", `127.0.0.1:${smtp}`)
    const data = mkdtempSync(join(tmpdir(), "quickstart-"))
    // The README reader's environment: no INBOX_* of ours, the server's port and data folder.
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("INBOX_"))),
      INBOX_PORT: String(http),
      INBOX_DATA_DIR: data
    }
    const server = spawn("bash", ["-c", ports(blocks[0] ?? "")], { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] })
    let serverErr = ""
    server.stderr?.on("data", (chunk: Buffer) => void (serverErr += chunk.toString()))
    try {
      const out = await new Promise<string>((resolve, reject) =>
        execFile("bash", ["-e", "-c", ports(blocks[1] ?? "")], { cwd: ROOT, env, timeout: 240_000, maxBuffer: 4 << 20 }, (error, stdout, stderr) =>
          error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stdout}\n${stderr}\nserver: ${serverErr}`))
        )
      )
      // The inbox, the message as received, the reply in its thread, and the reply as it would leave.
      assert.match(out, /email\s+support@inbox\.localhost/)
      assert.match(out, /Ann <ann@example\.test>\s+Where is my order\?\s+received,unread/)
      assert.match(out, /message_id\s+msg_[0-9a-f]{24}/)
      const thread = /^\{.*"threads".*\}$/m.exec(out)?.[0] ?? "{}"
      const threads = JSON.parse(thread) as { threads: ReadonlyArray<{ message_count: number; subject: string; labels: ReadonlyArray<string> }> }
      assert.deepStrictEqual(threads.threads.map((t) => [t.subject, t.message_count, t.labels.includes("sent")]), [["Where is my order?", 2, true]])
      assert.include(out, "Subject: Re: Where is my order?")
      assert.include(out, "Hello Ann, it ships today.")
    } finally {
      await stopped(server)
      rmSync(data, { recursive: true, force: true })
    }
  }, 300_000)
})
