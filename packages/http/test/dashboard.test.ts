/**
 * The dashboard's files as the server serves them: the page at `/` and at the paths of the
 * links /auth mails, its scripts under /dashboard/, each with the CSP that keeps mail content
 * from running or loading anything. Storage plays no part, so PGlite alone serves.
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, pglite, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(pglite))), { timeout: "120 seconds" })("Dashboard files", (it) => {
  it.effect("the dashboard page is served at / and at the verify, reset and invitation link paths, with a CSP allowing only this origin and an icon of its own", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      for (const path of ["/", "/verify-email?token=abc", "/reset-password?token=abc", "/accept-invitation?token=abc"]) {
        const res = yield* app.request("GET", path)
        assert.strictEqual(res.status, 200, path)
        assert.match(res.headers.get("content-type") ?? "", /^text\/html/)
        assert.include(res.text, `<script type="module" src="/dashboard/app.js">`)
        // Its own icon: no request for /favicon.ico, which the server answers 404.
        assert.match(res.text, /<link rel="icon" href="data:image\/svg\+xml,/)
        const csp = res.headers.get("content-security-policy") ?? ""
        assert.include(csp, "script-src 'self'")
        assert.include(csp, "frame-ancestors 'none'")
        assert.notInclude(csp, "unsafe-eval")
      }
    }))

  it.effect("the dashboard's scripts and stylesheet are served with their types, every module and GET /auth/me preloaded; an unknown file is 404 not_found", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const js = yield* app.request("GET", "/dashboard/app.js")
      assert.strictEqual(js.status, 200)
      assert.match(js.headers.get("content-type") ?? "", /^text\/javascript/)
      // Every module the entry imports, directly or through another module, is served with the
      // CSP, and the page preloads each one (so none waits for the module that imports it).
      const modules = new Set<string>()
      const pending = [js.text]
      while (pending.length > 0) {
        for (const [, name] of (pending.pop() ?? "").matchAll(/from "\/dashboard\/([a-z]+\.m?js)"/g)) {
          if (name === undefined || modules.has(name)) continue
          modules.add(name)
          const module = yield* app.request("GET", `/dashboard/${name}`)
          assert.strictEqual(module.status, 200, name)
          assert.match(module.headers.get("content-type") ?? "", /^text\/javascript/, name)
          assert.include(module.headers.get("content-security-policy") ?? "", "script-src 'self'", name)
          pending.push(module.text)
        }
      }
      const html = (yield* app.request("GET", "/")).text
      const preloaded = [...html.matchAll(/rel="modulepreload" href="\/dashboard\/([a-z]+\.js)"/g)].map((m) => m[1])
      assert.sameMembers(preloaded, [...modules])
      // Who is signed in is asked beside the modules, in the mode and credentials of the page's fetch() (same origin).
      assert.include(html, `<link rel="preload" href="/auth/me" as="fetch" crossorigin>`)
      assert.include((yield* app.request("GET", "/dashboard/auth.js")).text, "/auth/sign-in")
      const css = yield* app.request("GET", "/dashboard/app.css")
      assert.match(css.headers.get("content-type") ?? "", /^text\/css/)
      const missing = yield* app.request("GET", "/dashboard/secrets.env")
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.code, "not_found")
    }))

  it.effect("each file has an ETag: asked again with it, an unchanged file answers 304 without a body", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      for (const path of ["/", "/dashboard/mail.js"]) {
        const first = yield* app.request("GET", path)
        const etag = first.headers.get("etag") ?? ""
        assert.match(etag, /^"[\w-]+"$/, path)
        assert.strictEqual(first.headers.get("cache-control"), "no-cache")
        const again = yield* app.request("GET", path, { headers: { "if-none-match": etag } })
        assert.strictEqual(again.status, 304, path)
        assert.strictEqual(again.text, "")
        const stale = yield* app.request("GET", path, { headers: { "if-none-match": "\"other\"" } })
        assert.strictEqual(stale.status, 200, path)
      }
    }))

  it.effect("the QR encoder of the two-step page is the qrcode-generator package's ES module, served from node_modules", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const qr = yield* app.request("GET", "/dashboard/qrcode.mjs")
      assert.strictEqual(qr.status, 200)
      assert.match(qr.headers.get("content-type") ?? "", /^text\/javascript/)
      assert.include(qr.text, "export default qrcode")
      assert.include((yield* app.request("GET", "/dashboard/auth.js")).text, `import("/dashboard/qrcode.mjs")`)
    }))

  it.effect("HTML mail is shown in a frame sandboxed without scripts, whose own CSP blocks remote images until the reader allows them (inline images' signed URLs excepted)", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      const js = (yield* app.request("GET", "/dashboard/mail.js")).text
      const sandbox = /sandbox: "([^"]*)"/.exec(js)?.[1] ?? ""
      assert.notInclude(sandbox, "allow-scripts")
      assert.notInclude(sandbox, "allow-same-origin")
      // Beyond data: and cid:, only the inline images' signed URLs, until the reader allows remote images.
      assert.include(js, `img-src data: cid:\${sources.map((o) => \` \${o}\`).join("")}\${allowImages ? " https: http:" : ""}`)
    }))
})
