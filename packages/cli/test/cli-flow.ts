/**
 * The inboxctl flow as an operator runs it: the real CLI in a child process (node --import
 * tsx) against a fresh embedded data folder or a fresh PostgreSQL database. Each spawn costs
 * a few seconds (tsx, opening storage), so one flow per storage builds on the previous steps
 * instead of starting over; each storage's flow is its own test file (cli.test.ts,
 * cli-postgres.test.ts), so the two run side by side.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { loopbackDns, publishDomainRecords } from "@inbox/testkit"
import { Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const MAIN = "packages/cli/src/main.ts"

export interface Storage {
  readonly name: string
  /** INBOX_* variables selecting the storage; set up before the flow, torn down after. */
  setUp(): Promise<Record<string, string>>
  tearDown(): Promise<void>
}

export const pgliteStorage = (): Storage => {
  let dir = ""
  return {
    name: "PGlite",
    setUp: async () => {
      dir = mkdtempSync(join(tmpdir(), "inboxctl-"))
      return { INBOX_DATA_DIR: join(dir, "data") }
    },
    tearDown: async () => rmSync(dir, { recursive: true, force: true })
  }
}

/** One administrative statement on the server (CREATE / DROP DATABASE). */
const postgres = (url: string, statement: string): Promise<void> =>
  SqlClient.SqlClient.use((sql) => sql.unsafe(statement)).pipe(
    Effect.asVoid,
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.orDie,
    Effect.runPromise
  )

/** A fresh database on the server, so the CLI's own connection needs no search_path. */
export const postgresStorage = (url: string): Storage => {
  const database = `inboxctl_${randomBytes(6).toString("hex")}`
  return {
    name: "PostgreSQL",
    setUp: async () => {
      await postgres(url, `CREATE DATABASE ${database}`)
      const target = new URL(url)
      target.pathname = `/${database}`
      return { INBOX_DATABASE_URL: target.toString() }
    },
    tearDown: () => postgres(url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  }
}

/** The environment of a child: ours without any INBOX_* setting, plus the storage's. */
export const childEnv = (storageEnv: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("INBOX_")) env[k] = v
  return { ...env, INBOX_RATE_LIMITS: "off", ...storageEnv, ...extra }
}

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const start = (args: ReadonlyArray<string>, env: Record<string, string>): ChildProcess =>
  spawn(process.execPath, ["--import", "tsx", MAIN, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })

const finished = (child: ChildProcess): Promise<Run> =>
  new Promise((resolve) => {
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

export const inboxctl = (args: ReadonlyArray<string>, env: Record<string, string>) => finished(start(args, env))

const RECORDER = fileURLToPath(new URL("./record-imports.mjs", import.meta.url))

/**
 * `inboxctl ARGS` with every module it loads recorded (record-imports.mjs): its run, and
 * whether it loaded any file of core, which opening storage or running an operation needs.
 */
export const inboxctlLoading = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const dir = mkdtempSync(join(tmpdir(), "inboxctl-imports-"))
  const file = join(dir, "imports.txt")
  try {
    const child = spawn(process.execPath, ["--import", RECORDER, "--import", "tsx", MAIN, ...args], {
      cwd: ROOT,
      env: { ...env, INBOXCTL_IMPORTS_FILE: file },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const run = await finished(child)
    const loaded = readFileSync(file, "utf8").split("\n").filter((url) => url !== "")
    return { run, loaded, loadedCore: loaded.filter((url) => url.includes("/packages/core/")) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const until = async (done: () => boolean, why: () => string) => {
  for (let i = 0; i < 300; i++) {
    if (done()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(why())
}

const waitForHealth = async (url: string, child: ChildProcess) => {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}`)
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("serve did not become healthy")
}

/** The whole flow on one storage. */
export const cliFlow = (storage: Storage) => {
  describe(`inboxctl on ${storage.name}`, { timeout: 120_000 }, () => {
    let env: Record<string, string> = {}
    let orgKey = ""
    let orgId = ""
    let alice: { inbox_id: string; email: string } = { inbox_id: "", email: "" }

    beforeAll(async () => {
      env = childEnv(await storage.setUp())
    }, 60_000)
    afterAll(() => storage.tearDown(), 60_000)

    it("org create --json prints the organization id and an organization-level API key", async () => {
      const run = await inboxctl(["org", "create", "--owner-email", "owner@example.com", "--verified", "--json"], env)
      assert.strictEqual(run.code, 0, run.stderr)
      const body = JSON.parse(run.stdout) as { organization_id: string; api_key: string }
      assert.deepStrictEqual(Object.keys(body), ["organization_id", "api_key"])
      assert.match(body.organization_id, /^org_[0-9a-f]+$/)
      assert.match(body.api_key, /^am_[0-9a-f]+$/)
      orgKey = body.api_key
      orgId = body.organization_id
    })

    it("pods create, inboxes create --pod and api-keys create --inbox run with the organization key; a scoped key lists only its inbox", async () => {
      const withKey = { ...env, INBOX_API_KEY: orgKey }
      const pod = await inboxctl(["pods", "create", "--name", "team", "--json"], withKey)
      assert.strictEqual(pod.code, 0, pod.stderr)
      const podId = (JSON.parse(pod.stdout) as { pod_id: string }).pod_id

      const created = await inboxctl(["inboxes", "create", "--pod", podId, "--username", "alice", "--display-name", "Alice", "--metadata", "team=red", "--json"], withKey)
      assert.strictEqual(created.code, 0, created.stderr)
      alice = JSON.parse(created.stdout) as typeof alice
      const shown = JSON.parse(created.stdout) as Record<string, unknown>
      assert.deepStrictEqual(
        [shown["email"], shown["pod_id"], shown["display_name"], shown["metadata"]],
        ["alice@inbox.localhost", podId, "Alice", { team: "red" }]
      )
      const other = await inboxctl(["inboxes", "create", "--username", "bob", "--json"], withKey)
      assert.strictEqual(other.code, 0, other.stderr)

      const key = await inboxctl(["api-keys", "create", "--name", "alice-only", "--inbox", alice.inbox_id, "--permissions", "inbox_read,message_read", "--json"], withKey)
      assert.strictEqual(key.code, 0, key.stderr)
      const scoped = JSON.parse(key.stdout) as { api_key: string; scope: string; permissions: Record<string, boolean> }
      assert.strictEqual(scoped.scope, "inbox")
      assert.deepStrictEqual(Object.keys(scoped.permissions).filter((p) => scoped.permissions[p]), ["inbox_read", "message_read"])

      // The former spellings (a hidden `key` group, --inbox-id) still work for a release.
      const former = await inboxctl(["key", "create", "--name", "alice-former", "--inbox-id", alice.inbox_id, "--permissions", "inbox_read", "--json"], withKey)
      assert.strictEqual(former.code, 0, former.stderr)
      assert.strictEqual((JSON.parse(former.stdout) as { scope: string }).scope, "inbox")

      const listed = await inboxctl(["inboxes", "list", "--api-key", scoped.api_key, "--json"], env)
      assert.strictEqual(listed.code, 0, listed.stderr)
      const inboxes = (JSON.parse(listed.stdout) as { inboxes: ReadonlyArray<{ inbox_id: string }> }).inboxes
      assert.deepStrictEqual(inboxes.map((i) => i.inbox_id), [alice.inbox_id])
    })

    it("an organization that revoked its only full key is recovered by the operator with org key", async () => {
      const created = await inboxctl(["org", "create", "--owner-email", "lockout@example.com", "--verified", "--json"], env)
      const { organization_id, api_key } = JSON.parse(created.stdout) as { organization_id: string; api_key: string }
      const keys = JSON.parse((await inboxctl(["api-keys", "list", "--api-key", api_key, "--json"], env)).stdout) as { api_keys: ReadonlyArray<{ api_key_id: string }> }
      const revoked = await inboxctl(["api-keys", "revoke", keys.api_keys[0]?.api_key_id ?? "", "--api-key", api_key], env)
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      assert.strictEqual((await inboxctl(["pods", "list", "--api-key", api_key], env)).code, 1)
      const recovered = await inboxctl(["org", "key", organization_id, "--json"], env)
      assert.strictEqual(recovered.code, 0, recovered.stderr)
      const fresh = (JSON.parse(recovered.stdout) as { api_key: string }).api_key
      const pods = await inboxctl(["pods", "list", "--api-key", fresh, "--json"], env)
      assert.strictEqual(pods.code, 0, pods.stderr)
      assert.strictEqual((JSON.parse(pods.stdout) as { count: number }).count, 1)
    })

    it("org plan assigns the operator's plan (billing source admin) and --plan free withdraws it", async () => {
      const created = await inboxctl(["org", "create", "--owner-email", "plan@example.com", "--verified", "--json"], env)
      const { organization_id } = JSON.parse(created.stdout) as { organization_id: string }
      const assigned = await inboxctl(["org", "plan", organization_id, "--plan", "scale", "--json"], env)
      assert.strictEqual(assigned.code, 0, assigned.stderr)
      const billing = JSON.parse(assigned.stdout) as { plan: string; source: string; limits: { inboxes: number } }
      assert.deepStrictEqual([billing.plan, billing.source, billing.limits.inboxes], ["scale", "admin", 500])
      const withdrawn = await inboxctl(["org", "plan", organization_id, "--plan", "free", "--json"], env)
      assert.strictEqual(withdrawn.code, 0, withdrawn.stderr)
      assert.deepStrictEqual((JSON.parse(withdrawn.stdout) as { source: string }).source, "free")
    })

    it("inbound delivers a .eml file; messages list --inbox shows it; messages send, messages raw and threads get work from the command line", async () => {
      const withKey = { ...env, INBOX_API_KEY: orgKey }
      const dir = mkdtempSync(join(tmpdir(), "inboxctl-eml-"))
      const file = join(dir, "hello.eml")
      writeFileSync(file, `From: Ann <ann@example.org>\r\nTo: ${alice.email}\r\nSubject: From a file\r\nMessage-ID: <file-1@example.org>\r\n\r\nDelivered by inboxctl.\r\n`)
      const delivered = await inboxctl(["inbound", file, "--to", `${alice.email},nobody@elsewhere.example`, "--json"], env)
      assert.strictEqual(delivered.code, 0, delivered.stderr)
      const result = JSON.parse(delivered.stdout) as { delivered: ReadonlyArray<{ message_id: string; thread_id: string }>; skipped: ReadonlyArray<string> }
      assert.deepStrictEqual(result.skipped, ["nobody@elsewhere.example"])
      const listed = await inboxctl(["messages", "list", "--inbox", alice.inbox_id], withKey)
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.match(listed.stdout, /From a file/)
      const raw = await inboxctl(["messages", "raw", result.delivered[0]?.message_id ?? "", "--inbox", alice.inbox_id], withKey)
      assert.match(raw.stdout, /Delivered by inboxctl\./)
      const sent = await inboxctl(["messages", "send", "--inbox", alice.inbox_id, "--to", "bob@example.net", "--subject", "From the CLI", "--text", "hi", "--json"], withKey)
      assert.strictEqual(sent.code, 0, sent.stderr)
      assert.match((JSON.parse(sent.stdout) as { message_id: string }).message_id, /^msg_/)
      const thread = await inboxctl(["threads", "get", result.delivered[0]?.thread_id ?? "", "--json"], withKey)
      assert.strictEqual((JSON.parse(thread.stdout) as { message_count: number }).message_count, 1)
      rmSync(dir, { recursive: true, force: true })
    })

    it("metrics usage prints one sparkline per series with its last, min and max, then the window", async () => {
      const usage = await inboxctl(["metrics", "usage", "--usage-types", "message_count,pod_count", "--limit", "3", "--api-key", orgKey], env)
      assert.strictEqual(usage.code, 0, usage.stderr)
      const lines = usage.stdout.trimEnd().split("\n")
      assert.match(lines[0] ?? "", /^SERIES\s+TREND\s+LAST\s+MIN\s+MAX$/)
      // Two messages so far (the delivered file and the sent one), two pods (default and team).
      assert.match(lines[1] ?? "", /^message_count\s+[▁-█]{2}█\s+2\s+\d+\s+2$/)
      assert.match(lines[2] ?? "", /^pod_count\s+[▁-█]{2}█\s+2\s+\d+\s+2$/)
      assert.match(lines[3] ?? "", /^3 buckets from \S+ to \S+$/)
    })

    it("lists create ENTRY --inbox and lists list run with a key; suppressions add ADDRESS --org is the operator's, with no key", async () => {
      const withKey = { ...env, INBOX_API_KEY: orgKey }
      const added = await inboxctl(["lists", "create", "send", "block", "Spam@Example.com", "--inbox", alice.inbox_id, "--reason", "spam", "--json"], withKey)
      assert.strictEqual(added.code, 0, added.stderr)
      assert.deepInclude(JSON.parse(added.stdout), { entry: "spam@example.com", list_type: "block", inbox_id: alice.inbox_id, reason: "spam" })
      const listed = await inboxctl(["lists", "list", "send", "block", "--inbox", alice.inbox_id], withKey)
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.match(listed.stdout, /^ENTRY\s+DIRECTION\s+LIST_TYPE.*\nspam@example\.com\s+send\s+block\s+spam\s/)

      const suppressed = await inboxctl(["suppressions", "add", "Gone@Example.com", "--org", orgId, "--reason", "complaint"], env)
      assert.strictEqual(suppressed.code, 0, suppressed.stderr)
      const shown = await inboxctl(["suppressions", "list", "--json"], withKey)
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.deepStrictEqual(
        (JSON.parse(shown.stdout) as { suppressions: ReadonlyArray<{ address: string; reason: string }> }).suppressions.map((x) => [x.address, x.reason]),
        [["gone@example.com", "complaint"]]
      )
      const unknown = await inboxctl(["suppressions", "add", "a@example.com", "--org", "org_000000000000000000000000"], env)
      assert.strictEqual(unknown.code, 1)
      assert.match(unknown.stderr, /^error: not_found: /)
    })

    it("a reserved username prints error: reserved_username and exits 1", async () => {
      const run = await inboxctl(["inboxes", "create", "--username", "admin"], { ...env, INBOX_API_KEY: orgKey })
      assert.strictEqual(run.code, 1)
      assert.match(run.stderr, /^error: reserved_username: .+\n/)
      assert.strictEqual(run.stdout, "")
    })

    it("tools over MCP stdio: initialize, list tools, create_inbox, list_inboxes", async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", MAIN, "mcp", "--api-key", orgKey],
        cwd: ROOT,
        env: env,
        stderr: "pipe"
      })
      const client = new Client({ name: "inboxctl-test", version: "1.0.0" })
      await client.connect(transport)
      try {
        assert.strictEqual(client.getServerVersion()?.name, "inbox-engine")
        const { tools } = await client.listTools()
        assert.includeMembers(tools.map((t) => t.name), ["create_inbox", "list_inboxes"])
        const created = await client.callTool({ name: "create_inbox", arguments: { username: "carol" } })
        assert.notStrictEqual(created.isError, true)
        const listed = await client.callTool({ name: "list_inboxes", arguments: {} })
        const emails = ((listed.structuredContent as { inboxes: ReadonlyArray<{ email: string }> }).inboxes).map((i) => i.email)
        assert.includeMembers(emails, ["carol@inbox.localhost", "alice@inbox.localhost", "bob@inbox.localhost"])
      } finally {
        await client.close()
      }
    })

    it("mcp beside a running server: the official SDK client's tools go through the server's local socket, and the inboxctl process never loads the engine", async () => {
      const port = await freePort()
      const server = start(["serve", "--port", String(port)], env)
      const serverRun = finished(server)
      const dir = mkdtempSync(join(tmpdir(), "inboxctl-mcp-"))
      const imports = join(dir, "imports.txt")
      try {
        await waitForHealth(`http://127.0.0.1:${port}`, server)
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: ["--import", RECORDER, "--import", "tsx", MAIN, "mcp", "--api-key", orgKey],
          cwd: ROOT,
          env: { ...env, INBOXCTL_IMPORTS_FILE: imports },
          stderr: "pipe"
        })
        const client = new Client({ name: "inboxctl-test", version: "1.0.0" })
        await client.connect(transport)
        try {
          assert.strictEqual(client.getServerVersion()?.name, "inbox-engine")
          const listed = await client.callTool({ name: "list_inboxes", arguments: {} })
          const emails = ((listed.structuredContent as { inboxes: ReadonlyArray<{ email: string }> }).inboxes).map((i) => i.email)
          assert.includeMembers(emails, ["carol@inbox.localhost", "alice@inbox.localhost"])
          const updated = await client.callTool({ name: "update_inbox", arguments: { inbox_id: "carol@inbox.localhost", display_name: "Carol over the socket" } })
          assert.notStrictEqual(updated.isError, true, JSON.stringify(updated.content))
          // The server's HTTP API sees the change at once: one engine.
          const shown = await fetch(`http://127.0.0.1:${port}/v0/inboxes/carol@inbox.localhost`, { headers: { authorization: `Bearer ${orgKey}` } })
          assert.strictEqual(((await shown.json()) as { display_name: string }).display_name, "Carol over the socket")
        } finally {
          await client.close()
        }
        await until(() => existsSync(imports), () => "inboxctl mcp did not exit after the client closed")
        const loaded = readFileSync(imports, "utf8").split("\n")
        assert.isTrue(loaded.some((url) => url.endsWith("/packages/cli/src/client.ts")))
        assert.deepStrictEqual(loaded.filter((url) => url.includes("/packages/core/")), [])
        // A refused key is the command's error line and exit code, as without a server.
        const refused = await inboxctl(["mcp", "--api-key", "am_unknown"], env)
        assert.strictEqual(refused.code, 1)
        assert.match(refused.stderr, /^error: unauthorized: /)
      } finally {
        server.kill("SIGTERM")
        await serverRun
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it("domains verify --wait shows each record's status until the domain is VERIFIED; past --timeout it exits 1 naming the records not yet valid", async () => {
      const scope = Effect.runSync(Scope.make())
      try {
        const zone = await Effect.runPromise(Scope.provide(loopbackDns, scope))
        const dnsEnv = { ...env, INBOX_DNS_SERVERS: zone.server, INBOX_SECRET_KEY: "cli-flow-secret" }
        const org = await inboxctl(["org", "create", "--owner-email", "domains@example.com", "--verified", "--plan", "scale", "--json"], dnsEnv)
        assert.strictEqual(org.code, 0, org.stderr)
        const key = (JSON.parse(org.stdout) as { api_key: string }).api_key
        const name = `cli-${randomBytes(4).toString("hex")}.example.com`
        const added = await inboxctl(["domains", "create", name, "--api-key", key, "--json"], dnsEnv)
        assert.strictEqual(added.code, 0, added.stderr)
        const early = await inboxctl(["domains", "verify", name, "--wait", "--timeout", "1", "--api-key", key], dnsEnv)
        assert.strictEqual(early.code, 1, early.stderr)
        assert.match(early.stderr, /^PENDING \(dns_records_missing\)\n {2}MISSING /)
        assert.match(early.stderr, new RegExp(`error: timeout: ${name.replaceAll(".", "\\.")} is still PENDING; not yet valid: TXT `))
        publishDomainRecords(zone, JSON.parse(added.stdout) as Parameters<typeof publishDomainRecords>[1])
        const verified = await inboxctl(["domains", "verify", name, "--wait", "--api-key", key], dnsEnv)
        assert.strictEqual(verified.code, 0, verified.stderr)
        assert.match(verified.stderr, /^VERIFIED\n( {2}VALID {4}.+\n)+$/)
        assert.strictEqual(verified.stdout, `Done: domains verify ${name}.\nVerified: ${name}.\n`)
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    })

    it("serve answers on its --port; a command meanwhile is served by it over the local socket, never loading the engine; the outbox then shows the agent verification mail", async () => {
      const port = await freePort()
      const url = `http://127.0.0.1:${port}`
      const server = start(["serve", "--port", String(port), "--rate-limits", "off"], env)
      const serverRun = finished(server)
      try {
        await waitForHealth(url, server)
        const signUp = await fetch(`${url}/v0/agent/sign-up`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "agent-smith", human_email: "human@example.com" })
        })
        assert.strictEqual(signUp.status, 200, await signUp.clone().text())
        // events tail follows the server's WebSocket: a send shows up as one JSON line; Ctrl-C is 130.
        const tail = start(["events", "tail", "--url", url, "--api-key", orgKey, "--json"], env)
        const tailRun = finished(tail)
        let tailOut = ""
        let tailErr = ""
        tail.stdout?.on("data", (d: Buffer) => (tailOut += d.toString("utf8")))
        tail.stderr?.on("data", (d: Buffer) => (tailErr += d.toString("utf8")))
        await until(() => tailErr.includes("following events"), () => `tail did not subscribe: ${tailErr}`)
        const sent = await fetch(`${url}/v0/inboxes/${alice.inbox_id}/messages/send`, {
          method: "POST",
          headers: { authorization: `Bearer ${orgKey}`, "content-type": "application/json" },
          body: JSON.stringify({ to: "tailed@example.net", subject: "tailed", text: "followed" })
        })
        assert.strictEqual(sent.status, 200, await sent.clone().text())
        await until(() => tailOut.includes("\n"), () => `no event line: ${tailErr}`)
        const event = JSON.parse(tailOut.split("\n")[0] ?? "") as { type: string; event_type: string; inbox_id: string }
        assert.deepStrictEqual([event.type, event.event_type, event.inbox_id], ["event", "message.sent", alice.inbox_id])
        tail.kill("SIGINT")
        assert.strictEqual((await tailRun).code, 130)
        // A server runs: the command goes to it over its local socket, and this process
        // never loads core (so never opens the storage).
        const through = await inboxctlLoading(["outbox", "list", "--json"], env)
        assert.strictEqual(through.run.code, 0, through.run.stderr)
        assert.isTrue((JSON.parse(through.run.stdout) as { messages: ReadonlyArray<{ to: ReadonlyArray<string> }> }).messages.some((m) => m.to.includes("human@example.com")))
        assert.deepStrictEqual(through.loadedCore, [])
        assert.isTrue(through.loaded.some((url) => url.endsWith("/packages/cli/src/client.ts")))
      } finally {
        server.kill("SIGINT")
      }
      assert.strictEqual((await serverRun).code, 130)

      const outbox = await inboxctl(["outbox", "list", "--json"], env)
      assert.strictEqual(outbox.code, 0, outbox.stderr)
      const mail = (JSON.parse(outbox.stdout) as { messages: ReadonlyArray<{ id: string; to: ReadonlyArray<string>; subject: string }> }).messages
        .find((m) => m.to.includes("human@example.com"))
      assert.deepStrictEqual(mail?.to, ["human@example.com"])
      const code = mail?.subject.match(/(\d{6})$/)?.[1]
      assert.isDefined(code)
      const raw = await inboxctl(["outbox", "get", mail?.id ?? ""], env)
      assert.strictEqual(raw.code, 0, raw.stderr)
      assert.include(raw.stdout, `Your verification code is ${code}`)
    })
  })
}
