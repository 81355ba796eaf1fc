/**
 * The names the server answers to (DNS-rebinding defence): how a Host header is read, which
 * names the settings allow, and when an Origin counts as the request's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { checkHost, checkSameOrigin, hostNameOf } from "../src/access/hosts.ts"
import { Settings } from "../src/settings/Settings.ts"

const fromEnv = (env: Record<string, string>) =>
  Settings.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))

const settingsOf = (env: Record<string, string>) =>
  Effect.gen(function*() {
    return yield* Settings
  }).pipe(Effect.provide(fromEnv(env)))

describe("Host header", () => {
  it("reads the host name of name, name:port, IPv4 and [IPv6]:port values, in lower case", () => {
    assert.strictEqual(hostNameOf("LocalHost:3000"), "localhost")
    assert.strictEqual(hostNameOf("127.0.0.1"), "127.0.0.1")
    assert.strictEqual(hostNameOf("[::1]:8080"), "::1")
    assert.strictEqual(hostNameOf("mail.example.com."), "mail.example.com")
  })

  it("refuses values a URL parser would read as another host: userinfo, paths, spaces", () => {
    for (const bad of ["evil.example@localhost", "localhost/x", "local host", "localhost:", "[::1", "localhost:99999x", ""]) {
      assert.isUndefined(hostNameOf(bad), bad)
    }
  })
})

describe("allowed hosts", () => {
  it.effect("are the public URL's host, the listen address, localhost and its loopback addresses, and INBOX_ALLOWED_HOSTS", () =>
    Effect.gen(function*() {
      const settings = yield* settingsOf({
        INBOX_PUBLIC_URL: "https://Mail.Example.com/base",
        INBOX_HOST: "10.0.0.7",
        INBOX_ALLOWED_HOSTS: "api.example.net, Other.Example.org"
      })
      assert.sameMembers([...settings.allowedHosts], [
        "mail.example.com",
        "10.0.0.7",
        "localhost",
        "127.0.0.1",
        "::1",
        "api.example.net",
        "other.example.org"
      ])
    }))

  it.effect("a Host naming another site is 400 bad_request; the server's names on any port pass", () =>
    Effect.gen(function*() {
      const settings = (yield* settingsOf({ INBOX_PUBLIC_URL: "https://mail.example.com" }))
      const check = (host: string | undefined) => checkHost(host).pipe(Effect.provideService(Settings, settings))
      for (const host of ["localhost:3000", "127.0.0.1", "[::1]:3000", "mail.example.com", "MAIL.EXAMPLE.COM:443"]) yield* check(host)
      for (const host of ["evil.example.com", "evil.example.com:3000", "mail.example.com.evil.example", "localhost@evil", undefined]) {
        const error = yield* check(host).pipe(Effect.flip)
        assert.strictEqual(error.code, "bad_request", String(host))
      }
    }))

  it.effect("INBOX_ALLOWED_HOSTS=* answers every Host, for a proxy that checks it already", () =>
    Effect.gen(function*() {
      const settings = (yield* settingsOf({ INBOX_ALLOWED_HOSTS: "*" }))
      yield* checkHost("anything.example").pipe(Effect.provideService(Settings, settings))
    }))
})

/** The code checkSameOrigin refuses with under a public URL, or "ok". */
const originCheck = (publicUrl: string) => (origin: string | undefined, host: string) =>
  checkSameOrigin(origin, host).pipe(
    Effect.provideService(Settings, Settings.make({ publicUrl })),
    Effect.flip,
    Effect.map((e) => e.code),
    Effect.orElseSucceed(() => "ok")
  )

describe("Origin", () => {
  it.effect("absent, the request's own origin, or the public URL's origin pass; any other, or null, is 403 forbidden", () =>
    Effect.gen(function*() {
      const check = originCheck("https://mail.example.com")
      assert.strictEqual(yield* check(undefined, "localhost:3000"), "ok")
      assert.strictEqual(yield* check("http://localhost:3000", "localhost:3000"), "ok")
      assert.strictEqual(yield* check("https://mail.example.com", "127.0.0.1:3000"), "ok")
      assert.strictEqual(yield* check("http://localhost:5173", "localhost:3000"), "forbidden")
      assert.strictEqual(yield* check("http://evil.example.com", "localhost:3000"), "forbidden")
      assert.strictEqual(yield* check("null", "localhost:3000"), "forbidden")
      assert.strictEqual(yield* check("http://evil.example.com", "evil.example.com@localhost:3000"), "forbidden")
    }))

  it.effect("the scheme counts: an http:// page of the https public URL's host is another origin (403 forbidden); other names pass by either scheme", () =>
    Effect.gen(function*() {
      const check = originCheck("https://mail.example.com")
      assert.strictEqual(yield* check("http://mail.example.com", "mail.example.com"), "forbidden")
      assert.strictEqual(yield* check("http://mail.example.com", "MAIL.example.com:80"), "forbidden")
      assert.strictEqual(yield* check("http://mail.example.com:8080", "mail.example.com:8080"), "forbidden")
      assert.strictEqual(yield* check("https://mail.example.com", "mail.example.com"), "ok")
      assert.strictEqual(yield* check("https://mail.example.com:8443", "mail.example.com:8443"), "ok")
      assert.strictEqual(yield* check("http://localhost:3000", "localhost:3000"), "ok")
      assert.strictEqual(yield* check("https://api.example.net", "api.example.net"), "ok")
      // An http public URL: its own http pages pass; an https page of another port is another origin.
      const checkPlain = originCheck("http://localhost:3000")
      assert.strictEqual(yield* checkPlain("http://localhost:3000", "localhost:3000"), "ok")
      assert.strictEqual(yield* checkPlain("https://localhost:3001", "localhost:3000"), "forbidden")
    }))
})
