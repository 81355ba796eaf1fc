/**
 * The server process: the engine on live ports (INBOX_* settings) behind Node's HTTP
 * server (node.ts: timeouts, connection cap, Node's own refusals as JSON), and its
 * background work (the job worker, the blob sweeper, the metric fold, resending abandoned
 * sends, VACUUM where the database runs no autovacuum). Storage is built first, so
 * migrations have run before the first request is answered and /health means ready.
 *
 * Shutdown (SIGTERM, SIGINT) closes the layers in reverse: the listener stops accepting, no
 * keep-alive connection gets a new request served, and the requests under way finish
 * (INBOX_SHUTDOWN_TIMEOUT; node.ts), the job worker stops claiming and its running jobs
 * finish or go back to the queue (Jobs.drain), and the database closes last, after
 * everything that writes to it. Its start and its end are logged.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Engine, settingDefault } from "@inbox/core"
import { ImapServer, SmtpReceiver, SubmissionServer } from "@inbox/mailserver"
import { Clock, Config, Duration, Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { AppRoutes } from "./app.ts"
import { LoggingLive, RedactedQueryParams } from "./observe.ts"
import { layerNodeServer, nodeServerOptionsConfig } from "./node.ts"
import { TracingLive } from "./tracing.ts"

const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const port = yield* Config.Port("INBOX_PORT").pipe(Config.withDefault(settingDefault("INBOX_PORT")))
  const host = yield* Config.String("INBOX_HOST").pipe(Config.withDefault(settingDefault("INBOX_HOST")))
  // On SIGTERM the listener closes at once and requests under way get this long to finish.
  const shutdownSeconds = yield* Config.Int("INBOX_SHUTDOWN_TIMEOUT").pipe(Config.withDefault(settingDefault("INBOX_SHUTDOWN_TIMEOUT")))
  return layerNodeServer({ port, host, gracefulShutdownTimeout: Duration.seconds(shutdownSeconds) }, yield* nodeServerOptionsConfig)
}).pipe(Effect.orDie))

/**
 * Once the listener is up, one line names the dashboard's URL (the public URL when
 * INBOX_PUBLIC_URL is set, else the address listened on), for the person who just ran
 * `inboxctl serve`. It is a log line like any other, so in JSON mode every line of stdout
 * is JSON (`{"message":"dashboard: http://.../",...}`).
 */
const AnnounceDashboard = Layer.effectDiscard(Effect.gen(function*() {
  const publicUrl = yield* Config.option(Config.String("INBOX_PUBLIC_URL")).pipe(Effect.orDie)
  const base = Option.isSome(publicUrl) ? publicUrl.value : yield* HttpServer.addressFormattedWith(Effect.succeed)
  yield* Effect.logInfo(`dashboard: ${base.replace(/\/+$/, "")}/`)
}))

/** The HTTP server over an engine the caller provides. */
export const ServerLive = HttpRouter.serve(AppRoutes, { disableLogger: true }).pipe(
  Layer.merge(AnnounceDashboard),
  Layer.provide(HttpLive),
  Layer.provide(RedactedQueryParams)
)

/**
 * The background work of a server process: the job worker, the blob sweeper, resending what
 * a dead process left half-sent, the retention purges (INBOX_RETENTION_*), and the SMTP
 * receiver when INBOX_SMTP_LISTEN is set, SMTP submission and IMAP when theirs are. Its type is written in terms of the public Engine,
 * so the published declarations can name what it needs (core's own services, which
 * Engine.layerConfig provides).
 */
export const BackgroundLive: Layer.Layer<never, never, Engine | Layer.Services<typeof Engine.layerBackground>> = Layer.mergeAll(
  Engine.layerBackground,
  SmtpReceiver.layerConfig,
  SubmissionServer.layerConfig,
  ImapServer.layerConfig
)

/**
 * Two log lines around a shutdown: `started` is built after everything else, so its
 * finalizer runs first, and `complete` before the engine, so its finalizer runs after the
 * database has closed. A start that fails logs neither.
 */
const shutdownLog = () => {
  let startedAt: number | undefined
  const started = Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      startedAt = at
      return Effect.logInfo("shutdown started")
    })))
  const complete = Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.flatMap(Clock.currentTimeMillis, (at) =>
      startedAt === undefined ? Effect.void : Effect.logInfo("shutdown complete").pipe(Effect.annotateLogs({ duration_ms: at - startedAt })))))
  return { started, complete }
}

/**
 * Serves until interrupted (SIGINT/SIGTERM through NodeRuntime.runMain), with `extra`
 * layers over the same engine (inboxctl adds its local channel).
 */
export const launchServerWith = <E>(extra: Layer.Layer<never, E, Engine>) => {
  const shutdown = shutdownLog()
  return Layer.launch(
    shutdown.started.pipe(
      Layer.provide(Layer.mergeAll(ServerLive, BackgroundLive, extra)),
      Layer.provide(Engine.layerConfig),
      Layer.provide(shutdown.complete),
      // Outermost, like the logger: every layer above is built with the tracer (or none) in its context.
      Layer.provide(TracingLive),
      Layer.provide(LoggingLive)
    )
  )
}

export const launchServer = launchServerWith(Layer.empty)

export const runServerMain = () => NodeRuntime.runMain(launchServer)
