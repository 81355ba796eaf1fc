/**
 * The engine as everything outside core meets it: one service, `Engine`, made from settings
 * and ports, through which adapters (HTTP, MCP, the CLI, the mail servers) and embedding
 * applications do everything they do. It runs operations of the catalogue by name with a
 * caller's credential (`call`, typed per operation; `run`, from wire input), admits members
 * (`admit`), connects live event listeners (`live`, `events`), and lends adapters the few
 * things they hold themselves (the settings, the intake budget, request ids, the metrics
 * text, the classification of an unreachable database, the DNS resolver mail checks use).
 *
 * Layers: `Engine.layer` over ports a caller gives (tests, custom stores), `Engine.layerConfig`
 * from INBOX_* settings, `Engine.layerEmbedded` for an application that embeds it; the
 * background work of a server process is `Engine.layerBackground`. `createEngine` is the same
 * engine as a Promise API for applications that do not use Effect.
 */
import { Cause, Context, Effect, Layer, ManagedRuntime, Queue, type Scope, Stream } from "effect"
import { holds, missingPermission, type Principal } from "../access/Principal.ts"
import { KeyCache } from "../apikeys/KeyCache.ts"
import { Blobs } from "../blobs/Blobs.ts"
import type { CallContext, Operation } from "../catalogue/Operation.ts"
import { Availability } from "../db/Availability.ts"
import { Signals } from "../db/Signals.ts"
import * as Maintenance from "../db/Maintenance.ts"
import { Dns } from "../dns/Dns.ts"
import { type ApiError, type ServiceUnavailable, ValidationError } from "../errors/errors.ts"
import type { EventEnvelope } from "../events/Events.ts"
import { type ListenRefused, LiveEvents, type ServerFrame, type Subscription } from "../events/Live.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { MESSAGES_CHANGED } from "../messages/MessageStore.ts"
import { Metrics } from "../metrics/Metrics.ts"
import * as Backup from "../operating/Backup.ts"
import { prometheusText } from "../operating/metrics.ts"
import { Retention } from "../operating/Retention.ts"
import { Ids } from "../platform/Ids.ts"
import { IntakeBudget, type Reserver } from "../ratelimit/IntakeBudget.ts"
import { Sending } from "../sending/Sending.ts"
import { Settings, type SettingsShape } from "../settings/Settings.ts"
import { type CatalogueEntry, type CatalogueOperation, findOperation, operations } from "./catalogue.ts"
import { admitMember, type Credential } from "./credential.ts"
import { type RawCall, runOperation } from "./run.ts"
import * as Services from "./services.ts"

type ByName = { readonly [O in CatalogueOperation as O["name"]]: O }

/** The name of an operation of the catalogue (`"inboxes.create"`, ...). */
export type OperationName = keyof ByName

type Types<N extends OperationName> = NonNullable<ByName[N]["~types"]>

/**
 * What a caller sends to operation `N`, in one object as a client would write it: its path
 * parameters, its body or query fields, its named headers, and `raw` bytes where it takes a
 * message.
 */
export type InputOf<N extends OperationName> =
  & ParamsInput<Types<N>["params"]>
  & Types<N>["input"]
  & Partial<Types<N>["headers"]>
  & { readonly raw?: Uint8Array }

/** Path parameters that only some routes have may be left out. */
type ParamsInput<P> =
  & { readonly [K in keyof P as undefined extends P[K] ? K : never]?: P[K] }
  & { readonly [K in keyof P as undefined extends P[K] ? never : K]: P[K] }

/** What operation `N` answers: its JSON resource or list, a download, or nothing. */
export type OutputOf<N extends OperationName> = Types<N>["output"]

/** The operator on this machine: the credential of inboxctl and of an embedding application's own operations. */
export const LOCAL: Credential = { kind: "local" }

const EMBEDDED: CallContext = { clientIp: "embedded", requestId: "embedded" }

/** A live listener's handlers: frames to send, and the end of the connection's right to them. */
export interface LiveHandlers {
  readonly deliver: (frame: string) => void
  /** The connection's key was revoked or changed (its inbox or pod deleted too). */
  readonly keyEnded: () => void
}

export interface LiveConnection {
  /** Starts handing the connection its frames, and telling it when its key ends (until the scope closes). */
  readonly start: (handlers: LiveHandlers) => Effect.Effect<void, never, Scope.Scope>
  /** A client frame: the `subscribed` echo or an `error` frame. */
  readonly subscribe: (frame: string) => Effect.Effect<ServerFrame>
}

export interface EngineApi {
  readonly settings: SettingsShape
  /** Every operation of this engine's catalogue. */
  readonly operations: ReadonlyArray<CatalogueEntry>
  /**
   * Runs operation `name` for `caller` (default: nobody; `LOCAL` for the operator's own),
   * validating exactly as REST does, and answers what REST answers in its body.
   */
  readonly call: <N extends OperationName>(
    name: N,
    input?: InputOf<N>,
    caller?: Credential,
    context?: CallContext
  ) => Effect.Effect<OutputOf<N>, ApiError>
  /** Runs an operation from what an adapter read off the wire (runOperation). */
  readonly run: (op: Operation<unknown>, call: RawCall) => Effect.Effect<unknown, ApiError>
  /** The member a credential stands for, counted against its limits (an MCP request, a WebSocket). */
  readonly admit: (credential: Credential, context: CallContext) => Effect.Effect<Principal, ApiError>
  readonly live: {
    /**
     * A listener for the events `principal` may see, until the scope closes: it needs
     * `message_read` (403), and the process and the key each hold a limited number
     * (ListenRefused). Both are checked here, before an adapter upgrades its connection.
     */
    readonly connect: (principal: Principal) => Effect.Effect<LiveConnection, ApiError | ListenRefused, Scope.Scope>
  }
  /**
   * The events `caller` may see as they are recorded, filtered by a subscription
   * (`{ event_types, inbox_ids, pod_ids }` as the WebSocket's subscribe frame); the stream
   * ends with the caller's key.
   */
  readonly events: (
    caller: Credential,
    subscription?: { readonly event_types?: ReadonlyArray<string>; readonly inbox_ids?: ReadonlyArray<string>; readonly pod_ids?: ReadonlyArray<string> }
  ) => Stream.Stream<EventEnvelope, ApiError | ListenRefused, Scope.Scope>
  /**
   * Ids of inboxes whose messages were stored, relabelled or deleted, from any process on the
   * database, once committed (best effort: a listener also looks for itself now and then).
   * IMAP's IDLE wakes on it; a listener reads what changed through operations.
   */
  readonly messagesChanged: Stream.Stream<string>
  /** The process's budget for bytes still arriving (request bodies, SMTP DATA). */
  readonly intake: { readonly reserver: () => Reserver; readonly inUse: () => number; readonly limit: number }
  /** A new request id (`req_...`). */
  readonly requestId: Effect.Effect<string>
  /** The operator's metrics in Prometheus text. */
  readonly metricsText: Effect.Effect<string>
  /** The 503 an unreachable database means, when `cause` is one (adapters map failures outside operations with it). */
  readonly unavailable: (cause: Cause.Cause<unknown>) => Effect.Effect<ServiceUnavailable | undefined>
  /** The DNS answers mail checks ask for (cached, from INBOX_DNS_SERVERS). */
  readonly resolve: Dns["Service"]["resolve"]
  /** A backup of the embedded data folder this engine holds open, through its own connection (Backup.backupRunning). */
  readonly backup: (options: Backup.BackupOptions) => Effect.Effect<Backup.Manifest, Backup.OperatingError>
}

/** A live connection (Engine's live.connect): its subscription, and the handlers it was started with. */
class Connection implements LiveConnection {
  /** Nothing is delivered before the connection subscribes, nor before it starts. */
  subscription: Subscription | undefined
  handlers: LiveHandlers | undefined
  constructor(
    private readonly principal: Principal,
    private readonly keyCache: KeyCache["Service"],
    private readonly decide: (frame: string) => Effect.Effect<{ readonly subscription?: Subscription; readonly reply: ServerFrame }>
  ) {}
  start(handlers: LiveHandlers) {
    return Effect.suspend(() => {
      this.handlers = handlers
      // A key revoked while its connection is open ends the connection, as it ends its requests.
      return this.keyCache.watch(this.principal, () => handlers.keyEnded())
    })
  }
  subscribe(frame: string) {
    return Effect.map(this.decide(frame), ({ reply, subscription }) => {
      if (subscription !== undefined) this.subscription = subscription
      return reply
    })
  }
}

export class Engine extends Context.Service<Engine, EngineApi>()("inbox/Engine") {
  /** The facade over the services in context. */
  static readonly make = Effect.gen(function*() {
    const context = yield* Effect.context<Services.EngineServices>()
    let self: EngineApi | undefined
    // A fiber that already holds this engine was started in the context the engine's layer
    // built (the HTTP server's request fibers are): it has these services already, and
    // merging them in again copies every service into a new map on each call.
    const provide = <A, E>(effect: Effect.Effect<A, E, Services.EngineServices>) =>
      Effect.withFiber((fiber) =>
        self !== undefined && Context.getOrUndefined(fiber.context, Engine) === self
          ? effect as Effect.Effect<A, E>
          : Effect.provideContext(effect, context)
      )
    const settings = Context.get(context, Settings)
    const ids = Context.get(context, Ids)
    const budget = Context.get(context, IntakeBudget)
    const live = Context.get(context, LiveEvents)
    const keyCache = Context.get(context, KeyCache)
    const signals = Context.get(context, Signals)
    const availability = Context.get(context, Availability)
    const dns = Context.get(context, Dns)

    const call = <N extends OperationName>(name: N, input?: InputOf<N>, caller?: Credential, callContext?: CallContext) => {
      const op = findOperation(name as string)
      if (op === undefined) return Effect.die(new Error(`no operation ${name}`))
      const given = (input ?? {}) as Readonly<Record<string, unknown>>
      const params: Record<string, string | undefined> = {}
      const headers: Record<string, string | undefined> = {}
      const fields: Record<string, unknown> = {}
      const headerNames = new Set(Object.keys(op.headers?.fields ?? {}))
      const paramNames = new Set(op.params.map((p) => p.name))
      for (const [key, value] of Object.entries(given)) {
        if (key === "raw") continue
        if (paramNames.has(key)) params[key] = value as string | undefined
        else if (headerNames.has(key)) headers[key] = value as string | undefined
        else fields[key] = value
      }
      const raw = given["raw"]
      return provide(runOperation(op, {
        ...(caller === undefined ? {} : { credential: caller }),
        params,
        input: fields,
        headers,
        ...(raw instanceof Uint8Array ? { raw } : {}),
        context: callContext ?? EMBEDDED
      })) as Effect.Effect<OutputOf<N>, ApiError>
    }

    // A connection is one object with its methods on the prototype: an embedding server
    // holds thousands, and closures made per connection cost memory each.
    const connect = (principal: Principal) =>
      Effect.gen(function*() {
        if (!holds(principal, "message_read")) return yield* missingPermission("message_read")
        const connection = new Connection(principal, keyCache, (frame) => provide(live.subscribe(principal, frame)))
        yield* live.listen(principal, () => connection.subscription, (frame) => connection.handlers?.deliver(frame))
        return connection satisfies LiveConnection
      })

    const admit = (credential: Credential, callContext: CallContext) => provide(admitMember(credential, { stateChanging: true }, callContext))

    self = Engine.of({
      settings,
      operations,
      call,
      run: (op, rawCall) => provide(runOperation(op as CatalogueEntry, rawCall)),
      admit,
      live: { connect },
      events: (caller, subscription = {}) =>
        Stream.callback<EventEnvelope, ApiError | ListenRefused>((queue) =>
          Effect.gen(function*() {
            const principal = yield* admit(caller, EMBEDDED)
            const connection = yield* connect(principal)
            yield* connection.start({
              deliver: (frame) => void Queue.offerUnsafe(queue, JSON.parse(frame) as EventEnvelope),
              keyEnded: () => void Queue.endUnsafe(queue)
            })
            const reply = yield* connection.subscribe(JSON.stringify({ type: "subscribe", ...subscription }))
            if (reply.type === "error") {
              return yield* new ValidationError({ message: `${reply.name}: ${reply.message}`, errors: [] })
            }
          })
        ),
      messagesChanged: signals.subscribe(MESSAGES_CHANGED),
      intake: { reserver: budget.reserver, inUse: budget.inUse, limit: budget.limit },
      requestId: ids.make("req"),
      metricsText: provide(prometheusText),
      unavailable: availability.unavailable,
      resolve: dns.resolve,
      backup: (options) => provide(Backup.backupRunning(options))
    })
    return self
  })

  /** The engine over ports a caller provides: storage (SqlClient, Signals), BlobStore, MailTransport, Egress, Ids, Settings. */
  static readonly layer = Layer.effect(Engine, Engine.make).pipe(Layer.provideMerge(Services.layer))

  /** The engine over live ports configured from INBOX_* variables (what `inboxctl serve` runs). */
  static readonly layerConfig = Layer.effect(Engine, Engine.make).pipe(Layer.provideMerge(Services.layerConfig))

  /**
   * The engine embedded in another Node application: PGlite in `dataDir` (or in memory),
   * blobs as files beside it, mail to the local outbox unless a relay URL is given, and
   * settings in code rather than from the environment.
   */
  static readonly layerEmbedded = (options: EmbeddedOptions = {}) =>
    Layer.effect(Engine, Engine.make).pipe(Layer.provideMerge(Services.layerEmbedded(options)))

  /**
   * The background work of a server process: the job worker (webhook deliveries, scheduled
   * drafts, domain checks), the blob sweeper, the metric fold, resending what a dead process
   * left half-sent, VACUUM where the database runs no autovacuum, and the retention purges.
   */
  static readonly layerBackground = Layer.mergeAll(
    Sending.layerRecovery,
    Jobs.layerWorker,
    Blobs.layerSweeper,
    Metrics.layerFold,
    Maintenance.layer,
    Retention.layerSchedule.pipe(Layer.provide(Retention.layerConfig))
  )
}

export interface EmbeddedOptions {
  /** PGlite's data folder (default: in memory). */
  readonly dataDir?: string
  readonly baseDomain?: string
  /** A relay, `smtp://user:pass@host:port`; unset, sent mail waits in the local outbox. */
  readonly smtpUrl?: string
  /** Any other setting, in code (SettingsShape). */
  readonly settings?: Partial<SettingsShape>
  /** The embedded database's page cache, resident from its start, as INBOX_EMBEDDED_SHARED_BUFFERS (default 32MB). */
  readonly sharedBuffers?: string
}

/** The engine as Promises, for an application that does not use Effect. */
export interface EngineHandle {
  readonly settings: SettingsShape
  /** As `Engine.call`: resolves with the answer, rejects with the ApiError (its `code`, `message`, `fix`). */
  call<N extends OperationName>(name: N, input?: InputOf<N>, caller?: Credential): Promise<OutputOf<N>>
  /** Closes the database and stops the engine's work. */
  close(): Promise<void>
}

/** Starts an embedded engine (`Engine.layerEmbedded`) and answers a Promise API over it. */
export const createEngine = async (options: EmbeddedOptions = {}): Promise<EngineHandle> => {
  const runtime = ManagedRuntime.make(Engine.layerEmbedded(options))
  const engine = await runtime.runPromise(Effect.service(Engine))
  return {
    settings: engine.settings,
    call: (name, input, caller) =>
      runtime.runPromiseExit(engine.call(name, input, caller)).then((exit) => {
        if (exit._tag === "Success") return exit.value
        const failure = Cause.findErrorOption(exit.cause)
        throw failure._tag === "Some" ? failure.value : Cause.squash(exit.cause)
      }),
    close: () => runtime.dispose()
  }
}
