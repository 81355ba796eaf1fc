/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in the
 * root package.json) against /mcp on a real loopback server: the server scenarios that
 * apply to a stateless tools-only server (server-initialize, ping, tools-list) and
 * dns-rebinding-protection. The suite's client sends no credentials and has no option to,
 * so it talks to a small proxy that adds the test key's Authorization header and passes
 * everything else, the Host and Origin headers the rebinding scenario forges included, as
 * it came. Each scenario must exit 0 with every check SUCCESS.
 */
import { assert, it, layer } from "@effect/vitest"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { engineLayer, newOrganization, pglite } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer, request, type Server } from "node:http"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"

const CLI = join(dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json")), "dist/index.js")

const Served = HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(layerNodeServer({ port: 0, host: "127.0.0.1" }, NODE_SERVER_DEFAULTS)),
  Layer.provideMerge(engineLayer(pglite))
)

const port = HttpServer.HttpServer.useSync((s) => ("port" in s.address ? s.address.port : 0))

/** A loopback proxy to `target` that adds `Authorization: Bearer key`; closed with the scope. */
const authorizingProxy = (target: number, key: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Server>((resolve) => {
        const proxy = createServer((incoming, outgoing) => {
          const forwarded = request({
            host: "127.0.0.1",
            port: target,
            method: incoming.method,
            path: incoming.url,
            headers: { ...incoming.headers, authorization: `Bearer ${key}` }
          }, (answer) => {
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(outgoing)
          })
          forwarded.on("error", () => outgoing.destroy())
          incoming.pipe(forwarded)
        })
        proxy.listen(0, "127.0.0.1", () => resolve(proxy))
      })
    ),
    (proxy) => Effect.promise(() => new Promise<void>((resolve) => proxy.close(() => resolve())))
  ).pipe(Effect.map((proxy) => {
    const address = proxy.address()
    return typeof address === "object" && address !== null ? address.port : 0
  }))

interface Check {
  readonly id: string
  readonly status: string
  readonly errorMessage?: string
}

/** Runs one server scenario of the suite; its exit code and the checks it wrote. */
const scenario = (name: string, url: string) =>
  Effect.promise(() =>
    new Promise<{ code: number; checks: ReadonlyArray<Check>; output: string }>((resolve) => {
      const out = mkdtempSync(join(tmpdir(), "mcp-conformance-"))
      execFile(process.execPath, [CLI, "server", "--url", url, "--scenario", name, "-o", out], { timeout: 120_000 }, (error, stdout, stderr) => {
        const files = (dir: string): ReadonlyArray<string> =>
          readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
            e.isDirectory() ? files(join(dir, e.name)) : e.name === "checks.json" ? [join(dir, e.name)] : []
          )
        const checks = files(out).flatMap((f) => JSON.parse(readFileSync(f, "utf8")) as ReadonlyArray<Check>)
        rmSync(out, { recursive: true, force: true })
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, checks, output: `${stdout}\n${stderr}` })
      })
    })
  )

const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]

// Four runs of the suite's CLI, a second or two each on an idle machine: the time allowed is for a busy one.
layer(Served, { timeout: "180 seconds", excludeTestServices: true })("the official MCP conformance suite", (it) => {
  it.effect(`server scenarios ${SCENARIOS.join(", ")}: every check passes`, () =>
    Effect.gen(function*() {
      const { key } = yield* newOrganization()
      const proxyPort = yield* authorizingProxy(yield* port, key)
      for (const name of SCENARIOS) {
        const run = yield* scenario(name, `http://127.0.0.1:${proxyPort}/mcp`)
        const failed = run.checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO")
        assert.deepStrictEqual(failed, [], `${name}:\n${run.output}`)
        assert.isAbove(run.checks.length, 0, `${name} wrote no checks:\n${run.output}`)
        assert.strictEqual(run.code, 0, `${name}:\n${run.output}`)
      }
    }).pipe(Effect.scoped), { timeout: 300_000 })
})
