/**
 * Signals: wake-ups between the engine's fibers, across every server process that shares
 * the database. A signal is a channel name and a short text (an id, never a payload: the
 * receiver reads what changed from the database).
 *
 * Contract:
 * - `notify(channel, message)` sent inside a transaction is delivered after it commits and
 *   not at all when it rolls back (PostgreSQL: NOTIFY); outside one, at once.
 * - `subscribe(channel)` gives every later signal of the channel, from any process; delivery
 *   is best effort (a listener that was not connected misses signals), so receivers always
 *   also poll or catch up from the database.
 *
 * Layers: `layerPostgres` (LISTEN on one connection; NOTIFY once the caller's transaction
 * has committed, several signals of concurrent callers in one statement),
 * `layerInProcess` (a PubSub; for PGlite, which is one process and one connection: a
 * receiver's query waits for the sender's transaction to end, so seeing the signal early is
 * harmless).
 */
import { PgClient, type PgConnection } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, PubSub, Queue, Stream } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { logBackgroundFailure } from "./Availability.ts"
import { batched } from "../shared/batching.ts"

const CHANNEL = "inbox_signals"
/** How soon a listener whose connection was cut listens again (and again, until it can). */
export const LISTEN_RETRY = Duration.seconds(1)

export interface Signal {
  readonly channel: string
  readonly message: string
}

export class Signals extends Context.Service<Signals, {
  /** Whether other server processes can share this database (and so see these signals). */
  readonly crossProcess: boolean
  notify(channel: string, message: string): Effect.Effect<void>
  subscribe(channel: string): Stream.Stream<string>
}>()("inbox/Signals") {
  static readonly layerInProcess = Layer.effect(Signals, Effect.gen(function*() {
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<Signal>(), PubSub.shutdown)
    return Signals.of({
      crossProcess: false,
      notify: (channel, message) => Effect.asVoid(PubSub.publish(hub, { channel, message })),
      subscribe: (channel) => Stream.fromPubSub(hub).pipe(Stream.filter((s) => s.channel === channel), Stream.map((s) => s.message))
    })
  }))

  static readonly layerPostgres = Layer.effect(Signals, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<Signal>(), PubSub.shutdown)
    // One listening connection for every channel: the message carries the channel name.
    // The first LISTEN is confirmed before the layer is ready, so no signal sent after it
    // is missed.
    const first = yield* pg.listen(CHANNEL).pipe(Effect.orDie)
    // Sent after the commit, on a connection of its own, and not by the transaction: from
    // its PreCommit to the end of its commit (the WAL flush included) a transaction that
    // sent a NOTIFY holds a lock of the whole database, so such commits run one at a time.
    // Every delivery and event used to send one, and under pnpm bench webhooks each COMMIT
    // waited for the others. Signals are best effort by contract, so one lost to a crash between
    // the commit and this statement is caught up by the receivers' polling. The caller does
    // not wait for it.
    const send = yield* batched((groups: ReadonlyArray<ReadonlyArray<string>>) =>
      sql`SELECT pg_notify(${CHANNEL}, m) FROM unnest(${groups.flat()}::text[]) AS u (m)`.pipe(Effect.asVoid, Effect.orDie))
    // A transaction's signals (a delivery batch's inboxes and each of its events) are run as
    // its after-commit callbacks one after another: they are gathered here and the sender
    // starts only once they all are in, so they go in one statement, not one each (a
    // statement and a transaction of PostgreSQL's per signal: bench/PROFILE.md, issue 29).
    let gathered: Array<string> = []
    const flush = Effect.suspend(() => {
      const messages = gathered
      gathered = []
      return send(messages)
    })
    const gather = (message: string) =>
      Effect.suspend(() => {
        gathered.push(message)
        // The first signal of a round forks the sender, which yields first: the callbacks
        // still to run in this fiber add theirs before it takes them.
        return gathered.length > 1 ? Effect.void : Effect.asVoid(Effect.forkDetach(Effect.andThen(Effect.yieldNow, flush)))
      })
    const pump = (queue: Queue.Dequeue<PgConnection.Notification, SqlError.SqlError>) =>
      Effect.forever(Effect.gen(function*() {
        const notification = yield* Queue.take(queue)
        const payload = notification.payload
        const split = payload.indexOf(" ")
        if (split > 0) yield* PubSub.publish(hub, { channel: payload.slice(0, split), message: payload.slice(split + 1) })
      }))
    // The listening connection can be cut (a server restart, an idle-session kill, the
    // network): listening stopped then, for good, and with it every live event of this
    // process. Now it listens again on a new connection, every LISTEN_RETRY until it can;
    // what was signalled in between is caught up by the receivers' polling, or missed (the
    // contract's best effort: a WebSocket client catches up through the events list).
    const relisten = Effect.scoped(Effect.flatMap(pg.listen(CHANNEL), pump)).pipe(
      Effect.catchCause(logBackgroundFailure("the signal listener stopped; listening again")),
      Effect.andThen(Effect.sleep(LISTEN_RETRY)),
      Effect.forever
    )
    yield* pump(first).pipe(
      Effect.catchCause(logBackgroundFailure("the signal listener stopped; listening again")),
      Effect.andThen(relisten),
      Effect.forkScoped
    )
    return Signals.of({
      crossProcess: true,
      notify: (channel, message) => sql.afterCommit(gather(`${channel} ${message}`)),
      subscribe: (channel) => Stream.fromPubSub(hub).pipe(Stream.filter((s) => s.channel === channel), Stream.map((s) => s.message))
    })
  }))
}
