/**
 * The MailTransport contract, written once and run against every implementation: the
 * captured outbox, the local outbox (on each storage) and the SMTP relay.
 *
 * An implementation must hand over the exact bytes with the envelope it was given (Bcc
 * recipients only in the envelope), keep order, and report a refused recipient as
 * MessageRejected rather than a defect (where the implementation can refuse at all).
 */
import { assert, layer } from "@effect/vitest"
import { MailTransport } from "@inbox/core/internal"
import { Effect, type Layer } from "effect"

export interface Delivered {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: Uint8Array
}

export interface TransportUnderTest<E, R> {
  readonly name: string
  readonly layer: Layer.Layer<MailTransport | R, E>
  /** What the far side holds so far, oldest first. */
  readonly delivered: Effect.Effect<ReadonlyArray<Delivered>, never, R>
  /** Make the far side refuse this address, when the implementation can refuse. */
  readonly refuse?: (address: string) => Effect.Effect<void, never, R>
}

const message = (subject: string) =>
  new TextEncoder().encode(`From: a@inbox.localhost\r\nTo: b@example.org\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@inbox.localhost>\r\n\r\nHello ${subject}.\r\n`)

export const mailTransportContract = <E, R>(impl: TransportUnderTest<E, R>) =>
  layer(impl.layer, { timeout: "120 seconds" })(`MailTransport contract: ${impl.name}`, (it) => {
    it.effect("delivers the exact bytes with the envelope, Bcc recipients only in the envelope", () =>
      Effect.gen(function*() {
        const transport = yield* MailTransport
        const before = (yield* impl.delivered).length
        const raw = message("contract-1")
        yield* transport.send({ envelope: { from: "a@inbox.localhost", to: ["b@example.org", "hidden@example.org"] }, raw, subject: "contract-1" })
        const delivered = (yield* impl.delivered).slice(before)
        assert.strictEqual(delivered.length, 1)
        assert.strictEqual(delivered[0]?.from, "a@inbox.localhost")
        assert.deepStrictEqual(delivered[0]?.to, ["b@example.org", "hidden@example.org"])
        const text = Buffer.from(delivered[0]?.raw ?? []).toString("utf8")
        assert.include(text, "Subject: contract-1")
        assert.include(text, "Hello contract-1.")
        assert.notInclude(text, "hidden@example.org")
      }))

    it.effect("keeps the order of sends", () =>
      Effect.gen(function*() {
        const transport = yield* MailTransport
        const before = (yield* impl.delivered).length
        for (const s of ["order-1", "order-2", "order-3"]) {
          yield* transport.send({ envelope: { from: "a@inbox.localhost", to: ["b@example.org"] }, raw: message(s) })
        }
        const subjects = (yield* impl.delivered).slice(before).map((d) => /Subject: (\S+)/.exec(Buffer.from(d.raw).toString("utf8"))?.[1])
        assert.deepStrictEqual(subjects, ["order-1", "order-2", "order-3"])
      }))

    if (impl.refuse !== undefined) {
      const refuse = impl.refuse
      it.effect("reports a refused recipient as message_rejected", () =>
        Effect.gen(function*() {
          yield* refuse("nobody@example.org")
          const error = yield* (yield* MailTransport).send({ envelope: { from: "a@inbox.localhost", to: ["nobody@example.org"] }, raw: message("refused") }).pipe(Effect.flip)
          assert.strictEqual(error.code, "message_rejected")
        }))
    }
  })
