/**
 * Live events (events/Live.ts): a signalled event is read from the database once per
 * batch for every listening connection, and not at all while nobody listens. Signals in
 * process; the Events service counts the reads it is asked for.
 */
import { assert, it } from "@effect/vitest"
import { Events, EVENTS_CHANNEL, type EventRow, Inboxes, LiveEvents, Pods, Settings, type SettingsShape, Signals } from "@inbox/core/internal"
import { Context, Deferred, Effect, Exit, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"

const rowOf = (id: string): EventRow => ({
  id,
  organization_id: "org_1",
  pod_id: null,
  inbox_id: null,
  event_type: "message.received",
  payload: {},
  created_at: new Date(0)
})

const setUp = (settings: Partial<SettingsShape> = {}) => Effect.gen(function*() {
  const reads: Array<ReadonlyArray<string>> = []
  const events = Layer.succeed(Events, Events.of({
    byIds: (ids: ReadonlyArray<string>) => Effect.sync(() => {
      reads.push(ids)
      return ids.map(rowOf)
    })
  } as never))
  const context = yield* Layer.build(LiveEvents.layerNoDeps.pipe(
    Layer.provideMerge(Signals.layerInProcess),
    Layer.provide(Layer.mergeAll(events, Layer.succeed(Inboxes, {} as never), Layer.succeed(Pods, {} as never), Layer.succeed(Settings, Settings.make(settings))))
  ))
  return { reads, live: Context.get(context, LiveEvents), signals: Context.get(context, Signals) }
})

/** Lets the signal and reading fibers run (they wait on queues, not on the clock). */
const settle = TestClock.withLive(Effect.sleep("20 millis"))

it.effect("an event signalled while nobody listens is not read from the database", () =>
  Effect.gen(function*() {
    const { reads, signals } = yield* setUp()
    yield* settle
    yield* signals.notify(EVENTS_CHANNEL, "evt_1")
    yield* settle
    assert.deepStrictEqual(reads, [])
  }).pipe(Effect.scoped))

it.effect("with a connection listening, a signalled event is read once and reaches it", () =>
  Effect.gen(function*() {
    const { reads, live, signals } = yield* setUp()
    const got = yield* Deferred.make<string>()
    const principal = { organizationId: "org_1", scope: { type: "organization" as const } }
    const subscription = { eventTypes: new Set(["message.received"]), inboxIds: new Set<string>(), podIds: new Set<string>() }
    yield* Effect.scoped(Effect.gen(function*() {
      yield* live.listen(principal, () => subscription, (frame) => Deferred.doneUnsafe(got, Exit.succeed(frame)))
      yield* settle
      yield* signals.notify(EVENTS_CHANNEL, "evt_2")
      assert.deepStrictEqual(JSON.parse(yield* Deferred.await(got)).event_id, "evt_2")
    }))
    assert.deepStrictEqual(reads, [["evt_2"]])
    // The connection went away: later events are not read.
    yield* signals.notify(EVENTS_CHANNEL, "evt_3")
    yield* settle
    assert.deepStrictEqual(reads, [["evt_2"]])
  }).pipe(Effect.scoped))

it.effect("a listening connection is handed the frames its principal may see and its subscription wants; after it leaves, nothing is read", () =>
  Effect.gen(function*() {
    const { reads, live, signals } = yield* setUp()
    const frames: Array<string> = []
    const principal = { organizationId: "org_1", scope: { type: "organization" as const } }
    const subscription = { eventTypes: new Set(["message.received"]), inboxIds: new Set<string>(), podIds: new Set<string>() }
    yield* settle
    yield* Effect.scoped(Effect.gen(function*() {
      yield* live.listen(principal, () => subscription, (frame) => frames.push(frame))
      yield* signals.notify(EVENTS_CHANNEL, "evt_4")
      yield* settle
    }))
    assert.deepStrictEqual(frames.map((f) => JSON.parse(f).event_id), ["evt_4"])
    assert.deepStrictEqual(JSON.parse(frames[0]!).event_type, "message.received")
    // Another organization's principal is handed nothing of org_1's events.
    const other: Array<string> = []
    yield* Effect.scoped(Effect.gen(function*() {
      yield* live.listen({ organizationId: "org_2", scope: { type: "organization" as const } }, () => subscription, (frame) => other.push(frame))
      yield* signals.notify(EVENTS_CHANNEL, "evt_5")
      yield* settle
    }))
    assert.deepStrictEqual(other, [])
    yield* signals.notify(EVENTS_CHANNEL, "evt_6")
    yield* settle
    assert.deepStrictEqual(reads, [["evt_4"], ["evt_5"]])
  }).pipe(Effect.scoped))

it.effect("WebSocket listeners are capped per key and per process; a connection that leaves frees its slot", () =>
  Effect.gen(function*() {
    const { live } = yield* setUp({ maxWebSockets: 3, maxWebSocketsPerKey: 2 })
    const byKey = (keyId: string) => ({ organizationId: "org_1", scope: { type: "organization" as const }, keyId })
    const listen = (keyId: string) => live.listen(byKey(keyId), () => undefined, () => {})
    const first = yield* Scope.make()
    yield* listen("key_a").pipe(Scope.provide(first))
    yield* listen("key_a")
    const third = yield* listen("key_a").pipe(Effect.flip)
    assert.deepStrictEqual({ cap: third.cap, limit: third.limit }, { cap: "key", limit: 2 })
    yield* listen("key_b")
    const full = yield* listen("key_c").pipe(Effect.flip)
    assert.deepStrictEqual({ cap: full.cap, limit: full.limit }, { cap: "server", limit: 3 })
    // key_a's first connection closes: a slot of the process and of key_a is free again.
    yield* Scope.close(first, Exit.void)
    yield* listen("key_a")
    assert.strictEqual((yield* listen("key_c").pipe(Effect.flip)).cap, "server")
  }).pipe(Effect.scoped))
