/**
 * MCP over stdio: newline-delimited JSON-RPC on stdin, one JSON answer per line on stdout,
 * for a local client that spawns `inboxctl mcp`. Stdout belongs to the protocol, so every
 * log line goes to stderr. Messages are answered one at a time, in arrival order: the
 * engine behind it (embedded PGlite) is one session anyway, and in-order answers keep a
 * client's "create, then list" sequences obvious. The server stops when stdin ends.
 */
import { type CallContext, type Engine, parseJson, type Principal } from "@inbox/core"
import { Effect, Logger, Stream } from "effect"
import { createInterface } from "node:readline"
import { handlePayload, parseError } from "./protocol.ts"

export interface StdioOptions {
  readonly readOnly?: boolean
  /** Defaults to process.stdin / process.stdout; tests pass their own streams. */
  readonly input?: NodeJS.ReadableStream
  readonly output?: NodeJS.WritableStream
}

const writeLine = (output: NodeJS.WritableStream, value: unknown) =>
  Effect.callback<void>((resume) => {
    output.write(`${JSON.stringify(value)}\n`, () => resume(Effect.void))
  })

// Nested past MAX_JSON_DEPTH is a parse error like invalid JSON: no walk ever sees it.
const parse = (line: string) => parseJson(line)

export const runStdio = (principal: Principal, options: StdioOptions = {}): Effect.Effect<void, never, Engine> =>
  Effect.gen(function*() {
    const input = options.input ?? process.stdin
    const output = options.output ?? process.stdout
    const lines = createInterface({ input, crlfDelay: Infinity })
    let sequence = 0
    yield* Stream.fromAsyncIterable(lines, (error) => error).pipe(
      Stream.runForEach((line) =>
        Effect.gen(function*() {
          if (line.trim() === "") return
          const parsed = parse(line)
          if (!parsed.ok) return yield* writeLine(output, parseError())
          const context: CallContext = { clientIp: "stdio", requestId: `stdio-${++sequence}` }
          const answer = yield* handlePayload(parsed.value, { principal, readOnly: options.readOnly ?? false, context })
          if (answer !== undefined) yield* writeLine(output, answer)
        })
      ),
      // A broken stdin means the client went away: the session is over either way.
      Effect.catch((error) => Effect.logWarning("MCP stdio input failed", error)),
      Effect.ensuring(Effect.sync(() => lines.close()))
    )
  }).pipe(Effect.provideService(Logger.LogToStderr, true))
