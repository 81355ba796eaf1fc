/**
 * Sending when a process dies at the worst moment (docs/sending.md, "Sending mail"): after the
 * relay accepted a message and before the commit that records it. A transport that
 * interrupts its own fiber right after accepting stands in for the crash: nothing after it
 * runs, exactly as when the process is killed.
 */
import { assert, layer } from "@effect/vitest"
import { BlobStores, Egress, Engine, Ids, InboxOperations, MailTransport, type OutgoingMail, Sending } from "@inbox/core/internal"
import { newOrganization, pglite, settingsLayer } from "@inbox/testkit"
import { Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

class Relay {
  static sent: Array<OutgoingMail> = []
  static crashNext = false
}

const crashingRelay = Layer.succeed(MailTransport, MailTransport.of({
  send: (mail) =>
    Effect.suspend(() => {
      Relay.sent.push(mail)
      if (!Relay.crashNext) return Effect.void
      Relay.crashNext = false
      return Effect.interrupt
    })
}))

const engine = Engine.layer.pipe(
  Layer.provideMerge(crashingRelay),
  Layer.provideMerge(Layer.mergeAll(Ids.layer, settingsLayer(), Egress.layerTest({}), BlobStores.layerPostgres)),
  Layer.provideMerge(pglite)
)

const messageIdOf = (mail: OutgoingMail | undefined) => /Message-ID: (<[^>]+>)/i.exec(Buffer.from(mail?.raw ?? []).toString())?.[1]

const setUp = Effect.gen(function*() {
  const org = yield* newOrganization({ plan: "scale" })
  const principal = { organizationId: org.organizationId, scope: { type: "organization" as const } }
  const inbox = yield* Engine.use((engine) => engine.call("inboxes.create", {}, { kind: "principal", principal: principal }))
  return { principal, inbox }
})

layer(engine, { timeout: "120 seconds" })("a crash between the relay's acceptance and the commit", (it) => {
  it.effect("the retry with the same Idempotency-Key sends the same bytes with the same Message-ID and answers the same message_id; one message is stored", () =>
    Effect.gen(function*() {
      const { principal, inbox } = yield* setUp
      const sending = yield* Sending
      Relay.sent = []
      Relay.crashNext = true
      const request = { kind: "send" as const, inboxId: inbox.inbox_id, input: { to: "bob@example.net", subject: "Order 1042", text: "hello" }, idempotencyKey: "crash-1" }
      const first = yield* Effect.exit(sending.send(principal, request))
      assert.isTrue(Exit.isFailure(first) && Exit.hasInterrupts(first), "the first request died")
      assert.strictEqual(Relay.sent.length, 1)
      // While the dead request's lease runs, a retry waits; after it, the retry takes over.
      const retry = yield* Effect.forkChild(sending.send(principal, request))
      yield* TestClock.adjust("3 minutes")
      const answer = yield* Fiber.join(retry)
      assert.strictEqual(Relay.sent.length, 2)
      assert.strictEqual(messageIdOf(Relay.sent[1]), messageIdOf(Relay.sent[0]))
      // The relay (and the local outbox's listing) is told the subject, fresh and resumed alike.
      assert.deepStrictEqual(Relay.sent.map((m) => m.subject), ["Order 1042", "Order 1042"])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ id: string; state: string }>`SELECT id, state FROM messages WHERE inbox_id = ${inbox.inbox_id}`
      assert.deepStrictEqual(rows, [{ id: answer.message_id, state: "sent" }])
      const again = yield* sending.send(principal, request)
      assert.deepStrictEqual(again, answer)
      assert.strictEqual(Relay.sent.length, 2)
    }))

  it.effect("without a key, recoverStale sends a message left `sending` for five minutes again, once", () =>
    Effect.gen(function*() {
      const { principal, inbox } = yield* setUp
      const sending = yield* Sending
      Relay.sent = []
      Relay.crashNext = true
      const first = yield* Effect.exit(sending.send(principal, { kind: "send", inboxId: inbox.inbox_id, input: { to: "carol@example.net", text: "hi" } }))
      assert.isTrue(Exit.isFailure(first))
      assert.strictEqual(yield* sending.recoverStale(), 0, "too recent to be abandoned")
      yield* TestClock.adjust("6 minutes")
      assert.strictEqual(yield* sending.recoverStale(), 1)
      assert.strictEqual(yield* sending.recoverStale(), 0)
      assert.strictEqual(Relay.sent.length, 2)
      assert.strictEqual(messageIdOf(Relay.sent[1]), messageIdOf(Relay.sent[0]))
      const sql = yield* SqlClient.SqlClient
      const events = yield* sql<{ event_type: string }>`SELECT event_type FROM events WHERE inbox_id = ${inbox.inbox_id}`
      assert.deepStrictEqual(events.map((e) => e.event_type), ["message.sent"])
    }))
})

