/**
 * The server process of the load-independent counts (bench/counts.ts for the GET,
 * bench/counts-smtp.ts for SMTP ingest): `node [flags] --import tsx script` from `cwd`,
 * under `valgrind --tool=callgrind` with instrumentation off until the caller switches it on
 * (`instructions`), with bench/heap-sampler.mjs preloaded (`allocation`), or plain. Callgrind's
 * files and the heap profile go to `dir`.
 */
import { spawn } from "node:child_process"
import { join, resolve } from "node:path"

export const spawnCounted = (
  script: string,
  env: Record<string, string>,
  cwd: string,
  dir: string,
  wrap: "instructions" | "allocation" | "plain",
  flags: ReadonlyArray<string> = []
) => {
  const node = [process.execPath, ...flags, ...(wrap === "allocation" ? ["--import", resolve("bench/heap-sampler.mjs")] : []), "--import", "tsx", script]
  const [command, ...args] = wrap === "instructions"
    ? ["valgrind", "--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${dir}/callgrind.out.%p`, ...node]
    : node
  return spawn(command!, args, {
    cwd,
    env: { ...process.env, ...env, NODE_ENV: "production", HEAP_SAMPLE_FILE: join(dir, "heap.json") },
    stdio: ["ignore", "pipe", "inherit"]
  })
}
