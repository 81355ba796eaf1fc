/**
 * The client's end of the local channel (local.ts is the server's): how an `inboxctl`
 * command reaches a running server instead of opening the storage itself.
 *
 * A server listens on a Unix socket, mode 0600, so only the operating-system user that runs
 * it (and root) can connect. With the embedded database the socket is `inboxctl.sock` in the
 * data folder (PGlite is one process's database: while a server holds the folder, nothing
 * else may open it). With PostgreSQL it is in a folder of the user's own (XDG_RUNTIME_DIR,
 * else the system's temp folder, `inboxctl-<uid>`, mode 0700), named after a hash of the
 * database URL, so a command reaches a server of the same database and no other.
 *
 * Protocol: one JSON line each way. A command sends `{"argv": [...], "cwd": "...", "env":
 * {...}}` (its INBOX_* settings); the server runs the same command line on its own engine
 * and answers `{"code": 0, "stdout": base64, "stderr": base64}`, which the command writes out
 * as its own. `inboxctl mcp` sends `{"mcp": {"api_key": "...", "read_only": false}, "env":
 * {...}}`: the server answers `{"mcp": "ready"}` once the key is admitted (or an answer as
 * above when it is refused), and from then on the socket carries the JSON-RPC lines both ways
 * until either side closes it.
 *
 * This module loads no part of the engine: a command served by a running server costs a Node
 * start, the command tree and one round trip.
 */
import { createHash } from "node:crypto"
import { lstatSync, mkdirSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SETTING_DEFAULTS } from "./manifest.generated.ts"

export const SOCKET_FILE = "inboxctl.sock"

export interface CommandRequest {
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Record<string, string>
}

export interface McpRequest {
  readonly mcp: { readonly api_key?: string; readonly read_only: boolean }
  readonly env: Record<string, string>
}

export interface Answer {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export const MCP_READY = { mcp: "ready" } as const

type Env = Readonly<Record<string, string | undefined>>

const uid = () => process.getuid?.() ?? 0

/**
 * The user's own folder for PostgreSQL servers' sockets: a folder owned by this user that no
 * one else may enter. `create` makes it (the server); a folder of the wrong owner or mode is
 * never used, so another user cannot plant a socket that receives our settings.
 */
export const runtimeDir = (env: Env, create: boolean): string | undefined => {
  const base = env["XDG_RUNTIME_DIR"] !== undefined && env["XDG_RUNTIME_DIR"] !== "" ? env["XDG_RUNTIME_DIR"] : tmpdir()
  const dir = join(base, `inboxctl-${uid()}`)
  try {
    if (create) mkdirSync(dir, { recursive: true, mode: 0o700 })
    const stat = lstatSync(dir)
    return stat.isDirectory() && stat.uid === uid() && (stat.mode & 0o077) === 0 ? dir : undefined
  } catch {
    return undefined
  }
}

/** Where a server of these settings listens (undefined: nowhere we would trust). */
export const socketPath = (env: Env, options: { readonly create?: boolean } = {}): string | undefined => {
  const url = env["INBOX_DATABASE_URL"]
  if (url !== undefined) {
    const dir = runtimeDir(env, options.create === true)
    return dir === undefined ? undefined : join(dir, `pg-${createHash("sha256").update(url).digest("hex").slice(0, 16)}.sock`)
  }
  return join(env["INBOX_DATA_DIR"] ?? SETTING_DEFAULTS.INBOX_DATA_DIR, SOCKET_FILE)
}

/** The caller's INBOX_* settings, which the command runs with in the server. */
export const settingsEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith("INBOX_") && v !== undefined) env[k] = v
  return env
}

/** The server's answer line, or undefined for none (it stopped before answering: the command runs here instead). */
const parseAnswer = (text: string): Answer | undefined => {
  try {
    return text === "" ? undefined : JSON.parse(text) as Answer
  } catch {
    return undefined
  }
}

const write = (stream: NodeJS.WriteStream, data: Buffer) =>
  new Promise<void>((done) => (data.length === 0 ? done() : stream.write(data, () => done())))

/**
 * Sends `argv` to the running server and writes out what the command wrote there; its exit
 * code, or undefined when no server answers (no socket, or a stale one).
 */
export const forward = (argv: ReadonlyArray<string>): Promise<number | undefined> => {
  const path = socketPath(process.env)
  if (path === undefined) return Promise.resolve(undefined)
  const request: CommandRequest = { argv, cwd: process.cwd(), env: settingsEnv() }
  return new Promise<Answer | undefined>((resolve) => {
    const socket = connect(path)
    let text = ""
    socket.setEncoding("utf8")
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`))
    socket.on("data", (chunk: string) => (text += chunk))
    socket.on("end", () => resolve(parseAnswer(text)))
    socket.on("error", () => resolve(undefined))
  }).then(async (answer) => {
    if (answer === undefined) return undefined
    await write(process.stdout, Buffer.from(answer.stdout, "base64"))
    await write(process.stderr, Buffer.from(answer.stderr, "base64"))
    return answer.code
  })
}

/**
 * `inboxctl mcp` through the running server: once the server admitted the key, stdin goes to
 * the socket and the socket to stdout, line for line, until the client closes stdin or the
 * server ends the session. Undefined when no server answers.
 */
export const forwardMcp = (options: { readonly apiKey: string | undefined; readonly readOnly: boolean }): Promise<number | undefined> => {
  const path = socketPath(process.env)
  if (path === undefined) return Promise.resolve(undefined)
  const request: McpRequest = {
    mcp: { ...(options.apiKey === undefined ? {} : { api_key: options.apiKey }), read_only: options.readOnly },
    env: settingsEnv()
  }
  return new Promise<number | undefined>((resolve) => {
    const socket = connect(path)
    let head = Buffer.alloc(0)
    let streaming = false
    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf(0x0a)
      if (end < 0) return
      socket.off("data", onHead)
      const first = parseAnswer(head.subarray(0, end).toString("utf8")) as Answer | typeof MCP_READY | undefined
      if (first === undefined) {
        socket.destroy()
        return resolve(undefined)
      }
      if (!("mcp" in first)) {
        // Refused (no key, a revoked key): the answer of a command.
        socket.destroy()
        void write(process.stdout, Buffer.from(first.stdout, "base64"))
          .then(() => write(process.stderr, Buffer.from(first.stderr, "base64")))
          .then(() => resolve(first.code))
        return
      }
      streaming = true
      const rest = head.subarray(end + 1)
      if (rest.length > 0) process.stdout.write(rest)
      socket.pipe(process.stdout, { end: false })
      process.stdin.pipe(socket)
      socket.on("end", () => resolve(0))
    }
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`))
    socket.on("data", onHead)
    socket.on("close", () => resolve(streaming ? 0 : undefined))
    socket.on("error", () => resolve(streaming ? 1 : undefined))
  })
}
