/**
 * Running a catalogue command (resources.ts built it from the manifest): the operation,
 * found by name in core's catalogue, runs through the engine (`Engine.run`) with the
 * principal of `--api-key` (or as the operator on this machine, for the operator's own
 * operations), on the engine of the server that runs the command or on one opened from the
 * INBOX_* settings. The output kind says how to print: a table for lists, aligned fields for
 * one resource, a line for an empty success, the bytes of a download. Only the presentation
 * is here: the operation is the one place of its rules.
 */
import { type ApiError, type Credential, type Download, Engine, findOperation, type Operation } from "@inbox/core"
import { Effect, Stream } from "effect"
import { writeOut } from "./ambient.ts"
import { verifyWait } from "./domains.ts"
import { fields, isSeries, json, listing, print, seriesLines } from "./output.ts"
import type { Invocation } from "./resources.ts"
import { apiKeyFrom, authenticate, CLI_CONTEXT, type CliError, withEngine } from "./runtime.ts"

/** What runs after an operation answered, with the same key (`domains verify --wait`). */
const AFTER: Readonly<Record<string, (invocation: Invocation, key: string | undefined) => Effect.Effect<void, ApiError | CliError>>> = {
  "domains.verify": verifyWait
}

export const invoke = (invocation: Invocation): Effect.Effect<void, ApiError | CliError> =>
  Effect.gen(function*() {
    const op = findOperation(invocation.operation)
    if (op === undefined) return yield* Effect.die(new Error(`no operation ${invocation.operation} in this engine's catalogue`))
    const key = op.access.kind === "member" ? yield* apiKeyFrom(invocation.apiKey) : undefined
    const result = yield* withEngine(Effect.gen(function*() {
      // The operator's own operations run as the operator on this machine; the rest with the key.
      const credential: Credential = op.access.kind === "local" || op.access.kind === "operator"
        ? { kind: "local" }
        : key === undefined
        ? { kind: "anonymous" }
        : { kind: "principal", principal: yield* authenticate(key) }
      const result = yield* (yield* Engine).run(op, {
        credential,
        params: invocation.params,
        input: invocation.input,
        headers: invocation.headers,
        context: CLI_CONTEXT
      })
      // A download streams from its store (the database, for PostgreSQL), so its bytes
      // are written while the engine and its connections are still open.
      if (op.output.kind === "download") yield* writeBytes(result as Download)
      return result
    }))
    if (op.output.kind !== "download") yield* show(op, result, invocation)
    const after = AFTER[op.name]
    if (after !== undefined) yield* after(invocation, key)
  })

const show = (op: Operation, result: unknown, invocation: Invocation) => {
  const face = op.cli
  const columns = "command" in face ? face.columns : undefined
  if (invocation.json) {
    if (result === undefined) return Effect.void
    const picked = "command" in face && face.jsonFields !== undefined
      ? Object.fromEntries(face.jsonFields.map((f) => [f, (result as Record<string, unknown>)[f]]))
      : result
    return print(json(picked))
  }
  switch (op.output.kind) {
    case "empty":
      return print(`Done: ${"command" in face ? face.command : op.name}${invocation.ids.length > 0 ? ` ${invocation.ids.join(" ")}` : ""}.`)
    case "list":
      return print(listing(result as Record<string, unknown>, columns ?? [], op.output.plural.replaceAll("_", " ")))
    default: {
      // Metrics series (usage, rates) read best as sparklines; --json keeps the points.
      if (isSeries(result)) return print(seriesLines(result))
      const value = result as Record<string, unknown>
      return Effect.andThen(
        print(fields(value)),
        "api_key" in value ? print("\nKeep the api_key now: it is shown only once.") : Effect.void
      )
    }
  }
}

/** A download's bytes go to stdout as they stream (redirect them to a file). */
const writeBytes = (download: Download) =>
  Stream.runForEach(download.body, (chunk) =>
    Effect.callback<void>((resume) => {
      writeOut(chunk, () => resume(Effect.void))
    }))
