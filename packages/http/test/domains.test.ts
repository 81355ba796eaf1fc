/**
 * Custom domains over REST (spec: Domain; Domains; States and transitions, Domain rows;
 * Errors already_exists, domain_not_verified, subdomains_not_enabled, 402 domains), with
 * DNS served by a real DNS server on loopback: records published late, a wrong value, a
 * name that never answers. Also inboxes on custom domains and the DKIM signature of mail
 * sent from them, checked with mailauth against the same DNS server; and one name held by
 * several organizations (issue 24): none blocks another until one verifies, the first to
 * verify owns it (also when two verify at the same moment, which PostgreSQL runs on two
 * connections), and only the owner receives mail at it (over /inbound/raw and real SMTP)
 * or sends as it.
 */
import { assert, it, layer } from "@effect/vitest"
import { Dns, Jobs } from "@inbox/core/internal"
import { SmtpReceiver } from "@inbox/mailserver"
import {
  CapturedMail,
  deliverMail,
  engineWithDns,
  LoopbackDns,
  newOrganization,
  publishDomainRecords,
  storages,
  TEST_INBOUND_SECRET,
  TestApp,
  type TestZone
} from "@inbox/testkit"
import { Effect, Layer, Logger } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { authenticate } from "mailauth"
import { Resolver } from "node:dns/promises"
import nodemailer from "nodemailer"

interface DomainBody {
  domain_id: string
  domain: string
  status: string
  reason?: string
  tracking_enabled: boolean
  records: Array<{ type: string; name: string; value: string; priority?: number; status: string }>
}

let counter = 0
const uniqueName = (label: string) => `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}.example.com`

const setUp = (plan: "free" | "pro" | "scale" = "pro") =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const org = yield* newOrganization({ plan })
    const add = (domain: string, extra: Record<string, unknown> = {}, key = org.key) =>
      app.request("POST", "/v0/domains", { key, json: { domain, ...extra } })
    const get = (id: string) => Effect.map(app.request("GET", `/v0/domains/${encodeURIComponent(id)}`, { key: org.key }), (r) => r.body as DomainBody)
    const verify = (id: string) => app.request("POST", `/v0/domains/${encodeURIComponent(id)}/verify`, { key: org.key, json: {} })
    return { app, ...org, add, get, verify }
  })

const publish = (zone: TestZone, domain: DomainBody, mailHostAddress = "127.0.0.1") => publishDomainRecords(zone, domain, mailHostAddress)

/** Every holder's records at once, as a DNS host keeps them: each one's verification token and DKIM key side by side. */
const publishEvery = (zone: TestZone, ...holders: ReadonlyArray<DomainBody>) => {
  for (const d of holders) publish(zone, d)
  const name = `_inbox-verification.${holders[0]?.domain}`
  zone.set(name, "TXT", holders.map((d) => d.records.find((r) => r.name === name)?.value ?? ""))
}

/** Adds `name` to the organization of `w`, publishes its records and verifies it. */
const addVerified = (w: Effect.Success<ReturnType<typeof setUp>>, name: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    publish(yield* LoopbackDns, (yield* w.add(name, extra)).body)
    yield* w.verify(name)
    assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
  })

const tokenOf = (d: DomainBody) => d.records.find((r) => r.name.startsWith("_inbox-verification."))?.value
const selectorOf = (d: DomainBody) => d.records.find((r) => r.name.includes("._domainkey."))?.name.split(".")[0]

const domainEvents = (organizationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ event_type: string; payload: unknown }>`SELECT event_type, payload FROM events
      WHERE organization_id = ${organizationId} AND event_type = 'domain.verified'`.pipe(Effect.orDie)
  })

/** The domain.verified events of these organizations that name `domain`. */
const verifiedEventsOf = (domain: string, ...organizationIds: ReadonlyArray<string>) =>
  Effect.map(Effect.forEach(organizationIds, domainEvents), (all) =>
    all.flat().filter((e) => {
      const payload = (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload) as { domain: DomainBody }
      return payload.domain.domain_id === domain
    }))

/** One SMTP conversation with the engine's receiver: the answer to the message, or the refusal. */
const smtpSend = (port: number, to: string) =>
  Effect.promise(() =>
    nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true })
      .sendMail({ from: "ann@sender.example", to, subject: "Over SMTP", text: "Hello" })
      .then((info) => ({ ok: true as const, response: info.response }), (error: { responseCode?: number; response?: string }) => ({ ok: false as const, code: error.responseCode }))
  )

/**
 * A name that changed hands: organizations A and B added it, A verified it and has an inbox
 * `alice@` on it; then the DNS records became B's (A's token gone), A's check found that
 * (FAILED), and B verified it, which moved A to FAILED with verified_by_another_organization.
 * B has `bob@`.
 */
const handedOver = Effect.gen(function*() {
  const a = yield* setUp()
  const b = yield* setUp()
  const zone = yield* LoopbackDns
  const name = uniqueName("moved")
  publish(zone, (yield* a.add(name)).body)
  const held = (yield* b.add(name)).body as DomainBody
  yield* a.verify(name)
  const alice = (yield* a.app.request("POST", "/v0/inboxes", { key: a.key, json: { username: "alice", domain: name } })).body
  assert.strictEqual(alice.email, `alice@${name}`)
  // While A holds it verified, B is an unverified holder: no inbox there, so nothing sent as it.
  const early = yield* b.app.request("POST", "/v0/inboxes", { key: b.key, json: { username: "bob", domain: name } })
  assert.strictEqual(early.status, 422, early.text)
  assert.strictEqual(early.body.code, "domain_not_verified")
  publish(zone, held)
  yield* a.verify(name)
  assert.strictEqual((yield* a.get(name)).reason, "dns_records_invalid")
  yield* b.verify(name)
  assert.strictEqual((yield* b.get(name)).status, "VERIFIED")
  const lost = yield* a.get(name)
  assert.deepStrictEqual([lost.status, lost.reason], ["FAILED", "verified_by_another_organization"])
  const bob = (yield* b.app.request("POST", "/v0/inboxes", { key: b.key, json: { username: "bob", domain: name } })).body
  assert.strictEqual(bob.email, `bob@${name}`)
  return { a, b, name, alice, bob, held }
})

const statusOf = (d: DomainBody, type: string, namePrefix: string) =>
  d.records.find((r) => r.type === type && r.name.startsWith(namePrefix))?.status

/** Every log line of the engine, for the rule that private keys never reach a log. */
const logged: Array<unknown> = []
const Capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => void logged.push(entry))])

for (const storage of storages()) {
  const engine = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storage.layer, { inboundSecret: TEST_INBOUND_SECRET })), Layer.provideMerge(Capture))
  layer(SmtpReceiver.layer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provideMerge(engine)), { timeout: "120 seconds" })(
    `custom domains (${storage.name})`,
    (it) => {
      it.effect("POST /v0/domains answers the full domain with status NOT_STARTED and the DNS records to publish", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("new")
          const res = yield* w.add(name)
          assert.strictEqual(res.status, 200, res.text)
          const d = res.body as DomainBody & Record<string, unknown>
          assert.strictEqual(d.domain_id, name)
          assert.strictEqual(d.domain, name)
          assert.strictEqual(d.status, "NOT_STARTED")
          assert.strictEqual(d.feedback_enabled, false)
          assert.strictEqual(d.subdomains_enabled, false)
          assert.strictEqual(d.tracking_enabled, false)
          assert.match(d.created_at as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          assert.deepStrictEqual(d.records.map((r) => [r.type, r.status]), [["TXT", "MISSING"], ["MX", "MISSING"], ["TXT", "MISSING"], ["TXT", "MISSING"], ["TXT", "MISSING"]])
          const mx = d.records.find((r) => r.type === "MX")
          assert.deepStrictEqual(mx, { type: "MX", name, value: "mx.inbox.localhost", priority: 10, status: "MISSING" })
          assert.ok(d.records.every((r) => r.type === "MX" || r.priority === undefined))
          const dkim = d.records.find((r) => r.name.includes("._domainkey."))
          assert.match(dkim?.value ?? "", /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/)
          assert.ok(d.records.some((r) => r.name === `_dmarc.${name}` && r.value.startsWith("v=DMARC1")))
          assert.ok(d.records.some((r) => r.name === name && r.value.startsWith("v=spf1 ")))
        }))

      it.effect("DKIM private keys are encrypted at rest and never appear in any response, event or log", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const sql = yield* SqlClient.SqlClient
          const name = uniqueName("secret")
          const created = yield* w.add(name)
          publish(zone, created.body)
          yield* w.verify(name)
          const stored = yield* sql<{ dkim_private_key: string }>`SELECT dkim_private_key FROM domains WHERE id = ${name}`
          assert.match(stored[0]?.dkim_private_key ?? "", /^v1:[^:]+:[^:]+:[^:]+$/)
          assert.notInclude(stored[0]?.dkim_private_key ?? "", "PRIVATE KEY")
          const texts = [created.text, (yield* w.app.request("GET", `/v0/domains/${name}`, { key: w.key })).text, JSON.stringify(yield* domainEvents(w.organizationId))]
          for (const text of [...texts, JSON.stringify(logged)]) {
            assert.notInclude(text, "PRIVATE KEY")
            assert.notInclude(text, stored[0]?.dkim_private_key.split(":")[3] ?? "?")
          }
        }))

      it.effect("names are validated and normalised (IDNA, lower case, no trailing dot); the name is accepted in paths", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const res = yield* w.add("Bücher-Normal.Example.")
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.body.domain_id, "xn--bcher-normal-dlb.example")
          assert.strictEqual((yield* w.get("BÜCHER-normal.example.")).domain_id, "xn--bcher-normal-dlb.example")
          for (const bad of ["not a domain", "localhost", "a..b.com", "x.c"]) {
            const refused = yield* w.add(bad)
            assert.strictEqual(refused.status, 400, `${bad}: ${refused.text}`)
            assert.strictEqual(refused.body.name, "ValidationError")
          }
          const base = yield* w.add("sub.inbox.localhost")
          assert.strictEqual(base.status, 400, base.text)
        }))

      it.effect("a domain the organization already added is 403 already_exists", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("taken")
          assert.strictEqual((yield* w.add(name)).status, 200)
          const again = yield* w.add(name.toUpperCase())
          assert.strictEqual(again.status, 403, again.text)
          assert.strictEqual(again.body.code, "already_exists")
        }))

      it.effect("two organizations add the same domain: each gets its own verification token and DKIM key, and neither blocks the other", () =>
        Effect.gen(function*() {
          const a = yield* setUp()
          const b = yield* setUp()
          const name = uniqueName("shared")
          const first = yield* a.add(name)
          const second = yield* b.add(name.toUpperCase())
          assert.strictEqual(first.status, 200, first.text)
          assert.strictEqual(second.status, 200, second.text)
          assert.strictEqual(second.body.domain_id, name)
          assert.notStrictEqual(tokenOf(first.body), tokenOf(second.body))
          assert.notStrictEqual(selectorOf(first.body), selectorOf(second.body))
          assert.strictEqual(tokenOf(yield* a.get(name)), tokenOf(first.body))
          assert.strictEqual(tokenOf(yield* b.get(name)), tokenOf(second.body))
          // What one holder does to its domain leaves the other's alone.
          const patched = yield* b.app.request("PATCH", `/v0/domains/${name}`, { key: b.key, json: { tracking_enabled: true } })
          assert.strictEqual(patched.status, 200, patched.text)
          assert.strictEqual((yield* a.get(name)).tracking_enabled, false)
          assert.strictEqual((yield* b.app.request("DELETE", `/v0/domains/${name}`, { key: b.key })).status, 204)
          assert.strictEqual((yield* a.app.request("GET", `/v0/domains/${name}`, { key: a.key })).status, 200)
          assert.strictEqual((yield* b.app.request("GET", `/v0/domains/${name}`, { key: b.key })).status, 404)
          assert.strictEqual((yield* b.add(name)).status, 200)
        }))

      it.effect("the first organization to verify owns the domain; the other holders become FAILED with reason verified_by_another_organization", () =>
        Effect.gen(function*() {
          const a = yield* setUp()
          const b = yield* setUp()
          const c = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("first")
          const created = [(yield* a.add(name)).body, (yield* b.add(name)).body, (yield* c.add(name)).body] as Array<DomainBody>
          yield* c.verify(name)
          assert.strictEqual((yield* c.get(name)).status, "PENDING")
          // A's and B's records are all published: either could verify.
          publishEvery(zone, created[0]!, created[1]!)
          yield* a.verify(name)
          assert.strictEqual((yield* a.get(name)).status, "VERIFIED")
          for (const loser of [b, c]) {
            const d = yield* loser.get(name)
            assert.deepStrictEqual([d.status, d.reason], ["FAILED", "verified_by_another_organization"])
          }
          // B's own records check out, but the name is A's: B stays FAILED, with the same reason.
          yield* b.verify(name)
          const kept = yield* b.get(name)
          assert.deepStrictEqual([kept.status, kept.reason], ["FAILED", "verified_by_another_organization"])
          assert.ok(kept.records.every((r) => r.status === "VALID"), JSON.stringify(kept.records))
          assert.lengthOf(yield* verifiedEventsOf(name, a.organizationId), 1)
          assert.lengthOf(yield* verifiedEventsOf(name, b.organizationId, c.organizationId), 0)
          // Once A lets the name go, B can verify it.
          assert.strictEqual((yield* a.app.request("DELETE", `/v0/domains/${name}`, { key: a.key })).status, 204)
          yield* b.verify(name)
          assert.strictEqual((yield* b.get(name)).status, "VERIFIED")
          assert.lengthOf(yield* verifiedEventsOf(name, b.organizationId), 1)
        }))

      it.effect("adding a domain that another organization has VERIFIED is 403 already_exists", () =>
        Effect.gen(function*() {
          const a = yield* setUp()
          const b = yield* setUp()
          const name = uniqueName("owned")
          yield* addVerified(a, name)
          const refused = yield* b.add(name)
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.body.code, "already_exists")
          assert.include(refused.body.message, "verified by another organization")
        }))

      it.effect("two organizations verifying the same domain at the same moment: exactly one owns it, the other is FAILED, domain.verified fires once", () =>
        Effect.gen(function*() {
          const a = yield* setUp("scale")
          const b = yield* setUp("scale")
          const zone = yield* LoopbackDns
          const names = Array.from({ length: 12 }, () => uniqueName("together"))
          for (const name of names) publishEvery(zone, (yield* a.add(name)).body, (yield* b.add(name)).body)
          // Every check at once: on PostgreSQL they run on several connections, so the two holders' transactions overlap.
          const answers = yield* Effect.all(names.flatMap((name) => [a.verify(name), b.verify(name)]), { concurrency: "unbounded" })
          assert.ok(answers.every((r) => r.status === 200), JSON.stringify(answers.map((r) => [r.status, r.text])))
          for (const name of names) {
            const states = [yield* a.get(name), yield* b.get(name)].map((d) => [d.status, d.reason ?? null])
            assert.sameDeepMembers(states, [["VERIFIED", null], ["FAILED", "verified_by_another_organization"]], name)
            assert.lengthOf(yield* verifiedEventsOf(name, a.organizationId, b.organizationId), 1, name)
          }
        }))

      it.effect("mail to an address at the domain reaches only the verified holder's inboxes, over /inbound/raw and SMTP", () =>
        Effect.gen(function*() {
          const { a, alice, b, bob } = yield* handedOver
          const delivered = yield* deliverMail([alice.email, bob.email], { subject: "Who gets it" })
          assert.strictEqual(delivered.status, 200, delivered.text)
          assert.deepStrictEqual(delivered.body.delivered.map((d: { inbox_id: string }) => d.inbox_id), [bob.inbox_id])
          assert.deepStrictEqual(delivered.body.skipped, [alice.email])
          const port = (yield* SmtpReceiver).port
          const refused = yield* smtpSend(port, alice.email)
          assert.isFalse(refused.ok, JSON.stringify(refused))
          if (!refused.ok) assert.strictEqual(refused.code, 550)
          const accepted = yield* smtpSend(port, bob.email)
          assert.isTrue(accepted.ok, JSON.stringify(accepted))
          const count = (key: string, inbox: string) =>
            Effect.map(a.app.request("GET", `/v0/inboxes/${inbox}/messages`, { key }), (r) => r.body.messages.length as number)
          assert.strictEqual(yield* count(a.key, alice.inbox_id), 0)
          assert.strictEqual(yield* count(b.key, bob.inbox_id), 2)
        }))

      it.effect("an organization that does not hold the domain verified cannot send as it (422 domain_not_verified); the holder's mail is signed with its own key", () =>
        Effect.gen(function*() {
          const { a, alice, b, bob, held, name } = yield* handedOver
          const captured = yield* CapturedMail
          const refused = yield* a.app.request("POST", `/v0/inboxes/${alice.inbox_id}/messages/send`, {
            key: a.key,
            json: { to: "someone@elsewhere.example", subject: "Still mine?", text: "No" }
          })
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.body.code, "domain_not_verified")
          assert.lengthOf((yield* captured.all).filter((m) => m.envelope.from === alice.email), 0)
          const sent = yield* b.app.request("POST", `/v0/inboxes/${bob.inbox_id}/messages/send`, {
            key: b.key,
            json: { to: "someone@elsewhere.example", subject: "Mine", text: "Yes" }
          })
          assert.strictEqual(sent.status, 200, sent.text)
          const raw = Buffer.from((yield* captured.all).filter((m) => m.envelope.from === bob.email).at(-1)?.raw ?? new Uint8Array())
          const unfolded = raw.toString("utf8").replace(/\r?\n[ \t]+/g, " ")
          const signature = /^DKIM-Signature: (.*)$/m.exec(unfolded)?.[1] ?? ""
          assert.include(signature, `d=${name};`)
          assert.include(signature, `s=${selectorOf(held)};`)
        }))

      it.effect("an inbox on a subdomain that another organization holds verified is 422 domain_not_verified, whatever the parent's flags", () =>
        Effect.gen(function*() {
          const a = yield* setUp()
          const b = yield* setUp()
          const parent = uniqueName("parent-held")
          yield* addVerified(a, parent, { subdomains_enabled: true })
          const child = `team.${parent}`
          yield* addVerified(b, child)
          const refused = yield* a.app.request("POST", "/v0/inboxes", { key: a.key, json: { username: "x", domain: child } })
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.body.code, "domain_not_verified")
          const elsewhere = yield* a.app.request("POST", "/v0/inboxes", { key: a.key, json: { username: "x", domain: `other.${parent}` } })
          assert.strictEqual(elsewhere.status, 200, elsewhere.text)
        }))

      it.effect("the Free plan has 0 domains: 402 plan_limit_exceeded", () =>
        Effect.gen(function*() {
          const w = yield* setUp("free")
          const res = yield* w.add(uniqueName("free"))
          assert.strictEqual(res.status, 402, res.text)
          assert.strictEqual(res.body.code, "plan_limit_exceeded")
          assert.strictEqual(res.body.errors[0].limit, "domains")
        }))

      it.effect("GET /v0/domains lists summaries without status, reason and records, newest first, by pages", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const names = [uniqueName("l1"), uniqueName("l2"), uniqueName("l3")]
          for (const n of names) {
            yield* w.add(n)
            yield* TestClock.adjust("1 second")
          }
          const first = yield* w.app.request("GET", "/v0/domains?limit=2", { key: w.key })
          assert.strictEqual(first.status, 200, first.text)
          assert.strictEqual(first.body.count, 2)
          assert.deepStrictEqual(first.body.domains.map((d: DomainBody) => d.domain_id), [names[2], names[1]])
          assert.deepStrictEqual(Object.keys(first.body.domains[0]).sort(), [
            "created_at", "domain", "domain_id", "feedback_enabled", "subdomains_enabled", "tracking_enabled", "updated_at"
          ])
          const second = yield* w.app.request("GET", `/v0/domains?limit=2&page_token=${first.body.next_page_token}`, { key: w.key })
          assert.deepStrictEqual(second.body.domains.map((d: DomainBody) => d.domain_id), [names[0]])
          assert.isUndefined(second.body.next_page_token)
        }))

      it.effect("PATCH sets feedback_enabled, subdomains_enabled, tracking_enabled; a NOT_STARTED domain then reports PENDING with dns_records_missing", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("patch")
          yield* w.add(name)
          const res = yield* w.app.request("PATCH", `/v0/domains/${name}`, { key: w.key, json: { subdomains_enabled: true, tracking_enabled: true } })
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.body.subdomains_enabled, true)
          assert.strictEqual(res.body.tracking_enabled, true)
          assert.strictEqual(res.body.feedback_enabled, false)
          assert.strictEqual(res.body.status, "PENDING")
          assert.strictEqual(res.body.reason, "dns_records_missing")
          assert.strictEqual((yield* w.app.request("PATCH", `/v0/domains/${name}`, { key: w.key, json: { status: "VERIFIED" } })).status, 400)
        }))

      it.effect("POST verify answers 200 with an empty body; with no records published the domain is PENDING, dns_records_missing", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("missing")
          yield* w.add(name)
          const res = yield* w.verify(name)
          assert.strictEqual(res.status, 200, res.text)
          assert.strictEqual(res.text, "")
          const d = yield* w.get(name)
          assert.strictEqual(d.status, "PENDING")
          assert.strictEqual(d.reason, "dns_records_missing")
          assert.ok(d.records.every((r) => r.status === "MISSING"))
        }))

      it.effect("a wrong value makes its record INVALID and the domain PENDING with dns_records_invalid", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("wrong")
          const created = (yield* w.add(name)).body as DomainBody
          publish(zone, created)
          const dkim = created.records.find((r) => r.name.includes("._domainkey."))?.name ?? ""
          zone.set(dkim, "TXT", ["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong"])
          zone.set(name, "MX", [{ exchange: "mx.elsewhere.example", priority: 10 }])
          yield* w.verify(name)
          const d = yield* w.get(name)
          assert.strictEqual(d.status, "PENDING")
          assert.strictEqual(d.reason, "dns_records_invalid")
          assert.strictEqual(statusOf(d, "TXT", dkim), "INVALID")
          assert.strictEqual(statusOf(d, "MX", name), "INVALID")
          assert.strictEqual(statusOf(d, "TXT", "_dmarc."), "VALID")
          assert.strictEqual(statusOf(d, "TXT", "_inbox-verification."), "VALID")
          assert.lengthOf(yield* domainEvents(w.organizationId), 0)
        }))

      it.effect("with every record published the domain is VERIFIED, has no reason, and domain.verified fires once", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("ok")
          publish(zone, (yield* w.add(name)).body)
          yield* w.verify(name)
          const d = yield* w.get(name)
          assert.strictEqual(d.status, "VERIFIED")
          assert.isUndefined(d.reason)
          assert.ok(d.records.every((r) => r.status === "VALID"), JSON.stringify(d.records))
          yield* w.verify(name)
          const events = yield* domainEvents(w.organizationId)
          assert.lengthOf(events, 1)
          const payload = (typeof events[0]?.payload === "string" ? JSON.parse(events[0].payload) : events[0]?.payload) as { domain: DomainBody }
          assert.strictEqual(payload.domain.domain_id, name)
          assert.strictEqual(payload.domain.status, "VERIFIED")
          const listed = yield* w.app.request("GET", "/v0/events", { key: w.key })
          if (listed.status === 200) assert.ok(listed.text.includes("domain.verified"))
        }))

      it.effect("concurrent checks of one domain make it VERIFIED once: domain.verified fires once", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("race")
          publish(zone, (yield* w.add(name)).body)
          const answers = yield* Effect.all(Array.from({ length: 6 }, () => w.verify(name)), { concurrency: "unbounded" })
          assert.deepStrictEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200])
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
          assert.lengthOf(yield* domainEvents(w.organizationId), 1)
        }))

      it.effect("a record published late: the check job finds it and the domain becomes VERIFIED", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const jobs = yield* Jobs
          const name = uniqueName("late")
          const created = (yield* w.add(name)).body as DomainBody
          yield* w.verify(name)
          assert.strictEqual((yield* w.get(name)).status, "PENDING")
          publish(zone, created)
          yield* TestClock.adjust("16 minutes")
          // Other tests' domains are due too: run passes until none is left.
          while ((yield* jobs.runDue({ wait: true })) > 0) {}
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
          assert.lengthOf(yield* domainEvents(w.organizationId), 1)
        }))

      it.effect("the check job keeps checking: a verified domain whose records disappear is FAILED at its next daily check", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const jobs = yield* Jobs
          const name = uniqueName("daily")
          const created = (yield* w.add(name)).body as DomainBody
          yield* w.verify(name)
          publish(zone, created)
          const passes = function*(wait: "16 minutes" | "25 hours") {
            yield* TestClock.adjust(wait)
            // Other tests' domains are due too: run passes until none is left.
            while ((yield* jobs.runDue({ wait: true })) > 0) {}
          }
          yield* passes("16 minutes")
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
          yield* passes("25 hours")
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
          zone.remove(`_dmarc.${name}`)
          yield* passes("25 hours")
          const d = yield* w.get(name)
          assert.strictEqual(d.status, "FAILED")
          assert.strictEqual(d.reason, "dns_records_missing")
          publish(zone, created)
          yield* passes("16 minutes")
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
        }))

      it.effect("a verified domain whose records disappear is reported FAILED, not silently kept", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("gone")
          const created = (yield* w.add(name)).body as DomainBody
          publish(zone, created)
          yield* w.verify(name)
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
          zone.remove(`_dmarc.${name}`)
          yield* w.verify(name)
          const d = yield* w.get(name)
          assert.strictEqual(d.status, "FAILED")
          assert.strictEqual(d.reason, "dns_records_missing")
          assert.strictEqual(statusOf(d, "TXT", "_dmarc."), "MISSING")
          publish(zone, created)
          yield* w.verify(name)
          assert.strictEqual((yield* w.get(name)).status, "VERIFIED")
        }))

      it.effect("a DNS timeout leaves an unverified domain VERIFYING with dns_unavailable and never demotes a verified one", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const slow = uniqueName("timeout")
          yield* w.add(slow)
          zone.stall(`_dmarc.${slow}`)
          yield* w.verify(slow)
          const d = yield* w.get(slow)
          assert.strictEqual(d.status, "VERIFYING")
          assert.strictEqual(d.reason, "dns_unavailable")
          const ok = uniqueName("kept")
          publish(zone, (yield* w.add(ok)).body)
          yield* w.verify(ok)
          zone.stall(`_dmarc.${ok}`)
          yield* w.verify(ok)
          assert.strictEqual((yield* w.get(ok)).status, "VERIFIED")
        }))

      it.effect("GET zone-file answers one line per record, importable by a DNS host", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("zone")
          const d = (yield* w.add(name)).body as DomainBody
          const res = yield* w.app.request("GET", `/v0/domains/${name}/zone-file`, { key: w.key })
          assert.strictEqual(res.status, 200, res.text)
          assert.match(res.headers.get("content-type") ?? "", /^text\/plain/)
          const lines = res.text.trimEnd().split("\n")
          assert.lengthOf(lines, d.records.length)
          assert.include(lines, `${name}.\t3600\tIN\tMX\t10 mx.inbox.localhost.`)
          assert.include(lines, `_dmarc.${name}.\t3600\tIN\tTXT\t"v=DMARC1; p=none; adkim=r; aspf=r"`)
          const dkim = lines.find((l) => l.includes("._domainkey.")) ?? ""
          // A DKIM key is longer than one TXT string (255): split into quoted strings.
          const strings = [...dkim.matchAll(/"([^"]*)"/g)].map((m) => m[1])
          assert.isAbove(strings.length, 1)
          assert.strictEqual(strings.join(""), d.records.find((r) => r.name.includes("._domainkey."))?.value)
        }))

      it.effect("DELETE by name answers 204; the domain is then 404 and can be added again", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const name = uniqueName("del")
          yield* w.add(name)
          const res = yield* w.app.request("DELETE", `/v0/domains/${name.toUpperCase()}`, { key: w.key })
          assert.strictEqual(res.status, 204, res.text)
          assert.strictEqual((yield* w.app.request("GET", `/v0/domains/${name}`, { key: w.key })).status, 404)
          assert.strictEqual((yield* w.add(name)).status, 200)
        }))

      it.effect("pod-scoped keys see their pod's domains only; an inbox key cannot create domains", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const pod = (yield* w.app.request("POST", "/v0/pods", { key: w.key, json: { name: "P" } })).body.pod_id as string
          const inbox = (yield* w.app.request("POST", `/v0/pods/${pod}/inboxes`, { key: w.key, json: {} })).body.inbox_id as string
          const podKey = (yield* w.app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "p", pod_id: pod } })).body.api_key as string
          const inboxKey = (yield* w.app.request("POST", "/v0/api-keys", { key: w.key, json: { name: "i", inbox_id: inbox } })).body.api_key as string
          const orgDomain = uniqueName("org")
          const podDomain = uniqueName("pod")
          yield* w.add(orgDomain)
          assert.strictEqual((yield* w.app.request("POST", `/v0/pods/${pod}/domains`, { key: w.key, json: { domain: podDomain } })).status, 200)
          const seen = yield* w.app.request("GET", "/v0/domains", { key: podKey })
          assert.deepStrictEqual(seen.body.domains.map((d: DomainBody) => d.domain_id), [podDomain])
          assert.strictEqual((yield* w.app.request("GET", `/v0/domains/${orgDomain}`, { key: podKey })).status, 404)
          const viaPod = yield* w.app.request("GET", `/v0/pods/${pod}/domains`, { key: w.key })
          assert.deepStrictEqual(viaPod.body.domains.map((d: DomainBody) => d.domain_id), [podDomain])
          assert.strictEqual((yield* w.app.request("GET", `/v0/pods/${pod}/domains/${orgDomain}`, { key: w.key })).status, 404)
          const byPodKey = yield* w.add(uniqueName("bypodkey"), {}, podKey)
          assert.strictEqual(byPodKey.status, 200, byPodKey.text)
          assert.strictEqual((yield* w.app.request("GET", `/v0/pods/${pod}/domains/${byPodKey.body.domain_id}`, { key: w.key })).status, 200)
          const byInboxKey = yield* w.add(uniqueName("byinboxkey"), {}, inboxKey)
          assert.strictEqual(byInboxKey.status, 403, byInboxKey.text)
          assert.strictEqual(byInboxKey.body.code, "missing_permission")
          assert.deepStrictEqual((yield* w.app.request("GET", "/v0/domains", { key: inboxKey })).body.domains, [])
        }))

      it.effect("an inbox on a custom domain is 422 domain_not_verified until the domain is verified", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("inboxes")
          const created = (yield* w.add(name)).body as DomainBody
          const create = (domain: string) => w.app.request("POST", "/v0/inboxes", { key: w.key, json: { username: "agent", domain } })
          const early = yield* create(name)
          assert.strictEqual(early.status, 422, early.text)
          assert.strictEqual(early.body.code, "domain_not_verified")
          const unknown = yield* create(uniqueName("never-added"))
          assert.strictEqual(unknown.body.code, "domain_not_verified")
          publish(zone, created)
          yield* w.verify(name)
          const ok = yield* create(name.toUpperCase())
          assert.strictEqual(ok.status, 200, ok.text)
          assert.strictEqual(ok.body.email, `agent@${name}`)
          const other = yield* setUp()
          const foreign = yield* other.app.request("POST", "/v0/inboxes", { key: other.key, json: { username: "x", domain: name } })
          assert.strictEqual(foreign.body.code, "domain_not_verified")
        }))

      it.effect("an inbox on a subdomain needs subdomains_enabled, else 422 subdomains_not_enabled", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("parent")
          publish(zone, (yield* w.add(name)).body)
          yield* w.verify(name)
          const create = () => w.app.request("POST", "/v0/inboxes", { key: w.key, json: { username: "a", domain: `team.${name}` } })
          const refused = yield* create()
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.body.code, "subdomains_not_enabled")
          yield* w.app.request("PATCH", `/v0/domains/${name}`, { key: w.key, json: { subdomains_enabled: true } })
          const ok = yield* create()
          assert.strictEqual(ok.status, 200, ok.text)
          assert.strictEqual(ok.body.email, `a@team.${name}`)
        }))

      it.effect("mail sent from an inbox on a verified domain is DKIM-signed with the domain's key and passes DKIM, SPF and DMARC with alignment", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const zone = yield* LoopbackDns
          const name = uniqueName("signed")
          publish(zone, (yield* w.add(name)).body)
          yield* w.verify(name)
          const inbox = (yield* w.app.request("POST", "/v0/inboxes", { key: w.key, json: { username: "sender", domain: name } })).body
          const sent = yield* w.app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, {
            key: w.key,
            json: { to: "someone@elsewhere.example", subject: "Signed", text: "Hello" }
          })
          assert.strictEqual(sent.status, 200, sent.text)
          const mail = (yield* (yield* CapturedMail).all).filter((m) => m.envelope.from === inbox.email).at(-1)
          const raw = Buffer.from(mail?.raw ?? new Uint8Array())
          const unfolded = raw.toString("utf8").replace(/\r?\n[ \t]+/g, " ")
          assert.match(unfolded, new RegExp(`^DKIM-Signature: .*\\bd=${name.replace(/\./g, "\\.")};`, "m"))
          const resolver = new Resolver({ timeout: 1000, tries: 1 })
          resolver.setServers([zone.server])
          const result = yield* Effect.promise(() =>
            authenticate(raw, {
              ip: "127.0.0.1",
              helo: "mx.inbox.localhost",
              sender: inbox.email,
              mta: "mx.elsewhere.example",
              resolver: Dns.make((n, t) => resolver.resolve(n, t)).resolve as never,
              disableArc: true,
              disableBimi: true
            })
          )
          assert.strictEqual(result.dkim.results[0]?.status.result, "pass", JSON.stringify(result.dkim.results))
          assert.strictEqual(result.spf && result.spf.status.result, "pass")
          assert.strictEqual(result.dmarc && result.dmarc.status.result, "pass")
          assert.strictEqual(result.dmarc && result.dmarc.alignment?.dkim?.result, name)
          // Signing opened the key: nothing of it reached a log.
          assert.isAbove(logged.length, 0)
          assert.notInclude(JSON.stringify(logged), "PRIVATE KEY")
        }))

      it.effect("mail from the base domain is not signed", () =>
        Effect.gen(function*() {
          const w = yield* setUp()
          const inbox = (yield* w.app.request("POST", "/v0/inboxes", { key: w.key, json: {} })).body
          yield* w.app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: w.key, json: { to: "x@elsewhere.example", subject: "s", text: "t" } })
          const mail = (yield* (yield* CapturedMail).all).filter((m) => m.envelope.from === inbox.email).at(-1)
          assert.notInclude(Buffer.from(mail?.raw ?? new Uint8Array()).toString("utf8"), "DKIM-Signature")
        }))
    }
  )
}
