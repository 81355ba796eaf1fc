/**
 * Child processes for the operating tests (package, backup, move, shutdown): run a command
 * to its end, start a long-running server and wait for it to answer, find a free port. The
 * environment a child gets is ours without any INBOX_* setting, plus what the test names.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"

export interface Run {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Our environment without INBOX_* settings, rate limits off, plus `extra`. */
export const childEnv = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  return { ...env, INBOX_RATE_LIMITS: "off", ...extra }
}

export const startProcess = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env: Record<string, string> }
): ChildProcess & { readonly output: Promise<Run> } => {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
  const output = new Promise<Run>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })))
  return Object.assign(child, { output })
}

export const runProcess = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env: Record<string, string> }
): Promise<Run> => startProcess(command, args, options).output

export const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** Waits until `url` answers 200 (polling every 100 ms), failing when the child exits first. */
export const waitFor = async (url: string, child: ChildProcess, attempts = 600): Promise<void> => {
  for (let i = 0; i < attempts; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    const ok = await fetch(url).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not answer`)
}

const MAIN = ["--import", "tsx", "packages/cli/src/main.ts"]

/** `inboxctl org create` for a verified organization; its owner's API key. */
export const createOrg = async (cwd: string, env: Record<string, string>): Promise<string> => {
  const created = await runProcess(process.execPath, [...MAIN, "org", "create", "--owner-email", "ops@example.com", "--verified", "--json"], { cwd, env })
  if (created.code !== 0) throw new Error(created.stderr)
  return (JSON.parse(created.stdout) as { api_key: string }).api_key
}

/** `inboxctl serve` on a free port, once it answers /health. */
export const serve = async (cwd: string, env: Record<string, string>, flags: ReadonlyArray<string> = []) => {
  const port = await freePort()
  const server = startProcess(process.execPath, [...MAIN, "serve", "--port", String(port), ...flags], { cwd, env })
  await waitFor(`http://127.0.0.1:${port}/health`, server)
  return { server, port, url: `http://127.0.0.1:${port}` }
}
