/**
 * The dashboard's files as the server serves them: the page at `/` and at the paths of the
 * links /auth mails, and its built files under /dashboard/ (packages/dashboard, Vite's output),
 * each with the CSP that keeps mail content from running or loading anything. Storage plays
 * no part, so PGlite alone serves.
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, pglite, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

/** The page's files, as index.html names them: `/dashboard/NAME-HASH.js` and `.css`. */
const assets = (html: string) => [...html.matchAll(/(?:src|href)="\/dashboard\/([\w-]+\.(?:js|css))"/g)].map((m) => m[1] ?? "")

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite))), { timeout: "120 seconds" })("Dashboard files", (it) => {
  it.effect("the dashboard page is served at / and at the verify, reset and invitation link paths, with a CSP allowing only this origin and an icon of its own", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      for (const path of ["/", "/verify-email?token=abc", "/reset-password?token=abc", "/accept-invitation?token=abc"]) {
        const res = yield* app.request("GET", path)
        assert.strictEqual(res.status, 200, path)
        assert.match(res.headers.get("content-type") ?? "", /^text\/html/)
        assert.match(res.text, /<script type="module" crossorigin src="\/dashboard\/index-[\w-]+\.js">/)
        // Its own icon: no request for /favicon.ico, which the server answers 404.
        assert.match(res.text, /<link rel="icon" href="data:image\/svg\+xml,/)
        const csp = res.headers.get("content-security-policy") ?? ""
        assert.include(csp, "script-src 'self'")
        assert.include(csp, "frame-ancestors 'none'")
        assert.notInclude(csp, "unsafe-eval")
      }
    }))

  it.effect("the page's script and stylesheet are served with their types and the CSP, GET /auth/me preloaded; an unknown file is 404 not_found", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const html = (yield* app.request("GET", "/")).text
      const files = assets(html)
      assert.isTrue(files.some((f) => f.endsWith(".js")) && files.some((f) => f.endsWith(".css")), html)
      for (const name of files) {
        const res = yield* app.request("GET", `/dashboard/${name}`)
        assert.strictEqual(res.status, 200, name)
        assert.match(res.headers.get("content-type") ?? "", name.endsWith(".js") ? /^text\/javascript/ : /^text\/css/, name)
        assert.include(res.headers.get("content-security-policy") ?? "", "script-src 'self'", name)
      }
      // Who is signed in is asked beside the script, in the mode and credentials of the page's fetch() (same origin).
      assert.include(html, `<link rel="preload" href="/auth/me" as="fetch" crossorigin>`)
      const missing = yield* app.request("GET", "/dashboard/secrets.env")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "not_found")
    }))

  it.effect("the page is no-cache with an ETag (asked again with it, 304 without a body); its hashed files are kept a year", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const first = yield* app.request("GET", "/")
      const etag = first.headers.get("etag") ?? ""
      assert.match(etag, /^"[\w-]+"$/)
      assert.strictEqual(first.headers.get("cache-control"), "no-cache")
      const again = yield* app.request("GET", "/", { headers: { "if-none-match": etag } })
      assert.strictEqual(again.status, 304)
      assert.strictEqual(again.text, "")
      const stale = yield* app.request("GET", "/", { headers: { "if-none-match": "\"other\"" } })
      assert.strictEqual(stale.status, 200)
      for (const name of assets(first.text)) {
        const res = yield* app.request("GET", `/dashboard/${name}`)
        assert.strictEqual(res.headers.get("cache-control"), "public, max-age=31536000, immutable", name)
      }
    }))

  it.effect("HTML mail is shown in a frame sandboxed without scripts (same origin only so the page can size it), whose own CSP blocks remote images until the reader allows them (inline images' signed URLs excepted)", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const [entry] = assets((yield* app.request("GET", "/")).text).filter((f) => f.endsWith(".js"))
      const js = (yield* app.request("GET", `/dashboard/${entry ?? ""}`)).text
      const sandbox = /sandbox:\s*["`]([^"`]*)["`]/.exec(js)?.[1] ?? ""
      assert.include(sandbox, "allow-popups")
      assert.notInclude(sandbox, "allow-scripts")
      // Same origin lets the page read the frame's height; it is safe only without scripts.
      assert.include(sandbox, "allow-same-origin")
      // Beyond data: and cid:, only the inline images' signed URLs, until the reader allows remote images.
      assert.include(js, "img-src data: cid:")
    }))
})
