/** Agent onboarding over REST: every rule of "Email verification and agent accounts". */
import { assert, it, layer } from "@effect/vitest"
import { Organizations } from "@inbox/core/internal"
import { CapturedMail, engineLayer, lastCode, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

let n = 0
const username = () => `agent-${Date.now().toString(36)}-${n++}`

const signUp = (human = "human@example.org") =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const name = username()
    const res = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: name, human_email: human } })
    assert.strictEqual(res.status, 200, res.text)
    return { ...res.body as { organization_id: string; inbox_id: string; api_key: string }, username: name }
  })

const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0")

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(
    `agent onboarding (${storage.name})`,
    (it) => {
      it.effect("sign-up needs no key and returns organization_id, inbox_id and api_key; the human gets a 6-digit code", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp("Person@Example.org")
          assert.match(agent.organization_id, /^org_[0-9a-f]+$/)
          assert.match(agent.inbox_id, /^inbox_[0-9a-f]+$/)
          assert.match(agent.api_key, /^am_/)
          const inbox = yield* app.request("GET", `/v0/inboxes/${agent.inbox_id}`, { key: agent.api_key })
          assert.strictEqual(inbox.body.email, `${agent.username}@inbox.localhost`)
          assert.match(yield* lastCode("person@example.org"), /^\d{6}$/)
        }))

      it.effect("a taken username is 409 already_exists", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp()
          const res = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: agent.username, human_email: "x@example.org" } })
          assert.strictEqual(res.status, 409)
          assert.strictEqual(res.body.code, "already_exists")
        }))

      it.effect("the account stays send_locked and cannot create keys until verified; the right code verifies it", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const orgs = yield* Organizations
          const agent = yield* signUp("locked@example.org")
          const locked = yield* orgs.requireCanSend(agent.organization_id).pipe(Effect.flip)
          assert.strictEqual(locked.code, "send_locked")
          assert.strictEqual((yield* app.request("POST", "/v0/api-keys", { key: agent.api_key, json: { name: "k" } })).body.code, "email_unverified")
          const code = yield* lastCode("locked@example.org")
          const res = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })
          assert.strictEqual(res.status, 200)
          assert.deepStrictEqual(res.body, { verified: true })
          yield* orgs.requireCanSend(agent.organization_id)
          assert.strictEqual((yield* app.request("POST", "/v0/api-keys", { key: agent.api_key, json: { name: "k" } })).status, 200)
        }))

      it.effect("a wrong code is 400 validation_error; after 10 attempts 429 too_many_attempts, even for the right code", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp("tries@example.org")
          const code = yield* lastCode("tries@example.org")
          for (let i = 0; i < 10; i++) {
            const res = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: wrongCode(code) } })
            assert.strictEqual(res.status, 400)
            assert.strictEqual(res.body.code, "validation_error")
          }
          const res = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })
          assert.strictEqual(res.status, 429)
          assert.strictEqual(res.body.code, "too_many_attempts")
        }))

      it.effect("a code is valid 24 hours; after that verify is 429 too_many_attempts and attach-human sends a new one", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp("late@example.org")
          const code = yield* lastCode("late@example.org")
          yield* TestClock.adjust("24 hours")
          yield* TestClock.adjust("1 millis")
          const expired = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })
          assert.strictEqual(expired.status, 429)
          assert.strictEqual(expired.body.code, "too_many_attempts")
          yield* app.request("POST", "/v0/agent/attach-human", { key: agent.api_key, json: { human_email: "late@example.org" } })
          const fresh = yield* lastCode("late@example.org")
          const ok = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: fresh } })
          assert.strictEqual(ok.status, 200)
        }))

      it.effect("otp_code must be 6 digits: 400 validation_error on otp_code", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp()
          const res = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: "12345" } })
          assert.strictEqual(res.status, 400)
          assert.deepStrictEqual(res.body.errors[0].path, ["otp_code"])
        }))

      it.effect("attach-human emails a code and answers human_email and instructions; the human can be replaced at most twice", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp("first@example.org")
          const attach = (human_email: string) => app.request("POST", "/v0/agent/attach-human", { key: agent.api_key, json: { human_email } })
          const second = yield* attach("second@example.org")
          assert.strictEqual(second.status, 200)
          assert.strictEqual(second.body.human_email, "second@example.org")
          assert.isString(second.body.instructions)
          assert.match(yield* lastCode("second@example.org"), /^\d{6}$/)
          // Re-sending to the same human is not a replacement.
          assert.strictEqual((yield* attach("second@example.org")).status, 200)
          assert.strictEqual((yield* attach("third@example.org")).status, 200)
          const fourth = yield* attach("fourth@example.org")
          assert.strictEqual(fourth.status, 409)
          assert.strictEqual(fourth.body.code, "human_replacement_limit")
          // Only the newest human's code verifies.
          const stale = yield* lastCode("second@example.org")
          const current = yield* lastCode("third@example.org")
          if (stale !== current) {
            assert.strictEqual((yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: stale } })).status, 400)
          }
          assert.strictEqual((yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: current } })).status, 200)
        }))

      it.effect("a second verification gives 409 already_verified", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const agent = yield* signUp("twice@example.org")
          const code = yield* lastCode("twice@example.org")
          assert.strictEqual((yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })).status, 200)
          const again = yield* app.request("POST", "/v0/agent/verify", { key: agent.api_key, json: { otp_code: code } })
          assert.strictEqual(again.status, 409)
          assert.strictEqual(again.body.code, "already_verified")
          const attach = yield* app.request("POST", "/v0/agent/attach-human", { key: agent.api_key, json: { human_email: "x@example.org" } })
          assert.strictEqual(attach.body.code, "already_verified")
        }))

      it.effect("agent routes on a non-agent organization give 409 not_an_agent_organization", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const { key } = yield* newOrganization()
          for (const [path, json] of [["/v0/agent/attach-human", { human_email: "h@example.org" }], ["/v0/agent/verify", { otp_code: "123456" }]] as const) {
            const res = yield* app.request("POST", path, { key, json })
            assert.strictEqual(res.status, 409)
            assert.strictEqual(res.body.code, "not_an_agent_organization")
          }
        }))

      it.effect("the verification code is mailed from the base domain with the code in the text", () =>
        Effect.gen(function*() {
          yield* signUp("mail@example.org")
          const mail = (yield* (yield* CapturedMail).all).filter((m) => m.envelope.to.includes("mail@example.org")).at(-1)
          assert.isDefined(mail)
          assert.strictEqual(mail?.envelope.from, "no-reply@inbox.localhost")
          assert.match(Buffer.from(mail?.raw ?? []).toString("utf8"), /^Subject: Your verification code: \d{6}/m)
        }))
    }
  )

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { rateLimits: true }))), { timeout: "120 seconds" })(
    `agent sign-up rate limit (${storage.name})`,
    (it) => {
      it.effect("sign-up is rate limited per IP: 429 rate_limited with Retry-After", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const statuses: Array<number> = []
          let last = undefined as undefined | { headers: Headers; body: any }
          for (let i = 0; i < 6; i++) {
            const res = yield* app.request("POST", "/v0/agent/sign-up", { json: { username: username(), human_email: "rl@example.org" } })
            statuses.push(res.status)
            last = res
          }
          assert.deepStrictEqual(statuses, [200, 200, 200, 200, 200, 429])
          assert.strictEqual(last?.body.code, "rate_limited")
          assert.strictEqual(last?.headers.get("retry-after"), "3600")
        }))
    }
  )
}
