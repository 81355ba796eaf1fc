/**
 * Real server processes for tests and scripts that need more than one process or a hard
 * kill: `inboxctl serve` in a child process (node --import tsx) on a database of its own,
 * the operator's `inboxctl org create`, and SIGKILL. The in-process harness (app.ts) cannot
 * show what two processes sharing one PostgreSQL do, or what a `kill -9` leaves behind.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import postgres from "./pg-admin.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const MAIN = "packages/cli/src/main.ts"

/** The environment of a child: ours without any INBOX_* setting, plus the given ones. */
export const serverEnv = (extra: Record<string, string>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  return { ...env, INBOX_RATE_LIMITS: "off", ...extra }
}

export const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** A fresh database on the PostgreSQL server of `url`; `drop` removes it (connections and all). */
export const freshDatabase = async (url: string, prefix = "procs") => {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`
  await postgres(url, `CREATE DATABASE ${name}`)
  const target = new URL(url)
  target.pathname = `/${name}`
  return { url: target.toString(), drop: () => postgres(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

/** The rows of one statement on the database of `url`, read from outside the servers. */
export const queryRows = <A extends object = Record<string, unknown>>(url: string, statement: string): Promise<ReadonlyArray<A>> =>
  SqlClient.SqlClient.use((sql) => sql.unsafe<A>(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.orDie,
    Effect.runPromise
  )

/**
 * The threads whose summary is not what their messages say (count, newest message), that
 * hold a message of another inbox, or that have no message: none in a consistent store.
 */
export const THREAD_INCONSISTENCIES = `
  SELECT t.id, t.message_count, m.n, t.last_message_id, m.newest FROM threads t
  LEFT JOIN (
    SELECT thread_id, count(*)::int AS n, (array_agg(id ORDER BY "timestamp" DESC, id DESC))[1] AS newest,
      bool_and(inbox_id = (SELECT inbox_id FROM threads WHERE id = thread_id)) AS same_inbox
    FROM messages GROUP BY thread_id
  ) m ON m.thread_id = t.id
  WHERE m.n IS NULL OR t.message_count <> m.n OR t.last_message_id <> m.newest OR NOT m.same_inbox`

/** Runs `inboxctl ARGS` to the end; its stdout, or a rejection with its stderr. */
export const inboxctl = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    child.on("close", (code) => code === 0 ? resolve(stdout) : reject(new Error(`inboxctl ${args.join(" ")} exited with ${code}: ${stderr}`)))
  })

/** An organization on the Scale plan with its owner's key, made as the operator does. */
export const createOrganization = async (env: Record<string, string>, ownerEmail = "owner@example.com") =>
  JSON.parse(await inboxctl(["org", "create", "--owner-email", ownerEmail, "--verified", "--plan", "scale", "--json"], env)) as {
    organization_id: string
    api_key: string
  }

export interface ServerProcess {
  readonly url: string
  readonly child: ChildProcess
  /** Everything it wrote on stderr so far (for failure messages). */
  readonly stderr: () => string
  /** Everything it wrote on stdout so far (its log lines), when started with `captureStdout`. */
  readonly stdout: () => string
  /** SIGKILL: no shutdown hook, no flush, as a crash or `kill -9` leaves it. */
  readonly kill9: () => Promise<void>
  /** SIGTERM and wait for the exit. */
  readonly stop: () => Promise<void>
}

/**
 * `inboxctl serve` on a free port (or the given one), resolved once /health answers. Its
 * stdout (the log) is kept only with `captureStdout`: a long run logs a line per request.
 */
export const startServer = async (
  env: Record<string, string>,
  port?: number,
  options: { readonly captureStdout?: boolean } = {}
): Promise<ServerProcess> => {
  const p = port ?? await freePort()
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--port", String(p)], {
    cwd: ROOT,
    env,
    stdio: ["ignore", options.captureStdout === true ? "pipe" : "ignore", "pipe"]
  })
  // A test that times out must not leave its servers running.
  const orphan = () => child.kill("SIGKILL")
  process.once("exit", orphan)
  child.once("exit", () => process.off("exit", orphan))
  let stderr = ""
  let stdout = ""
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  const url = `http://127.0.0.1:${p}`
  const signal = (s: NodeJS.Signals) => async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(s)
    await exited
  }
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}: ${stderr}`)
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break
    if (i > 600) throw new Error(`serve did not become healthy: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return { url, child, stderr: () => stderr, stdout: () => stdout, kill9: signal("SIGKILL"), stop: signal("SIGTERM") }
}
