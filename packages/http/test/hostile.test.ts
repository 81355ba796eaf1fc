/**
 * Hostile and careless clients, found by probing the running server: NUL and control
 * characters, prototype names as fields, floods of unknown fields, loose numbers, foreign
 * charsets, empty ids, blank names, and the limits on verification codes. Each must be a
 * 4xx in the spec's words, never a 500, on PGlite and PostgreSQL alike (PostgreSQL refuses
 * to store a NUL, which is how these once became 500s).
 */
import { assert, it, layer } from "@effect/vitest"
import { engineLayer, lastCode, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"

let n = 0
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${n++}`

const expectValidation = (res: { status: number; body: any; text: string }, path: ReadonlyArray<string>) => {
  assert.strictEqual(res.status, 400, res.text)
  assert.strictEqual(res.body.code, "validation_error", res.text)
  assert.deepStrictEqual(res.body.errors[0].path, path, res.text)
}

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `hostile and careless clients (${storage.name})`,
    (it) => {
      it.effect("a NUL in a string field is 400 validation_error naming the field", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          expectValidation(yield* app.request("POST", "/v0/pods", { key, json: { name: "a\u0000b" } }), ["name"])
          expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { display_name: "\u0000" } }), ["display_name"])
          expectValidation(yield* app.request("POST", "/v0/api-keys", { key, json: { name: "k\u0000" } }), ["name"])
        }))

      it.effect("a NUL in a metadata key or value is 400 validation_error naming the field", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const inKey = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { "te\u0000am": "red" } } })
          assert.strictEqual(inKey.status, 400, inKey.text)
          assert.strictEqual(inKey.body.code, "validation_error")
          assert.strictEqual(inKey.body.errors[0].path[0], "metadata")
          expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { team: "r\u0000d" } } }), ["metadata", "team"])
        }))

      it.effect("a NUL in a path parameter is 400 validation_error naming it", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          expectValidation(yield* app.request("GET", "/v0/inboxes/inbox_%00", { key }), ["inbox_id"])
          expectValidation(yield* app.request("DELETE", "/v0/pods/%00", { key }), ["pod_id"])
          expectValidation(yield* app.request("PATCH", "/v0/inboxes/a%00b", { key, json: { display_name: "x" } }), ["inbox_id"])
        }))

      it.effect("a NUL in a page token or another query value is 400 validation_error naming it", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          expectValidation(yield* app.request("GET", "/v0/pods?page_token=%00", { key }), ["page_token"])
          expectValidation(yield* app.request("GET", "/v0/inboxes?limit=1%00", { key }), ["limit"])
        }))

      it.effect("a NUL in POST /v0/agent/sign-up without a key is 400 validation_error naming the field", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          expectValidation(
            yield* app.request("POST", "/v0/agent/sign-up", { json: { username: "nul\u0000agent", human_email: "h@example.org" } }),
            ["username"]
          )
          expectValidation(
            yield* app.request("POST", "/v0/agent/sign-up", { json: { username: unique("nul"), human_email: "h\u0000@example.org" } }),
            ["human_email"]
          )
        }))

      it.effect("other control characters are refused in one-line fields; multi-line text keeps tab and line breaks", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const name of ["two\nlines", "bell\u0007", "esc\u001b[31m", "del\u007f", "c1\u0085"]) {
            expectValidation(yield* app.request("POST", "/v0/pods", { key, json: { name } }), ["name"])
          }
          expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { "line\nbreak": "v" } } }), ["metadata", "line\nbreak"])
          expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { note: "bell\u0007" } } }), ["metadata", "note"])
          const ok = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { note: "first\tline\r\nsecond line" } } })
          assert.strictEqual(ok.status, 200, ok.text)
          assert.strictEqual(ok.body.metadata.note, "first\tline\r\nsecond line")
        }))

      it.effect("a metadata key that is empty, blank or over 64 characters is 400 validation_error naming it, never silently dropped", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const bad of ["", "   ", "k".repeat(65)]) {
            expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { ok: "kept", [bad]: "v" } } }), ["metadata", bad])
          }
          const inbox = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata: { ["k".repeat(64)]: "v" } } })
          assert.strictEqual(inbox.status, 200, inbox.text)
          expectValidation(
            yield* app.request("PATCH", `/v0/inboxes/${inbox.body.inbox_id}`, { key, json: { metadata: { "tab\tkey": "v" } } }),
            ["metadata", "tab\tkey"]
          )
        }))

      it.effect("constructor, toString and __proto__ are unknown fields: 400 bad_request naming them", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const field of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
            const res = yield* app.request("POST", "/v0/pods", {
              key,
              body: `{"name":"proto","${field}":{"polluted":true}}`,
              headers: { "content-type": "application/json" }
            })
            assert.strictEqual(res.status, 400, field)
            assert.strictEqual(res.body.code, "bad_request", field)
            assert.include(res.body.message, field)
          }
          const res = yield* app.request("GET", "/v0/pods?constructor=1", { key })
          assert.strictEqual(res.body.code, "bad_request")
          assert.isUndefined(({} as Record<string, unknown>)["polluted"])
        }))

      it.effect("a body of 90,000 unknown keys names at most five of them in a short answer", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const body = `{${Array.from({ length: 90_000 }, (_, i) => `"k${i}":0`).join(",")}}`
          assert.isBelow(body.length, 1024 * 1024)
          const res = yield* app.request("POST", "/v0/pods", { key, body, headers: { "content-type": "application/json" } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "bad_request")
          assert.isBelow(res.text.length, 1_000)
          assert.isAtMost((res.body.message.match(/"k\d+"/g) ?? []).length, 5)
          const anonymous = yield* app.request("POST", "/v0/agent/sign-up", { body: body.slice(0, 8_000).replace(/,[^,]*$/, "}"), headers: { "content-type": "application/json" } })
          assert.strictEqual(anonymous.status, 400)
          assert.strictEqual(anonymous.body.code, "bad_request")
          assert.isBelow(anonymous.text.length, 1_000)
        }))

      it.effect("a value that fails many rules names at most ten issues", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          const metadata = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]))
          const res = yield* app.request("POST", "/v0/inboxes", { key, json: { metadata } })
          assert.strictEqual(res.status, 400)
          assert.strictEqual(res.body.code, "validation_error")
          assert.isAtMost(res.body.errors.length, 10)
        }))

      it.effect("limit=0x10, 1e2, +5, 5.0 and ' 5' are 400 validation_error on limit; plain digits pass", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const limit of ["0x10", "1e2", "%2B5", "5.0", "%205", "0b1", "Infinity", ""]) {
            expectValidation(yield* app.request("GET", `/v0/inboxes?limit=${limit}`, { key }), ["limit"])
          }
          const ok = yield* app.request("GET", "/v0/inboxes?limit=16", { key })
          assert.strictEqual(ok.status, 200)
          assert.strictEqual(ok.body.limit, 16)
        }))

      it.effect("a body declared in a charset other than UTF-8 is 400 bad_request; bytes that are not UTF-8 too", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const charset of ["latin1", "utf-16", "\"iso-8859-1\""]) {
            const res = yield* app.request("POST", "/v0/pods", {
              key,
              body: JSON.stringify({ name: "x" }),
              headers: { "content-type": `application/json; charset=${charset}` }
            })
            assert.strictEqual(res.status, 400, charset)
            assert.strictEqual(res.body.code, "bad_request", charset)
          }
          const utf8 = yield* app.request("POST", "/v0/pods", { key, json: { name: "Zürich" }, headers: { "content-type": "application/json; charset=UTF-8" } })
          assert.strictEqual(utf8.status, 200, utf8.text)
          const latin1Bytes = new Uint8Array([...new TextEncoder().encode("{\"name\":\"Z"), 0xfc, ...new TextEncoder().encode("rich\"}")])
          const invalid = yield* app.request("POST", "/v0/pods", { key, body: latin1Bytes, headers: { "content-type": "application/json" } })
          assert.strictEqual(invalid.status, 400)
          assert.strictEqual(invalid.body.code, "bad_request")
        }))

      it.effect("an empty id in a body field is 400 validation_error naming it, not a missing resource", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          expectValidation(yield* app.request("POST", "/v0/api-keys", { key, json: { name: "k", pod_id: "" } }), ["pod_id"])
          expectValidation(yield* app.request("POST", "/v0/api-keys", { key, json: { name: "k", inbox_id: "" } }), ["inbox_id"])
        }))

      it.effect("names of only spaces are refused with 400 validation_error", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          expectValidation(yield* app.request("POST", "/v0/pods", { key, json: { name: "   " } }), ["name"])
          expectValidation(yield* app.request("POST", "/v0/inboxes", { key, json: { display_name: " \t " } }), ["display_name"])
          expectValidation(yield* app.request("POST", "/v0/api-keys", { key, json: { name: "  " } }), ["name"])
          const inbox = yield* app.request("POST", "/v0/inboxes", { key, json: {} })
          expectValidation(yield* app.request("PATCH", `/v0/inboxes/${inbox.body.inbox_id}`, { key, json: { display_name: "  " } }), ["display_name"])
        }))

      it.effect("the taken-username 409 of agent sign-up is already_exists with the name ConflictError", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const username = unique("taken")
          const first = yield* app.request("POST", "/v0/agent/sign-up", { json: { username, human_email: "one@example.org" } })
          assert.strictEqual(first.status, 200, first.text)
          const again = yield* app.request("POST", "/v0/agent/sign-up", { json: { username, human_email: "two@example.org" } })
          assert.strictEqual(again.status, 409)
          assert.strictEqual(again.body.code, "already_exists")
          assert.strictEqual(again.body.name, "ConflictError")
        }))

      it.effect("too_many_attempts carries Retry-After, after ten wrong codes and after expiry alike", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const human = `${unique("retry")}@example.org`
          const agent = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: unique("retry"), human_email: human } })
          const code = yield* lastCode(human)
          const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
          for (let i = 0; i < 10; i++) yield* app.request("POST", "/v0/agent/verify", { key: agent.body.api_key, json: { otp_code: wrong } })
          const res = yield* app.request("POST", "/v0/agent/verify", { key: agent.body.api_key, json: { otp_code: code } })
          assert.strictEqual(res.status, 429)
          assert.strictEqual(res.body.code, "too_many_attempts")
          assert.match(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/)
        }))
    }
  )

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { rateLimits: true }))), { timeout: "120 seconds" })(
    `verification code limits (${storage.name})`,
    (it) => {
      it.effect("the five-codes-per-hour limit per human address counts sign-up codes: the sixth code is 429 rate_limited with Retry-After", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const human = `${unique("five")}@example.org`
          const agents: Array<string> = []
          const keyOf = (i: number) => agents[i] ?? ""
          for (let i = 0; i < 5; i++) {
            const res = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: unique("five"), human_email: human } })
            assert.strictEqual(res.status, 200, res.text)
            agents.push(res.body.api_key)
          }
          // The sixth code for this address, asked for by attach-human (no sign-up, so the per-IP sign-up limit plays no part).
          const sixth = yield* app.request("POST", "/v0/agent/attach-human", { key: keyOf(0), json: { human_email: human } })
          assert.strictEqual(sixth.status, 429, sixth.text)
          assert.strictEqual(sixth.body.code, "rate_limited")
          assert.match(sixth.headers.get("retry-after") ?? "", /^[1-9]\d*$/)
          // Another address is unaffected.
          const other = yield* app.request("POST", "/v0/agent/attach-human", { key: keyOf(1), json: { human_email: `${unique("other")}@example.org` } })
          assert.strictEqual(other.status, 200, other.text)
        }))
    }
  )
}
