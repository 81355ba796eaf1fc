/**
 * Long fuzz run of Mail.parse (the property test runs 300 cases; this runs 10,000 by
 * default): `node --import tsx bench/fuzz-parse.ts [runs] [seed]`. Each case must give a
 * valid model that PostgreSQL can store or a typed MailParseError within 10 s; prints counts
 * per outcome and exits 1 on the first counterexample (fast-check shrinks it and prints the
 * seed to replay).
 */
import { Effect, Schema } from "effect"
import { ParseResult } from "../packages/core/src/mail/model.ts"
import { MailParser, parse } from "../packages/core/src/mail/parse.ts"
import { storable } from "../packages/core/src/mail/storable.ts"
import { fc, messages } from "../packages/core/test/mail/fuzz.ts"

const runs = Number(process.argv[2] ?? "10000")
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31)
const isResult = Schema.is(ParseResult)
const outcomes = new Map<string, number>()
const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1)
let slowest = 0

const started = performance.now()
const report = await fc.check(
  fc.asyncProperty(messages, async (raw) => {
    const t0 = performance.now()
    const ok = await Effect.runPromise(parse(raw).pipe(
      Effect.timeout("10 seconds"),
      Effect.match({
        onSuccess: (r) => {
          count("model")
          // storable: nothing in the model that PostgreSQL refuses (a NUL, a lone surrogate)
          return isResult(r) && r.message.size === raw.byteLength && storable(r.message) === r.message
        },
        onFailure: (e) => {
          count(e._tag === "MailParseError" ? `MailParseError ${e.reason}` : e._tag)
          return e._tag === "MailParseError"
        }
      }),
      Effect.provide(MailParser.layerInline)
    ))
    slowest = Math.max(slowest, performance.now() - t0)
    return ok
  }),
  { numRuns: runs, seed }
)
const seconds = (performance.now() - started) / 1000
console.log(`fuzz-parse: ${runs} cases, seed ${seed}, ${seconds.toFixed(1)} s, slowest case ${slowest.toFixed(0)} ms`)
for (const [k, n] of [...outcomes].sort()) console.log(`  ${k}: ${n}`)
if (report.failed) {
  console.log(fc.defaultReportMessage(report))
  process.exit(1)
}
console.log("no counterexample")
