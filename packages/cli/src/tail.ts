/**
 * `inboxctl events tail`: follows a running server's WebSocket (`/v0/websocket`, the key in
 * `?api_key=` as browsers send it) and prints each event as it comes: one line of the time,
 * type, inbox and id, or the whole envelope as one JSON line with `--json`. The server's own
 * rules apply (scope, `message_read`, the subscription's filters); a refused key or
 * permission is found by one events-list request first, so it is reported in the spec's
 * words rather than as a failed upgrade. Ctrl-C stops it (exit 130); a close by the server
 * (a slow consumer, a shutdown) ends it with exit 1 and says why.
 */
import { type ApiError, errorBody, settingDefault } from "@inbox/core"
import { Config, Effect, Option } from "effect"
import { apiKeyFrom, CliError, EXIT } from "./runtime.ts"

export interface TailOptions {
  readonly apiKey?: string
  readonly url?: string
  readonly eventTypes?: ReadonlyArray<string>
  readonly inboxIds?: ReadonlyArray<string>
  readonly podIds?: ReadonlyArray<string>
  readonly json?: boolean
}

/** The server to follow: --url, else INBOX_PUBLIC_URL, else the local default port. */
const serverUrl = (flag: string | undefined) =>
  Effect.gen(function*() {
    if (flag !== undefined) return flag.replace(/\/+$/, "")
    const publicUrl = yield* Config.option(Config.String("INBOX_PUBLIC_URL")).pipe(Effect.orElseSucceed(() => Option.none()))
    if (Option.isSome(publicUrl)) return publicUrl.value.replace(/\/+$/, "")
    const port = yield* Config.Port("INBOX_PORT").pipe(Config.withDefault(settingDefault("INBOX_PORT")), Effect.orElseSucceed(() => settingDefault("INBOX_PORT")))
    return `http://127.0.0.1:${port}`
  })

/** One events-list request: the server's refusal of the key, in its own words, or nothing. */
const checkAccess = (base: string, key: string) =>
  Effect.tryPromise({
    try: async () => {
      const res = await fetch(`${base}/v0/events?limit=1`, { headers: { authorization: `Bearer ${key}` } })
      return res.ok ? undefined : await res.json() as ReturnType<typeof errorBody>
    },
    catch: (e) => new CliError({ code: "unreachable", message: `The server at ${base} did not answer: ${e instanceof Error ? e.message : String(e)}` })
  })

const line = (event: Record<string, unknown>) =>
  [event["created_at"], event["event_type"], event["inbox_id"] ?? "-", event["event_id"]].join("  ")

export const eventsTail = (options: TailOptions): Effect.Effect<number, ApiError | CliError> =>
  Effect.gen(function*() {
    const key = yield* apiKeyFrom(options.apiKey)
    const base = yield* serverUrl(options.url)
    const refused = yield* checkAccess(base, key)
    if (refused !== undefined) return yield* new CliError({ code: refused.code, message: `${refused.message}${refused.fix === undefined ? "" : ` (${refused.fix})`}` })
    const target = `${base.replace(/^http/, "ws")}/v0/websocket?api_key=${encodeURIComponent(key)}`
    return yield* Effect.callback<number, CliError>((resume) => {
      const socket = new WebSocket(target)
      socket.addEventListener("open", () => {
        socket.send(JSON.stringify({
          type: "subscribe",
          ...(options.eventTypes === undefined ? {} : { event_types: options.eventTypes }),
          ...(options.inboxIds === undefined ? {} : { inbox_ids: options.inboxIds }),
          ...(options.podIds === undefined ? {} : { pod_ids: options.podIds })
        }))
      })
      socket.addEventListener("message", (message) => {
        const frame = JSON.parse(String(message.data)) as Record<string, unknown>
        if (frame["type"] === "event") process.stdout.write(`${options.json === true ? JSON.stringify(frame) : line(frame)}\n`)
        else if (frame["type"] === "subscribed") process.stderr.write(`following events at ${base} (Ctrl-C to stop)\n`)
        else if (frame["type"] === "error") process.stderr.write(`error: ${String(frame["name"])}: ${String(frame["message"])}\n`)
      })
      socket.addEventListener("close", (event) => {
        process.stderr.write(`the server closed the connection (${event.code}${event.reason === "" ? "" : `: ${event.reason}`})\n`)
        resume(Effect.succeed(EXIT.failed))
      })
      socket.addEventListener("error", () => {
        resume(Effect.fail(new CliError({ code: "unreachable", message: `The WebSocket at ${base}/v0/websocket failed.` })))
      })
      // Ctrl-C interrupts the command: the connection is closed on the way out.
      return Effect.sync(() => socket.close())
    })
  })

/** Values of a repeatable comma-separated flag. */
export const listOf = (value: string | undefined): ReadonlyArray<string> | undefined =>
  value === undefined ? undefined : value.split(",").map((v) => v.trim()).filter((v) => v.length > 0)
