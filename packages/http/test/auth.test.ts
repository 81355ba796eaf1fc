/** Dashboard accounts over /auth: every rule and code of the spec's /auth table, and the session as a /v0 principal. */
import { assert, layer } from "@effect/vitest"
import { engineLayer, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { browser, mailedToken, mailsTo, ORIGIN, signedInOwner, totpCode, uniqueEmail } from "./auth-helpers.ts"

const PASSWORD = "correct horse battery"
const HTTPS_ORIGIN = "https://inbox.test"

// The harness is trusted as a proxy, so each test browser's X-Forwarded-For is its client IP.
const app = (storage: (typeof storages extends () => ReadonlyArray<infer S> ? S : never)["layer"], signup: "open" | "invite" | "closed") =>
  TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage, { trustedProxies: ["local"], signup })))

const enableTwoFactor = (b: ReturnType<typeof browser>) =>
  Effect.gen(function*() {
    const setup = yield* b.request("POST", "/auth/2fa/setup")
    const enabled = yield* b.request("POST", "/auth/2fa/enable", { code: yield* totpCode(setup.body.secret) })
    assert.strictEqual(enabled.status, 200, enabled.text)
    // A code is accepted once per time step: later codes come from the next step.
    yield* TestClock.adjust("30 seconds")
    return { secret: setup.body.secret as string, recoveryCodes: enabled.body.recovery_codes as ReadonlyArray<string> }
  })

for (const storage of storages()) {
  layer(app(storage.layer, "open"), { timeout: "180 seconds" })(`/auth accounts (${storage.name}, INBOX_SIGNUP=open)`, (it) => {
    it.effect("sign-up mails a verification link; following it verifies the email; the password is stored with Argon2id (m=19 MiB, t=2)", () =>
      Effect.gen(function*() {
        const b = browser()
        const email = uniqueEmail()
        const up = yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD })
        assert.strictEqual(up.status, 202, up.text)
        assert.isUndefined(b.cookie, "sign-up does not sign in: its answer must not differ for an existing email")
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ password_hash: string }>`SELECT password_hash FROM users WHERE email = ${email}`
        assert.match(rows[0]?.password_hash ?? "", /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
        const signIn = yield* b.request("POST", "/auth/sign-in", { email, password: PASSWORD })
        assert.strictEqual(signIn.status, 200)
        assert.isFalse(signIn.body.user.email_verified)
        const token = yield* mailedToken(email, "verify-email")
        const verified = yield* b.request("POST", "/auth/verify-email", { token })
        assert.strictEqual(verified.status, 200)
        const me = yield* b.request("GET", "/auth/me")
        assert.isTrue(me.body.user.email_verified)
        assert.strictEqual(me.body.organizations[0].role, "owner")
      }))

    it.effect("a used, unknown or expired verification link is 400 invalid_token", () =>
      Effect.gen(function*() {
        const b = browser()
        const email = uniqueEmail()
        yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD })
        const token = yield* mailedToken(email, "verify-email")
        assert.strictEqual((yield* b.request("POST", "/auth/verify-email", { token })).status, 200)
        const again = yield* b.request("POST", "/auth/verify-email", { token })
        assert.strictEqual(again.status, 400)
        assert.strictEqual(again.body.code, "invalid_token")
        const unknown = yield* b.request("POST", "/auth/verify-email", { token: "0".repeat(64) })
        assert.strictEqual(unknown.body.code, "invalid_token")
        const other = uniqueEmail()
        yield* b.request("POST", "/auth/sign-up", { email: other, password: PASSWORD })
        const late = yield* mailedToken(other, "verify-email")
        yield* TestClock.adjust("25 hours")
        const expired = yield* b.request("POST", "/auth/verify-email", { token: late })
        assert.strictEqual(expired.status, 400)
        assert.strictEqual(expired.body.code, "invalid_token")
      }))

    it.effect("no answer reveals whether an email has an account: sign-up, resend-verification and password reset answer alike", () =>
      Effect.gen(function*() {
        const { email } = yield* signedInOwner()
        const b = browser()
        const nobody = uniqueEmail("nobody")
        const strip = (r: { status: number; body: unknown }) => ({ status: r.status, body: r.body })
        assert.deepStrictEqual(
          strip(yield* b.request("POST", "/auth/sign-up", { email, password: "another password" })),
          strip(yield* b.request("POST", "/auth/sign-up", { email: uniqueEmail("fresh"), password: "another password" }))
        )
        assert.deepStrictEqual(
          strip(yield* b.request("POST", "/auth/resend-verification", { email })),
          strip(yield* b.request("POST", "/auth/resend-verification", { email: nobody }))
        )
        assert.deepStrictEqual(
          strip(yield* b.request("POST", "/auth/password-reset", { email })),
          strip(yield* b.request("POST", "/auth/password-reset", { email: nobody }))
        )
        const wrong = yield* b.request("POST", "/auth/sign-in", { email, password: "wrong password" })
        const unknown = yield* b.request("POST", "/auth/sign-in", { email: nobody, password: "wrong password" })
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(wrong.body.code, "invalid_credentials")
        assert.deepStrictEqual(strip(wrong), strip(unknown))
        // The existing account's owner hears of the attempt; nobody else gets mail.
        assert.isTrue((yield* mailsTo(email)).some((m) => m.includes("already has one")))
        assert.strictEqual((yield* mailsTo(nobody)).length, 0)
      }))

    it.effect("resend-verification mails a new link to an unverified account", () =>
      Effect.gen(function*() {
        const b = browser()
        const email = uniqueEmail()
        yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD })
        const first = yield* mailedToken(email, "verify-email")
        const res = yield* b.request("POST", "/auth/resend-verification", { email })
        assert.strictEqual(res.status, 202)
        const second = yield* mailedToken(email, "verify-email")
        assert.notStrictEqual(first, second)
        assert.strictEqual((yield* b.request("POST", "/auth/verify-email", { token: second })).status, 200)
      }))

    it.effect("the password policy refuses short passwords and the email as password with 400 validation_error", () =>
      Effect.gen(function*() {
        const b = browser()
        const email = uniqueEmail()
        const short = yield* b.request("POST", "/auth/sign-up", { email, password: "short" })
        assert.strictEqual(short.status, 400)
        assert.strictEqual(short.body.code, "validation_error")
        assert.deepStrictEqual(short.body.errors[0].path, ["password"])
        const same = yield* b.request("POST", "/auth/sign-up", { email, password: email })
        assert.strictEqual(same.body.code, "validation_error")
      }))

    it.effect("sign-in sets an HttpOnly SameSite=Lax cookie with a 256-bit session id stored only hashed; GET /auth/me returns the user, organizations with role and a CSRF token", () =>
      Effect.gen(function*() {
        const { browser: b, email, password } = yield* signedInOwner()
        const app = yield* TestApp
        const res = yield* app.request("POST", "/auth/sign-in", { json: { email, password }, headers: { "x-forwarded-for": b.ip } })
        const cookie = res.headers.get("set-cookie") ?? ""
        assert.match(cookie, /^inbox_session=[0-9a-f]{64};/)
        assert.include(cookie, "HttpOnly")
        assert.include(cookie, "SameSite=Lax")
        assert.include(cookie, "Path=/")
        assert.notInclude(cookie, "Secure", "the test server's public URL is http")
        const id = /inbox_session=([0-9a-f]{64})/.exec(cookie)?.[1] ?? ""
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql`SELECT 1 FROM sessions WHERE id_hash = ${id}`
        assert.strictEqual(stored.length, 0, "the session id itself is never stored")
        const me = yield* b.request("GET", "/auth/me")
        assert.strictEqual(me.status, 200)
        assert.strictEqual(me.headers.get("cache-control"), "no-store")
        assert.strictEqual(me.body.user.email, email)
        assert.match(me.body.csrf_token, /^[0-9a-f]{64}$/)
        assert.strictEqual(me.body.organizations.length, 1)
        assert.strictEqual(me.body.organizations[0].role, "owner")
        assert.strictEqual(me.body.organization_id, me.body.organizations[0].organization_id)
        const anonymous = yield* app.request("GET", "/auth/me")
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(anonymous.body.code, "unauthorized")
      }))

    it.effect("a new sign-in renews the session: the session the browser held before ends", () =>
      Effect.gen(function*() {
        const { browser: b, email, password } = yield* signedInOwner()
        const before = b.cookie
        yield* b.request("POST", "/auth/sign-in", { email, password })
        assert.notStrictEqual(b.cookie, before)
        const old = browser()
        old.cookie = before
        assert.strictEqual((yield* old.request("GET", "/auth/me")).status, 401)
      }))

    it.effect("sign-out revokes the session and clears the cookie", () =>
      Effect.gen(function*() {
        const { browser: b } = yield* signedInOwner()
        const cookie = b.cookie
        const out = yield* b.request("POST", "/auth/sign-out")
        assert.strictEqual(out.status, 204)
        assert.match(out.headers.get("set-cookie") ?? "", /^inbox_session=; Max-Age=0/)
        const replay = browser()
        replay.cookie = cookie
        assert.strictEqual((yield* replay.request("GET", "/auth/me")).status, 401)
      }))

    it.effect("a session ends after 24 hours unused, and after 14 days even when used", () =>
      Effect.gen(function*() {
        const idle = yield* signedInOwner()
        yield* TestClock.adjust("23 hours")
        assert.strictEqual((yield* idle.browser.request("GET", "/auth/me")).status, 200, "use renews the idle time")
        yield* TestClock.adjust("23 hours")
        assert.strictEqual((yield* idle.browser.request("GET", "/auth/me")).status, 200)
        yield* TestClock.adjust("24 hours")
        assert.strictEqual((yield* idle.browser.request("GET", "/auth/me")).status, 401)
        const busy = yield* signedInOwner()
        for (let hour = 0; hour < 14 * 24 - 12; hour += 12) {
          yield* TestClock.adjust("12 hours")
          assert.strictEqual((yield* busy.browser.request("GET", "/auth/me")).status, 200)
        }
        yield* TestClock.adjust("12 hours")
        assert.strictEqual((yield* busy.browser.request("GET", "/auth/me")).status, 401)
      }))

    it.effect("session requests that change state need x-csrf-token and a same-origin Origin, else 403 csrf_failed; API-key requests are exempt", () =>
      Effect.gen(function*() {
        const { browser: b } = yield* signedInOwner()
        const body = { display_name: "Support" }
        const noToken = yield* b.request("POST", "/v0/inboxes", body, { "x-csrf-token": "" })
        assert.strictEqual(noToken.status, 403)
        assert.strictEqual(noToken.body.code, "csrf_failed")
        const wrongToken = yield* b.request("POST", "/v0/inboxes", body, { "x-csrf-token": "f".repeat(64) })
        assert.strictEqual(wrongToken.body.code, "csrf_failed")
        const crossSite = yield* b.request("POST", "/v0/inboxes", body, { origin: "https://evil.example" })
        assert.strictEqual(crossSite.status, 403)
        assert.strictEqual(crossSite.body.code, "csrf_failed")
        const app = yield* TestApp
        const noOrigin = yield* app.request("POST", "/v0/inboxes", { json: body, headers: { cookie: b.cookie ?? "", "x-csrf-token": b.csrf ?? "", "x-forwarded-for": b.ip } })
        assert.strictEqual(noOrigin.body.code, "csrf_failed")
        const authOnly = yield* b.request("POST", "/auth/2fa/setup", undefined, { "x-csrf-token": "" })
        assert.strictEqual(authOnly.body.code, "csrf_failed")
        const ok = yield* b.request("POST", "/v0/inboxes", body)
        assert.strictEqual(ok.status, 200, ok.text)
        // Reading needs no token.
        const read = yield* app.request("GET", "/v0/inboxes", { headers: { cookie: b.cookie ?? "", "x-forwarded-for": b.ip } })
        assert.strictEqual(read.status, 200)
        // A key wins over a cookie: no CSRF rule for API-key requests.
        const keyed = yield* b.request("POST", "/v0/api-keys", { name: "from dashboard" })
        assert.strictEqual(keyed.status, 200, keyed.text)
        const withKey = yield* app.request("POST", "/v0/inboxes", { key: keyed.body.api_key, json: {}, headers: { cookie: b.cookie ?? "", origin: "https://evil.example" } })
        assert.strictEqual(withKey.status, 200, withKey.text)
        const listed = yield* b.request("GET", "/v0/inboxes")
        assert.include(listed.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), withKey.body.inbox_id, "the key and the session act for one organization")
      }))

    it.effect("a cross-site form post to sign-in or sign-up is refused with 403 csrf_failed", () =>
      Effect.gen(function*() {
        const { email, password } = yield* signedInOwner()
        const app = yield* TestApp
        const signIn = yield* app.request("POST", "/auth/sign-in", { json: { email, password }, headers: { origin: "https://evil.example" } })
        assert.strictEqual(signIn.status, 403)
        assert.strictEqual(signIn.body.code, "csrf_failed")
        assert.isNull(signIn.headers.get("set-cookie"))
        const signUp = yield* app.request("POST", "/auth/sign-up", { json: { email: uniqueEmail(), password }, headers: { origin: "null" } })
        assert.strictEqual(signUp.body.code, "csrf_failed")
      }))

    it.effect("password change needs the current password (401 invalid_credentials) and ends every other session", () =>
      Effect.gen(function*() {
        const { browser: b, email, password } = yield* signedInOwner()
        const other = browser()
        yield* other.request("POST", "/auth/sign-in", { email, password })
        const wrong = yield* b.request("POST", "/auth/password", { current_password: "not it at all", new_password: "a brand new password" })
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(wrong.body.code, "invalid_credentials")
        const before = b.cookie
        const changed = yield* b.request("POST", "/auth/password", { current_password: password, new_password: "a brand new password" })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.notStrictEqual(b.cookie, before, "the changing browser gets a new session")
        assert.strictEqual((yield* b.request("GET", "/auth/me")).status, 200)
        assert.strictEqual((yield* other.request("GET", "/auth/me")).status, 401)
        const old = yield* browser().request("POST", "/auth/sign-in", { email, password })
        assert.strictEqual(old.body.code, "invalid_credentials")
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email, password: "a brand new password" })).status, 200)
      }))

    it.effect("password reset by a mailed link sets a new password, ends every session, and the link works once", () =>
      Effect.gen(function*() {
        const { browser: b, email } = yield* signedInOwner()
        const anon = browser()
        assert.strictEqual((yield* anon.request("POST", "/auth/password-reset", { email })).status, 202)
        const token = yield* mailedToken(email, "reset-password")
        const done = yield* anon.request("POST", "/auth/password-reset/confirm", { token, password: "reset to this one" })
        assert.strictEqual(done.status, 200, done.text)
        assert.strictEqual((yield* b.request("GET", "/auth/me")).status, 401)
        assert.strictEqual((yield* anon.request("POST", "/auth/sign-in", { email, password: "reset to this one" })).status, 200)
        const again = yield* browser().request("POST", "/auth/password-reset/confirm", { token, password: "and again this" })
        assert.strictEqual(again.status, 400)
        assert.strictEqual(again.body.code, "invalid_token")
        yield* anon.request("POST", "/auth/password-reset", { email })
        const late = yield* mailedToken(email, "reset-password")
        yield* TestClock.adjust("61 minutes")
        const expired = yield* browser().request("POST", "/auth/password-reset/confirm", { token: late, password: "too late now" })
        assert.strictEqual(expired.body.code, "invalid_token")
      }))

    it.effect("two-step: enable before setup is 400 2fa_not_set_up; a wrong code 400 invalid_code; enabling gives ten recovery codes; again is 409 2fa_already_enabled", () =>
      Effect.gen(function*() {
        const { browser: b, email } = yield* signedInOwner()
        const early = yield* b.request("POST", "/auth/2fa/enable", { code: "123456" })
        assert.strictEqual(early.status, 400)
        assert.strictEqual(early.body.code, "2fa_not_set_up")
        const setup = yield* b.request("POST", "/auth/2fa/setup")
        assert.strictEqual(setup.status, 200)
        assert.match(setup.body.secret, /^[A-Z2-7]{32}$/)
        assert.match(setup.body.otpauth_uri, /^otpauth:\/\/totp\/Inbox:/)
        assert.include(setup.body.otpauth_uri, `secret=${setup.body.secret}`)
        assert.include(decodeURIComponent(setup.body.otpauth_uri), email)
        // At rest the authenticator secret is sealed under INBOX_SECRET_KEY, never stored as shown.
        const stored = yield* SqlClient.SqlClient.use((sql) => sql<{ totp_secret: string }>`SELECT totp_secret FROM users WHERE email = ${email}`)
        assert.match(stored[0]!.totp_secret, /^v1:/)
        assert.notInclude(stored[0]!.totp_secret, setup.body.secret)
        const good = yield* totpCode(setup.body.secret)
        const wrong = yield* b.request("POST", "/auth/2fa/enable", { code: good === "000000" ? "111111" : "000000" })
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.body.code, "invalid_code")
        const enabled = yield* b.request("POST", "/auth/2fa/enable", { code: good })
        assert.strictEqual(enabled.status, 200)
        assert.strictEqual(enabled.body.recovery_codes.length, 10)
        assert.strictEqual(new Set(enabled.body.recovery_codes).size, 10)
        for (const c of enabled.body.recovery_codes) assert.match(c, /^[0-9a-f]{5}-[0-9a-f]{5}$/)
        const twice = yield* b.request("POST", "/auth/2fa/enable", { code: good })
        assert.strictEqual(twice.status, 409)
        assert.strictEqual(twice.body.code, "2fa_already_enabled")
        const resetup = yield* b.request("POST", "/auth/2fa/setup")
        assert.strictEqual(resetup.status, 409)
        assert.strictEqual(resetup.body.code, "2fa_already_enabled")
        assert.isTrue((yield* b.request("GET", "/auth/me")).body.user.two_factor_enabled)
      }))

    it.effect("with two-step on, sign-in without totp_code is 401 totp_required, a wrong one 401 invalid_totp; an authenticator code or a recovery code signs in, each once", () =>
      Effect.gen(function*() {
        const { browser: b, email, password } = yield* signedInOwner()
        const { secret, recoveryCodes } = yield* enableTwoFactor(b)
        const c = browser()
        const missing = yield* c.request("POST", "/auth/sign-in", { email, password })
        assert.strictEqual(missing.status, 401)
        assert.strictEqual(missing.body.code, "totp_required")
        assert.isUndefined(c.cookie)
        const wrongPassword = yield* c.request("POST", "/auth/sign-in", { email, password: "not the password" })
        assert.strictEqual(wrongPassword.body.code, "invalid_credentials", "the second step is asked only after the right password")
        const code = yield* totpCode(secret)
        const bad = yield* c.request("POST", "/auth/sign-in", { email, password, totp_code: code === "000000" ? "111111" : "000000" })
        assert.strictEqual(bad.status, 401)
        assert.strictEqual(bad.body.code, "invalid_totp")
        const ok = yield* c.request("POST", "/auth/sign-in", { email, password, totp_code: code })
        assert.strictEqual(ok.status, 200, ok.text)
        const replayed = yield* browser().request("POST", "/auth/sign-in", { email, password, totp_code: code })
        assert.strictEqual(replayed.body.code, "invalid_totp", "an authenticator code is accepted once")
        const recovery = recoveryCodes[3] ?? ""
        const viaRecovery = yield* browser().request("POST", "/auth/sign-in", { email, password, totp_code: recovery.toUpperCase() })
        assert.strictEqual(viaRecovery.status, 200, viaRecovery.text)
        const reused = yield* browser().request("POST", "/auth/sign-in", { email, password, totp_code: recovery })
        assert.strictEqual(reused.body.code, "invalid_totp")
      }))

    it.effect("disabling two-step needs a valid code (400 invalid_code); off, disable is 400 2fa_not_set_up and sign-in needs no code", () =>
      Effect.gen(function*() {
        const { browser: b, email, password } = yield* signedInOwner()
        const notOn = yield* b.request("POST", "/auth/2fa/disable", { code: "123456" })
        assert.strictEqual(notOn.body.code, "2fa_not_set_up")
        const { secret } = yield* enableTwoFactor(b)
        const code = yield* totpCode(secret)
        const wrong = yield* b.request("POST", "/auth/2fa/disable", { code: code === "000000" ? "111111" : "000000" })
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.body.code, "invalid_code")
        const off = yield* b.request("POST", "/auth/2fa/disable", { code })
        assert.strictEqual(off.status, 200)
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email, password })).status, 200)
      }))

    it.effect("wrong passwords are limited per account: past ten, 429 too_many_attempts with Retry-After, even for the right password, until the window passes", () =>
      Effect.gen(function*() {
        const { email, password } = yield* signedInOwner()
        for (let i = 0; i < 10; i++) {
          // Each guess from another IP: the account's own limit is what stops them.
          const res = yield* browser().request("POST", "/auth/sign-in", { email, password: `guess number ${i}` })
          assert.strictEqual(res.body.code, "invalid_credentials")
        }
        const limited = yield* browser().request("POST", "/auth/sign-in", { email, password })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "too_many_attempts")
        const retry = Number(limited.headers.get("retry-after"))
        assert.isTrue(retry > 0 && retry <= 900, `Retry-After ${retry}`)
        yield* TestClock.adjust("15 minutes")
        assert.strictEqual((yield* browser().request("POST", "/auth/sign-in", { email, password })).status, 200)
      }))

    it.effect("wrong codes count against the same limit: ten wrong two-step codes, then 429 too_many_attempts", () =>
      Effect.gen(function*() {
        const { browser: b } = yield* signedInOwner()
        yield* b.request("POST", "/auth/2fa/setup")
        for (let i = 0; i < 10; i++) {
          const res = yield* b.request("POST", "/auth/2fa/enable", { code: "abcdef" })
          assert.strictEqual(res.body.code, "invalid_code")
        }
        const limited = yield* b.request("POST", "/auth/2fa/enable", { code: "abcdef" })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "too_many_attempts")
        assert.isNotNull(limited.headers.get("retry-after"))
      }))

    it.effect("wrong passwords are limited per IP: past 100 from one address, across accounts, 429 too_many_attempts", () =>
      Effect.gen(function*() {
        const b = browser()
        for (let i = 0; i < 100; i++) {
          const res = yield* b.request("POST", "/auth/sign-in", { email: uniqueEmail("guess"), password: "guessing" })
          assert.strictEqual(res.body.code, "invalid_credentials")
        }
        const limited = yield* b.request("POST", "/auth/sign-in", { email: uniqueEmail("guess"), password: "guessing" })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.body.code, "too_many_attempts")
        assert.isNotNull(limited.headers.get("retry-after"))
        const elsewhere = yield* browser().request("POST", "/auth/sign-in", { email: uniqueEmail("guess"), password: "guessing" })
        assert.strictEqual(elsewhere.body.code, "invalid_credentials")
      }))

    it.effect("invitations: a person whose email is unverified is 403 email_not_verified", () =>
      Effect.gen(function*() {
        const b = browser()
        const email = uniqueEmail()
        yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD })
        yield* b.request("POST", "/auth/sign-in", { email, password: PASSWORD })
        const res = yield* b.request("POST", "/auth/invitations", { email: uniqueEmail("invitee") })
        assert.strictEqual(res.status, 403)
        assert.strictEqual(res.body.code, "email_not_verified")
      }))

    it.effect("the owner invites by email; the invitee signs up through the link and becomes a member; inviting a member again is 409 already_member; a member may not invite (403 forbidden)", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const inviteeEmail = uniqueEmail("invitee")
        const invited = yield* owner.browser.request("POST", "/auth/invitations", { email: inviteeEmail })
        assert.strictEqual(invited.status, 200, invited.text)
        assert.strictEqual(invited.body.role, "member")
        assert.strictEqual(invited.body.organization_id, owner.organizationId)
        const token = yield* mailedToken(inviteeEmail, "accept-invitation")
        const invitee = browser()
        const wrongEmail = yield* invitee.request("POST", "/auth/sign-up", { email: uniqueEmail("other"), password: PASSWORD, invitation_token: token })
        assert.strictEqual(wrongEmail.status, 400)
        assert.strictEqual(wrongEmail.body.code, "invalid_token")
        const up = yield* invitee.request("POST", "/auth/sign-up", { email: inviteeEmail, password: PASSWORD, invitation_token: token })
        assert.strictEqual(up.status, 202, up.text)
        const signIn = yield* invitee.request("POST", "/auth/sign-in", { email: inviteeEmail, password: PASSWORD })
        assert.strictEqual(signIn.body.organization_id, owner.organizationId)
        assert.deepStrictEqual(signIn.body.organizations.map((o: { role: string }) => o.role), ["member"])
        assert.isTrue(signIn.body.user.email_verified, "the mailed invitation proved the address")
        const again = yield* owner.browser.request("POST", "/auth/invitations", { email: inviteeEmail })
        assert.strictEqual(again.status, 409)
        assert.strictEqual(again.body.code, "already_member")
        const byMember = yield* invitee.request("POST", "/auth/invitations", { email: uniqueEmail("third") })
        assert.strictEqual(byMember.status, 403)
        assert.strictEqual(byMember.body.code, "forbidden")
        const reused = yield* browser().request("POST", "/auth/sign-up", { email: inviteeEmail, password: PASSWORD, invitation_token: token })
        assert.strictEqual(reused.status, 400, "an invitation link works once")
        assert.strictEqual(reused.body.code, "invalid_token")
      }))

    it.effect("GET /auth/members lists the organization's members with their roles, the owner first, and its invitations not yet accepted; a member sees them too", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const joining = uniqueEmail("joining")
        const waiting = uniqueEmail("waiting")
        yield* owner.browser.request("POST", "/auth/invitations", { email: joining })
        yield* owner.browser.request("POST", "/auth/invitations", { email: waiting, role: "admin" })
        const before = yield* owner.browser.request("GET", "/auth/members")
        assert.strictEqual(before.status, 200, before.text)
        assert.strictEqual(before.body.organization_id, owner.organizationId)
        assert.deepStrictEqual(before.body.members.map((m: { role: string }) => m.role), ["owner"])
        assert.sameDeepMembers(before.body.invitations.map((i: { email: string; role: string }) => ({ email: i.email, role: i.role })), [
          { email: joining, role: "member" },
          { email: waiting, role: "admin" }
        ])
        const invitee = browser()
        yield* invitee.request("POST", "/auth/sign-up", { email: joining, password: PASSWORD, invitation_token: yield* mailedToken(joining, "accept-invitation") })
        yield* invitee.request("POST", "/auth/sign-in", { email: joining, password: PASSWORD })
        const after = yield* invitee.request("GET", "/auth/members")
        assert.strictEqual(after.status, 200, after.text)
        assert.deepStrictEqual(after.body.members.map((m: { email: string; role: string }) => [m.role, m.email === joining]), [["owner", false], ["member", true]])
        assert.deepStrictEqual(after.body.invitations.map((i: { email: string }) => i.email), [waiting], "an accepted invitation is no longer pending")
        const signedOut = yield* browser().request("GET", "/auth/members")
        assert.strictEqual(signedOut.status, 401)
      }))

    it.effect("an existing account accepts an invitation through the link while signed in; the link works once and only for its address", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const other = yield* signedInOwner()
        const invited = yield* owner.browser.request("POST", "/auth/invitations", { email: other.email, role: "admin" })
        assert.strictEqual(invited.body.role, "admin")
        const token = yield* mailedToken(other.email, "accept-invitation")
        yield* owner.browser.request("POST", "/auth/invitations", { email: other.email })
        const secondToken = yield* mailedToken(other.email, "accept-invitation")
        const stranger = yield* signedInOwner()
        const notYours = yield* stranger.browser.request("POST", "/auth/invitations/accept", { token })
        assert.strictEqual(notYours.status, 400)
        assert.strictEqual(notYours.body.code, "invalid_token")
        const accepted = yield* other.browser.request("POST", "/auth/invitations/accept", { token })
        assert.strictEqual(accepted.status, 200, accepted.text)
        assert.deepStrictEqual(accepted.body, { organization_id: owner.organizationId, role: "admin" })
        const me = yield* other.browser.request("GET", "/auth/me")
        assert.strictEqual(me.body.organizations.length, 2)
        assert.strictEqual(me.body.organization_id, owner.organizationId)
        const twice = yield* other.browser.request("POST", "/auth/invitations/accept", { token })
        assert.strictEqual(twice.status, 400)
        assert.strictEqual(twice.body.code, "invalid_token")
        const member = yield* other.browser.request("POST", "/auth/invitations/accept", { token: secondToken })
        assert.strictEqual(member.status, 409)
        assert.strictEqual(member.body.code, "already_member")
        const switched = yield* other.browser.request("POST", "/auth/organization", { organization_id: other.organizationId })
        assert.strictEqual(switched.body.organization_id, other.organizationId)
        const foreign = yield* other.browser.request("POST", "/auth/organization", { organization_id: stranger.organizationId })
        assert.strictEqual(foreign.status, 404)
      }))

    it.effect("the session is a principal like an API key: /v0 routes work with the role's permissions; a member cannot manage API keys", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const created = yield* owner.browser.request("POST", "/v0/inboxes", { display_name: "Team" })
        assert.strictEqual(created.status, 200, created.text)
        const listed = yield* owner.browser.request("GET", "/v0/inboxes")
        assert.include(listed.body.inboxes.map((i: { inbox_id: string }) => i.inbox_id), created.body.inbox_id)
        const memberEmail = uniqueEmail("member")
        yield* owner.browser.request("POST", "/auth/invitations", { email: memberEmail })
        const member = browser()
        yield* member.request("POST", "/auth/sign-up", { email: memberEmail, password: PASSWORD, invitation_token: yield* mailedToken(memberEmail, "accept-invitation") })
        yield* member.request("POST", "/auth/sign-in", { email: memberEmail, password: PASSWORD })
        const seen = yield* member.request("GET", `/v0/inboxes/${created.body.inbox_id}`)
        assert.strictEqual(seen.status, 200, "a member reads the organization's inboxes")
        const key = yield* member.request("POST", "/v0/api-keys", { name: "nope" })
        assert.strictEqual(key.status, 403)
        assert.strictEqual(key.body.code, "missing_permission")
        const signedOut = browser()
        signedOut.cookie = "inbox_session=" + "0".repeat(64)
        const unknown = yield* signedOut.request("GET", "/v0/inboxes")
        assert.strictEqual(unknown.status, 401)
        assert.strictEqual(unknown.body.code, "unauthorized")
      }))
  })

  layer(app(storage.layer, "invite"), { timeout: "120 seconds" })(`/auth sign-up (${storage.name}, INBOX_SIGNUP=invite)`, (it) => {
    it.effect("on a fresh server the first person to sign up owns the first organization; later sign-ups need an invitation (403 forbidden)", () =>
      Effect.gen(function*() {
        const first = yield* signedInOwner()
        const me = yield* first.browser.request("GET", "/auth/me")
        assert.deepStrictEqual(me.body.organizations.map((o: { role: string }) => o.role), ["owner"])
        const second = yield* browser().request("POST", "/auth/sign-up", { email: uniqueEmail(), password: PASSWORD })
        assert.strictEqual(second.status, 403)
        assert.strictEqual(second.body.code, "forbidden")
        const inviteeEmail = uniqueEmail("invitee")
        yield* first.browser.request("POST", "/auth/invitations", { email: inviteeEmail })
        const invited = yield* browser().request("POST", "/auth/sign-up", { email: inviteeEmail, password: PASSWORD, invitation_token: yield* mailedToken(inviteeEmail, "accept-invitation") })
        assert.strictEqual(invited.status, 202, invited.text)
      }))
  })

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { trustedProxies: ["local"], signup: "open", publicUrl: "https://inbox.test" }))), { timeout: "120 seconds" })(
    `/auth cookie behind https (${storage.name})`,
    (it) => {
      it.effect("behind https the session cookie is also Secure, and mailed links use the public URL", () =>
        Effect.gen(function*() {
          const { browser: b, email, password } = yield* signedInOwner(undefined, undefined, HTTPS_ORIGIN)
          const app = yield* TestApp
          const res = yield* app.request("POST", "/auth/sign-in", { json: { email, password }, headers: { "x-forwarded-for": b.ip } })
          assert.match(res.headers.get("set-cookie") ?? "", /; HttpOnly; SameSite=Lax; Secure$/)
          assert.isTrue((yield* mailsTo(email)).some((m) => m.includes("https://inbox.test/verify-email?token=")))
        }))

      it.effect("behind https a page of the same host by http:// is another origin: its session requests and sign-in are 403 csrf_failed", () =>
        Effect.gen(function*() {
          const { browser: b, email, password } = yield* signedInOwner(undefined, undefined, HTTPS_ORIGIN)
          const downgraded = yield* b.request("POST", "/v0/inboxes", { display_name: "Support" }, { origin: ORIGIN })
          assert.strictEqual(downgraded.status, 403)
          assert.strictEqual(downgraded.body.code, "csrf_failed")
          const signIn = yield* browser(ORIGIN).request("POST", "/auth/sign-in", { email, password })
          assert.strictEqual(signIn.body.code, "csrf_failed")
          assert.strictEqual((yield* b.request("POST", "/v0/inboxes", { display_name: "Support" })).status, 200)
        }))
    }
  )

  layer(app(storage.layer, "closed"), { timeout: "120 seconds" })(`/auth sign-up (${storage.name}, INBOX_SIGNUP=closed)`, (it) => {
    it.effect("with sign-up closed, even the first sign-up is 403 forbidden", () =>
      Effect.gen(function*() {
        const res = yield* browser().request("POST", "/auth/sign-up", { email: uniqueEmail(), password: PASSWORD })
        assert.strictEqual(res.status, 403)
        assert.strictEqual(res.body.code, "forbidden")
        const app = yield* TestApp
        assert.strictEqual((yield* app.request("GET", "/auth/me", { headers: { origin: ORIGIN } })).status, 401)
      }))
  })
}
