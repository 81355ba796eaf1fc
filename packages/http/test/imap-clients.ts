/**
 * The real IMAP clients the IMAP tests drive: imapflow (npm), signed in over plain text on
 * loopback and logged out when the test's scope closes, and Python's imaplib (the system's
 * python3) running a script given its arguments.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { ImapFlow } from "imapflow"

export const imapflowClient = (port: number, user: string, pass: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const c = new ImapFlow({ host: "127.0.0.1", port, secure: false, doSTARTTLS: false, auth: { user, pass }, logger: false, maxIdleTime: 60_000 })
      await c.connect()
      return c
    }),
    (c) => Effect.promise(() => c.logout().catch(() => undefined))
  )

export const python = (script: string, args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile("python3", ["-c", script, ...args], { timeout: 30_000 }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr })))
  )
