/**
 * A PostgreSQL server of a test's own, which the test may stop and start again: `initdb` in
 * a temporary folder and `pg_ctl` on a free loopback port, from the server binaries on this
 * machine (`pg_config --bindir`, or the newest /usr/lib/postgresql/N/bin). The shared test
 * server (INBOX_TEST_DATABASE_URL) cannot be stopped under the other test files. As root,
 * the binaries run as the `postgres` user (PostgreSQL refuses to run as root). fsync is off:
 * the data is thrown away with the folder.
 */
import { execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./processes.ts"

const binDir = (): string => {
  try {
    const dir = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim()
    if (existsSync(join(dir, "initdb"))) return dir
  } catch {
    // no pg_config on PATH: look where Debian puts the server
  }
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) throw new Error("no PostgreSQL server binaries (initdb, pg_ctl) found: install the postgresql package")
  return join(root, newest, "bin")
}

export interface OwnPostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string
  /** `pg_ctl stop -m fast`: sessions are ended, new connections refused. */
  readonly stop: () => void
  /** `pg_ctl start`, waiting until it accepts connections. */
  readonly start: () => void
  /** Stops it (if running) and deletes its folder. */
  readonly remove: () => void
}

export const startOwnPostgres = async (): Promise<OwnPostgres> => {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), "inbox-own-pg-"))
  const asRoot = process.getuid?.() === 0
  if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim()), Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim()))
  const run = (tool: string, args: ReadonlyArray<string>) => {
    const [command, all] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]] : [join(bin, tool), [...args]]
    execFileSync(command, all, { stdio: ["ignore", "ignore", "pipe"] })
  }
  const port = await freePort()
  const data = join(dir, "data")
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`
  let running = false
  const start = () => {
    run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"])
    running = true
  }
  const stop = () => {
    run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
    running = false
  }
  start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    remove: () => {
      if (running) stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
