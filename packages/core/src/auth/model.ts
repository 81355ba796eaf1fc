/**
 * The wire shapes of the dashboard's /auth endpoints, the roles of a member and what each
 * may do, and the limits of accounts (password policy, lifetimes, attempt limits). The
 * rules that use them live in Auth.ts.
 */
import { Duration, Schema } from "effect"
import { type Permission, PERMISSIONS } from "../access/permissions.ts"
import { EmailAddress, Line, Name } from "../shared/fields.ts"

export const ROLES = ["owner", "admin", "member"] as const
export type Role = typeof ROLES[number]

/**
 * What a role may do through /v0 (docs/auth.md, "Roles"). Owner and admin hold everything within
 * the organization, billing included (the spec: billing accepts owner and admin sessions);
 * only the owner invites. A member works with mail (inboxes, threads, messages, drafts,
 * lists, pods) but manages no API keys, domains, webhooks or the account, and no billing.
 */
const MEMBER_DENIED: ReadonlySet<Permission> = new Set<Permission>([
  "account_update",
  "api_key_create", "api_key_delete", "api_key_update",
  "app_connect", "app_share_owner",
  "domain_create", "domain_delete", "domain_update",
  "webhook_create", "webhook_delete", "webhook_update",
  "pod_delete", "inbox_delete"
])
const MEMBER_PERMISSIONS: ReadonlySet<Permission> = new Set(PERMISSIONS.filter((p) => !MEMBER_DENIED.has(p)))

/** A role's permission list for the principal: absent (everything) for owner and admin. */
export const permissionsOf = (role: Role): ReadonlySet<Permission> | undefined => role === "member" ? MEMBER_PERMISSIONS : undefined

export const isRole = (value: string): value is Role => (ROLES as ReadonlyArray<string>).includes(value)

/** Password policy: 8 to 256 characters (NIST SP 800-63B: length, no composition rules). */
export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 256
export const NewPassword = Schema.String.check(
  Schema.isMinLength(PASSWORD_MIN, { message: `A password has at least ${PASSWORD_MIN} characters` }),
  Schema.isMaxLength(PASSWORD_MAX, { message: `A password has at most ${PASSWORD_MAX} characters` })
)
/** A password being checked, not chosen: any length the policy ever allowed, bounded so hashing stays cheap. */
const GivenPassword = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024))
const Token = Line(256)
/** A 6-digit authenticator code or a recovery code (`xxxxx-xxxxx`). */
const Code = Line(64)

export const SignUpInput = Schema.Struct({
  email: EmailAddress,
  password: NewPassword,
  name: Schema.optionalKey(Name),
  invitation_token: Schema.optionalKey(Token)
})
export const EmailInput = Schema.Struct({ email: EmailAddress })
export const TokenInput = Schema.Struct({ token: Token })
export const SignInInput = Schema.Struct({ email: EmailAddress, password: GivenPassword, totp_code: Schema.optionalKey(Code) })
export const ResetPasswordInput = Schema.Struct({ token: Token, password: NewPassword })
export const ChangePasswordInput = Schema.Struct({ current_password: GivenPassword, new_password: NewPassword })
export const CodeInput = Schema.Struct({ code: Code })
export const InviteInput = Schema.Struct({
  email: EmailAddress,
  role: Schema.optionalKey(Schema.Literals(["admin", "member"]))
})
export const UpdateMemberInput = Schema.Struct({ role: Schema.Literals(ROLES) })
export const SwitchOrganizationInput = Schema.Struct({ organization_id: Line(512) })

/** Sessions: renewed on use, ended after this long unused, and after this long in any case. */
export const SESSION_IDLE = Duration.hours(24)
export const SESSION_ABSOLUTE = Duration.days(14)
/** Lifetimes of mailed links. */
export const VERIFY_TOKEN_TTL = Duration.hours(24)
export const RESET_TOKEN_TTL = Duration.hours(1)
export const INVITE_TOKEN_TTL = Duration.days(7)
/** An account whose address is not verified this long after sign-up is deleted (retention's purge). */
export const UNVERIFIED_ACCOUNT_TTL = Duration.days(7)
/** Wrong passwords and codes: per account and per client IP, in fixed windows. */
export const ATTEMPT_WINDOW = Duration.minutes(15)
export const ACCOUNT_ATTEMPTS = 10
export const IP_ATTEMPTS = 100
export const RECOVERY_CODES = 10
