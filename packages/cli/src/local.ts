/**
 * The server's end of the local channel (client.ts is the command's end, and says where the
 * socket is and what goes over it). `inboxctl serve` listens for the life of the server; a
 * command sent over the socket runs here, on the server's own engine (ambient.ts), with the
 * caller's command line, working folder and INBOX_* settings, and its exit code and output
 * go back. Every command therefore works the same against a running server, with no second
 * API to keep in step, and costs the caller no engine start.
 *
 * Commands run one at a time (their output is captured through one slot, ambient.ts).
 * `serve`, `restore` and `move-to-postgres`, which need the storage to themselves, are
 * refused with a message saying to stop the server first. An MCP session (`inboxctl mcp`)
 * admits its key like a command, then carries JSON-RPC lines both ways for as long as the
 * client keeps it open, beside the commands, through the same tools as /mcp (@inbox/mcp).
 *
 * With PostgreSQL, several servers may share the database: the first on this machine
 * listens, the others leave the socket to it.
 */
import { type Engine, isApiError, settingDefault } from "@inbox/core"
import { runStdio } from "@inbox/mcp"
import { CommanderError, type Command } from "commander"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Option } from "effect"
import { rmSync } from "node:fs"
import { chmodSync } from "node:fs"
import { connect, createServer, type Server, type Socket } from "node:net"
import { PassThrough } from "node:stream"
import { type InServer, setInServer, writeErr } from "./ambient.ts"
import { type Answer, type CommandRequest, MCP_READY, type McpRequest, socketPath } from "./client.ts"
import { apiKeyFrom, authenticate, report } from "./runtime.ts"

const NOT_THERE = new Set(["serve", "mcp", "restore", "move-to-postgres"])
const VALUE_FLAGS = new Set(["--data-dir", "--database-url", "--blob-url", "--api-key"])

/** The command's name: the first word of argv that is neither a flag nor a flag's value. */
const commandOf = (argv: ReadonlyArray<string>) => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ""
    if (VALUE_FLAGS.has(word)) i++
    else if (!word.startsWith("-")) return word
  }
  return undefined
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const isCommand = (u: Record<string, unknown>): u is CommandRequest & Record<string, unknown> =>
  Array.isArray(u["argv"]) && u["argv"].every((a) => typeof a === "string") && typeof u["cwd"] === "string" && isRecord(u["env"])

const isMcp = (u: Record<string, unknown>): u is McpRequest & Record<string, unknown> =>
  isRecord(u["mcp"]) && typeof u["mcp"]["read_only"] === "boolean" &&
  (u["mcp"]["api_key"] === undefined || typeof u["mcp"]["api_key"] === "string") && isRecord(u["env"])

type Services = InServer["services"]

/** Runs one forwarded command in this (server) process. */
const runHere = async (request: CommandRequest, services: Services, program: () => Command): Promise<Answer> => {
  const state: InServer = { services, env: request.env, cwd: request.cwd, stdout: [], stderr: [] }
  setInServer(state)
  let code = 0
  try {
    const name = commandOf(request.argv)
    if (name !== undefined && NOT_THERE.has(name)) {
      writeErr(`error: data_folder_in_use: \`inboxctl ${name}\` needs the data folder to itself: stop the server first\n`)
      code = 1
    } else {
      await program().parseAsync([...request.argv], { from: "user" })
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

/** An MCP session over the socket: the key admitted with the caller's settings, then JSON-RPC lines until either side closes. */
const serveMcp = async (request: McpRequest, socket: Socket, rest: Buffer, services: Services) => {
  const admitted = await Effect.runPromiseExit(
    Effect.flatMap(apiKeyFrom(request.mcp.api_key), authenticate).pipe(
      Effect.provide(services),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: request.env }))
    )
  )
  if (Exit.isFailure(admitted)) {
    const error = Cause.findErrorOption(admitted.cause)
    const line = Option.isSome(error) && isApiError(error.value) ? report(error.value) : "error: internal_error: the key could not be checked"
    const answer: Answer = { code: 1, stdout: "", stderr: Buffer.from(`${line}\n`).toString("base64") }
    socket.end(`${JSON.stringify(answer)}\n`)
    return
  }
  const input = new PassThrough()
  if (rest.length > 0) input.write(rest)
  socket.pipe(input)
  socket.on("close", () => input.end())
  socket.write(`${JSON.stringify(MCP_READY)}\n`)
  await Effect.runPromise(runStdio(admitted.value, { readOnly: request.mcp.read_only, input, output: socket }).pipe(Effect.provide(services)))
  socket.end()
}

/** Whether a server already answers on `path` (PostgreSQL: another server of the same database). */
const answers = (path: string) =>
  Effect.callback<boolean>((resume) => {
    const probe = connect(path)
    probe.on("connect", () => (probe.destroy(), resume(Effect.succeed(true))))
    probe.on("error", () => resume(Effect.succeed(false)))
  })

/**
 * The server's end, for the life of the server: listens on the socket client.ts names for
 * these settings (removed when it stops), runs what arrives with the command tree `program`
 * builds (program.ts, passed in rather than imported: it loads this module when it serves).
 */
export const localChannel = (program: () => Command) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const databaseUrl = yield* Config.option(Config.String("INBOX_DATABASE_URL"))
    const dataDir = yield* Config.String("INBOX_DATA_DIR").pipe(Config.withDefault(settingDefault("INBOX_DATA_DIR")))
    const runtime = yield* Config.option(Config.String("XDG_RUNTIME_DIR"))
    const path = Option.isSome(databaseUrl)
      ? socketPath({ INBOX_DATABASE_URL: databaseUrl.value, XDG_RUNTIME_DIR: Option.getOrUndefined(runtime) }, { create: true })
      : socketPath({ INBOX_DATA_DIR: dataDir })
    if (path === undefined) {
      return yield* Effect.logWarning("inboxctl commands will open the database themselves: no private folder for the local socket (XDG_RUNTIME_DIR or the temp folder)")
    }
    if (Option.isSome(databaseUrl) && (yield* answers(path))) {
      return yield* Effect.logInfo(`inboxctl commands go to the server already listening on ${path}`)
    }
    // What the commands it runs import, loaded now: the first command waits for nothing, and
    // rebuilding dist/ under a running server (scripts/inboxctl) cannot take a chunk from it.
    yield* Effect.promise(() => Promise.all([import("./invoke.ts"), import("./operating.ts"), import("./runtime.ts")]))
    const services = yield* Effect.context<Engine>()
    const sockets = new Set<Socket>()
    let queue: Promise<unknown> = Promise.resolve()
    // Half-open: an MCP client that closed its input still gets the answers under way.
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => socket.destroy())
      let head = Buffer.alloc(0)
      const onHead = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk])
        const end = head.indexOf(0x0a)
        if (end < 0) return
        socket.off("data", onHead)
        socket.pause()
        let request: unknown
        try {
          request = JSON.parse(head.subarray(0, end).toString("utf8"))
        } catch {
          request = undefined
        }
        if (isRecord(request) && isMcp(request)) {
          void serveMcp(request, socket, head.subarray(end + 1), services).catch(() => socket.destroy())
        } else if (isRecord(request) && isCommand(request)) {
          const run = queue.then(() => runHere(request, services, program))
          queue = run.catch(() => undefined)
          void run.then((answer) => socket.end(`${JSON.stringify(answer)}\n`))
        } else {
          // Not one of ours: nothing runs.
          socket.destroy()
        }
      }
      socket.on("data", onHead)
    })
    yield* Effect.acquireRelease(
      Effect.callback<Server>((resume) => {
        // The folder is ours (the data folder's lock, or no server answered): a socket left by a process that died is stale.
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
      (s) =>
        Effect.callback<void>((resume) => {
          // Open MCP sessions end with the server; closing waits for every connection.
          for (const socket of sockets) socket.destroy()
          s.close(() => resume(Effect.void))
        })
    )
  }).pipe(Effect.orDie))
