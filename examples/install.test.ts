/**
 * The library as an app outside the repository gets it: @inbox/core, @inbox/http, @inbox/mcp
 * and @inbox/mailserver packed (`pnpm pack`, which builds them), installed with plain npm into
 * an empty folder of the system's temp dir (third-party packages from the registry), and run
 * with plain `node`, no TypeScript loader: examples/embed.mjs as docs/embedding.md shows it, on the
 * minimum Node the packages state (their `engines`) and on Node 24; core's format=flowed
 * decoding in the parsing worker; the HTTP server and the SMTP receiver; and the type
 * declarations an app's TypeScript reads.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { freePort, nodeFromRegistry, npmInstall, runToEnd } from "@inbox/testkit"
import { spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const LIBRARIES = ["core", "http", "mcp", "mailserver"] as const
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")

/** The Node the packages say they need, which is the Node the example must run on. */
const engines = (JSON.parse(read("packages/core/package.json")) as { engines: { node: string } }).engines.node
const MINIMUM = `${/^>=(\d+\.\d+)$/.exec(engines)?.[1] ?? "?"}.0`
/** Node 24 as scripts/env.sh pins it, when the tests run on another Node. */
const NODE_24 = /^NODE_PIN=(24\.\S+)$/m.exec(read("scripts/env.sh"))?.[1] ?? "24"

/** Our environment without INBOX_* settings, plus `extra`. */
const childEnv = (extra: Record<string, string> = {}) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("INBOX_"))),
  ...extra
})

// Core's format=flowed decoding, in the parsing worker of the installed package: the quote
// that ends soft stays apart from the reply under it (RFC 3676 4.5), which libmime's own
// decoding (what npm installs) would run together. A long References header (more "<" than
// INLINE_PARSE allows) sends the message to the worker rather than the calling thread.
const FLOWED = `import { createEngine, LOCAL } from "@inbox/core"
const engine = await createEngine({ dataDir: process.env.INBOX_DATA_DIR })
try {
  const org = await engine.call("operator.createOrganization", { owner_email: "ops@example.com", verified: true }, LOCAL)
  const me = { kind: "key", key: org.api_key }
  const inbox = await engine.call("inboxes.create", { username: "flowed" }, me)
  const references = Array.from({ length: 80 }, (_, i) => "<earlier-" + i + "@example.org>").join("\\r\\n ")
  const mail = "From: Ann <ann@example.org>\\r\\nTo: " + inbox.email + "\\r\\nSubject: Flowed\\r\\nMessage-ID: <flowed-1@example.org>\\r\\n" +
    "References: " + references + "\\r\\n" +
    "MIME-Version: 1.0\\r\\nContent-Type: text/plain; charset=utf-8; format=flowed\\r\\n\\r\\n> the question ends soft \\r\\nthe answer\\r\\n"
  await engine.call("inbound.raw", { to: inbox.email, raw: new TextEncoder().encode(mail) }, LOCAL)
  const { messages } = await engine.call("messages.list", { inbox_id: inbox.inbox_id }, me)
  const message = await engine.call("messages.get", { inbox_id: inbox.inbox_id, message_id: messages[0].message_id }, me)
  console.log(JSON.stringify({ text: message.text }))
} finally {
  await engine.close()
}
`

// The server inboxctl serve runs, from the installed @inbox/http (with @inbox/mcp and
// @inbox/mailserver): its settings from INBOX_* variables.
const SERVE = `import { runServerMain } from "@inbox/http"
runServerMain()
`

// What an app's TypeScript sees: operations typed by name (a wrong input is an error, the
// output has its fields), the ports entry, the HTTP package; the internal entry is not there.
const CHECK = `import { createEngine, LOCAL } from "@inbox/core"
import { BlobStore } from "@inbox/core/ports"
import { launchServer } from "@inbox/http"
const engine = await createEngine({ dataDir: "data" })
const org = await engine.call("operator.createOrganization", { owner_email: "ops@example.com" }, LOCAL)
const key: string = org.api_key
// @ts-expect-error: a username is a string
await engine.call("inboxes.create", { username: 1 }, { kind: "key", key })
// @ts-expect-error: the internal entry point is not published
await import("@inbox/core/internal")
export { BlobStore, launchServer }
`

const TSCONFIG = {
  compilerOptions: { module: "nodenext", target: "es2023", strict: true, noEmit: true, skipLibCheck: true, types: [] },
  files: ["check.ts"]
}

/** The first line the SMTP server at `port` sends. */
const smtpGreeting = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    socket.setEncoding("utf8")
    socket.once("data", (line: string) => {
      socket.end("QUIT\r\n")
      resolve(line)
    })
    socket.once("error", reject)
  })

describe("the packed library packages, installed with npm outside the repository", { timeout: 900_000 }, () => {
  let dir = ""
  let app = ""
  const nodes = new Map<string, string>()

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inbox-install-"))
    const filters = LIBRARIES.flatMap((name) => ["--filter", `@inbox/${name}`])
    const packed = await runToEnd("pnpm", [...filters, "pack", "--pack-destination", dir], { cwd: ROOT })
    assert.strictEqual(packed.code, 0, packed.stderr + packed.stdout)
    const tarballs = readdirSync(dir).filter((f) => f.endsWith(".tgz")).sort()
    assert.deepStrictEqual(tarballs, LIBRARIES.map((name) => `inbox-${name}-0.1.0.tgz`).sort())

    // An empty folder with a package.json of its own, so npm installs here and not in a parent.
    app = join(dir, "app")
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
    copyFileSync(join(ROOT, "examples", "embed.mjs"), join(app, "embed.mjs"))
    writeFileSync(join(app, "flowed.mjs"), FLOWED)
    writeFileSync(join(app, "serve.mjs"), SERVE)
    writeFileSync(join(app, "check.ts"), CHECK)
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(TSCONFIG))
    const installed = await npmInstall(app, tarballs.map((f) => join(dir, f)))
    assert.strictEqual(installed.code, 0, installed.stderr)

    nodes.set(MINIMUM, await nodeFromRegistry(MINIMUM))
    nodes.set("24", process.versions.node.startsWith("24.") ? process.execPath : await nodeFromRegistry(NODE_24))
  }, 900_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("ships manifests that name only real dependencies: the @inbox packages at this version, Effect as a peer pinned as the workspace pins it, no workspace: or catalog:, no development dependencies or scripts", () => {
    const catalogEffect = /^\s+effect: (\S+)$/m.exec(read("pnpm-workspace.yaml"))?.[1] ?? "?"
    for (const name of LIBRARIES) {
      const folder = join(app, "node_modules", "@inbox", name)
      const text = readFileSync(join(folder, "package.json"), "utf8")
      const manifest = JSON.parse(text) as Record<string, unknown> & {
        dependencies: Record<string, string>
        peerDependencies: Record<string, string>
        exports: Record<string, { types: string; default: string }>
      }
      assert.notMatch(text, /workspace:|catalog:/, name)
      assert.isUndefined(manifest["private"], name)
      assert.isUndefined(manifest["devDependencies"], name)
      assert.isUndefined(manifest["scripts"], name)
      assert.strictEqual(manifest["license"], "MIT", name)
      assert.deepStrictEqual(manifest["engines"], { node: engines }, name)
      assert.deepStrictEqual(manifest.peerDependencies, { effect: catalogEffect }, name)
      assert.notProperty(manifest.dependencies, "effect", name)
      for (const [dependency, version] of Object.entries(manifest.dependencies)) {
        if (dependency.startsWith("@inbox/")) assert.strictEqual(version, "0.1.0", `${name}: ${dependency}`)
      }
      for (const [entry, files] of Object.entries(manifest.exports)) {
        assert.isTrue(existsSync(join(folder, files.default)) && existsSync(join(folder, files.types)), `${name} ${entry}: ${files.default}, ${files.types}`)
      }
    }
    const core = JSON.parse(readFileSync(join(app, "node_modules", "@inbox", "core", "package.json"), "utf8")) as { exports: object }
    assert.deepStrictEqual(Object.keys(core.exports), [".", "./ports"], "./internal is not published")
    // One Effect in the app: every package uses the app's (a second copy would be a second instance).
    const effects = readdirSync(join(app, "node_modules"), { recursive: true, encoding: "utf8" })
      .filter((path) => path.endsWith("/node_modules/effect") || path === "effect")
    assert.deepStrictEqual(effects, ["effect"])
    assert.isFalse(existsSync(join(app, "node_modules", "tsx")), "no TypeScript loader is installed")
  })

  for (const version of [MINIMUM, "24"]) {
    it(`runs examples/embed.mjs with plain node ${version} in INBOX_DATA_DIR: an organization and an inbox, a message delivered, listed and answered, a bad input refused as REST refuses it`, async () => {
      const node = nodes.get(version) ?? ""
      const data = join(dir, `data-${version}`)
      const ran = await runToEnd(node, ["embed.mjs"], { cwd: app, env: childEnv({ INBOX_DATA_DIR: data }) })
      assert.strictEqual(ran.code, 0, ran.stderr)
      assert.match((await runToEnd(node, ["--version"])).stdout, new RegExp(`^v${version.replace(/\./g, "\\.")}`))
      const result = JSON.parse(ran.stdout.trim()) as { inbox: string; received: string; reply: boolean; refused: string }
      assert.match(result.inbox, /^support-\d+@agents\.example\.com$/)
      assert.deepStrictEqual([result.received, result.reply, result.refused], ["Hello", true, "validation_error"])
      assert.isTrue(existsSync(join(data, "PG_VERSION")), "the database is in INBOX_DATA_DIR")
    })
  }

  it("parses a format=flowed message in the parsing worker with core's decoding: a quote that ends soft stays apart from the reply under it", async () => {
    const ran = await runToEnd(nodes.get(MINIMUM) ?? "", ["flowed.mjs"], { cwd: app, env: childEnv({ INBOX_DATA_DIR: join(dir, "data-flowed") }) })
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.deepStrictEqual(JSON.parse(ran.stdout.trim()), { text: "> the question ends soft \nthe answer" })
  })

  it("serves from the installed @inbox/http: /health, the dashboard's files, the SMTP receiver of @inbox/mailserver, and a stop on SIGTERM", async () => {
    const [port, smtp] = [await freePort(), await freePort()]
    const server = spawn(nodes.get(MINIMUM) ?? "", ["serve.mjs"], {
      cwd: app,
      env: childEnv({ INBOX_DATA_DIR: join(dir, "data-serve"), INBOX_PORT: String(port), INBOX_SMTP_LISTEN: `127.0.0.1:${smtp}` }),
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    server.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => server.on("close", resolve))
    const url = `http://127.0.0.1:${port}`
    let health = 0
    for (let attempt = 0; attempt < 600 && health !== 200 && server.exitCode === null; attempt++) {
      health = await fetch(`${url}/health`).then((r) => r.status, () => 0)
      if (health !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.strictEqual(health, 200, stderr)
    const script = /src="(\/dashboard\/[\w-]+\.js)"/.exec(await (await fetch(`${url}/`)).text())?.[1] ?? "/dashboard/missing.js"
    assert.strictEqual((await fetch(`${url}${script}`)).status, 200, "the dashboard's built files ship in dist/dashboard")
    assert.match(await smtpGreeting(smtp), /^220 /)
    server.kill("SIGTERM")
    // Stopped by itself (an exit code), not by the signal: runMain interrupts the server.
    assert.isNotNull(await exited, stderr)
  })

  it("gives an app's TypeScript the declarations: operations typed by name, the ports entry and @inbox/http; no internal entry", async () => {
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc")
    const checked = await runToEnd(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app })
    assert.strictEqual(checked.code, 0, checked.stdout + checked.stderr)
  })
})
