/**
 * The measurements behind Mail.parse's bounded-cost mechanism (see the opening comment of
 * packages/core/src/mail/parse.ts): for each hostile message, wall time, the longest stall
 * of the main event loop and the RSS growth, parsed in-thread and through the worker pool.
 *   node --import tsx bench/parse-hostile.ts
 */
import { Layer, ManagedRuntime } from "effect"
import { MailParser, parse } from "../packages/core/src/mail/parse.ts"
import { hostile } from "../packages/core/test/mail/fixtures.ts"

const measure = async (run: () => Promise<string>) => {
  let maxGap = 0
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
  }, 5)
  const rss0 = process.memoryUsage().rss
  let peak = rss0
  const mem = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
  const t0 = performance.now()
  const outcome = await run()
  const ms = performance.now() - t0
  await new Promise((r) => setTimeout(r, 30)) // a stall right at the end shows as a gap too
  clearInterval(timer)
  clearInterval(mem)
  return { outcome, ms, maxGap, rss: (Math.max(peak, process.memoryUsage().rss) - rss0) / 2 ** 20 }
}

const inline = ManagedRuntime.make(MailParser.layerInline)
const pool = ManagedRuntime.make(Layer.fresh(MailParser.layerWith({ workers: 1 })))
await pool.runPromise(parse(Buffer.from("Subject: warm-up\r\n\r\nx"))) // start the worker first
const outcomeOf = (rt: typeof inline, raw: Uint8Array) =>
  rt.runPromise(parse(raw)).then(() => "ok", (e: { reason?: string }) => e.reason ?? "error")

console.log("| message | bytes | mode | outcome | ms | longest main-loop stall ms | RSS growth MB |")
console.log("|---|---:|---|---|---:|---:|---:|")
for (const [name, make] of Object.entries(hostile)) {
  const raw = make()
  for (const [mode, rt] of [["in-thread", inline], ["pool", pool]] as const) {
    const m = await measure(() => outcomeOf(rt, raw))
    console.log(`| ${name} | ${raw.byteLength.toLocaleString("en-US")} | ${mode} | ${m.outcome} | ${m.ms.toFixed(0)} | ${m.maxGap.toFixed(0)} | ${m.rss.toFixed(0)} |`)
  }
}
await pool.dispose()
await inline.dispose()
