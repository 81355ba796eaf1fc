/** Roles of dashboard sessions: what each may do, as the principal's permissions say (docs/auth.md, "Roles"). */
import { assert, describe, it } from "@effect/vitest"
import { AuthModel, holds, type Principal } from "@inbox/core/internal"

const sessionOf = (role: AuthModel.Role): Principal => {
  const permissions = AuthModel.permissionsOf(role)
  return {
    organizationId: "org_1",
    scope: { type: "organization" },
    ...(permissions === undefined ? {} : { permissions }),
    session: { userId: "user_1", role }
  }
}

describe("session roles", () => {
  it("billing routes accept owner and admin sessions, not member sessions", () => {
    for (const permission of ["billing_read", "billing_manage"] as const) {
      assert.isTrue(holds(sessionOf("owner"), permission))
      assert.isTrue(holds(sessionOf("admin"), permission))
      assert.isFalse(holds(sessionOf("member"), permission))
    }
  })

  it("a member works with mail but manages no API keys, domains, webhooks or the account", () => {
    const member = sessionOf("member")
    for (const p of ["inbox_read", "inbox_create", "message_send", "message_reply", "thread_read", "draft_send", "list_entry_create"] as const) {
      assert.isTrue(holds(member, p), p)
    }
    for (const p of ["api_key_create", "api_key_delete", "domain_create", "webhook_create", "account_update", "inbox_delete", "pod_delete"] as const) {
      assert.isFalse(holds(member, p), p)
    }
  })
})
