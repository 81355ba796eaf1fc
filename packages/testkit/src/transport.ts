/**
 * A captured outbox: the testkit's MailTransport. Every accepted message is kept in order;
 * tests read them back with `CapturedMail.all` / `CapturedMail.last`. `reject` makes the
 * next sends to an address fail as a relay would (MessageRejected).
 */
import { MailTransport, MessageRejected, type OutgoingMail } from "@inbox/core/internal"
import { Context, Effect, Layer, Ref } from "effect"

export class CapturedMail extends Context.Service<CapturedMail, {
  readonly all: Effect.Effect<ReadonlyArray<OutgoingMail>>
  reject(address: string): Effect.Effect<void>
}>()("testkit/CapturedMail") {
  static readonly layer = Layer.effectContext(Effect.gen(function*() {
    const sent = yield* Ref.make<ReadonlyArray<OutgoingMail>>([])
    const rejected = yield* Ref.make<ReadonlySet<string>>(new Set())
    const transport = MailTransport.of({
      send: (mail) =>
        Effect.gen(function*() {
          const refused = yield* Ref.get(rejected)
          const bad = mail.envelope.to.find((a) => refused.has(a.toLowerCase()))
          if (bad !== undefined) return yield* new MessageRejected({ message: `550 ${bad}: recipient rejected` })
          yield* Ref.update(sent, (all) => [...all, mail])
        })
    })
    const captured = CapturedMail.of({
      all: Ref.get(sent),
      reject: (address) => Ref.update(rejected, (s) => new Set([...s, address.toLowerCase()]))
    })
    return Context.make(MailTransport, transport).pipe(Context.add(CapturedMail, captured))
  }))
}

/** The 6-digit code in the newest captured mail to `address`. */
export const lastCode = (address: string) =>
  Effect.gen(function*() {
    const mail = (yield* (yield* CapturedMail).all).filter((m) => m.envelope.to.includes(address.toLowerCase())).at(-1)
    const match = mail === undefined ? null : Buffer.from(mail.raw).toString("utf8").match(/code is (\d{6})/)
    if (match === null || match[1] === undefined) return yield* Effect.die(`no verification code mailed to ${address}`)
    return match[1]
  })
