/**
 * Account pre-hijack (issue 24): an account owns and does nothing until its address is
 * verified, so whoever signs up with someone else's address can set nothing up for the
 * address's owner to inherit; the owner who resets by the mailed link gets an account the
 * other has no hold on; accounts never verified expire.
 */
import { assert, layer } from "@effect/vitest"
import { Auth, Engine, operations, Organizations, paramNames, WebhookOperations } from "@inbox/core/internal"
import { engineLayer, storages, TestApp } from "@inbox/testkit"
import { Clock, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { browser, mailedToken, signedInOwner, uniqueEmail } from "./auth-helpers.ts"

const PASSWORD = "correct horse battery"

// Private webhook targets are allowed so a test can plant a webhook without resolving a name.
const app = (storage: (typeof storages extends () => ReadonlyArray<infer S> ? S : never)["layer"], signup: "open" | "invite") =>
  TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage, { trustedProxies: ["local"], signup, webhookAllowPrivate: true })))

/** A browser signed in to an account whose address is not verified. */
const signedInUnverified = (email = uniqueEmail("unverified"), extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const b = browser()
    const up = yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD, ...extra })
    assert.strictEqual(up.status, 202, up.text)
    const signIn = yield* b.request("POST", "/auth/sign-in", { email, password: PASSWORD })
    assert.strictEqual(signIn.status, 200, signIn.text)
    assert.isFalse(signIn.body.user.email_verified)
    return { browser: b, email }
  })

const refused = (res: { status: number; body: { code?: string }; text: string }, what: string) => {
  assert.strictEqual(res.status, 403, `${what}: ${res.text}`)
  assert.strictEqual(res.body.code, "email_not_verified", what)
}

const count = (query: string, ...params: ReadonlyArray<string>) =>
  SqlClient.SqlClient.use((sql) => sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM (${query}) q`, [...params])).pipe(
    Effect.map((rows) => rows[0]?.n ?? 0),
    Effect.orDie
  )

for (const storage of storages()) {
  layer(app(storage.layer, "open"), { timeout: "180 seconds" })(`unverified accounts (${storage.name}, INBOX_SIGNUP=open)`, (it) => {
    it.effect("the pre-hijack fails: signed up with another person's address, the account can add no webhook, key, inbox or two-step sign-in (403 email_not_verified); the owner resets by the mailed link and signs in with no two-step, no organization, key or webhook of the other, whose session is dead", () =>
      Effect.gen(function*() {
        const victim = uniqueEmail("victim")
        const { browser: attacker } = yield* signedInUnverified(victim, { name: "Attacker's organization" })
        const me = yield* attacker.request("GET", "/auth/me")
        assert.strictEqual(me.status, 200)
        assert.deepStrictEqual([me.body.organization_id, me.body.organizations], [null, []], "an unverified account owns no organization")
        assert.strictEqual(yield* count("SELECT 1 FROM organizations WHERE owner_email = $1", victim), 0)

        refused(yield* attacker.request("POST", "/v0/webhooks", { url: "https://attacker.example/hook", event_types: ["message.received"] }), "webhook")
        refused(yield* attacker.request("POST", "/v0/api-keys", { name: "mine" }), "API key")
        refused(yield* attacker.request("POST", "/v0/inboxes", { display_name: "Support" }), "inbox")
        refused(yield* attacker.request("POST", "/auth/2fa/setup"), "two-step setup")
        refused(yield* attacker.request("POST", "/auth/2fa/enable", { code: "123456" }), "two-step enable")
        assert.strictEqual(yield* count("SELECT 1 FROM users WHERE email = $1 AND (totp_secret IS NOT NULL OR totp_enabled)", victim), 0)

        const owner = browser()
        assert.strictEqual((yield* owner.request("POST", "/auth/password-reset", { email: victim })).status, 202)
        const reset = yield* owner.request("POST", "/auth/password-reset/confirm", { token: yield* mailedToken(victim, "reset-password"), password: "the owner's own password" })
        assert.strictEqual(reset.status, 200, reset.text)

        assert.strictEqual((yield* attacker.request("GET", "/auth/me")).status, 401, "the attacker's session ended")
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email: victim, password: PASSWORD })).body.code, "invalid_credentials")
        const signIn = yield* owner.request("POST", "/auth/sign-in", { email: victim, password: "the owner's own password" })
        assert.strictEqual(signIn.status, 200, `no two-step code asked: ${signIn.text}`)
        assert.isTrue(signIn.body.user.email_verified, "the reset link proved the address")
        assert.isFalse(signIn.body.user.two_factor_enabled)
        assert.deepStrictEqual(
          signIn.body.organizations.map((o: { name: string; role: string }) => [o.name, o.role]),
          [[victim, "owner"]],
          "one organization, made at verification, not named by the attacker"
        )
        assert.strictEqual(signIn.body.organization_id, signIn.body.organizations[0].organization_id)
        for (const path of ["/v0/webhooks", "/v0/api-keys", "/v0/inboxes"]) {
          const listed = yield* owner.request("GET", path)
          assert.strictEqual(listed.status, 200, `${path}: ${listed.text}`)
          assert.strictEqual(listed.body.count, 0, path)
        }
        assert.strictEqual(yield* count("SELECT 1 FROM webhooks w JOIN organizations o ON o.id = w.organization_id WHERE o.owner_email = $1", victim), 0)
      }))

    it.effect("an unverified account cannot act through /v0 with its session: every operation of the catalogue, and the WebSocket, is 403 email_not_verified", () =>
      Effect.gen(function*() {
        const { browser: b } = yield* signedInUnverified()
        const members = operations.filter((op) => op.access.kind === "member")
        assert.isAbove(members.length, 50)
        for (const op of members) {
          for (const route of op.routes) {
            const path = paramNames(route.path).reduce((p, name) => p.replace(`:${name}`, `${name}_1`), route.path)
            const res = yield* b.request(route.method, path, route.method === "GET" || route.method === "DELETE" ? undefined : {})
            refused(res, `${op.name} (${route.method} ${route.path})`)
          }
        }
        refused(yield* b.request("GET", `/v0/websocket?csrf_token=${b.csrf ?? ""}`), "WebSocket")
      }))

    it.effect("an unverified session may read GET /auth/me and sign out; changing the password, two-step, invitations, member management and switching organization are 403 email_not_verified", () =>
      Effect.gen(function*() {
        const other = yield* signedInOwner()
        const { browser: b } = yield* signedInUnverified()
        refused(yield* b.request("POST", "/auth/password", { current_password: PASSWORD, new_password: "another password" }), "password change")
        refused(yield* b.request("POST", "/auth/2fa/setup"), "two-step setup")
        refused(yield* b.request("POST", "/auth/2fa/enable", { code: "123456" }), "two-step enable")
        refused(yield* b.request("POST", "/auth/2fa/disable", { code: "123456" }), "two-step disable")
        refused(yield* b.request("POST", "/auth/invitations", { email: uniqueEmail("invitee") }), "invitation")
        refused(yield* b.request("DELETE", "/auth/invitations/inv_000000000000000000000000"), "invitation revoke")
        const me = (yield* b.request("GET", "/auth/me")).body.user.user_id as string
        refused(yield* b.request("PATCH", `/auth/members/${me}`, { role: "admin" }), "role change")
        refused(yield* b.request("DELETE", `/auth/members/${me}`), "member removal")
        refused(yield* b.request("POST", "/auth/organization", { organization_id: other.organizationId }), "organization switch")
        assert.strictEqual((yield* b.request("GET", "/auth/me")).status, 200)
        assert.strictEqual((yield* b.request("POST", "/auth/sign-out")).status, 204)
        assert.strictEqual((yield* b.request("GET", "/auth/me")).status, 401)
      }))

    it.effect("verification by the mailed link creates the organization the sign-up is owed, once, and the session signed in before it acts in it", () =>
      Effect.gen(function*() {
        const email = uniqueEmail("verifies")
        const { browser: b } = yield* signedInUnverified(email, { name: "Acme" })
        refused(yield* b.request("GET", "/v0/inboxes"), "before verification")
        const token = yield* mailedToken(email, "verify-email")
        assert.strictEqual((yield* b.request("POST", "/auth/verify-email", { token })).status, 200)
        const me = yield* b.request("GET", "/auth/me")
        assert.isTrue(me.body.user.email_verified)
        assert.deepStrictEqual(me.body.organizations.map((o: { name: string; role: string }) => [o.name, o.role]), [["Acme", "owner"]])
        assert.strictEqual(me.body.organization_id, me.body.organizations[0].organization_id)
        const inbox = yield* b.request("POST", "/v0/inboxes", { display_name: "Support" })
        assert.strictEqual(inbox.status, 200, inbox.text)
        const key = yield* b.request("POST", "/v0/api-keys", { name: "verified owner" })
        assert.strictEqual(key.status, 200, `the organization's owner email is verified: ${key.text}`)
        assert.strictEqual((yield* b.request("POST", "/auth/verify-email", { token })).body.code, "invalid_token")
        // A reset link proves the address again: it creates nothing more.
        yield* browser().request("POST", "/auth/password-reset", { email })
        yield* browser().request("POST", "/auth/password-reset/confirm", { token: yield* mailedToken(email, "reset-password"), password: "a later password" })
        assert.strictEqual(yield* count("SELECT 1 FROM organizations WHERE owner_email = $1", email), 1)
      }))

    it.effect("an unverified session accepts an invitation mailed to its address: the link proves it, and the account joins the organization and gets its own", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const { browser: b, email } = yield* signedInUnverified()
        assert.strictEqual((yield* owner.browser.request("POST", "/auth/invitations", { email })).status, 200)
        const accepted = yield* b.request("POST", "/auth/invitations/accept", { token: yield* mailedToken(email, "accept-invitation") })
        assert.strictEqual(accepted.status, 200, accepted.text)
        const me = yield* b.request("GET", "/auth/me")
        assert.isTrue(me.body.user.email_verified)
        assert.strictEqual(me.body.organization_id, owner.organizationId)
        assert.sameMembers(me.body.organizations.map((o: { role: string }) => o.role), ["member", "owner"])
        assert.strictEqual((yield* b.request("GET", "/v0/inboxes")).status, 200)
      }))

    it.effect("an account from before this rule that owns an organization, a webhook and two-step sign-in while never verified: the owner's reset by the mailed link discards them all", () =>
      Effect.gen(function*() {
        const victim = uniqueEmail("legacy")
        const sql = yield* SqlClient.SqlClient
        const { browser: attacker } = yield* signedInUnverified(victim)
        // What sign-up used to leave: an organization at once, and a session free to set things up in it.
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: victim, name: "Attacker's organization" })
        const userId = (yield* sql<{ id: string }>`SELECT id FROM users WHERE email = ${victim}`)[0]!.id
        yield* sql`INSERT INTO memberships (organization_id, user_id, role, created_at) VALUES (${organization.id}, ${userId}, 'owner', now())`
        yield* sql`UPDATE users SET pending_organization = NULL, totp_secret = 'JBSWY3DPEHPK3PXP', totp_enabled = true WHERE id = ${userId}`
        yield* sql`INSERT INTO recovery_codes (user_id, code_hash) VALUES (${userId}, 'attacker')`
        const hook = yield* Engine.use((engine) =>
          engine.call("webhooks.create", { url: "http://127.0.0.1:9/hook", event_types: ["message.received"] }, {
            kind: "principal",
            principal: { organizationId: organization.id, scope: { type: "organization" } }
          })
        )
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email: victim, password: PASSWORD })).body.code, "totp_required")

        const owner = browser()
        yield* owner.request("POST", "/auth/password-reset", { email: victim })
        const reset = yield* owner.request("POST", "/auth/password-reset/confirm", { token: yield* mailedToken(victim, "reset-password"), password: "the owner's own password" })
        assert.strictEqual(reset.status, 200, reset.text)
        assert.strictEqual((yield* attacker.request("GET", "/auth/me")).status, 401)
        const signIn = yield* owner.request("POST", "/auth/sign-in", { email: victim, password: "the owner's own password" })
        assert.strictEqual(signIn.status, 200, `no two-step code asked: ${signIn.text}`)
        assert.isFalse(signIn.body.user.two_factor_enabled)
        assert.strictEqual(signIn.body.organizations.length, 1)
        assert.notStrictEqual(signIn.body.organizations[0].organization_id, organization.id, "a new organization, not the attacker's")
        assert.strictEqual(signIn.body.organizations[0].name, victim)
        assert.strictEqual(yield* count("SELECT 1 FROM organizations WHERE id = $1", organization.id), 0, "the attacker's organization is gone")
        assert.strictEqual(yield* count("SELECT 1 FROM webhooks WHERE id = $1", hook.webhook_id), 0, "with its webhook")
        assert.strictEqual(yield* count("SELECT 1 FROM recovery_codes WHERE user_id = $1", userId), 0)
        assert.strictEqual(yield* count("SELECT 1 FROM users WHERE id = $1 AND totp_secret IS NULL", userId), 1)
      }))

    it.effect("an account from before this rule that verifies by the verification link keeps the organization it owns", () =>
      Effect.gen(function*() {
        const email = uniqueEmail("legacy-kept")
        const sql = yield* SqlClient.SqlClient
        const { browser: b } = yield* signedInUnverified(email)
        const { organization } = yield* (yield* Organizations).create({ ownerEmail: email })
        const userId = (yield* sql<{ id: string }>`SELECT id FROM users WHERE email = ${email}`)[0]!.id
        yield* sql`INSERT INTO memberships (organization_id, user_id, role, created_at) VALUES (${organization.id}, ${userId}, 'owner', now())`
        yield* sql`UPDATE users SET pending_organization = NULL WHERE id = ${userId}`
        yield* b.request("POST", "/auth/verify-email", { token: yield* mailedToken(email, "verify-email") })
        const me = yield* b.request("GET", "/auth/me")
        assert.deepStrictEqual(me.body.organizations.map((o: { organization_id: string }) => o.organization_id), [organization.id])
        yield* b.request("POST", "/auth/organization", { organization_id: organization.id })
        const key = yield* b.request("POST", "/v0/api-keys", { name: "kept" })
        assert.strictEqual(key.status, 200, `verifying the person verified the organization's owner email: ${key.text}`)
      }))

    it.effect("an account not verified within 7 days of sign-up is deleted; its address can sign up again", () =>
      Effect.gen(function*() {
        const email = uniqueEmail("expires")
        yield* signedInUnverified(email)
        const purge = Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          return yield* (yield* Auth).purgeUnverified(new Date(at - 7 * 24 * 3600_000), 1000)
        })
        yield* TestClock.adjust("6 days")
        yield* purge
        assert.strictEqual(yield* count("SELECT 1 FROM users WHERE email = $1", email), 1, "kept for 7 days")
        yield* TestClock.adjust("2 days")
        assert.isAtLeast(yield* purge, 1)
        assert.strictEqual(yield* count("SELECT 1 FROM users WHERE email = $1", email), 0)
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email, password: PASSWORD })).body.code, "invalid_credentials")
        const again = browser()
        assert.strictEqual((yield* again.request("POST", "/auth/sign-up", { email, password: PASSWORD })).status, 202)
        assert.strictEqual((yield* again.request("POST", "/auth/verify-email", { token: yield* mailedToken(email, "verify-email") })).status, 200)
      }))
  })

  layer(app(storage.layer, "invite"), { timeout: "120 seconds" })(`unverified accounts (${storage.name}, INBOX_SIGNUP=invite)`, (it) => {
    it.effect("the first account on a fresh server owns its organization once verified; never verified, it expires and another person may be first", () =>
      Effect.gen(function*() {
        const { browser: first } = yield* signedInUnverified(uniqueEmail("first"))
        refused(yield* first.request("GET", "/v0/inboxes"), "the first account, unverified")
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-up", { email: uniqueEmail(), password: PASSWORD })).body.code, "forbidden")
        yield* TestClock.adjust("8 days")
        const at = yield* Clock.currentTimeMillis
        assert.strictEqual(yield* (yield* Auth).purgeUnverified(new Date(at - 7 * 24 * 3600_000), 1000), 1)
        const next = uniqueEmail("next")
        const b = browser()
        assert.strictEqual((yield* b.request("POST", "/auth/sign-up", { email: next, password: PASSWORD })).status, 202)
        yield* b.request("POST", "/auth/verify-email", { token: yield* mailedToken(next, "verify-email") })
        const signIn = yield* b.request("POST", "/auth/sign-in", { email: next, password: PASSWORD })
        assert.deepStrictEqual(signIn.body.organizations.map((o: { role: string }) => o.role), ["owner"])
        assert.strictEqual((yield* b.request("GET", "/v0/inboxes")).status, 200)
      }))
  })
}
