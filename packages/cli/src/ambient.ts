/**
 * Where a command's output goes and which engine it uses. A command normally runs in its
 * own process: output to stdout/stderr, the engine opened from the INBOX_* settings. Run
 * inside a server on behalf of an `inboxctl` process that found the data folder held
 * (local.ts), it writes into that request's buffers and uses the server's own engine; its
 * relative paths are the caller's, and its settings the caller's environment.
 *
 * The server runs such commands one at a time, so one module-level slot is enough.
 */
import type { Engine } from "@inbox/core"
import type { Context } from "effect"
import { resolve } from "node:path"

export interface InServer {
  readonly services: Context.Context<Engine>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  readonly stdout: Array<Buffer>
  readonly stderr: Array<Buffer>
  /** Set by runCommand: the command's exit code once it finishes. */
  finished?: Promise<number>
}

let current: InServer | undefined

export const inServer = (): InServer | undefined => current

export const setInServer = (value: InServer | undefined) => {
  current = value
}

/** Writes to the command's stdout; `done` runs once the bytes are taken. */
export const writeOut = (data: string | Uint8Array, done?: () => void) => {
  if (current === undefined) {
    process.stdout.write(data, done)
    return
  }
  current.stdout.push(Buffer.from(data))
  done?.()
}

export const writeErr = (data: string) => {
  if (current === undefined) process.stderr.write(data)
  else current.stderr.push(Buffer.from(data))
}

/** A path as the command's caller meant it (relative to the caller's working folder). */
export const callerPath = (path: string) => resolve(current?.cwd ?? process.cwd(), path)
