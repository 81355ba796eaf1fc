/** The spec's shared conventions as pure code: permissions, page tokens, plan limits, ids. */
import { assert, describe, it } from "@effect/vitest"
import {
  ApiKeys,
  checkLimit,
  findOperation,
  Ids,
  InboxOperations,
  Inboxes,
  Mail,
  normaliseAddress,
  Organizations,
  parsePermissions,
  PERMISSIONS,
  runOperation
} from "@inbox/core/internal"
import { engineLayer, layerFixedIds, pglite } from "@inbox/testkit"
import { Effect, Tracer } from "effect"
import { decodeCursor, encodeCursor, toPage } from "../src/shared/pagination.ts"

describe("permissions", () => {
  it("names exactly the 43 permissions of the spec", () => {
    assert.strictEqual(PERMISSIONS.length, 43)
    assert.strictEqual(new Set(PERMISSIONS).size, 43)
  })

  it.effect("accepts a list or an object of booleans and normalises both", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* parsePermissions(["pod_read", "inbox_read", "pod_read"]), ["inbox_read", "pod_read"])
      assert.deepStrictEqual(yield* parsePermissions({ pod_read: true, inbox_read: false }), ["pod_read"])
    }))

  it.effect("rejects unknown names and the former names with validation_error naming each path", () =>
    Effect.gen(function*() {
      const error = yield* parsePermissions(["inbox_read", "provider_connect", "nope"]).pipe(Effect.flip)
      assert.strictEqual(error.code, "validation_error")
      assert.deepStrictEqual(error.errors.map((e) => e.path), [["permissions", "1"], ["permissions", "2"]])
      const object = yield* parsePermissions({ provider_share_owner: false }).pipe(Effect.flip)
      assert.deepStrictEqual(object.errors[0]?.path, ["permissions", "provider_share_owner"])
    }))
})

describe("page tokens", () => {
  it.effect("round-trip an opaque cursor and refuse a forged one", () =>
    Effect.gen(function*() {
      const cursor = { at: new Date("2026-01-02T03:04:05.678Z"), id: "inbox_ab" }
      const token = encodeCursor(cursor)
      assert.match(token, /^[A-Za-z0-9_-]+$/)
      assert.deepStrictEqual(yield* decodeCursor(token), cursor)
      for (const bad of ["", "x", Buffer.from("[1,2]").toString("base64url"), Buffer.from('["nope","i"]').toString("base64url")]) {
        assert.strictEqual((yield* decodeCursor(bad).pipe(Effect.flip)).code, "validation_error")
      }
    }))

  it("cuts a page of limit rows and offers a next token only when more rows exist", () => {
    const rows = [3, 2, 1].map((n) => ({ id: `r${n}`, created_at: new Date(n) }))
    const full = toPage(rows, 2, (r) => r.id)
    assert.deepStrictEqual(full.items, ["r3", "r2"])
    assert.isString(full.next_page_token)
    const last = toPage(rows.slice(0, 2), 2, (r) => r.id)
    assert.isUndefined(last.next_page_token)
  })
})

describe("plan limits", () => {
  it.effect("the Free plan's inbox limit is 3, with upgrade_to pro; Scale has nothing to upgrade to", () =>
    Effect.gen(function*() {
      yield* checkLimit("free", "inboxes", 2)
      const error = yield* checkLimit("free", "inboxes", 3).pipe(Effect.flip)
      assert.deepStrictEqual(error.errors, [{ limit: "inboxes", current: 3, max: 3, plan: "free", upgrade_to: "pro" }])
      const scale = yield* checkLimit("scale", "inboxes", 500).pipe(Effect.flip)
      assert.notProperty(scale.errors[0], "upgrade_to")
      yield* checkLimit("pro", "sends_per_day", 1_000_000)
    }))
})

describe("ids", () => {
  it.effect("are the prefix then lowercase hex; the fixed layer counts up", () =>
    Effect.gen(function*() {
      const ids = yield* Ids
      assert.strictEqual(yield* ids.make("org"), "org_000000000000000000000001")
      assert.strictEqual(yield* ids.make("inbox"), "inbox_000000000000000000000002")
    }).pipe(Effect.provide(layerFixedIds)))

  it.effect("live ids are 24 lowercase hex digits after the prefix and do not repeat", () =>
    Effect.gen(function*() {
      const ids = yield* Ids
      const made = yield* Effect.forEach(Array.from({ length: 1000 }), () => ids.make("msg"))
      for (const id of made) assert.match(id, /^msg_[0-9a-f]{24}$/)
      assert.strictEqual(new Set(made).size, 1000)
      assert.match(yield* ids.digits(6), /^\d{6}$/)
    }).pipe(Effect.provide(Ids.layer)))
})

describe("runOperation", () => {
  it.effect("refuses an operation that needs a key when no principal is given, with 401 unauthorized", () =>
    Effect.gen(function*() {
      const op = findOperation("inboxes.list")
      assert.isDefined(op)
      if (op === undefined) return
      const error = yield* runOperation(op, { principal: undefined, params: {}, input: {}, context: { clientIp: "t", requestId: "t" } }).pipe(
        Effect.flip,
        Effect.provide(engineLayer(pglite))
      )
      assert.strictEqual(error.code, "unauthorized")
    }))

  it.effect("an installed tracer records the request path's spans by name: the operation, the key, the inbox", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      const recorder = Tracer.make({
        span(options) {
          names.push(options.name)
          return new Tracer.NativeSpan(options)
        }
      })
      const organizations = yield* Organizations
      const keys = yield* ApiKeys
      const { organization } = yield* organizations.create({ ownerEmail: "trace@example.com", verified: true })
      const { api_key } = yield* keys.issue(organization.id, { name: "t" })
      const principal = yield* keys.authenticate(api_key)
      const inbox = yield* (yield* Inboxes).create(principal, {})
      const run = Effect.gen(function*() {
        const caller = yield* keys.authenticate(api_key)
        return yield* runOperation(InboxOperations.getInbox, {
          principal: caller,
          params: { inbox_id: inbox.inbox_id },
          context: { clientIp: "t", requestId: "t" }
        })
      })
      // Without a tracer that keeps spans, none is built (Effect's native tracer keeps none).
      yield* run
      yield* run.pipe(Effect.withTracer(recorder))
      // The SQL client adds a span per statement, named after the database system; the key
      // was seen before the traced run, so it comes from the cache (KeyCache) with no statement.
      assert.deepStrictEqual(names, ["ApiKeys.authenticate", "inboxes.get", "Inboxes.get", "Inboxes.find", "postgres"])
    }).pipe(Effect.provide(engineLayer(pglite))))
})

describe("email addresses", () => {
  it("one rule everywhere: a one-letter top-level domain is refused; an internationalised domain is accepted in its ASCII form", () => {
    assert.isUndefined(normaliseAddress("a@b.c"))
    assert.strictEqual(normaliseAddress("a@bücher.de"), "a@xn--bcher-kva.de")
    assert.strictEqual(normaliseAddress("Ann.Lee@Example.COM"), "Ann.Lee@example.com")
    assert.strictEqual(normaliseAddress("a@x.org."), "a@x.org")
    for (const bad of ["", "@x.org", "a@", "a b@x.org", "a@x..org", "a@-x.org", "a\u0000@x.org", ".a@x.org"]) {
      assert.isUndefined(normaliseAddress(bad), JSON.stringify(bad))
    }
    // The mail engine reads recipients with the same rule.
    assert.isUndefined(Mail.parseMailbox("a@b.c"))
    assert.deepStrictEqual(Mail.parseMailbox("Ann <a@bücher.de>"), { name: "Ann", address: "a@xn--bcher-kva.de" })
  })
})
