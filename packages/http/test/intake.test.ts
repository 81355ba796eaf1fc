/**
 * What a server reads before it knows who is sending (issue 24): the operator route
 * `/inbound/raw` checks its secret from the headers before reading the body, a raw message
 * over its limit is 413, and every request body and SMTP message counts against the
 * process's intake budget (INBOX_INTAKE_MEMORY_MB), past which the client is told to retry
 * (503 service_unavailable with Retry-After; SMTP 452 4.3.1). Here with a budget of a few
 * KB, so "past the budget" is one request; the real-process test (hostile-processes.test.ts)
 * holds many slow uploads against the default and reads the server's memory.
 */
import { assert, layer } from "@effect/vitest"
import { IntakeBudget } from "@inbox/core/internal"
import { SmtpReceiver } from "@inbox/mailserver"
import { engineWithDns, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import nodemailer from "nodemailer"

const BUDGET = 8 * 1024

const rawMessage = (to: string, bodyBytes: number) =>
  Buffer.from(`From: Ann <ann@example.net>\r\nTo: ${to}\r\nSubject: Big\r\nMessage-ID: <big-${bodyBytes}-${Math.random()}@example.net>\r\n\r\n${"x".repeat(bodyBytes)}\r\n`)

const deliver = (to: string, raw: Uint8Array, secret: string | undefined) =>
  TestApp.use((app) =>
    app.request("POST", `/inbound/raw?to=${encodeURIComponent(to)}`, {
      headers: { "content-type": "message/rfc822", ...(secret === undefined ? {} : { "x-inbound-secret": secret }) },
      body: Buffer.from(raw)
    })
  )

for (const storage of storages()) {
  const engine = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storage.layer, { inboundSecret: TEST_INBOUND_SECRET, intakeMemoryBytes: BUDGET })))
  const receiver = SmtpReceiver.layer({ host: "127.0.0.1", port: 0 })
  layer(receiver.pipe(Layer.provideMerge(engine)), { timeout: "120 seconds" })(`intake (${storage.name})`, (it) => {
    it.effect("/inbound/raw without the secret, or with a wrong one, is 401 before its body is read: the intake budget is never asked", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const budget = yield* IntakeBudget
        const { key } = yield* newOrganization()
        const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body as { email: string }
        // Four times the budget: were it read, the budget would answer 503 first.
        const big = rawMessage(inbox.email, BUDGET * 4)
        for (const secret of [undefined, "wrong-secret"]) {
          const res = yield* deliver(inbox.email, big, secret)
          assert.strictEqual(res.status, 401, res.text)
          assert.strictEqual(res.body.code, "unauthorized")
        }
        const admitted = yield* deliver(inbox.email, big, TEST_INBOUND_SECRET)
        assert.strictEqual(admitted.status, 503, admitted.text)
        assert.strictEqual(admitted.body.code, "service_unavailable")
        assert.strictEqual(admitted.headers.get("retry-after"), "5")
        assert.strictEqual(budget.inUse(), 0)
        const small = yield* deliver(inbox.email, rawMessage(inbox.email, 100), TEST_INBOUND_SECRET)
        assert.strictEqual(small.status, 200, small.text)
        assert.strictEqual(budget.inUse(), 0)
      }))

    it.effect("a JSON body past the intake budget is 503 service_unavailable with Retry-After; within it the request succeeds, and the budget is free again after", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const budget = yield* IntakeBudget
        const { key } = yield* newOrganization()
        const padded = `{"name":"big"${" ".repeat(BUDGET)}}`
        const refused = yield* app.request("POST", "/v0/pods", { key, headers: { "content-type": "application/json" }, body: padded })
        assert.strictEqual(refused.status, 503, refused.text)
        assert.strictEqual(refused.body.code, "service_unavailable")
        assert.strictEqual(refused.headers.get("retry-after"), "5")
        const ok = yield* app.request("POST", "/v0/pods", { key, json: { name: "small" } })
        assert.strictEqual(ok.status, 200, ok.text)
        assert.strictEqual(budget.inUse(), 0)
      }))

    it.effect("an SMTP message past the intake budget is answered 452 4.3.1 and nothing is stored; within it, 250", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const budget = yield* IntakeBudget
        const port = (yield* SmtpReceiver).port
        const { key } = yield* newOrganization()
        const inbox = (yield* app.request("POST", "/v0/inboxes", { key, json: {} })).body as { inbox_id: string; email: string }
        const transport = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true })
        const big = yield* Effect.promise(() => transport.sendMail({ from: "ann@example.net", to: inbox.email, subject: "Big", text: "x".repeat(BUDGET * 2) }).then(() => undefined, (e: { responseCode?: number; response?: string }) => e))
        assert.strictEqual(big?.responseCode, 452, JSON.stringify(big))
        assert.include(big?.response ?? "", "4.3.1")
        const small = yield* Effect.promise(() => transport.sendMail({ from: "ann@example.net", to: inbox.email, subject: "Small", text: "hello" }))
        assert.match(small.response, /^250 /)
        const listed = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key })
        assert.deepStrictEqual(listed.body.messages.map((m: { subject: string }) => m.subject), ["Small"])
        assert.strictEqual(budget.inUse(), 0)
      }))
  })
}

layer(TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storages()[0]!.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "120 seconds" })(
  "intake, default budget",
  (it) => {
    it.effect("a raw message over 50 MB is 413 payload_too_large", () =>
      Effect.gen(function*() {
        const res = yield* deliver("anyone@inbox.localhost", new Uint8Array(50 * 1024 * 1024 + 1), TEST_INBOUND_SECRET)
        assert.strictEqual(res.status, 413, res.text)
        assert.strictEqual(res.body.code, "payload_too_large")
      }))
  }
)
