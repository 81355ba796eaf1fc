/**
 * The local channel: how `inboxctl` reaches a server that holds the embedded data folder.
 *
 * PGlite is one process's database, so while `inboxctl serve` runs on a data folder no
 * other process may open it. The server therefore listens on a Unix socket in that folder,
 * `inboxctl.sock`, with mode 0600: only the operating-system user that runs the server (and
 * root) can connect, the same people who could read the folder itself. A command that finds
 * the folder held sends its whole command line, its working folder and its INBOX_* settings
 * over the socket; the server runs the same command there, on its own engine (ambient.ts),
 * and answers with the exit code and the bytes written to stdout and stderr, which the
 * calling process writes out as its own. Every command that opens storage therefore works
 * the same against a running server, with no second API to keep in step.
 *
 * Protocol: one JSON line each way. Request `{"argv": [...], "cwd": "...", "env": {...}}`;
 * answer `{"code": 0, "stdout": base64, "stderr": base64}`. The server runs one command at a
 * time. `serve`, `mcp` (stdio), `restore` and `move-to-postgres` (which need the folder to
 * themselves) are refused there with a message saying to stop the server first.
 */
import type { Engine } from "@inbox/core"
import { CommanderError } from "commander"
import { Config, Effect, Layer, Option } from "effect"
import type { SqlClient } from "effect/sql"
import { chmodSync, rmSync } from "node:fs"
import { connect, createServer, type Server } from "node:net"
import { join } from "node:path"
import { type InServer, setInServer, writeErr } from "./ambient.ts"

export const SOCKET_FILE = "inboxctl.sock"

const NOT_THERE = new Set(["serve", "mcp", "restore", "move-to-postgres"])
const VALUE_FLAGS = new Set(["--data-dir", "--database-url", "--blob-url"])

/** The command's name: the first word of argv that is neither a flag nor a flag's value. */
const commandOf = (argv: ReadonlyArray<string>) => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ""
    if (VALUE_FLAGS.has(word)) i++
    else if (!word.startsWith("-")) return word
  }
  return undefined
}

interface Request {
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Record<string, string>
}

interface Answer {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const dataDir = Config.String("INBOX_DATA_DIR").pipe(Config.withDefault("./.inbox"))

/** Runs one forwarded command in this (server) process. */
const runHere = async (request: Request, services: InServer["services"]): Promise<Answer> => {
  const state: InServer = { services, env: request.env, cwd: request.cwd, stdout: [], stderr: [] }
  setInServer(state)
  let code = 0
  try {
    const name = commandOf(request.argv)
    if (name !== undefined && NOT_THERE.has(name)) {
      writeErr(`error: data_folder_in_use: \`inboxctl ${name}\` needs the data folder to itself: stop the server first\n`)
      code = 1
    } else {
      // Loaded here: program.ts imports the commands, which import runtime.ts, which imports this module.
      const { buildProgram } = await import("./program.ts")
      await buildProgram().parseAsync([...request.argv], { from: "user" })
      code = state.finished === undefined ? 0 : await state.finished
    }
  } catch (error) {
    if (error instanceof CommanderError) code = error.exitCode === 0 ? 0 : 2
    else {
      writeErr(`error: internal_error: ${error instanceof Error ? error.message : String(error)}\n`)
      code = 1
    }
  } finally {
    setInServer(undefined)
  }
  return { code, stdout: Buffer.concat(state.stdout).toString("base64"), stderr: Buffer.concat(state.stderr).toString("base64") }
}

/**
 * The server's end (embedded database only): listens on `inboxctl.sock` in the data folder
 * for the life of the server; the socket file is removed when it stops.
 */
export const LocalChannelLive = Layer.effectDiscard(Effect.gen(function*() {
  if (Option.isSome(yield* Config.option(Config.String("INBOX_DATABASE_URL")))) return
  const path = join(yield* dataDir, SOCKET_FILE)
  const services = yield* Effect.context<Engine>()
  let queue: Promise<unknown> = Promise.resolve()
  const server = createServer((socket) => {
    let text = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      text += chunk
      const end = text.indexOf("\n")
      if (end < 0) return
      socket.removeAllListeners("data")
      let request: Request
      try {
        request = JSON.parse(text.slice(0, end)) as Request
        if (!Array.isArray(request.argv) || typeof request.cwd !== "string" || typeof request.env !== "object") throw new Error("bad request")
      } catch {
        // Not one of ours: nothing runs.
        socket.destroy()
        return
      }
      const run = queue.then(() => runHere(request, services))
      queue = run.catch(() => undefined)
      void run.then((answer) => socket.end(`${JSON.stringify(answer)}\n`))
    })
    socket.on("error", () => socket.destroy())
  })
  yield* Effect.acquireRelease(
    Effect.callback<Server>((resume) => {
      // The folder is ours (we hold its lock): a socket left by a process that died is stale.
      rmSync(path, { force: true })
      // Created with mode 0600 (umask), then set so: never reachable by another user.
      const umask = process.umask(0o177)
      try {
        server.listen(path, () => {
          chmodSync(path, 0o600)
          resume(Effect.succeed(server))
        })
      } finally {
        process.umask(umask)
      }
      server.once("error", (e) => resume(Effect.die(e)))
    }),
    (s) => Effect.callback<void>((resume) => {
      s.close(() => resume(Effect.void))
    })
  )
}).pipe(Effect.orDie))

/**
 * The client's end: sends `argv` to the server holding the data folder and writes out what
 * the command wrote there; answers its exit code, or undefined when no server answers on
 * the folder's socket (the folder is held by something else: the caller reports that).
 */
export const forwardToServer = (argv: ReadonlyArray<string>): Effect.Effect<number | undefined> =>
  Effect.gen(function*() {
    const path = join(yield* dataDir, SOCKET_FILE)
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith("INBOX_") && v !== undefined) env[k] = v
    const request: Request = { argv, cwd: process.cwd(), env }
    const answer = yield* Effect.callback<Answer | undefined>((resume) => {
      const socket = connect(path)
      let text = ""
      socket.setEncoding("utf8")
      socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`))
      socket.on("data", (chunk: string) => (text += chunk))
      socket.on("end", () => resume(Effect.succeed(text === "" ? undefined : JSON.parse(text) as Answer)))
      socket.on("error", () => resume(Effect.succeed(undefined)))
    })
    if (answer === undefined) return undefined
    yield* Effect.promise(() => new Promise<void>((done) => process.stdout.write(Buffer.from(answer.stdout, "base64"), () => done())))
    yield* Effect.promise(() => new Promise<void>((done) => process.stderr.write(Buffer.from(answer.stderr, "base64"), () => done())))
    return answer.code
  }).pipe(Effect.orDie)
