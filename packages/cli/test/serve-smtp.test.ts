/**
 * `inboxctl serve` with the SMTP receiver's flags (docs/mail-servers.md, "SMTP receiver"): `--smtp-listen`
 * starts it beside the HTTP server, `--smtp-tls-cert` / `--smtp-tls-key` (files) make it
 * offer STARTTLS, SIZE is advertised, and `--smtp-max-connections` is the per-IP limit.
 * The receiver logs the address it listens on.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, freePort, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

/** Opens a connection and reads until a line matches `until` (after `send`, when given). */
const talk = (port: number) => {
  const socket = connect(port, "127.0.0.1")
  let text = ""
  socket.on("data", (d: Buffer) => {
    text += d.toString("utf8")
  })
  const read = async (until: RegExp) => {
    for (let i = 0; i < 250 && !until.test(text); i++) await new Promise((r) => setTimeout(r, 20))
    return text
  }
  return { socket, read, send: (line: string) => void socket.write(`${line}\r\n`) }
}

describe("inboxctl serve --smtp-listen", { timeout: 120_000 }, () => {
  it("starts the SMTP receiver there and logs its address, with STARTTLS from the certificate files, SIZE advertised, and the per-IP connection limit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inbox-serve-smtp-"))
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=mx.inbox.localhost",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")
    ], { stdio: "ignore" })
    const smtpPort = await freePort()
    const { server } = await serve(ROOT, childEnv({ INBOX_DATA_DIR: join(dir, "data") }), [
      "--smtp-listen", `127.0.0.1:${smtpPort}`,
      "--smtp-tls-cert", join(dir, "cert.pem"),
      "--smtp-tls-key", join(dir, "key.pem"),
      "--smtp-max-connections", "1"
    ])
    const sockets: Array<Socket> = []
    try {
      const first = talk(smtpPort)
      sockets.push(first.socket)
      assert.match(await first.read(/^220 /m), /^220 /m)
      first.send("EHLO client.example")
      const ehlo = await first.read(/^250 /m)
      assert.match(ehlo, /^250[- ]STARTTLS\r?$/m)
      assert.match(ehlo, /^250[- ]SIZE \d+\r?$/m)
      const second = talk(smtpPort)
      sockets.push(second.socket)
      assert.match(await second.read(/^421 /m), /^421 /m)
    } finally {
      for (const s of sockets) s.destroy()
      server.kill("SIGTERM")
      await server.output
      rmSync(dir, { recursive: true, force: true })
    }
    const lines = (await server.output).stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> })
    const started = lines.filter((l) => l.message === "SMTP receiver listening")
    assert.deepStrictEqual(started.map((l) => l.annotations), [{ address: `127.0.0.1:${smtpPort}`, starttls: true }])
  })
})
