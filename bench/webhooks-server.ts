/**
 * The webhook and WebSocket benchmarks' server process (bench/webhooks.ts): the real server
 * (INBOX_* settings) with one organization and its key, printed as one JSON line on stdout
 * before it answers, and a control channel on stdin (one JSON command a line) so the
 * benchmark decides when events are made and when the job worker runs:
 *
 * - `{"cmd":"record","n":N,"rate":R,"organization":..,"pod":..,"inbox":..}`: records N
 *   `message.received` events as inbound deliveries write them (the event row, its webhook
 *   delivery and durable job, the signals), with inbound mail's group commit: events made
 *   while a transaction runs share the next one (Events.recordMany, 32 at most), R a
 *   second (0: as fast as 8 concurrent writers go). Answers `RECORDED {ms}`.
 * - `{"cmd":"worker","on":true|false}`: starts the production job worker (Jobs.layerWorker,
 *   which delivers the webhooks) or stops it (its drain, as at shutdown). Answers
 *   `WORKER {"at": epoch ms}` once done, so a backlog can be recorded and then released.
^ * - `{"cmd":"memory"}`: answers `MEMORY {rss, heapUsed, external, arrayBuffers}` after a garbage collection (run node with
 *   --expose-gc), for the WebSocket benchmark's memory per connection.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ApiKeys, Engine, Events, Jobs, type NewEvent, Maintenance, Metrics, Organizations } from "@inbox/core/internal"
import { LoggingLive, ServerLive } from "@inbox/http"
import { Context, Effect, Exit, Layer, Queue, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { createInterface } from "node:readline"
import { batchedWith } from "../packages/core/src/shared/batching.ts"

interface Command {
  readonly cmd: "record" | "worker" | "memory"
  readonly n?: number
  readonly rate?: number
  readonly organization?: string
  readonly pod?: string
  readonly inbox?: string
  readonly on?: boolean
}

/** A received message's payload the size of a short real one (about 1.5 KB as JSON). */
const payloadOf = (inbox: string, i: number, at: string) => {
  const thread = `thd_bench${i}`
  const message = `msg_bench${i}`
  return {
    message: {
      inbox_id: inbox,
      thread_id: thread,
      message_id: message,
      labels: ["received", "unread"],
      timestamp: at,
      from: "Customer Name <customer@example.com>",
      to: [`support@inbox.localhost`],
      subject: `Order #${10000 + i}: question about delivery`,
      preview: "Hello, I ordered last week and would like to know when the parcel will arrive. Thanks!",
      text: "Hello,\n\nI ordered last week and would like to know when the parcel will arrive. The tracking page has not changed since Monday.\n\nThanks,\nCustomer\n".repeat(3),
      extracted_text: "Hello,\n\nI ordered last week and would like to know when the parcel will arrive.",
      size: 4812,
      rfc_message_id: `<bench-${i}@example.com>`,
      created_at: at,
      updated_at: at
    },
    thread: {
      inbox_id: inbox,
      thread_id: thread,
      labels: ["received", "unread"],
      timestamp: at,
      senders: ["Customer Name <customer@example.com>"],
      recipients: ["support@inbox.localhost"],
      last_message_id: message,
      message_count: 1,
      size: 4812,
      subject: `Order #${10000 + i}: question about delivery`,
      preview: "Hello, I ordered last week and would like to know when the parcel will arrive. Thanks!",
      created_at: at,
      updated_at: at
    }
  }
}

const say = (line: string) => Effect.sync(() => process.stdout.write(`${line}\n`))

const setup = Layer.effectDiscard(Effect.gen(function*() {
  const { organization } = yield* (yield* Organizations).create({ ownerEmail: "bench-events@example.com", verified: true, plan: "scale" })
  const key = (yield* (yield* ApiKeys).issue(organization.id, { name: "bench" })).api_key
  yield* say(`BENCH_KEYS ${JSON.stringify({ keys: [key], organization: organization.id })}`)
}))

const control = Layer.effectDiscard(Effect.gen(function*() {
  const services = yield* Effect.context<Jobs | Events | SqlClient.SqlClient>()
  const events = Context.get(services, Events)
  const sql = Context.get(services, SqlClient.SqlClient)
  const commands = yield* Queue.unbounded<Command>()
  createInterface({ input: process.stdin }).on("line", (line) => Queue.offerUnsafe(commands, JSON.parse(line) as Command))
  let worker: Scope.Closeable | undefined

  // Inbound mail's group commit (inbound/Inbound.ts): events made at once share a transaction.
  const recordGrouped = yield* batchedWith((batch: ReadonlyArray<NewEvent>) =>
    sql.withTransaction(events.recordMany(batch)).pipe(Effect.orDie), 32)
  const record = (c: Command) =>
    Effect.gen(function*() {
      const n = c.n ?? 0
      const rate = c.rate ?? 0
      const start = Date.now()
      const one = (i: number) =>
        Effect.gen(function*() {
          if (rate > 0) {
            const due = start + (i * 1000) / rate
            const wait = due - Date.now()
            if (wait > 0) yield* Effect.sleep(wait)
          }
          const event: NewEvent = {
            organizationId: c.organization!,
            podId: c.pod!,
            inboxId: c.inbox!,
            type: "message.received",
            payload: payloadOf(c.inbox!, i, new Date().toISOString())
          }
          yield* recordGrouped(event)
        })
      // Paced: every event starts at its time (a slow commit does not delay the next);
      // a backlog: 8 writers, as 8 concurrent inbound deliveries.
      yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), one, { concurrency: rate > 0 ? "unbounded" : 8, discard: true })
      yield* say(`RECORDED ${JSON.stringify({ ms: Date.now() - start })}`)
    })

  yield* Effect.gen(function*() {
    const c = yield* Queue.take(commands)
    if (c.cmd === "record") yield* record(c)
    else if (c.cmd === "memory") {
      ;(globalThis as { gc?: () => void }).gc?.()
      const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage()
      yield* say(`MEMORY ${JSON.stringify({ rss, heapUsed, external, arrayBuffers })}`)
    } else {
      if (c.on === true && worker === undefined) {
        worker = yield* Scope.make()
        yield* Layer.buildWithScope(Jobs.layerWorker, worker).pipe(Effect.provide(services))
      } else if (c.on === false && worker !== undefined) {
        yield* Scope.close(worker, Exit.void)
        worker = undefined
      }
      yield* say(`WORKER ${JSON.stringify({ at: Date.now() })}`)
    }
  }).pipe(Effect.forever, Effect.forkScoped)
}))

// The server's background work but the job worker (the benchmark starts and stops that one):
// the metric fold and the maintenance of a database without autovacuum.
NodeRuntime.runMain(Layer.launch(
  Layer.mergeAll(ServerLive, setup, control, Metrics.layerFold, Maintenance.layer).pipe(Layer.provide(Engine.layerConfig), Layer.provide(LoggingLive))
))
