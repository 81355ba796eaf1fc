/**
 * The browser dashboard: a page at `/` and its few static files under `/dashboard/`, a
 * single-page client that calls /auth and /v0 with the session cookie (docs/dashboard.md).
 * The files are packages/dashboard's build (Vite's output), read once when this module loads
 * and served from memory: start stays fast and nothing is compiled at run time.
 *
 * Every answer carries a Content-Security-Policy that allows only this origin's scripts and
 * styles, connections to this origin (fetch and the /v0/websocket), and `frame-src 'self'`
 * for the sandboxed frame that shows HTML mail from a `srcdoc` document.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse } from "./respond.ts"
import { NotFound } from "@inbox/core"

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  // A srcdoc frame inherits this policy: remote images must be allowed here for the reader's
  // "Show remote images" to work; until then the frame's own stricter policy blocks them.
  "img-src 'self' data: blob: https: http:",
  "connect-src 'self'",
  "frame-src 'self' about:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png"
}

// Vite's output (packages/dashboard, `pnpm --filter @inbox/dashboard build`, which install_deps
// runs): beside this module in the built packages (dist/dashboard/, copied by
// packages/http/build.ts and packages/cli/build.ts), else the dashboard package's dist/ in
// the sources.
const directory = [new URL("./dashboard/", import.meta.url), new URL("../../dashboard/dist/", import.meta.url)]
  .find((dir) => existsSync(new URL("index.html", dir)))

/** The dashboard's files by name, read once; none when it was not built (the page says so). */
const files: ReadonlyMap<string, Uint8Array> = new Map(directory === undefined ? [] :
  readdirSync(directory).map((name) => [name, readFileSync(new URL(name, directory))] as const))

// Every file but index.html is named by a hash of its content: a browser keeps it for a year
// and asks nothing. index.html is `no-cache` with an ETag: a new server version is seen at
// once, and an unchanged page costs a 304 with no body.
const etags: ReadonlyMap<string, string> = new Map(
  [...files].map(([name, body]) => [name, `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`])
)

const notBuilt = new NotFound({
  message: "The dashboard was not built.",
  fix: "Run `pnpm --filter @inbox/dashboard build` (install_deps in scripts/env.sh does), then start the server again."
})

const serve = (name: string) => Effect.gen(function*() {
  const body = files.get(name)
  const etag = etags.get(name)
  if (body === undefined || etag === undefined) {
    return errorResponse(files.size === 0 ? notBuilt : new NotFound({ message: "No such dashboard file.", fix: "Open the dashboard at /." }))
  }
  const headers = {
    "content-security-policy": CSP,
    "cache-control": name === "index.html" ? "no-cache" : "public, max-age=31536000, immutable",
    etag,
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY"
  }
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.headers["if-none-match"] === etag) return HttpServerResponse.empty({ status: 304, headers })
  return HttpServerResponse.uint8Array(body, { status: 200, contentType: TYPES[name.split(".").pop() ?? ""] ?? "application/octet-stream", headers })
})

// The page answers at `/` and at the paths of the links /auth mails (verify, reset, accept).
const pages = ["/", "/verify-email", "/reset-password", "/accept-invitation"] as const
const Pages = pages.map((path) => HttpRouter.add("GET", path, serve("index.html")))

const Asset = HttpRouter.add("GET", "/dashboard/:file", Effect.gen(function*() {
  const route = yield* HttpRouter.RouteContext
  return yield* serve(route.params["file"] ?? "")
}))

export const DashboardRoutes = Layer.mergeAll(Asset, ...Pages)
