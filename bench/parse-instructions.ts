/**
 * Instruction counts of the parse benchmark's messages (bench/parse-messages.ts) under
 * `valgrind --tool=callgrind`: Mail.parse in-thread and bare `simpleParser`, each in its
 * own process (bench/parse-loop.ts), warmed up, then counted over a fixed number of calls.
 * Unlike wall clock, a count does not move with the load of a shared machine, so it can
 * compare two versions of the code, or ours and bare, run minutes apart.
 *
 *   node bench/parse-instructions.ts            prints a markdown table
 *   node bench/parse-instructions.ts --write    also replaces "## Parse: instructions" in BENCHMARKS.md
 *
 * Two valgrind processes at a time; a run takes some minutes (valgrind is about 50 times
 * slower than the code it counts).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { benchMessages, corpus } from "./parse-messages.ts"
import { machine, writeSection } from "./report.ts"

const loop = fileURLToPath(new URL("./parse-loop.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "parse-instructions-"))
/** message, messages per call, warm-up calls, counted calls */
const plan: ReadonlyArray<readonly [string, number, number, number]> = [
  ...benchMessages.map(([name, raw]) => [name, 1, raw.byteLength > 100_000 ? 20 : 60, raw.byteLength > 100_000 ? 20 : 40] as const),
  [`reply corpus (${corpus.length} messages)`, corpus.length, 3, 3]
]

/** Instructions per message of one side on one message. */
const count = async (side: "bare" | "ours", index: number): Promise<number> => {
  const [, perCall, warm, n] = plan[index]!
  const out = join(dir, `${side}-${index}.out`)
  await promisify(execFile)("valgrind", [
    "--tool=callgrind", "--dump-before=*GetUptime*", `--callgrind-out-file=${out}`,
    // one thread: V8 compiles and collects on the main thread, at points fixed by the code,
    // not by how its background threads were scheduled (with them, two runs of the same
    // code counted 2.8 and 5.0 M instructions per 5 KB message)
    process.execPath, "--single-threaded", loop, side, String(index), String(warm), String(n)
  ], { maxBuffer: 1 << 24 })
  // dump 1: start-up and warm-up; dump 2: the counted calls; the last file: exit
  const summary = /^summary: (\d+)$/m.exec(readFileSync(`${out}.2`, "utf8"))
  return Number(summary?.[1]) / (n * perCall)
}

const jobs = plan.flatMap((_, index) => (["bare", "ours"] as const).map((side) => ({ side, index })))
const results = new Map<string, number>()
const worker = async () => {
  for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) results.set(`${job.side}-${job.index}`, await count(job.side, job.index))
}
await Promise.all([worker(), worker()])

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")
const body = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()} with \`node bench/parse-instructions.ts\`: instructions per message under \`valgrind --tool=callgrind\`, counted after a warm-up (so JIT-compiled code, as in a long-running server), each side in its own process. Unlike the wall-clock ratios of the Parse section, these do not move with the machine's load (V8 runs single-threaded here, so its compiler and collector run at the same points in every run).`,
  "",
  "| message | bare `simpleParser` instructions/msg | Mail.parse instructions/msg | ratio ours/bare (below 1 is less work) |",
  "|---|---:|---:|---:|",
  ...plan.map(([name], index) => {
    const bare = results.get(`bare-${index}`) ?? 0
    const ours = results.get(`ours-${index}`) ?? 0
    return `| ${name} | ${fmt(bare)} | ${fmt(ours)} | **${(ours / bare).toFixed(2)}** |`
  })
].join("\n")
console.log(body)
if (process.argv.includes("--write")) writeSection("Parse: instructions", body)
