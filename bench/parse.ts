/**
 * Parse benchmark: Mail.parse in-thread (the work a pool worker does per message, reply
 * extraction included) against bare mailparser `simpleParser` on the same bytes,
 * interleaved: each round runs one, then the other (the order alternating between
 * rounds), and the ratio is taken within the round, because the speed of a shared machine
 * drifts between rounds. The messages are three synthetic sizes and the whole reply
 * corpus (every real-client shape in it, parsed one after the other as one unit). A breakdown
 * says where our time goes (mailparser with our options, text extraction, HTML
 * extraction, html-to-text, the worker hop).
 *
 *   node --import tsx bench/parse.ts            prints a markdown table
 *   node --import tsx bench/parse.ts --write    also replaces "## Parse" in BENCHMARKS.md
 *
 * `benchParse()` is exported for bench/run.ts.
 */
import { Layer, ManagedRuntime } from "effect"
import { createRequire } from "node:module"
import { loadavg } from "node:os"
import { pathToFileURL } from "node:url"
import { extractReply } from "../packages/core/src/mail/extract.ts"
import { MailParser, parse } from "../packages/core/src/mail/parse.ts"
import { defaultLimits, parseOptions, parseRaw, textFromHtml } from "../packages/core/src/mail/parse-core.ts"
import { machine, writeSection } from "./report.ts"
import { benchMessages, corpus } from "./parse-messages.ts"

export { benchMessages, corpus }

interface Parsed {
  readonly text?: string | false
  readonly html?: string | false
}
// bare mailparser, default options, exactly as a caller without our module would use it
const { simpleParser } = createRequire(import.meta.url)("mailparser") as {
  simpleParser: (raw: Buffer, options?: object) => Promise<Parsed>
}

/** Seconds per side per round, and rounds. */
const SECONDS = Number(process.env["BENCH_PARSE_SECONDS"] ?? "1")
const ROUNDS = Number(process.env["BENCH_PARSE_ROUNDS"] ?? "5")
/** Calls for `ms` after none; microseconds per call. */
const timed = async (run: () => Promise<unknown>, ms: number): Promise<number> => {
  let n = 0
  const start = performance.now()
  const end = start + ms
  while (performance.now() < end) {
    await run()
    n++
  }
  return ((performance.now() - start) * 1000) / n
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] ?? 0 : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

interface Unit {
  readonly message: string
  readonly bytes: number
  readonly count: number
  readonly each: (f: (raw: Buffer) => Promise<unknown>) => Promise<void>
}

const units = (): ReadonlyArray<Unit> => [
  ...benchMessages.map(([message, raw]): Unit => ({ message, bytes: raw.byteLength, count: 1, each: async (f) => void (await f(raw)) })),
  {
    message: `reply corpus (${corpus.length} messages)`,
    bytes: corpus.reduce((n, raw) => n + raw.byteLength, 0),
    count: corpus.length,
    each: async (f) => {
      for (const raw of corpus) await f(raw)
    }
  }
]

export interface ParseFigure {
  readonly message: string
  readonly bytes: number
  readonly count: number
  /** µs per message, median of rounds */
  readonly bare: number
  readonly ours: number
  /** ours/bare speed (bare µs / ours µs) per round */
  readonly ratios: ReadonlyArray<number>
  /** µs per message */
  readonly mailparser: number
  readonly textExtraction: number
  readonly htmlExtraction: number
  readonly htmlToText: number
  readonly pooled: number
}

/** The parts of our work, each timed alone on mailparser's output for the same bytes. */
const breakdown = async (unit: Unit, ms: number) => {
  const parsed: Array<Parsed> = []
  await unit.each(async (raw) => void parsed.push(await simpleParser(raw, parseOptions(defaultLimits))))
  const str = (v: string | false | undefined) => (typeof v === "string" && v.length > 0 ? v : undefined)
  const texts = parsed.map((p) => str(p.text))
  const htmls = parsed.map((p) => str(p.html))
  const derived = parsed.map((p, k) => texts[k] ?? (htmls[k] === undefined ? undefined : textFromHtml(htmls[k] ?? "", defaultLimits.maxHtmlToTextChars)))
  const per = (us: number) => us / unit.count
  const mailparser = per(await timed(() => unit.each((raw) => simpleParser(raw, parseOptions(defaultLimits))), ms))
  const textOnly = per(await timed(async () => {
    for (const t of derived) if (t !== undefined) extractReply({ text: t })
  }, ms))
  const both = per(await timed(async () => {
    for (let k = 0; k < derived.length; k++) {
      const t = derived[k]
      const h = htmls[k]
      extractReply({ ...(t === undefined ? {} : { text: t }), ...(h === undefined ? {} : { html: h }), sameWords: true })
    }
  }, ms))
  const htmlToText = per(await timed(async () => {
    for (let k = 0; k < parsed.length; k++) {
      const h = htmls[k]
      if (texts[k] === undefined && h !== undefined) textFromHtml(h, defaultLimits.maxHtmlToTextChars)
    }
  }, ms))
  return { mailparser, textExtraction: textOnly, htmlExtraction: Math.max(0, both - textOnly), htmlToText }
}

/** The machine's 1-minute load average at the start and the end of the run: on a shared
 * machine, the figures mean little when it is far above the core count. */
const load: Array<number> = []

export const benchParse = async (): Promise<ReadonlyArray<ParseFigure>> => {
  load.push(loadavg()[0] ?? 0)
  const pool = ManagedRuntime.make(Layer.fresh(MailParser.layerWith({ workers: 1 })))
  const figures: Array<ParseFigure> = []
  for (const unit of units()) {
    await unit.each(async (raw) => {
      const check = await parseRaw(raw, defaultLimits)
      if (!check.ok) throw new Error(`${unit.message} did not parse: ${check.message}`)
    })
    const bareRun = () => unit.each((raw) => simpleParser(raw))
    const oursRun = () => unit.each((raw) => parseRaw(raw, defaultLimits))
    // warm-up: both paths compiled and their caches filled before the first round
    await timed(bareRun, 300)
    await timed(oursRun, 300)
    const bare: Array<number> = []
    const ours: Array<number> = []
    for (let round = 0; round < ROUNDS; round++) {
      const first = round % 2 === 0 ? bareRun : oursRun
      const second = round % 2 === 0 ? oursRun : bareRun
      const a = await timed(first, SECONDS * 1000)
      const b = await timed(second, SECONDS * 1000)
      bare.push((round % 2 === 0 ? a : b) / unit.count)
      ours.push((round % 2 === 0 ? b : a) / unit.count)
    }
    const parts = await breakdown(unit, (SECONDS * 1000) / 2)
    const pooledRun = () => unit.each((raw) => pool.runPromise(parse(raw)))
    await timed(pooledRun, 300)
    const pooled = (await timed(pooledRun, SECONDS * 1000)) / unit.count
    figures.push({
      message: unit.message,
      bytes: unit.bytes,
      count: unit.count,
      bare: median(bare),
      ours: median(ours),
      ratios: bare.map((b, k) => b / (ours[k] ?? b)),
      ...parts,
      pooled
    })
  }
  await pool.dispose()
  load.push(loadavg()[0] ?? 0)
  return figures
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

export const parseSection = (figures: ReadonlyArray<ParseFigure>) =>
  [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; 1-minute load average ${load.map((l) => l.toFixed(1)).join(" at the start, ")} at the end.`,
    `Bare \`simpleParser\` (default options, which also build \`textAsHtml\`) and Mail.parse in-thread (mailparser with our options, the model, html-to-text when there is no text part, reply extraction of text and HTML, preview), interleaved: ${ROUNDS} rounds of ${SECONDS} s per side, the order alternating, the speed ratio (bare µs / ours µs, above 1 is faster than bare) taken within each round; median of rounds, range in brackets. The corpus row parses the ${corpus.length} messages of the reply corpus one after the other and counts per message.`,
    "",
    "| message | bytes | bare µs/msg | Mail.parse µs/msg | speed ratio ours/bare |",
    "|---|---:|---:|---:|---:|",
    ...figures.map((f) =>
      `| ${f.message} | ${fmt(f.bytes)} | ${fmt(f.bare)} | ${fmt(f.ours)} | **${median(f.ratios).toFixed(2)}** (${Math.min(...f.ratios).toFixed(2)}-${Math.max(...f.ratios).toFixed(2)}) |`
    ),
    "",
    "Where our time goes, µs per message, each part timed alone on the same messages (so the parts do not add up exactly to the total above, which also holds the model and preview). Worker hop = one message through the pool (one worker, one message in flight) minus in-thread.",
    "",
    "| message | mailparser (our options) | text extraction | HTML extraction | html-to-text | worker hop |",
    "|---|---:|---:|---:|---:|---:|",
    ...figures.map((f) =>
      `| ${f.message} | ${fmt(f.mailparser)} | ${fmt(f.textExtraction)} | ${fmt(f.htmlExtraction)} | ${fmt(f.htmlToText)} | ${fmt(Math.max(0, f.pooled - f.ours))} |`
    )
  ].join("\n")

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const body = parseSection(await benchParse())
  console.log(body)
  if (process.argv.includes("--write")) writeSection("Parse", body)
}
