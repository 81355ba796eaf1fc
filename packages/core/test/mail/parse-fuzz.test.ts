import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { ParseResult } from "../../src/mail/model.ts"
import { MailParser, parse } from "../../src/mail/parse.ts"
import { storable } from "../../src/mail/storable.ts"
import { messages } from "./fuzz.ts"

const isResult = Schema.is(ParseResult)

describe("Mail.parse under fuzzing", () => {
  it.live("never throws or hangs: every input gives a valid model PostgreSQL can store (no NUL, no lone surrogate) or a typed MailParseError", () =>
    Effect.gen(function*() {
      const outcomes = { ok: 0, failed: 0 }
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(messages, (raw) =>
            Effect.runPromise(
              parse(raw).pipe(
                Effect.timeout("10 seconds"),
                Effect.match({
                  onSuccess: (r) => {
                    outcomes.ok++
                    return isResult(r) && r.message.size === raw.byteLength && r.message.attachments.length === r.attachments.length &&
                      storable(r.message) === r.message
                  },
                  onFailure: (e) => {
                    outcomes.failed++
                    return e._tag === "MailParseError"
                  }
                }),
                Effect.provide(MailParser.layerInline)
              )
            )
          ),
          { numRuns: 300, seed: 20250704 }
        )
      )
      assert.strictEqual(outcomes.ok + outcomes.failed, 300)
      assert.isAbove(outcomes.ok, 100) // most damaged mail is still readable
    }), { timeout: 120_000 })
})
