/**
 * `pnpm bench imap`: the IMAP server beside Dovecot from Debian, in the same run, on the same
 * messages (bench/imap-seed.ts), as issue 28 asks:
 *
 * - FETCH of 10,000 envelopes: `FETCH 1:10000 (UID ENVELOPE)` on a selected INBOX, timed
 *   from the command to its tagged OK;
 * - SEARCH TEXT over the whole mailbox (100,000 messages): `SEARCH TEXT quasar`, a word in
 *   every 500th body; both sides must find the same number;
 * - IDLE notification latency: a client idles in INBOX while 1,000 others idle too; a
 *   message is delivered (ours: `POST /inbound/raw`; Dovecot: LMTP) and the time from the
 *   delivery's acknowledgement to the client's `* n EXISTS` is taken, p50 and p99;
 * - memory per idle connection: 1,000 connections each signed in, INBOX selected and in
 *   IDLE; the PSS of every process that serves them (ours: the server's node process and its
 *   database's PostgreSQL backends; Dovecot: the master and every process under it), after
 *   minus before, divided by the connections (ours after a full garbage collection each time);
 * - CPU per IDLE delivery: the user and system time of those same processes over the IDLE
 *   deliveries (each told to every idling connection), divided by the deliveries: a figure
 *   a loaded machine does not skew as it skews the times.
 *
 * Ours is bench/server.ts (the real server) on PostgreSQL with INBOX_IMAP_LISTEN on
 * loopback; the messages are stored by the engine's own delivery path, once per database
 * (`bench_imap_<N>`, reused while complete). Dovecot is `dovecot-imapd` with
 * `dovecot-fts-xapian` (installed with apt-get when missing), a throwaway configuration
 * under BENCH_IMAP_DIR like ../shared/bench/postfix-dovecot/ writes its own: loopback only,
 * Maildir, full-text search with fts-xapian, `mail_max_userip_connections` above the
 * connections; the same messages are written as Maildir files and indexed with
 * `doveadm index` (kept while complete). Both sides are warmed with one untimed run.
 *
 * Knobs: BENCH_IMAP_MESSAGES (100000), BENCH_IMAP_FETCH (10000), BENCH_IMAP_CONNECTIONS
 * (1000), BENCH_IMAP_IDLE_SAMPLES (100), BENCH_IMAP_ROUNDS (3), BENCH_IMAP_DIR
 * (/tmp/imap-bench), BENCH_POSTGRES_URL, BENCH_SKIP_DOVECOT=1, BENCH_IMAP_DATABASE (ours: bench_imap_N),
 * BENCH_IMAP_HTTP_PORT (29401; IMAP on the next port). Needs root (Dovecot, and
 * the PSS of PostgreSQL's processes).
 */
import { adminSql } from "@inbox/testkit"
import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { loadavg } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import nodemailer from "nodemailer"
import pg from "pg"
import { medianOf, OURS_NODE_FLAGS, stop, waitHealthy } from "./http.ts"
import { benchMessage, type ImapSeeded, RARE_EVERY, RARE_WORD } from "./imap-seed.ts"
import { machine } from "./report.ts"

const MESSAGES = Number(process.env["BENCH_IMAP_MESSAGES"] ?? "100000")
const FETCH = Math.min(MESSAGES, Number(process.env["BENCH_IMAP_FETCH"] ?? "10000"))
const CONNECTIONS = Number(process.env["BENCH_IMAP_CONNECTIONS"] ?? "1000")
const SAMPLES = Number(process.env["BENCH_IMAP_IDLE_SAMPLES"] ?? "100")
const ROUNDS = Number(process.env["BENCH_IMAP_ROUNDS"] ?? "3")
const DIR = process.env["BENCH_IMAP_DIR"] ?? "/tmp/imap-bench"
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SKIP_DOVECOT = process.env["BENCH_SKIP_DOVECOT"] === "1"
/** How long one step (a command's answer, an EXISTS) may take before the run fails. */
const STEP_MS = 120_000
/** How long one side's IDLE deliveries may go on (a side that tells its idlers slowly is measured on fewer). */
const IDLE_BUDGET_MS = 300_000
const DATABASE = process.env["BENCH_IMAP_DATABASE"] ?? `bench_imap_${MESSAGES}`
const SECRET = "bench-inbound-secret"
const HTTP_PORT = Number(process.env["BENCH_IMAP_HTTP_PORT"] ?? "29401")
const IMAP_PORT = HTTP_PORT + 1
const DOVECOT_IMAP_PORT = 29403
const DOVECOT_LMTP_PORT = 29404
/** Dovecot's mail user: Debian's `mail` (uid and gid 8), as ../shared/bench/postfix-dovecot does. */
const MAIL_UID = 8
const DOVECOT_USER = "bench@imap.bench"
const DOVECOT_PASSWORD = "bench"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const dbUrl = (name: string) => SERVER.replace(/\/[^/]*$/, `/${name}`)
const round1 = (x: number) => Math.round(x * 10) / 10
const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
}

// ---------------------------------------------------------------------------------------
// A small IMAP client over a raw socket: the same bytes to both servers, and light enough
// that the bench process holds 1,000 of them without weighing on what it measures.

class Imap {
  private chunks: Array<Buffer> = []
  private text = ""
  private waiter: { test: (text: string) => boolean; resolve: (text: string) => void; timer: NodeJS.Timeout } | undefined
  private tag = 0
  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      if (this.waiter === undefined) {
        this.chunks.push(chunk)
        return
      }
      this.chunks.push(chunk)
      this.check()
    })
    socket.on("error", () => undefined)
  }

  private check() {
    if (this.waiter === undefined) return
    // Only the tail can hold what is waited for: the text seen so far is kept small.
    const fresh = Buffer.concat(this.chunks).toString("latin1")
    this.chunks = []
    this.text += fresh
    if (this.waiter.test(this.text)) {
      const { resolve, timer } = this.waiter
      clearTimeout(timer)
      const all = this.text
      this.waiter = undefined
      this.text = ""
      resolve(all)
    }
  }

  /**
   * Resolves with everything received once `test` holds for it; fails after `STEP_MS`, so a
   * server that stops answering fails the run with what it was waiting for instead of
   * stalling it.
   */
  until(test: (text: string) => boolean, what = "an answer"): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined
        reject(new Error(`no ${what} within ${STEP_MS / 1000} s; last received: ${JSON.stringify(this.text.slice(-200))}`))
      }, STEP_MS)
      this.waiter = { test, resolve, timer }
      this.check()
    })
  }

  static async open(port: number): Promise<Imap> {
    const socket = connect({ host: "127.0.0.1", port })
    socket.setNoDelay(true)
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve)
      socket.once("error", reject)
    })
    const imap = new Imap(socket)
    await imap.until((t) => t.includes("\r\n"), "greeting")
    return imap
  }

  /** Sends a command and resolves with its whole answer, up to its tagged completion. */
  async command(text: string): Promise<string> {
    const tag = `b${++this.tag}`
    const end = `${tag} `
    const answer = this.until((t) => {
      const at = t.lastIndexOf(`\r\n${end}`)
      const start = t.startsWith(end) ? 0 : at < 0 ? -1 : at + 2
      return start >= 0 && t.indexOf("\r\n", start) > 0
    }, `answer to ${text.split(" ")[0]}`)
    this.socket.write(`${tag} ${text}\r\n`)
    const all = await answer
    const last = all.slice(all.lastIndexOf(end)).split("\r\n")[0]!
    if (!last.startsWith(`${tag} OK`)) throw new Error(`${text.split(" ")[0]}: ${last}`)
    return all
  }

  async idle(): Promise<void> {
    const started = this.until((t) => /^\+ /m.test(t), "continuation to IDLE")
    this.socket.write(`i${++this.tag} IDLE\r\n`)
    await started
  }

  /** While idling: resolves at the next `* n EXISTS` with n. */
  nextExists(): Promise<number> {
    return this.until((t) => /\* \d+ EXISTS\r\n/.test(t), "EXISTS").then((t) => Number(/\* (\d+) EXISTS\r\n/.exec(t)![1]))
  }

  close() {
    this.socket.destroy()
  }
}

const signedIn = async (port: number, user: string, password: string) => {
  const imap = await Imap.open(port)
  await imap.command(`LOGIN "${user}" "${password}"`)
  return imap
}

// ---------------------------------------------------------------------------------------
// Memory: PSS from /proc/PID/smaps_rollup.

const pssKib = (pid: number): number => {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8")
    return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? "0")
  } catch {
    return 0
  }
}

/** CPU time a process has used (user and system), in ms; 0 when it is gone. */
const TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim() || "100")
const cpuMs = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS
  } catch {
    return 0
  }
}
const pssOf = async (side: Side) => (await side.processes()).reduce((n, pid) => n + pssKib(pid), 0)
/** Per process, so a backend that ended between two readings is left out of both. */
const cpuOf = async (side: Side) => new Map((await side.processes()).map((pid) => [pid, cpuMs(pid)]))

/** The process and every process under it. */
const descendants = (root: number): Array<number> => {
  const parent = new Map<number, number>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const all = [root]
  for (let i = 0; i < all.length; i++) for (const [pid, ppid] of parent) if (ppid === all[i]) all.push(pid)
  return all
}

// ---------------------------------------------------------------------------------------
// The two sides.

interface Side {
  readonly name: string
  readonly port: number
  readonly user: string
  readonly password: string
  /** Delivers a message; resolves once the server has acknowledged it as stored. */
  deliver(raw: Buffer): Promise<void>
  /** Every process that serves the connections. */
  processes(): Promise<Array<number>>
  /** Lets the side drop what it no longer holds before its memory is read (ours: a full GC). */
  settle(): Promise<void>
  stop(): Promise<void>
}

const ours = async (): Promise<Side & { seeded: ImapSeeded }> => {
  const admin = new pg.Client({ connectionString: SERVER })
  await admin.connect()
  const exists = (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE])).rowCount! > 0
  await admin.end()
  if (!exists) await adminSql(SERVER, `CREATE DATABASE ${DATABASE}`)
  const env = { ...process.env, INBOX_DATABASE_URL: dbUrl(DATABASE), INBOX_RATE_LIMITS: "off", NODE_ENV: "production" }
  // Seeding in its own process, so the server measured starts clean.
  const seeder = spawn(process.execPath, ["--import", "tsx", "bench/imap-seed.ts", String(MESSAGES)], { env, stdio: ["ignore", "pipe", "inherit"] })
  const seeded = await new Promise<ImapSeeded>((resolve, reject) => {
    seeder.once("exit", (code) => reject(new Error(`imap-seed exited with ${code}`)))
    createInterface({ input: seeder.stdout! }).on("line", (line) => {
      if (line.startsWith("IMAP_SEEDED ")) resolve(JSON.parse(line.slice(12)) as ImapSeeded)
    })
  })
  await new Promise((r) => seeder.once("close", r))
  console.error(`imap: ours seeded ${seeded.messages} messages in ${seeded.seconds} s (0: reused)`)
  const child: ChildProcess = spawn(process.execPath, [...OURS_NODE_FLAGS, "--expose-gc", "--import", "./bench/gc-on-signal.mjs", "--import", "tsx", "bench/server.ts"], {
    env: {
      ...env,
      BENCH_TENANTS: "0",
      INBOX_PORT: String(HTTP_PORT),
      INBOX_INBOUND_SECRET: SECRET,
      INBOX_IMAP_LISTEN: `127.0.0.1:${IMAP_PORT}`,
      INBOX_IMAP_ALLOW_PLAIN_LOOPBACK: "1",
      INBOX_LOG_LEVEL: "warning"
    },
    stdio: ["ignore", "ignore", "inherit"]
  })
  await waitHealthy(HTTP_PORT)
  const pool = new pg.Pool({ connectionString: SERVER, max: 1 })
  // Sign-in attempts an earlier run left counted (it may have stopped halfway) would refuse this one's.
  const bench = new pg.Client({ connectionString: dbUrl(DATABASE) })
  await bench.connect()
  await bench.query("DELETE FROM auth_attempts")
  await bench.end()
  return {
    name: "ours",
    port: IMAP_PORT,
    user: seeded.email,
    password: seeded.key,
    seeded,
    deliver: async (raw) => {
      const res = await fetch(`http://127.0.0.1:${HTTP_PORT}/inbound/raw?to=${encodeURIComponent(seeded.email)}`, {
        method: "POST",
        headers: { "x-inbound-secret": SECRET, "content-type": "message/rfc822" },
        body: new Uint8Array(raw)
      })
      if (!res.ok) throw new Error(`inbound/raw answered ${res.status}`)
      await res.arrayBuffer()
    },
    processes: async () => {
      const backends = (await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [DATABASE])).rows.map((r) => r.pid)
      return [...descendants(child.pid!), ...backends]
    },
    settle: async () => {
      child.kill("SIGUSR2")
      await sleep(2_000)
    },
    stop: async () => {
      await pool.end()
      await stop(child)
    }
  }
}

const dovecotConf = (dir: string) => `# Dovecot for pnpm bench imap (bench/imap.ts): a throwaway configuration, loopback only.
protocols = imap lmtp
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = ${MAIL_UID}
last_valid_uid = ${MAIL_UID}
first_valid_gid = ${MAIL_UID}
last_valid_gid = ${MAIL_UID}
mail_location = maildir:~/Maildir
mail_plugins = $mail_plugins fts fts_xapian
default_process_limit = ${CONNECTIONS + 200}
default_client_limit = ${2 * CONNECTIONS + 400}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/users
}
userdb {
  driver = passwd-file
  args = username_format=%u ${dir}/users
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${DOVECOT_IMAP_PORT}
  }
  inet_listener imaps {
    port = 0
  }
}
service imap {
  process_limit = ${CONNECTIONS + 200}
}
service auth {
  client_limit = ${4 * (CONNECTIONS + 200)}
}
service anvil {
  client_limit = ${3 * (CONNECTIONS + 200)}
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = ${DOVECOT_LMTP_PORT}
  }
}
protocol imap {
  mail_max_userip_connections = ${CONNECTIONS + 100}
}
protocol lmtp {
  postmaster_address = postmaster@imap.bench
}
plugin {
  fts = xapian
  fts_xapian = partial=3 full=20 verbose=0
  fts_autoindex = yes
  fts_enforced = yes
}
service indexer-worker {
  vsz_limit = 2G
}
`

const dovecot = async (): Promise<Side> => {
  if (!existsSync("/usr/sbin/dovecot") || !existsSync("/usr/lib/dovecot/modules/lib21_fts_xapian_plugin.so")) {
    console.error("imap: installing dovecot-imapd, dovecot-lmtpd and dovecot-fts-xapian from Debian")
    execFileSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", "dovecot-imapd", "dovecot-lmtpd", "dovecot-fts-xapian"], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
    })
    // Debian's own instance is not the one measured.
    try {
      execFileSync("systemctl", ["stop", "dovecot"], { stdio: "ignore" })
    } catch {
      // no systemd in a container: nothing was started
    }
  }
  const dir = join(DIR, `dovecot-${MESSAGES}`)
  const home = join(dir, "home")
  const conf = join(dir, "dovecot.conf")
  const done = join(dir, "seeded")
  mkdirSync(join(dir, "run"), { recursive: true })
  mkdirSync(join(dir, "state"), { recursive: true })
  mkdirSync(home, { recursive: true })
  chownSync(home, MAIL_UID, MAIL_UID)
  writeFileSync(conf, dovecotConf(dir))
  writeFileSync(join(dir, "users"), `${DOVECOT_USER}:{PLAIN}${DOVECOT_PASSWORD}:${MAIL_UID}:${MAIL_UID}::${home}::\n`)
  const master = () => {
    try {
      return Number(readFileSync(join(dir, "run", "master.pid"), "utf8").trim())
    } catch {
      return 0
    }
  }
  if (master() > 0) {
    try {
      execFileSync("doveadm", ["-c", conf, "stop"], { stdio: "ignore" })
    } catch {
      // not running
    }
  }
  // Dovecot's IDLE watches the Maildir with one inotify instance per connection; past the
  // kernel's per-user limit (128 by default) it falls back to looking every 30 seconds, so
  // 1,000 idling connections would measure that fallback, not Dovecot. Raised for the run,
  // as a server with that many connections would be configured, and put back in stop().
  const inotify = "/proc/sys/fs/inotify/max_user_instances"
  const inotifyBefore = readFileSync(inotify, "utf8").trim()
  if (Number(inotifyBefore) < CONNECTIONS + 200) writeFileSync(inotify, String(CONNECTIONS + 200))
  execFileSync("dovecot", ["-c", conf], { stdio: "inherit" })
  for (let i = 0; i < 100 && master() === 0; i++) await sleep(50)
  await sleep(300)
  if (!existsSync(done)) {
    // The same messages as Maildir files, each dated as its Date header; then Dovecot's index,
    // its cache and fts-xapian's index, built by doveadm as a first SELECT and SEARCH would.
    rmSync(join(home, "Maildir"), { recursive: true, force: true })
    const started = performance.now()
    for (const sub of ["cur", "new", "tmp"]) mkdirSync(join(home, "Maildir", sub), { recursive: true })
    for (let i = 0; i < MESSAGES; i++) {
      const { raw, date } = benchMessage(i, DOVECOT_USER)
      const seconds = Math.floor(date.getTime() / 1000)
      const file = join(home, "Maildir", "cur", `${seconds}.M${i}P1.imapbench,S=${raw.length}:2,`)
      writeFileSync(file, raw)
      utimesSync(file, seconds, seconds)
    }
    execFileSync("chown", ["-R", `${MAIL_UID}:${MAIL_UID}`, home])
    execFileSync("doveadm", ["-c", conf, "index", "-u", DOVECOT_USER, "INBOX"], { stdio: "inherit" })
    writeFileSync(done, String(Math.round((performance.now() - started) / 100) / 10))
    console.error(`imap: Dovecot seeded ${MESSAGES} messages and indexed them in ${readFileSync(done, "utf8")} s`)
  }
  const lmtp = nodemailer.createTransport({ host: "127.0.0.1", port: DOVECOT_LMTP_PORT, lmtp: true, secure: false, ignoreTLS: true, name: "imap.bench" })
  return {
    name: "Dovecot",
    port: DOVECOT_IMAP_PORT,
    user: DOVECOT_USER,
    password: DOVECOT_PASSWORD,
    deliver: async (raw) => {
      await lmtp.sendMail({ envelope: { from: "sender@customer.example", to: [DOVECOT_USER] }, raw })
    },
    processes: async () => descendants(master()),
    // Dovecot frees what a connection held when it is done with it: nothing to wait for.
    settle: async () => undefined,
    stop: async () => {
      lmtp.close()
      execFileSync("doveadm", ["-c", conf, "stop"], { stdio: "ignore" })
      writeFileSync(inotify, inotifyBefore)
    }
  }
}

// ---------------------------------------------------------------------------------------
// The measurements.

const timeFetch = async (side: Side) => {
  const imap = await signedIn(side.port, side.user, side.password)
  await imap.command("SELECT INBOX")
  const started = performance.now()
  const answer = await imap.command(`FETCH 1:${FETCH} (UID ENVELOPE)`)
  const ms = performance.now() - started
  const count = answer.match(/\r\n\* \d+ FETCH \(|^\* \d+ FETCH \(/g)?.length ?? 0
  imap.close()
  if (count !== FETCH) throw new Error(`${side.name}: FETCH answered ${count} envelopes, not ${FETCH}`)
  return ms
}

const timeSearch = async (side: Side) => {
  const imap = await signedIn(side.port, side.user, side.password)
  await imap.command("SELECT INBOX")
  const started = performance.now()
  const answer = await imap.command(`SEARCH TEXT ${RARE_WORD}`)
  const ms = performance.now() - started
  const found = (/^\* SEARCH([\d ]*)\r$/m.exec(answer)?.[1] ?? "").trim().split(" ").filter((x) => x !== "").length
  imap.close()
  return { ms, found }
}

/**
 * Opens `n` connections, each signed in, INBOX selected, idling; five at a time, as a mail
 * client opens them (more sign-ins of one account at once count as guesses: Auth's limit).
 */
const idlers = async (side: Side, n: number) => {
  const all: Array<Imap> = []
  for (let i = 0; i < n; i += 5) {
    all.push(...await Promise.all(Array.from({ length: Math.min(5, n - i) }, async () => {
      const imap = await signedIn(side.port, side.user, side.password)
      await imap.command("SELECT INBOX")
      await imap.idle()
      return imap
    })))
  }
  return all
}

interface Figures {
  fetchMs: Array<number>
  searchMs: Array<number>
  found: number
  idleMs: Array<number>
  /** The watcher was not told of the last delivery within STEP_MS (its figure is that bound). */
  idleLate: boolean
  /** CPU time of the serving processes per IDLE delivery (the delivery and telling every idler), ms. */
  cpuPerDeliveryMs: number
  pssBeforeKib: number
  pssAfterKib: number
}

/**
 * A message for the IDLE test: a seeded one without the rare word (so SEARCH's count stays),
 * under a Message-ID of its own (so no side takes it for a copy of one it has).
 */
const idleMessage = (i: number, to: string) => {
  const raw = benchMessage(1 + (i % (RARE_EVERY - 2)), to).raw.toString("latin1")
  return Buffer.from(raw.replace(/^Message-ID: <[^>]*>/m, `Message-ID: <imap-bench-idle-${process.pid}-${Date.now()}-${i}@bench.example>`), "latin1")
}

const idleAndMemory = async (side: Side, figures: Figures) => {
  await side.settle()
  figures.pssBeforeKib = await pssOf(side)
  const started = performance.now()
  const open = await idlers(side, CONNECTIONS)
  console.error(`imap: ${side.name}: ${CONNECTIONS} idle connections open in ${round1((performance.now() - started) / 1000)} s`)
  await sleep(5_000)
  await side.settle()
  figures.pssAfterKib = await pssOf(side)
  const watcher = await signedIn(side.port, side.user, side.password)
  await watcher.command("SELECT INBOX")
  await watcher.idle()
  const cpuBefore = await cpuOf(side)
  const idleStarted = performance.now()
  for (let i = 0; i < SAMPLES; i++) {
    // A side slower than the budget is measured on the deliveries made within it.
    if (performance.now() - idleStarted > IDLE_BUDGET_MS) break
    await sleep(100 + Math.floor(Math.random() * 400))
    const seen = watcher.nextExists()
    const within = <A>(what: string, p: Promise<A>) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${side.name}: ${what} within 30 s`)), 30_000).unref())])
    // A delivery that hangs fails the run rather than stalling it.
    await within("no delivery acknowledged", side.deliver(idleMessage(i, side.user)))
    const acknowledged = performance.now()
    // A client not told within STEP_MS is a figure (at least that long), not a fault of the run;
    // the deliveries stop there, since a later EXISTS could answer this one's.
    const told = await seen.then(() => true, () => false)
    figures.idleMs.push(performance.now() - acknowledged)
    if (!told) {
      figures.idleLate = true
      break
    }
  }
  // Every idler is told before the CPU is read: the watcher's EXISTS is only the first.
  await sleep(1_000)
  const cpuAfter = await cpuOf(side)
  figures.cpuPerDeliveryMs = [...cpuAfter].reduce((n, [pid, ms]) => n + (cpuBefore.has(pid) ? ms - cpuBefore.get(pid)! : 0), 0) / Math.max(1, figures.idleMs.length)
  watcher.close()
  for (const imap of open) imap.close()
  await sleep(1_000)
}

export interface ImapBench {
  readonly sides: ReadonlyArray<{ readonly name: string; readonly figures: Figures }>
  readonly seededSeconds: number
  readonly loadBefore: string
  readonly loadAfter: string
}

export const benchImap = async (): Promise<ImapBench> => {
  const loadBefore = loadavg().map((x) => x.toFixed(2)).join(" ")
  const sides: Array<Side> = []
  const figures = new Map<string, Figures>()
  let seededSeconds = 0
  try {
    const ourSide = await ours()
    seededSeconds = ourSide.seeded.seconds
    sides.push(ourSide)
    if (!SKIP_DOVECOT) sides.push(await dovecot())
    for (const s of sides) figures.set(s.name, { fetchMs: [], searchMs: [], found: 0, idleMs: [], idleLate: false, cpuPerDeliveryMs: 0, pssBeforeKib: 0, pssAfterKib: 0 })
    // One untimed run each: the first SELECT gives our UIDs, Dovecot reads its cache.
    for (const side of sides) {
      await timeFetch(side)
      await timeSearch(side)
    }
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which side goes first, so neither always meets a busier machine.
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const f = figures.get(side.name)!
        f.fetchMs.push(await timeFetch(side))
        const s = await timeSearch(side)
        f.searchMs.push(s.ms)
        f.found = s.found
        console.error(`imap: round ${r + 1}: ${side.name}: FETCH ${round1(f.fetchMs.at(-1)!)} ms, SEARCH ${round1(s.ms)} ms (${s.found} found)`)
      }
    }
    for (const side of sides) await idleAndMemory(side, figures.get(side.name)!)
  } finally {
    for (const side of sides) await side.stop().catch(() => undefined)
  }
  const expected = Math.ceil(MESSAGES / RARE_EVERY)
  for (const [name, f] of figures) if (f.found < expected) console.error(`imap: WARNING ${name}'s SEARCH found ${f.found}, expected at least ${expected}`)
  return {
    sides: sides.map((s) => ({ name: s.name, figures: figures.get(s.name)! })),
    seededSeconds,
    loadBefore,
    loadAfter: loadavg().map((x) => x.toFixed(2)).join(" ")
  }
}

export const imapSection = (result: ImapBench) => {
  const rows = result.sides.map(({ name, figures: f }) => ({
    name,
    fetch: medianOf(f.fetchMs),
    search: medianOf(f.searchMs),
    found: f.found,
    p50: quantile(f.idleMs, 0.5),
    p99: quantile(f.idleMs, 0.99),
    samples: f.idleMs.length,
    late: f.idleLate,
    cpu: f.cpuPerDeliveryMs,
    perConnection: (f.pssAfterKib - f.pssBeforeKib) / CONNECTIONS
  }))
  const [a, b] = rows
  const ratio = (x: number | undefined, y: number | undefined) => x === undefined || y === undefined || y === 0 ? "" : `${(x / y).toFixed(2)}x`
  const line = (label: string, pick: (r: (typeof rows)[number]) => string, ratioOf?: (r: (typeof rows)[number]) => number) =>
    `| ${label} | ${rows.map(pick).join(" | ")}${b === undefined || ratioOf === undefined ? "" : ` | ${ratio(ratioOf(a!), ratioOf(b))}`} |`
  const load = Number(result.loadBefore.split(" ")[0])
  return [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}; load average (1, 5, 15 min) ${result.loadBefore} at the start, ${result.loadAfter} at the end.${load > 1.5 ? " **The machine was busy: these figures are not evidence.**" : ""}`,
    "",
    `bench/imap.ts: ${MESSAGES.toLocaleString("en-US")} messages in INBOX (bench/imap-seed.ts, the same bytes on both sides), ours on PostgreSQL beside Dovecot ${dovecotVersion()} with fts-xapian (Maildir). FETCH and SEARCH: the median of ${ROUNDS} rounds after a warm-up, the sides alternating; IDLE: ${SAMPLES} deliveries, from the delivery's acknowledgement to the idling client's EXISTS, with ${CONNECTIONS.toLocaleString("en-US")} other connections idling; memory: PSS of every serving process with ${CONNECTIONS.toLocaleString("en-US")} connections signed in, INBOX selected and idling, minus before, per connection (ours read after a full garbage collection each time, so the figure is what the connections hold, not how far the heap had grown).`,
    "",
    `| | ${rows.map((r) => r.name).join(" | ")}${b === undefined ? "" : ` | ${a!.name} / ${b.name} |`}`,
    `|---|${rows.map(() => "---:").join("|")}|${b === undefined ? "" : "---:|"}`,
    line(`FETCH 1:${FETCH.toLocaleString("en-US")} (UID ENVELOPE), ms`, (r) => round1(r.fetch).toLocaleString("en-US"), (r) => r.fetch),
    line(`SEARCH TEXT ${RARE_WORD} over ${MESSAGES.toLocaleString("en-US")}, ms`, (r) => round1(r.search).toLocaleString("en-US"), (r) => r.search),
    line("SEARCH matches", (r) => String(r.found)),
    line("IDLE notification p50, ms", (r) => round1(r.p50).toLocaleString("en-US"), (r) => r.p50),
    line("IDLE notification p99, ms", (r) => `${r.late ? "at least " : ""}${round1(r.p99).toLocaleString("en-US")}`, (r) => r.p99),
    line("IDLE deliveries measured", (r) => `${r.samples}${r.late ? " (the last not told within 120 s)" : ""}`),
    line(`CPU per IDLE delivery, ${CONNECTIONS.toLocaleString("en-US")} idling, ms`, (r) => round1(r.cpu).toLocaleString("en-US"), (r) => r.cpu),
    line("PSS per idle connection, KiB", (r) => round1(r.perConnection).toLocaleString("en-US"), (r) => r.perConnection),
    "",
    `Goal (issue 28): within 2x Dovecot on each, and IDLE p99 under 1 s.${result.seededSeconds > 0 ? ` Our seed took ${result.seededSeconds} s (Inbound.deliver, 64 at a time).` : ""}`
  ].join("\n")
}

const dovecotVersion = () => {
  try {
    return execFileSync("dovecot", ["--version"], { encoding: "utf8" }).split(" ")[0]!.trim()
  } catch {
    return "(not run)"
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchImap().then((r) => console.log(imapSection(r)), (e) => {
    console.error(e)
    process.exit(1)
  })
}
