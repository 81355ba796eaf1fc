/**
 * Managing an organization's people over /auth (docs/auth.md): revoking an invitation, changing
 * a member's role and removing a member, owner only; the last owner stays (409 last_owner).
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { type Browser, browser, mailedToken, signedInOwner, uniqueEmail } from "./auth-helpers.ts"

const PASSWORD = "correct horse battery"

const app = (storage: (typeof storages extends () => ReadonlyArray<infer S> ? S : never)["layer"]) =>
  TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage, { trustedProxies: ["local"], signup: "open" })))

/** A new person invited by `owner` with `role`, signed up through the link and signed in: their browser and user id. */
const joined = (owner: Browser, role: "admin" | "member" = "member") =>
  Effect.gen(function*() {
    const email = uniqueEmail(role)
    const invited = yield* owner.request("POST", "/auth/invitations", { email, role })
    assert.strictEqual(invited.status, 200, invited.text)
    const b = browser()
    const up = yield* b.request("POST", "/auth/sign-up", { email, password: PASSWORD, invitation_token: yield* mailedToken(email, "accept-invitation") })
    assert.strictEqual(up.status, 202, up.text)
    const signIn = yield* b.request("POST", "/auth/sign-in", { email, password: PASSWORD })
    assert.strictEqual(signIn.status, 200, signIn.text)
    return { browser: b, email, userId: signIn.body.user.user_id as string }
  })

const ownersOf = (organizationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ user_id: string }>`SELECT user_id FROM memberships WHERE organization_id = ${organizationId} AND role = 'owner'`.pipe(
      Effect.map((rows) => rows.map((r) => r.user_id))
    ))

for (const storage of storages()) {
  layer(app(storage.layer), { timeout: "180 seconds" })(`/auth members management (${storage.name})`, (it) => {
    it.effect("the owner revokes a pending invitation: it leaves the list and its link, and any older link to the same address, answers 400 invalid_token", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const email = uniqueEmail("revoked")
        yield* owner.browser.request("POST", "/auth/invitations", { email })
        const older = yield* mailedToken(email, "accept-invitation")
        yield* TestClock.adjust("1 minute")
        const invited = yield* owner.browser.request("POST", "/auth/invitations", { email, role: "admin" })
        const newer = yield* mailedToken(email, "accept-invitation")
        const listed = yield* owner.browser.request("GET", "/auth/members")
        assert.deepStrictEqual(listed.body.invitations.map((i: { invitation_id: string }) => i.invitation_id), [invited.body.invitation_id])
        const revoked = yield* owner.browser.request("DELETE", `/auth/invitations/${invited.body.invitation_id}`)
        assert.strictEqual(revoked.status, 204, revoked.text)
        assert.deepStrictEqual((yield* owner.browser.request("GET", "/auth/members")).body.invitations, [])
        for (const token of [newer, older]) {
          const up = yield* browser().request("POST", "/auth/sign-up", { email, password: PASSWORD, invitation_token: token })
          assert.strictEqual(up.status, 400, up.text)
          assert.strictEqual(up.body.code, "invalid_token")
        }
        const again = yield* owner.browser.request("DELETE", `/auth/invitations/${invited.body.invitation_id}`)
        assert.strictEqual(again.status, 404)
        assert.strictEqual(again.body.code, "not_found")
      }))

    it.effect("an existing account's revoked invitation cannot be accepted (400 invalid_token)", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const other = yield* signedInOwner()
        const invited = yield* owner.browser.request("POST", "/auth/invitations", { email: other.email })
        const token = yield* mailedToken(other.email, "accept-invitation")
        assert.strictEqual((yield* owner.browser.request("DELETE", `/auth/invitations/${invited.body.invitation_id}`)).status, 204)
        const accepted = yield* other.browser.request("POST", "/auth/invitations/accept", { token })
        assert.strictEqual(accepted.status, 400)
        assert.strictEqual(accepted.body.code, "invalid_token")
      }))

    it.effect("only the owner revokes an invitation, changes a role or removes a member (403 forbidden); another organization's invitation or member is 404", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const admin = yield* joined(owner.browser, "admin")
        const member = yield* joined(owner.browser)
        const invited = yield* owner.browser.request("POST", "/auth/invitations", { email: uniqueEmail("pending") })
        for (const b of [admin.browser, member.browser]) {
          const forbidden = [
            yield* b.request("DELETE", `/auth/invitations/${invited.body.invitation_id}`),
            yield* b.request("PATCH", `/auth/members/${member.userId}`, { role: "admin" }),
            yield* b.request("DELETE", `/auth/members/${member.userId}`)
          ]
          for (const res of forbidden) {
            assert.strictEqual(res.status, 403, res.text)
            assert.strictEqual(res.body.code, "forbidden")
          }
        }
        const stranger = yield* signedInOwner()
        const theirs = yield* stranger.browser.request("DELETE", `/auth/invitations/${invited.body.invitation_id}`)
        assert.strictEqual(theirs.status, 404)
        const notTheirs = yield* stranger.browser.request("PATCH", `/auth/members/${member.userId}`, { role: "admin" })
        assert.strictEqual(notTheirs.status, 404)
        assert.strictEqual(notTheirs.body.code, "not_found")
        const listed = yield* owner.browser.request("GET", "/auth/members")
        assert.deepStrictEqual(listed.body.members.map((m: { role: string }) => m.role), ["owner", "admin", "member"], "nothing changed")
        assert.strictEqual(listed.body.invitations.length, 1)
      }))

    it.effect("the owner changes a member's role: the answer is the member, and the new role's permissions hold at once for the member's session", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const member = yield* joined(owner.browser)
        assert.strictEqual((yield* member.browser.request("POST", "/v0/api-keys", { name: "before" })).status, 403)
        const promoted = yield* owner.browser.request("PATCH", `/auth/members/${member.userId}`, { role: "admin" })
        assert.strictEqual(promoted.status, 200, promoted.text)
        assert.strictEqual(promoted.body.user_id, member.userId)
        assert.strictEqual(promoted.body.email, member.email)
        assert.strictEqual(promoted.body.role, "admin")
        const key = yield* member.browser.request("POST", "/v0/api-keys", { name: "as admin" })
        assert.strictEqual(key.status, 200, "an admin manages API keys, from the next request on")
        const demoted = yield* owner.browser.request("PATCH", `/auth/members/${member.userId}`, { role: "member" })
        assert.strictEqual(demoted.body.role, "member")
        assert.strictEqual((yield* member.browser.request("POST", "/v0/api-keys", { name: "after" })).status, 403)
        const unknownRole = yield* owner.browser.request("PATCH", `/auth/members/${member.userId}`, { role: "boss" })
        assert.strictEqual(unknownRole.status, 400)
        assert.strictEqual(unknownRole.body.code, "validation_error")
      }))

    it.effect("the last owner cannot be demoted or removed (409 last_owner); with a second owner, the first may step down", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const me = (yield* owner.browser.request("GET", "/auth/me")).body.user.user_id as string
        const demote = yield* owner.browser.request("PATCH", `/auth/members/${me}`, { role: "admin" })
        assert.strictEqual(demote.status, 409, demote.text)
        assert.strictEqual(demote.body.code, "last_owner")
        const remove = yield* owner.browser.request("DELETE", `/auth/members/${me}`)
        assert.strictEqual(remove.status, 409)
        assert.strictEqual(remove.body.code, "last_owner")
        const second = yield* joined(owner.browser, "admin")
        assert.strictEqual((yield* owner.browser.request("PATCH", `/auth/members/${second.userId}`, { role: "owner" })).status, 200)
        const steppedDown = yield* owner.browser.request("PATCH", `/auth/members/${me}`, { role: "member" })
        assert.strictEqual(steppedDown.status, 200, steppedDown.text)
        assert.deepStrictEqual(yield* ownersOf(owner.organizationId), [second.userId])
        const last = yield* second.browser.request("DELETE", `/auth/members/${second.userId}`)
        assert.strictEqual(last.body.code, "last_owner")
      }))

    it.effect("two owners stepping down at once leave the organization one owner: one is refused 409 last_owner", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const me = (yield* owner.browser.request("GET", "/auth/me")).body.user.user_id as string
        const second = yield* joined(owner.browser, "admin")
        assert.strictEqual((yield* owner.browser.request("PATCH", `/auth/members/${second.userId}`, { role: "owner" })).status, 200)
        const answers = yield* Effect.all([
          owner.browser.request("PATCH", `/auth/members/${me}`, { role: "admin" }),
          second.browser.request("PATCH", `/auth/members/${second.userId}`, { role: "admin" })
        ], { concurrency: "unbounded" })
        assert.sameMembers(answers.map((a) => a.status), [200, 409])
        assert.strictEqual(answers.find((a) => a.status === 409)?.body.code, "last_owner")
        assert.strictEqual((yield* ownersOf(owner.organizationId)).length, 1)
      }))

    it.effect("the owner removes a member: they leave the list, and their session for the organization stops working", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const member = yield* joined(owner.browser)
        const inbox = yield* member.browser.request("GET", "/v0/inboxes")
        assert.strictEqual(inbox.status, 200)
        const removed = yield* owner.browser.request("DELETE", `/auth/members/${member.userId}`)
        assert.strictEqual(removed.status, 204, removed.text)
        const listed = yield* owner.browser.request("GET", "/auth/members")
        assert.deepStrictEqual(listed.body.members.map((m: { email: string }) => m.email), [owner.email])
        assert.strictEqual((yield* member.browser.request("GET", "/v0/inboxes")).status, 401)
        assert.strictEqual((yield* member.browser.request("GET", "/auth/members")).status, 401)
        const again = yield* owner.browser.request("DELETE", `/auth/members/${member.userId}`)
        assert.strictEqual(again.status, 404)
        // The person's account stays: signed in again, they belong to no organization.
        const back = yield* member.browser.request("POST", "/auth/sign-in", { email: member.email, password: PASSWORD })
        assert.strictEqual(back.status, 200, back.text)
        assert.deepStrictEqual(back.body.organizations, [])
      }))

    it.effect("member management needs the session's CSRF token (403 csrf_failed)", () =>
      Effect.gen(function*() {
        const owner = yield* signedInOwner()
        const member = yield* joined(owner.browser)
        const withoutToken = yield* owner.browser.request("DELETE", `/auth/members/${member.userId}`, undefined, { "x-csrf-token": "" })
        assert.strictEqual(withoutToken.status, 403)
        assert.strictEqual(withoutToken.body.code, "csrf_failed")
        const listed = yield* owner.browser.request("GET", "/auth/members")
        assert.strictEqual(listed.body.members.length, 2)
      }))
  })
}
