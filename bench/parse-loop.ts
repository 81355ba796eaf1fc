/**
 * One side of the parse benchmark in a loop, for profilers: `valgrind --tool=callgrind`
 * counts instructions whatever the machine's load, and `node --cpu-prof` shows where time
 * goes. Runs `warm` calls, then `n` more, and calls `os.uptime()` (node::os::GetUptime,
 * which nothing else here calls) before and after the `n`, so that callgrind's
 * `--dump-before=*GetUptime*` counts them in a file of their own (the second dump):
 *
 *   valgrind --tool=callgrind --dump-before='*GetUptime*' node --single-threaded bench/parse-loop.ts <bare|ours> <message 0-3> <warm> <n>
 *
 * Message 3 is the whole reply corpus, one after the other. bench/parse-instructions.ts
 * runs this for every message and side.
 */
import { createRequire } from "node:module"
import { uptime } from "node:os"
import { defaultLimits, parseRaw } from "../packages/core/src/mail/parse-core.ts"
import { benchMessages, corpus } from "./parse-messages.ts"

const { simpleParser } = createRequire(import.meta.url)("mailparser") as { simpleParser: (raw: Buffer) => Promise<unknown> }
const [side = "ours", index = "0", warm = "100", n = "100"] = process.argv.slice(2)
const messages = Number(index) === 3 ? corpus : [benchMessages[Number(index)]?.[1] ?? Buffer.alloc(0)]
const run = side === "bare" ? (raw: Buffer) => simpleParser(raw) : (raw: Buffer) => parseRaw(raw, defaultLimits)
for (let k = 0; k < Number(warm); k++) for (const raw of messages) await run(raw)
uptime()
for (let k = 0; k < Number(n); k++) for (const raw of messages) await run(raw)
uptime()
