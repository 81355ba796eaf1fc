/**
 * The browser dashboard: a page at `/` and its few static files under `/dashboard/`, a
 * single-page client that calls /auth and /v0 with the session cookie (README "Dashboard").
 * The files need no build step (plain ES modules), so they are read once when this module
 * loads and served from memory: start stays fast and nothing is compiled at run time.
 *
 * Every answer carries a Content-Security-Policy that allows only this origin's scripts and
 * styles, connections to this origin (fetch and the /v0/websocket), and `frame-src 'self'`
 * for the sandboxed frame that shows HTML mail from a `srcdoc` document.
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
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
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8"
}

const FILES = ["index.html", "app.js", "dom.js", "scope.js", "auth.js", "mail.js", "pods.js", "policy.js", "webhooks.js", "org.js", "charts.js", "app.css"] as const

// Beside this module in the sources (src/dashboard/) and beside the bundle in the built
// package (dist/dashboard/, copied by packages/cli/build.ts).
const load = (name: string) => readFileSync(new URL(`./dashboard/${name}`, import.meta.url))

// The QR encoder for the two-step setup page is the `qrcode-generator` package's own ES
// module, read from node_modules as installed (a dependency of this package and of inboxctl):
// vendored at start, never built or copied into the sources. Its `require` entry is the UMD
// file; the ES module sits beside it.
const qrcodeModule = () =>
  readFileSync(join(dirname(createRequire(import.meta.url).resolve("qrcode-generator")), "qrcode.mjs"))

/** The dashboard's files by name, read once. */
const files: ReadonlyMap<string, Uint8Array> = new Map([
  ...FILES.map((name) => [name, load(name)] as const),
  ["qrcode.mjs", qrcodeModule()] as const
])

// `no-cache` with an ETag: the browser asks again on each load (a new server version is
// seen at once) and an unchanged file costs a 304 with no body.
const etags: ReadonlyMap<string, string> = new Map(
  [...files].map(([name, body]) => [name, `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`])
)

const serve = (name: string) => Effect.gen(function*() {
  const body = files.get(name)
  const etag = etags.get(name)
  if (body === undefined || etag === undefined) return errorResponse(new NotFound({ message: "No such dashboard file.", fix: "Open the dashboard at /." }))
  const headers = {
    "content-security-policy": CSP,
    "cache-control": "no-cache",
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
