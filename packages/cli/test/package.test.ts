/**
 * The installable package: `pnpm pack` of the CLI, installed with npm into an empty folder
 * (no workspace, no TypeScript loader), must give a working `inboxctl`: it creates an
 * organization, serves on the embedded database, answers /health and an authenticated
 * request, parses mail in its worker thread (the bundle's second entry) with our
 * format=flowed fix to libmime (a pnpm patch npm would not apply, so the build bundles it),
 * and stops on SIGTERM with exit code 0.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, freePort, runProcess, startProcess, waitFor } from "./processes.ts"

const CLI = fileURLToPath(new URL("../", import.meta.url))
const RECORDER = fileURLToPath(new URL("./record-imports.mjs", import.meta.url))

/**
 * `npm install`, again when the registry answered wrongly. npm resolves the package's
 * dependencies' own ranges from the registry, not from our lockfile, and the registry's
 * metadata is not always consistent: a CI run here failed with `notarget` for a version
 * the registry had served twenty minutes earlier and served again a minute later. A
 * failure of ours (a missing file, a broken manifest) fails every attempt alike.
 */
const npmInstall = async (args: ReadonlyArray<string>, options: Parameters<typeof runProcess>[2]) => {
  let installed = await runProcess("npm", ["install", ...args], options)
  for (let retry = 0; retry < 2 && installed.code !== 0 && /ETARGET|notarget|ECONNRESET|ETIMEDOUT|EAI_AGAIN|E5\d\d|E429/.test(installed.stderr); retry++) {
    await new Promise((r) => setTimeout(r, 5_000))
    installed = await runProcess("npm", ["install", "--prefer-online", ...args], options)
  }
  return installed
}

describe("the packed inboxctl", { timeout: 900_000 }, () => {
  let dir = ""
  let bin = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-package-"))
    const packed = await runProcess("pnpm", ["pack", "--pack-destination", dir], { cwd: CLI, env: childEnv() })
    assert.strictEqual(packed.code, 0, packed.stderr + packed.stdout)
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"))
    assert.isDefined(tarball)
    const app = join(dir, "app")
    // An empty folder with a package.json of its own, so npm installs here and not in a parent.
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), "{\"name\":\"app\",\"private\":true}\n")
    const installed = await npmInstall(["--no-audit", "--no-fund", "--loglevel=error", join(dir, tarball ?? "")], { cwd: app, env: childEnv() })
    assert.strictEqual(installed.code, 0, installed.stderr)
    bin = join(app, "node_modules", ".bin", "inboxctl")
  }, 900_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("installs compiled JavaScript with source maps and no TypeScript", () => {
    const dist = join(dir, "app", "node_modules", "@inbox", "cli", "dist")
    assert.isTrue(existsSync(join(dist, "inboxctl.js")))
    assert.isTrue(existsSync(join(dist, "inboxctl.js.map")))
    assert.isTrue(existsSync(join(dist, "migrations", "0001_foundation.sql")))
    assert.isTrue(existsSync(join(dist, "dashboard", "index.html")), "the dashboard's built files ship beside the bundle")
    assert.isFalse(existsSync(join(dir, "app", "node_modules", "tsx")))
  })

  it("serves on the embedded database: /health, an authenticated request, a command served over the socket loading no engine chunk, mail parsed in the worker, and exit 0 on SIGTERM", async () => {
    const data = join(dir, "data")
    const env = childEnv({ INBOX_DATA_DIR: data, INBOX_INBOUND_SECRET: "package-test-secret" })
    const created = await runProcess(bin, ["org", "create", "--owner-email", "ops@example.com", "--verified", "--json"], { env })
    assert.strictEqual(created.code, 0, created.stderr)
    const { api_key } = JSON.parse(created.stdout) as { api_key: string }

    const port = await freePort()
    const server = startProcess(bin, ["serve", "--port", String(port)], { env })
    const url = `http://127.0.0.1:${port}`
    await waitFor(`${url}/health`, server)
    const auth = { authorization: `Bearer ${api_key}`, "content-type": "application/json" }
    const inbox = await fetch(`${url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "ops" }) })
    assert.strictEqual(inbox.status, 200)
    const raw = "From: Ann <ann@example.org>\r\nTo: ops@inbox.localhost\r\nSubject: Packed\r\nMessage-ID: <packed-1@example.org>\r\n\r\nHello.\r\n"
    const delivered = await fetch(`${url}/inbound/raw?to=ops@inbox.localhost`, {
      method: "POST",
      headers: { "x-inbound-secret": "package-test-secret" },
      body: raw
    })
    assert.strictEqual(delivered.status, 200, await delivered.clone().text())
    // The page and the script it names (Vite's hashed file) are served from the installed package.
    const script = /src="(\/dashboard\/[\w-]+\.js)"/.exec(await (await fetch(`${url}/`)).text())?.[1] ?? "/dashboard/missing.js"
    const dashboard = await fetch(`${url}${script}`)
    assert.strictEqual(dashboard.status, 200, "the dashboard is served from the installed package")
    // A resource command while the server runs: served over its socket, and the packed
    // CLI loads its entry and the entry's static chunks only (the engine's are never read).
    const imports = join(dir, "imports.txt")
    const entry = join(dir, "app", "node_modules", "@inbox", "cli", "dist", "inboxctl.js")
    const viaSocket = await runProcess(process.execPath, ["--import", RECORDER, entry, "inboxes", "list", "--api-key", api_key, "--json"], {
      env: { ...env, INBOXCTL_IMPORTS_FILE: imports }
    })
    assert.strictEqual(viaSocket.code, 0, viaSocket.stderr)
    assert.include(viaSocket.stdout, "ops@inbox.localhost")
    // The entry's static imports and theirs (`from "./chunk-X.js"`, `import "./chunk-X.js"`; not `import("./chunk-X.js")`).
    const eager = new Set<string>()
    const follow = (file: string) => {
      for (const m of readFileSync(join(dirname(entry), file), "utf8").matchAll(/(?:from|^import) "\.\/(chunk-\w+\.js)"/gm)) {
        if (m[1] !== undefined && !eager.has(m[1])) (eager.add(m[1]), follow(m[1]))
      }
    }
    follow("inboxctl.js")
    const chunks = readFileSync(imports, "utf8").split("\n").flatMap((u) => /\/dist\/(chunk-\w+\.js)$/.exec(u)?.[1] ?? [])
    assert.isAbove(eager.size, 0)
    assert.isAbove(readdirSync(dirname(entry)).filter((f) => /^chunk-\w+\.js$/.test(f)).length, eager.size, "the engine is in chunks of its own")
    for (const chunk of chunks) assert.isTrue(eager.has(chunk), `${chunk} is loaded though the entry does not import it`)

    const listed = await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages`, { headers: auth })
    const body = (await listed.json()) as { messages: ReadonlyArray<{ subject: string }> }
    assert.deepStrictEqual(body.messages.map((m) => m.subject), ["Packed"])

    // Unpatched libmime runs a soft-broken quote into the reply under it (RFC 3676 4.5).
    const flowed = "From: Ann <ann@example.org>\r\nTo: ops@inbox.localhost\r\nSubject: Flowed\r\nMessage-ID: <packed-2@example.org>\r\n" +
      "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8; format=flowed\r\n\r\n> the question ends soft \r\nthe answer\r\n"
    const second = await fetch(`${url}/inbound/raw?to=ops@inbox.localhost`, {
      method: "POST",
      headers: { "x-inbound-secret": "package-test-secret" },
      body: flowed
    })
    assert.strictEqual(second.status, 200, await second.clone().text())
    const both = (await (await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages`, { headers: auth })).json()) as {
      messages: ReadonlyArray<{ subject: string; message_id: string }>
    }
    const id = both.messages.find((m) => m.subject === "Flowed")?.message_id ?? ""
    const read = (await (await fetch(`${url}/v0/inboxes/ops@inbox.localhost/messages/${encodeURIComponent(id)}`, { headers: auth })).json()) as { text?: string }
    assert.strictEqual(read.text, "> the question ends soft \nthe answer")

    server.kill("SIGTERM")
    const run = await server.output
    assert.strictEqual(run.code, 0, run.stderr)
  })

  // No container runtime runs here, so the image is checked by its layout: the Dockerfile's
  // runtime stage installs the same tarball globally with npm; its ENV, ENTRYPOINT + CMD and
  // HEALTHCHECK are read from the file and run against that install, as the image would.
  it("the Dockerfile's image layout: the tarball installed globally, its entrypoint serving under the image's settings, its health check passing, exit 0 on its stop signal", async () => {
    const dockerfile = readFileSync(fileURLToPath(new URL("../../../Dockerfile", import.meta.url)), "utf8")
    const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "))
    const line = (instruction: string) => {
      const found = new RegExp(`^${instruction} (.+)$`, "m").exec(runtime)
      assert.isNotNull(found, `the runtime stage has ${instruction}`)
      return found![1]!
    }
    assert.match(runtime, /npm install -g [^\n]*\/tmp\/pkg\/\*\.tgz/, "the image installs the packed tarball with npm install -g")
    assert.strictEqual(line("USER"), "node", "the image runs as a non-root user")
    assert.strictEqual(line("STOPSIGNAL"), "SIGTERM")
    const entrypoint = JSON.parse(line("ENTRYPOINT")) as Array<string>
    const cmd = JSON.parse(line("CMD")) as Array<string>
    const env = Object.fromEntries([...line("ENV").matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
    assert.strictEqual(env["INBOX_DATA_DIR"], "/data")
    assert.include(line("VOLUME"), "/data")
    const health = /HEALTHCHECK[^\n]*\\\n\s*CMD (.+)$/m.exec(runtime)?.[1] ?? ""
    assert.include(health, "/health")

    const prefix = join(dir, "image", "usr", "local")
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz")) ?? ""
    const installed = await npmInstall(["-g", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error", join(dir, tarball)], { env: childEnv() })
    assert.strictEqual(installed.code, 0, installed.stderr)
    const [command, ...args] = [...entrypoint, ...cmd]
    assert.strictEqual(command, "inboxctl")
    // The image's settings, with the volume and the port moved to this test's own.
    const port = await freePort()
    const volume = join(dir, "image", "data")
    mkdirSync(volume)
    const server = startProcess(join(prefix, "bin", command!), args, {
      env: childEnv({ ...env, INBOX_DATA_DIR: volume, INBOX_PORT: String(port) })
    })
    await waitFor(`http://127.0.0.1:${port}/health`, server)
    // `node -e "<script>"`, run with this Node against the test's port.
    const script = /^node -e "(.+)"$/.exec(health)?.[1]
    assert.isDefined(script, `the health check is a node -e script: ${health}`)
    const probe = await runProcess(process.execPath, ["-e", script!.replace(":3000/", `:${port}/`)], { env: childEnv() })
    assert.strictEqual(probe.code, 0, `the HEALTHCHECK command passes: ${probe.stderr}`)
    assert.isTrue(existsSync(join(volume, "secret.key")), "the data folder is the volume")
    server.kill("SIGTERM")
    const run = await server.output
    assert.strictEqual(run.code, 0, run.stderr)
  })
})
