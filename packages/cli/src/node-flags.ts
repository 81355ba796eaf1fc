/**
 * The Node (V8) flags `inboxctl serve` runs with (INBOX_NODE_FLAGS). V8 sizes the young
 * generation once, when the process starts, so a server started without them replaces
 * itself (execve: the same process id, environment and output) with them on its command
 * line, before it loads the engine. A flag the operator already gave, in NODE_OPTIONS or on
 * node's own command line, stays theirs. Where execve is missing (Windows), the flags V8
 * takes at run time are set in place and the young generation keeps Node's size.
 */
import { setFlagsFromString } from "node:v8"

// Not a setting: the note a restarted serve leaves itself, so it restarts once.
const MARK = "INBOXCTL_NODE_FLAGS_APPLIED"

const nameOf = (flag: string) => flag.split("=")[0]!.replace(/^--no-/, "--").replaceAll("_", "-")

export const runWithNodeFlags = (flags: string): void => {
  if (process.env[MARK] === "1") return
  const given = new Set([...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)].filter((f) => f.startsWith("--")).map(nameOf))
  const wanted = flags.split(/\s+/).filter((f) => f.startsWith("--") && !given.has(nameOf(f)))
  if (wanted.length === 0) return
  const execve = (process as { execve?: (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) => never }).execve
  if (typeof execve !== "function" || process.platform === "win32") {
    for (const flag of wanted) setFlagsFromString(flag)
    return
  }
  execve.call(process, process.execPath, [process.execPath, ...wanted, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, [MARK]: "1" })
}
