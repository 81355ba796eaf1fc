/**
 * Bounces and complaints without a mail provider (docs/mail-servers.md, "SMTP receiver"): a delivery
 * status notification (RFC 3464) or an abuse report (RFC 5965) that arrives over a real SMTP
 * conversation (nodemailer on loopback) and names a message the inbox sent becomes the same
 * event as the provider's: a hard bounce suppresses the recipient and records
 * `message.bounced`, a soft one only records it, a complaint suppresses and records
 * `message.complained`; none is stored as mail. A report about a message we never sent, or
 * naming only addresses the message was not sent to, or sent by another organization's
 * inbox, is ordinary mail; so is a feedback report that is no complaint (not-spam,
 * auth-failure), a report that fails authentication, and one whose Message-ID holds a NUL.
 */
import { assert, layer } from "@effect/vitest"
import { SmtpReceiver } from "@inbox/mailserver"
import { engineWithDns, LoopbackDns, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import nodemailer from "nodemailer"

const fixture = (name: string) => readFileSync(new URL(`../../testkit/fixtures/mail/reports/${name}.eml`, import.meta.url), "utf8")

/** A fixture report made to speak of `rfc` sent to `to`, addressed to `inbox`. */
const report = (name: "hard-bounce" | "soft-bounce" | "complaint", inbox: string, rfc: string, to: string) =>
  fixture(name)
    .replaceAll(/<sent-\d@acme\.example>/g, rfc)
    .replaceAll(/gone@remote\.example|reader@isp\.example|Reader@ISP\.example/g, to)
    .replaceAll(/bounces@acme\.example|abuse@acme\.example/g, inbox)

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
  const sent = (yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json: { to: ["reader@remote.example"], text: "hi" } })).body
  const message = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${sent.message_id}`, { key: org.key })).body
  const port = (yield* SmtpReceiver).port
  const deliver = (raw: string, from = "mailer-daemon@remote.example", to: ReadonlyArray<string> = [inbox.email]) =>
    Effect.promise(() =>
      nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true })
        .sendMail({ envelope: { from, to: [...to] }, raw })
    )
  const receivedWith = (query: string) =>
    Effect.map(
      app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages${query}`, { key: org.key }),
      (r) => (r.body.messages as Array<{ subject?: string; labels: Array<string> }>).filter((m) => m.labels.includes("received"))
    )
  const received = receivedWith("")
  const events = Effect.map(app.request("GET", "/v0/events", { key: org.key }), (r) => r.body.events as Array<any>)
  const suppressed = Effect.map(app.request("GET", "/v0/suppressions", { key: org.key }), (r) => (r.body.suppressions as Array<any>))
  return { inbox, rfc: message.rfc_message_id as string, messageId: sent.message_id as string, deliver, received, receivedWith, events, suppressed }
})

for (const storage of storages()) {
  const engine = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storage.layer)))
  const receiver = SmtpReceiver.layer({ host: "127.0.0.1", port: 0 })
  layer(receiver.pipe(Layer.provideMerge(engine)), { timeout: "120 seconds" })(`bounces by SMTP (${storage.name})`, (it) => {
    it.effect("a DSN for a sent message over SMTP suppresses the recipient and emits message.bounced, and is not stored as mail", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const info = yield* w.deliver(report("hard-bounce", w.inbox.email, w.rfc, "reader@remote.example"))
        assert.match(info.response, /^250 /)
        const bounced = (yield* w.events).find((e) => e.event_type === "message.bounced")
        assert.isDefined(bounced)
        assert.strictEqual(bounced.bounce.message_id, w.messageId)
        assert.strictEqual(bounced.bounce.type, "hard")
        assert.deepStrictEqual(bounced.bounce.recipients, [{ address: "reader@remote.example", status: "bounced" }])
        const suppression = (yield* w.suppressed).find((s) => s.address === "reader@remote.example")
        assert.strictEqual(suppression?.reason, "bounce")
        assert.lengthOf(yield* w.received, 0)

        // The same DSN again (a retry of the conversation): 250, still one event.
        yield* w.deliver(report("hard-bounce", w.inbox.email, w.rfc, "reader@remote.example"))
        assert.lengthOf((yield* w.events).filter((e) => e.event_type === "message.bounced"), 1)
      }))

    it.effect("a soft bounce records message.bounced of type soft and does not suppress", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        yield* w.deliver(report("soft-bounce", w.inbox.email, w.rfc, "reader@remote.example"))
        const bounced = (yield* w.events).find((e) => e.event_type === "message.bounced")
        assert.strictEqual(bounced?.bounce.type, "soft")
        assert.lengthOf(yield* w.suppressed, 0)
        assert.lengthOf(yield* w.received, 0)
      }))

    it.effect("an ARF abuse report becomes message.complained and suppresses the recipient", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        yield* w.deliver(report("complaint", w.inbox.email, w.rfc, "reader@remote.example"))
        const complained = (yield* w.events).find((e) => e.event_type === "message.complained")
        assert.isDefined(complained)
        assert.strictEqual(complained.complaint.message_id, w.messageId)
        assert.deepStrictEqual(complained.complaint.recipients, ["reader@remote.example"])
        assert.strictEqual((yield* w.suppressed).find((s) => s.address === "reader@remote.example")?.reason, "complaint")
        assert.lengthOf(yield* w.received, 0)
      }))

    it.effect("a report naming addresses the message was not sent to suppresses none of them: it is stored as ordinary mail", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        // Anyone who got the message knows its Message-ID; an unsigned report cannot speak for others.
        yield* w.deliver(report("hard-bounce", w.inbox.email, w.rfc, "ceo@victim.example"))
        yield* w.deliver(report("complaint", w.inbox.email, w.rfc, "cfo@victim.example"))
        assert.lengthOf(yield* w.suppressed, 0)
        const events = yield* w.events
        assert.isUndefined(events.find((e) => e.event_type === "message.bounced" || e.event_type === "message.complained"))
        assert.lengthOf(yield* w.received, 2)
      }))

    it.effect("a report naming a message that another organization's inbox sent is stored as ordinary mail, and suppresses nobody", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const other = yield* setUp
        yield* w.deliver(report("hard-bounce", w.inbox.email, other.rfc, "reader@remote.example"))
        assert.lengthOf(yield* w.received, 1)
        for (const side of [w, other]) {
          assert.lengthOf(yield* side.suppressed, 0)
          assert.isUndefined((yield* side.events).find((e) => e.event_type === "message.bounced"))
        }
      }))

    it.effect("a report addressed both to the inbox that sent the message and to another organization's inbox is applied for the sender and stored as ordinary mail in the other", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const other = yield* setUp
        const info = yield* w.deliver(report("hard-bounce", w.inbox.email, w.rfc, "reader@remote.example"), undefined, [w.inbox.email, other.inbox.email])
        assert.match(info.response, /^250 /)
        assert.strictEqual((yield* w.suppressed).find((s) => s.address === "reader@remote.example")?.reason, "bounce")
        assert.lengthOf(yield* w.received, 0)
        const [stored] = yield* other.received
        assert.strictEqual(stored?.subject, "Undelivered Mail Returned to Sender")
        assert.lengthOf(yield* other.suppressed, 0)
      }))

    it.effect("an ARF report of type not-spam or auth-failure is no complaint: stored as ordinary mail, suppresses nobody", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        for (const type of ["not-spam", "auth-failure"]) {
          const raw = report("complaint", w.inbox.email, w.rfc, "reader@remote.example")
            .replace("Feedback-Type: abuse", `Feedback-Type: ${type}`)
            .replace("<arf-1@isp.example>", `<arf-${type}@isp.example>`)
          assert.match((yield* w.deliver(raw)).response, /^250 /)
        }
        assert.lengthOf(yield* w.suppressed, 0)
        assert.isUndefined((yield* w.events).find((e) => e.event_type === "message.complained"))
        assert.lengthOf(yield* w.received, 2)
      }))

    it.effect("a report that fails authentication (SPF fail, DMARC p=reject) counts for nothing: stored as mail labelled unauthenticated, suppresses nobody", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const zone = yield* LoopbackDns
        // a domain of its own: the receiver's DNS cache may already know remote.example
        zone.set("forged-bounce.example", "TXT", ["v=spf1 -all"])
        zone.set("_dmarc.forged-bounce.example", "TXT", ["v=DMARC1; p=reject"])
        const raw = report("hard-bounce", w.inbox.email, w.rfc, "reader@remote.example").replace("MAILER-DAEMON@mx.remote.example", "MAILER-DAEMON@forged-bounce.example")
        assert.match((yield* w.deliver(raw, "mailer-daemon@forged-bounce.example")).response, /^250 /)
        assert.lengthOf(yield* w.suppressed, 0)
        assert.isUndefined((yield* w.events).find((e) => e.event_type === "message.bounced"))
        const [stored] = yield* w.receivedWith("?labels=unauthenticated")
        assert.strictEqual(stored?.subject, "Undelivered Mail Returned to Sender")
      }))

    it.effect("a report whose original Message-ID holds a NUL is answered 250 and stored as ordinary mail", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const info = yield* w.deliver(report("hard-bounce", w.inbox.email, w.rfc.replace("@", "\0@"), "reader@remote.example"))
        assert.match(info.response, /^250 /)
        assert.lengthOf(yield* w.received, 1)
        assert.lengthOf(yield* w.suppressed, 0)
      }))

    it.effect("a DSN for a message we never sent is stored as ordinary mail, and suppresses nobody", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const info = yield* w.deliver(report("hard-bounce", w.inbox.email, "<never-sent@elsewhere.example>", "reader@remote.example"))
        assert.match(info.response, /^250 /)
        const [stored] = yield* w.received
        assert.strictEqual(stored?.subject, "Undelivered Mail Returned to Sender")
        assert.lengthOf(yield* w.suppressed, 0)
        assert.isUndefined((yield* w.events).find((e) => e.event_type === "message.bounced"))
      }))
  })
}
