/**
 * One side of the parse benchmark in a loop, for deterministic profilers: `valgrind
 * --tool=callgrind` counts instructions whatever the machine's load, and `node
 * --cpu-prof` shows where they go. Runs `warm` calls, then `n` more; the instructions of
 * `n` calls are the difference between a run with `n` and one with `n = 0`.
 *
 *   node --import tsx bench/parse-loop.ts <bare|ours> <message index 0-3> <warm> <n>
 *
 * Message 3 is the whole reply corpus, one after the other.
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
