/**
 * Mail.parse: raw RFC 822 bytes to the spec's full message model (model.ts), failing only
 * with a typed `MailParseError`. The parsing itself is parse-core.ts; this module decides
 * where it runs, so that one hostile message cannot stall the server.
 *
 * Mechanism (bounded cost): parsing runs in a small pool of worker threads
 * (`MailParser.layer`), one message per worker at a time, each worker with a V8 heap cap
 * and each job with a time limit; a job over its time, or a worker that runs out of memory
 * or dies, fails with MailParseError ("timeout" / "resources") and the worker is replaced,
 * so the main thread only copies bytes in and receives the model (attachment bytes are
 * transferred, not copied). Inside the worker, hard limits keep each message cheap:
 * raw size 50 MB (checked on the main thread before any copy), 1000 MIME nodes (this also
 * bounds nesting depth), 512 KB per header block, 4 M characters of text and of HTML,
 * 1 M characters of HTML converted to text, 512 K characters handed to reply extraction.
 *
 * Why workers and not only limits: `node --import tsx bench/parse-hostile.ts` measures the
 * longest main event-loop stall per hostile message, in-thread and through the pool. An
 * HTML-only message with unclosed tags stalls the thread for seconds in html-to-text
 * (mailparser's own conversion overflowed the stack, so it is off and ours is
 * depth-bounded), a large HTML table or many attachments for hundreds of milliseconds;
 * through the pool each stalls it about as long as a plain message's trip. Synchronous
 * stretches like html-to-text cannot be interleaved, only moved off the event loop or
 * bounded; we do both. The liveness test (test/mail/parse-bounded.test.ts) checks that a
 * 10 ms timer keeps firing while all of these parse.
 *
 * Small messages are the exception (`parsesInline`): a message of at most 48 KB with
 * few angle brackets (tags, addresses), boundary lines, lines and encoded words is parsed
 * on the calling thread, because for it the trip to a worker and back is the cost (the
 * copies, the two thread wake-ups, the pool, the second heap): about the parse itself (the
 * worker hop of BENCHMARKS.md, "Parse"; bench/profile-smtp.ts for the SMTP receiver's share). The
 * scan that decides reads the bytes once; no message it lets through can stall the event
 * loop for long, because every costly shape (many parts or nested multiparts, HTML tags,
 * addresses, lines, encoded words) needs more of what it counts than it allows
 * (`node --import tsx bench/parse-hostile.ts` measures messages at those bounds).
 *
 * `MailParser.layerInline` runs the same code on the calling thread (limits still apply):
 * for scripts, benchmarks and tests that want no threads.
 */
import { Context, Duration, Effect, Layer, Pool, Schema } from "effect"
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import { MailParseError, MailParseFailure } from "./errors.ts"
import { ParseResult } from "./model.ts"
import { defaultLimits, type ParseLimits, type ParseOutcome, parseRaw } from "./parse-core.ts"

export { defaultLimits, type ParseLimits } from "./parse-core.ts"

export interface MailParserOptions {
  /** worker threads at most (default: cores - 1, at least 1, at most 4) */
  readonly workers?: number
  /** time limit of one message (default 20 seconds) */
  readonly timeout?: Duration.Input
  /** V8 old-generation cap of one worker, MB (default 512) */
  readonly maxHeapMb?: number
  readonly limits?: Partial<ParseLimits>
  /** false: every message goes to the pool, small plain ones too (tests of the worker path); default true */
  readonly inlineSmall?: boolean
}

export class MailParser extends Context.Service<MailParser, {
  parse(raw: Uint8Array): Effect.Effect<ParseResult, MailParseError>
}>()("inbox/MailParser") {
  /** Worker pool with the default options. */
  static readonly layer: Layer.Layer<MailParser> = Layer.effect(MailParser, Effect.suspend(() => makePooled({})))
  static readonly layerWith = (options: MailParserOptions): Layer.Layer<MailParser> =>
    Layer.effect(MailParser, makePooled(options))
  /** Same thread, same limits; a stalled parse still times out but cannot be stopped. */
  static readonly layerInline: Layer.Layer<MailParser> = Layer.sync(MailParser, () => makeInline({}))
  static readonly layerInlineWith = (options: MailParserOptions): Layer.Layer<MailParser> =>
    Layer.sync(MailParser, () => makeInline(options))
}

/** Parses with the `MailParser` in context. */
export const parse = Effect.fn("Mail.parse")(function*(raw: Uint8Array) {
  return yield* (yield* MailParser).parse(raw)
})

const limitsOf = (options: MailParserOptions): ParseLimits => ({ ...defaultLimits, ...options.limits })
const timeoutOf = (options: MailParserOptions): Duration.Input => options.timeout ?? Duration.seconds(20)

const tooLarge = (raw: Uint8Array, limits: ParseLimits) =>
  new MailParseError({ reason: "too_large", message: `Message of ${raw.byteLength} bytes is over the ${limits.maxRawBytes} byte limit` })

const fromOutcome = (outcome: ParseOutcome): Effect.Effect<ParseResult, MailParseError> =>
  outcome.ok ? Effect.succeed(outcome.result) : Effect.fail(new MailParseError({ reason: outcome.reason, message: outcome.message }))

const timedOut = (duration: Duration.Input) => () =>
  Effect.fail(new MailParseError({ reason: "timeout", message: `Parsing took longer than ${Duration.format(Duration.fromInputUnsafe(duration))}` }))

/** Parsing on the calling thread, within the size limit checked by the caller. */
const parseHere = (options: MailParserOptions) => {
  const limits = limitsOf(options)
  const timeout = timeoutOf(options)
  return (raw: Uint8Array) =>
    Effect.tryPromise({
      try: () => parseRaw(raw, limits),
      catch: (e) => new MailParseError({ reason: "malformed", message: `Unreadable message: ${String(e)}` })
    }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: timedOut(timeout) }), Effect.flatMap(fromOutcome))
}

const makeInline = (options: MailParserOptions) => {
  const limits = limitsOf(options)
  const here = parseHere(options)
  return MailParser.of({
    parse: Effect.fn("Mail.parse")(function*(raw: Uint8Array) {
      if (raw.byteLength > limits.maxRawBytes) return yield* tooLarge(raw, limits)
      return yield* here(raw)
    })
  })
}

// --- worker pool -----------------------------------------------------------------------------

const WorkerReply = Schema.Struct({
  id: Schema.Number,
  outcome: Schema.Union([
    Schema.Struct({ ok: Schema.Literal(true), result: ParseResult }),
    Schema.Struct({ ok: Schema.Literal(false), reason: MailParseFailure, message: Schema.String })
  ])
})
const decodeReply = Schema.decodeUnknownEffect(WorkerReply)

interface ParseWorker {
  readonly thread: Worker
  nextJob: number
}

// From source (tsx, vitest) the worker is the .ts beside this module; in the packed CLI
// this code is bundled into one .js file and the worker is built beside it as .js.
const workerUrl = new URL(import.meta.url.endsWith(".ts") ? "./parse-worker.ts" : "./parse-worker.js", import.meta.url)

// Resolves once the worker has loaded its modules, so the job time limit never counts
// start-up (a few hundred ms); a worker that cannot start is a defect, not a parse failure.
const spawn = (limits: ParseLimits, maxHeapMb: number) =>
  Effect.acquireRelease(
    Effect.callback<ParseWorker>((resume) => {
      const thread = new Worker(workerUrl, { workerData: limits, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb } })
      const done = (effect: Effect.Effect<ParseWorker>) => {
        thread.off("message", onReady)
        thread.off("error", onFail)
        thread.off("exit", onFail)
        // an idle worker must not keep the process alive; a busy one is ref'd by runJob
        thread.unref()
        resume(effect)
      }
      const onReady = () => done(Effect.succeed({ thread, nextJob: 0 }))
      const onFail = (cause: unknown) => done(Effect.die(new Error(`The parsing worker did not start: ${String(cause)}`)))
      thread.once("message", onReady)
      thread.once("error", onFail)
      thread.once("exit", onFail)
      return Effect.sync(() => void thread.terminate())
    }),
    (w) => Effect.promise(() => w.thread.terminate())
  )

/** One job on one worker; fails only when the worker itself fails (crash, out of memory, exit). */
const runJob = (w: ParseWorker, raw: Uint8Array): Effect.Effect<ParseOutcome, MailParseError> =>
  Effect.suspend(() => {
    const id = ++w.nextJob
    return Effect.callback<unknown, MailParseError>((resume) => {
      const cleanup = () => {
        w.thread.off("message", onMessage)
        w.thread.off("error", onError)
        w.thread.off("exit", onExit)
        w.thread.unref()
      }
      const onMessage = (reply: unknown) => {
        cleanup()
        resume(Effect.succeed(reply))
      }
      const onError = (error: Error) => {
        cleanup()
        const code = "code" in error ? error.code : undefined
        resume(Effect.fail(
          code === "ERR_WORKER_OUT_OF_MEMORY"
            ? new MailParseError({ reason: "resources", message: "Parsing ran out of memory" })
            : new MailParseError({ reason: "malformed", message: `The parser crashed on this message: ${error.message}` })
        ))
      }
      const onExit = (exitCode: number) => {
        cleanup()
        resume(Effect.fail(new MailParseError({ reason: "resources", message: `The parsing worker stopped (exit ${exitCode})` })))
      }
      w.thread.on("message", onMessage)
      w.thread.on("error", onError)
      w.thread.on("exit", onExit)
      w.thread.ref()
      w.thread.postMessage({ id, raw })
      return Effect.sync(cleanup)
    }).pipe(
      Effect.flatMap((reply) => Effect.orDie(decodeReply(reply))),
      Effect.flatMap((reply) =>
        reply.id === id ? Effect.succeed(reply.outcome) : Effect.die(new Error(`Parsing worker answered job ${reply.id}, expected ${id}`))
      )
    )
  })

/**
 * What a message may hold at most to be parsed on the calling thread (`parsesInline`):
 * its bytes, `<` and lines in its top header block (addresses and fields: each one parsed),
 * `<` in all (HTML tags and addresses), lines in all, lines that start with `--` (MIME
 * boundaries: parts and nesting) and `=?` (encoded words). Chosen by the stall of the
 * costliest message each allows (`node --import tsx bench/parse-hostile.ts`): no longer than
 * the pool's own trip.
 */
export const INLINE_PARSE = { bytes: 48 * 1024, headerAngles: 64, headerLines: 512, angles: 1024, lines: 1024, boundaries: 8, encodedWords: 64 } as const

/** Whether `raw` is small and plain enough to parse on the calling thread (INLINE_PARSE); one pass over its bytes. */
export const parsesInline = (raw: Uint8Array): boolean => {
  if (raw.byteLength > INLINE_PARSE.bytes) return false
  let angles = 0
  let lines = 0
  let boundaries = 0
  let encodedWords = 0
  let inHeader = true
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]
    if (c === 0x3c) {
      if (++angles > INLINE_PARSE.angles || (inHeader && angles > INLINE_PARSE.headerAngles)) return false
    } else if (c === 0x0a) {
      if (++lines > INLINE_PARSE.lines || (inHeader && lines > INLINE_PARSE.headerLines)) return false
      const next = raw[i + 1]
      if (inHeader && (next === 0x0a || (next === 0x0d && raw[i + 2] === 0x0a))) inHeader = false
      if (next === 0x2d && raw[i + 2] === 0x2d && ++boundaries > INLINE_PARSE.boundaries) return false
    } else if (c === 0x3d && raw[i + 1] === 0x3f) {
      if (++encodedWords > INLINE_PARSE.encodedWords) return false
    }
  }
  return true
}

const makePooled = Effect.fnUntraced(function*(options: MailParserOptions) {
  const limits = limitsOf(options)
  const timeout = timeoutOf(options)
  const size = options.workers ?? Math.max(1, Math.min(4, availableParallelism() - 1))
  const pool = yield* Pool.makeWithTTL({
    acquire: spawn(limits, options.maxHeapMb ?? 512),
    min: 0,
    max: size,
    timeToLive: Duration.minutes(5)
  })
  const here = parseHere(options)
  const inlineSmall = options.inlineSmall ?? true
  return MailParser.of({
    parse: Effect.fn("Mail.parse")(function*(raw: Uint8Array) {
      if (raw.byteLength > limits.maxRawBytes) return yield* tooLarge(raw, limits)
      if (inlineSmall && parsesInline(raw)) return yield* here(raw)
      return yield* Effect.scoped(Effect.gen(function*() {
        const worker = yield* Pool.get(pool)
        const outcome = yield* runJob(worker, raw).pipe(
          Effect.timeoutOrElse({ duration: timeout, orElse: timedOut(timeout) }),
          // the worker timed out (maybe still spinning), died, or was abandoned by an
          // interrupted caller: stop it and let the pool start a fresh one
          Effect.onError(() => Effect.andThen(Effect.promise(() => worker.thread.terminate()), Pool.invalidate(pool, worker)))
        )
        return yield* fromOutcome(outcome)
      }))
    })
  })
})
