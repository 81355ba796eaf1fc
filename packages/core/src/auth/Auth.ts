/**
 * Auth: accounts for people, who sign in to the dashboard and act on their organizations
 * through the same catalogue as API keys, with their role's permissions (model.ts).
 *
 * Rules (spec, "Authentication" point 5 and "Codes on dashboard session endpoints"):
 * - passwords are hashed with Argon2id (m=19 MiB, t=2, p=1); a sign-in with an unknown email
 *   still verifies a hash, so timing does not tell accounts apart, and no answer of sign-up,
 *   resend-verification or password reset depends on whether an account exists;
 * - wrong passwords and codes are counted per account and per client IP in the database
 *   (every process sees one count); past the limit, 429 too_many_attempts with Retry-After.
 *   An attempt is counted before it is checked and forgiven when it succeeds, so parallel
 *   guesses cannot slip past the limit;
 * - a session id is 256 random bits, stored as its SHA-256; it ends after SESSION_IDLE unused
 *   and SESSION_ABSOLUTE in any case, on sign-out, and (every session of the person) on a
 *   password change or reset. A state-changing session request needs the session's CSRF
 *   token in `x-csrf-token` and a same-origin `Origin`, else 403 csrf_failed;
 * - mailed links (verification, reset, invitation) carry 256-bit tokens stored hashed, each
 *   used once (one conditional UPDATE), else 400 invalid_token;
 * - two-step: setup stores a secret (enable before it is 400 2fa_not_set_up); enable and
 *   disable need a valid code (400 invalid_code); a TOTP step is accepted once; ten
 *   recovery codes, each usable once; sign-in with two-step on needs `totp_code` (401
 *   totp_required, wrong: 401 invalid_totp);
 * - INBOX_SIGNUP: `open` (anyone; each sign-up owns a new organization), `invite` (the
 *   default: only with an invitation, except the first person on a fresh server, who owns
 *   the first organization), `closed` (no sign-up: 403 forbidden);
 * - an account owns and does nothing until its address is verified (by the mailed
 *   verification, reset or invitation link), so whoever signs up with someone else's address
 *   can set nothing up for its owner to inherit: the organization a sign-up is owed is
 *   created at verification; an unverified session may read GET /auth/me, sign out and
 *   accept an invitation (whose link proves the address), and everything else it asks, on
 *   /auth or as a /v0 principal (`principalOf`), is 403 email_not_verified (`requireVerified`).
 *   A reset link used on a never-verified account verifies it and discards what an earlier
 *   holder set up (two-step, organizations, the owed organization's name; the reset ends every
 *   session). An account not verified within UNVERIFIED_ACCOUNT_TTL is deleted by the
 *   retention purge;
 * - invitations: only the organization's owner invites (403 forbidden), with a verified
 *   email (403 email_not_verified); a member already is 409 already_member;
 * - members: only an owner revokes an invitation, changes a role or removes a member (403
 *   forbidden); the last owner cannot be demoted or removed (409 last_owner), checked with
 *   the owners' rows locked; a removed member's sessions in the organization end.
 */
import { hash, verify } from "@node-rs/argon2"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { Secret, TOTP } from "otpauth"
import { checkSameOrigin } from "../access/hosts.ts"
import type { Principal } from "../access/Principal.ts"
import type { NewSession, Session } from "../access/Session.ts"
import { Egress } from "../egress/Egress.ts"
import {
  AlreadyMember,
  CsrfFailed,
  EmailNotVerified,
  Forbidden,
  InvalidCode,
  InvalidCredentials,
  InvalidToken,
  InvalidTotp,
  LastOwner,
  NotFound,
  type RateLimited,
  TooManyAttempts,
  TotpRequired,
  TwoFactorAlreadyEnabled,
  TwoFactorNotSetUp,
  type ValidationError
} from "../errors/errors.ts"
import { compose } from "../mail/compose.ts"
import { Organizations } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { RATE_POLICIES, RateLimiter } from "../ratelimit/RateLimiter.ts"
import { Settings } from "../settings/Settings.ts"
import { resealing, type SealedPlace } from "../shared/SecretRotation.ts"
import { openStored, sealIfKey } from "../shared/sealing.ts"
import { sameSecret } from "../shared/secrets.ts"
import { decodeRows, Int8 } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { MailTransport } from "../transport/MailTransport.ts"
import {
  ACCOUNT_ATTEMPTS,
  ATTEMPT_WINDOW,
  type ChangePasswordInput,
  INVITE_TOKEN_TTL,
  type InviteInput,
  IP_ATTEMPTS,
  isRole,
  permissionsOf,
  RECOVERY_CODES,
  RESET_TOKEN_TTL,
  type Role,
  SESSION_ABSOLUTE,
  SESSION_IDLE,
  type SignInInput,
  type SignUpInput,
  UNVERIFIED_ACCOUNT_TTL,
  VERIFY_TOKEN_TTL
} from "./model.ts"

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex")

// OWASP's Argon2id minimum: 19 MiB of memory, 2 passes, 1 lane.
const ARGON2 = { algorithm: 2 /* Argon2id */, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const
const hashPassword = (password: string) => Effect.promise(() => hash(password, ARGON2))
const passwordMatches = (passwordHash: string, password: string) => Effect.promise(() => verify(passwordHash, password).catch(() => false))

const TOTP_PERIOD = 30
const totpOf = (secret: string, email: string) =>
  new TOTP({ issuer: "Inbox", label: email, algorithm: "SHA1", digits: 6, period: TOTP_PERIOD, secret: Secret.fromBase32(secret) })

/** A recovery code as typed: case, spaces and dashes do not matter. */
const normaliseRecovery = (code: string) => code.toLowerCase().replace(/[\s-]/g, "")

const UserRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  password_hash: Schema.String,
  email_verified_at: Schema.NullOr(Schema.Date),
  totp_secret: Schema.NullOr(Schema.String),
  totp_enabled: Schema.Boolean,
  totp_last_step: Schema.NullOr(Int8),
  pending_organization: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
type UserRow = typeof UserRow.Type

const SessionRow = Schema.Struct({
  id_hash: Schema.String,
  user_id: Schema.String,
  organization_id: Schema.NullOr(Schema.String),
  csrf_token: Schema.String,
  created_at: Schema.Date,
  last_seen_at: Schema.Date,
  expires_at: Schema.Date
})

const TokenRow = Schema.Struct({
  token_hash: Schema.String,
  purpose: Schema.String,
  email: Schema.String,
  user_id: Schema.NullOr(Schema.String),
  organization_id: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Schema.String),
  expires_at: Schema.Date,
  used_at: Schema.NullOr(Schema.Date)
})

const MembershipRow = Schema.Struct({ organization_id: Schema.String, name: Schema.String, role: Schema.String })

/** A signed-in person, as a request's session resolves to. */
export type { NewSession, Session } from "../access/Session.ts"

export const Me = Schema.Struct({
  user: Schema.Struct({
    user_id: Schema.String,
    email: Schema.String,
    email_verified: Schema.Boolean,
    two_factor_enabled: Schema.Boolean,
    created_at: Schema.String
  }),
  organization_id: Schema.NullOr(Schema.String),
  organizations: Schema.Array(Schema.Struct({ organization_id: Schema.String, name: Schema.String, role: Schema.String })),
  csrf_token: Schema.String
})
export type Me = typeof Me.Type

export const Member = Schema.Struct({ user_id: Schema.String, email: Schema.String, role: Schema.String, joined_at: Schema.String })
export type Member = typeof Member.Type

/** The people of the session's organization with their roles, and the invitations not yet accepted. */
export const Members = Schema.Struct({
  organization_id: Schema.String,
  members: Schema.Array(Member),
  invitations: Schema.Array(Schema.Struct({ invitation_id: Schema.String, email: Schema.String, role: Schema.String, expires_at: Schema.String }))
})
export type Members = typeof Members.Type

export interface Invitation {
  readonly invitation_id: string
  readonly organization_id: string
  readonly email: string
  readonly role: Role
  readonly expires_at: string
}

const invalidCredentials = () =>
  new InvalidCredentials({ message: "The email or password is wrong.", fix: "Check both, or reset the password." })

const invalidToken = (what: string) =>
  new InvalidToken({ message: `The ${what} link is invalid, used or expired.`, fix: "Ask for a new link." })

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** Where Auth keeps a sealed secret: each person's authenticator secret. */
export const AUTH_SEALED: ReadonlyArray<SealedPlace> = [{ purpose: "totp", table: "users", owner: "id", column: "totp_secret" }]

export class Auth extends Context.Service<Auth, {
  signUp(input: typeof SignUpInput.Type): Effect.Effect<void, Forbidden | InvalidToken | ValidationError>
  verifyEmail(token: string): Effect.Effect<void, InvalidToken>
  resendVerification(email: string): Effect.Effect<void, RateLimited>
  signIn(input: typeof SignInInput.Type, clientIp: string): Effect.Effect<NewSession, InvalidCredentials | TotpRequired | InvalidTotp | TooManyAttempts>
  /** The live session a cookie names, renewing its idle time; undefined when unknown, expired or ended. */
  session(sessionId: string): Effect.Effect<Session | undefined>
  /**
   * The principal a session acts as in its organization, with its role's permissions;
   * undefined without a membership; 403 email_not_verified while the address is unverified.
   */
  principalOf(session: Session): Effect.Effect<Principal | undefined, EmailNotVerified>
  /** The CSRF rule of a session request: a state-changing method needs the token and a same-origin Origin. */
  checkCsrf(session: Session | undefined, request: { readonly method: string; readonly csrfToken: string | undefined; readonly origin: string | undefined; readonly host: string | undefined }): Effect.Effect<void, CsrfFailed, Settings>
  signOut(session: Session): Effect.Effect<void>
  me(session: Session): Effect.Effect<Me>
  switchOrganization(session: Session, organizationId: string): Effect.Effect<void, NotFound | EmailNotVerified>
  requestPasswordReset(email: string): Effect.Effect<void, RateLimited>
  resetPassword(token: string, password: string): Effect.Effect<void, InvalidToken | ValidationError>
  changePassword(session: Session, input: typeof ChangePasswordInput.Type, clientIp: string): Effect.Effect<NewSession, InvalidCredentials | TooManyAttempts | ValidationError | EmailNotVerified>
  setupTwoFactor(session: Session): Effect.Effect<{ readonly secret: string; readonly otpauth_uri: string }, TwoFactorAlreadyEnabled | EmailNotVerified>
  enableTwoFactor(session: Session, code: string, clientIp: string): Effect.Effect<{ readonly recovery_codes: ReadonlyArray<string> }, TwoFactorNotSetUp | TwoFactorAlreadyEnabled | InvalidCode | TooManyAttempts | EmailNotVerified>
  disableTwoFactor(session: Session, code: string, clientIp: string): Effect.Effect<void, TwoFactorNotSetUp | InvalidCode | TooManyAttempts | EmailNotVerified>
  invite(session: Session, input: typeof InviteInput.Type): Effect.Effect<Invitation, EmailNotVerified | Forbidden | AlreadyMember>
  acceptInvitation(session: Session, token: string): Effect.Effect<{ readonly organization_id: string; readonly role: Role }, InvalidToken | AlreadyMember>
  /** The members of the session's organization (owners, admins, members; each oldest first) and its pending invitations (403 forbidden without one). */
  members(session: Session): Effect.Effect<Members, EmailNotVerified | Forbidden>
  /** Revokes a pending invitation of the session's organization (owner only): its link, and any older one to the same address, then answers invalid_token. */
  revokeInvitation(session: Session, invitationId: string): Effect.Effect<void, EmailNotVerified | Forbidden | NotFound>
  /** Gives a member another role (owner only); the last owner keeps theirs (409 last_owner). */
  updateMember(session: Session, userId: string, role: Role): Effect.Effect<Member, EmailNotVerified | Forbidden | NotFound | LastOwner>
  /** Removes a member (owner only) and ends their sessions in the organization; never the last owner (409 last_owner). */
  removeMember(session: Session, userId: string): Effect.Effect<void, EmailNotVerified | Forbidden | NotFound | LastOwner>
  /**
   * The wrong-password count of another sign-in (IMAP and SMTP submission with an API key):
   * `count` before checking (429 too_many_attempts past the limit, per account and client
   * IP, as for the dashboard), `succeeded` forgives it.
   */
  attempts(account: string, clientIp: string): { readonly count: Effect.Effect<void, TooManyAttempts>; readonly succeeded: Effect.Effect<void> }
  /** Deletes up to `limit` accounts created before `before` whose address was never verified; answers how many. */
  purgeUnverified(before: Date, limit: number): Effect.Effect<number>
}>()("inbox/Auth") {
  static readonly layerNoDeps = Layer.effect(Auth, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const organizations = yield* Organizations
    const transport = yield* MailTransport
    const limiter = yield* RateLimiter
    const egress = yield* Egress
    // Verified against when no account has the email, so an unknown email costs what a wrong password costs.
    const decoyHash = yield* Effect.cached(Effect.flatMap(ids.secret(16), hashPassword))

    const mail = Effect.fn("Auth.mail")(function*(to: string, subject: string, lines: ReadonlyArray<string>) {
      const composed = yield* compose("send", { to, subject, text: lines.join("\n") }, {
        inbox: { email: settings.systemFrom, display_name: "Inbox accounts" }
      }).pipe(Effect.orDie, Effect.provideService(Egress, egress), Effect.provideService(Ids, ids))
      yield* transport.send({ envelope: composed.envelope, raw: composed.raw, subject: composed.subject }).pipe(
        // A relay refusing the address must not answer differently from a delivered mail (no enumeration).
        Effect.catchTag("MessageRejected", (e) => Effect.logWarning(`account mail to ${to} refused: ${e.message}`))
      )
    })

    const link = (path: string, token: string) => `${settings.publicUrl}/${path}?token=${token}`

    const userByEmail = (email: string) =>
      sql`SELECT * FROM users WHERE email = ${email.toLowerCase()}`.pipe(decodeRows(UserRow), Effect.map((rows) => rows[0]))
    const userById = (id: string) =>
      sql`SELECT * FROM users WHERE id = ${id}`.pipe(decodeRows(UserRow), Effect.map((rows) => rows[0]), Effect.flatMap((u) => u === undefined ? Effect.die(`user ${id} vanished`) : Effect.succeed(u)))

    const issueToken = Effect.fn("Auth.issueToken")(function*(
      purpose: "verify" | "reset" | "invite",
      ttl: Duration.Duration,
      fields: { readonly email: string; readonly userId?: string; readonly organizationId?: string; readonly role?: Role; readonly invitedBy?: string; readonly invitationId?: string }
    ) {
      const token = yield* ids.secret(32)
      const at = yield* now
      const expiresAt = new Date(at.getTime() + Duration.toMillis(ttl))
      yield* sql`INSERT INTO auth_tokens ${
        sql.insert({
          token_hash: sha256(token),
          purpose,
          email: fields.email,
          user_id: fields.userId ?? null,
          organization_id: fields.organizationId ?? null,
          role: fields.role ?? null,
          invited_by: fields.invitedBy ?? null,
          invitation_id: fields.invitationId ?? null,
          expires_at: expiresAt,
          created_at: at
        })
      }`.pipe(Effect.orDie)
      return { token, expiresAt }
    })

    /** The unused, unexpired token of `purpose`, without using it. */
    const findToken = (purpose: string, token: string) =>
      Effect.flatMap(now, (at) =>
        sql`SELECT * FROM auth_tokens WHERE token_hash = ${sha256(token)} AND purpose = ${purpose}
          AND used_at IS NULL AND expires_at > ${at}`.pipe(decodeRows(TokenRow), Effect.map((rows) => rows[0])))

    /** Uses the token once: of two parallel requests, one gets the row. */
    const useToken = (purpose: string, token: string) =>
      Effect.flatMap(now, (at) =>
        sql`UPDATE auth_tokens SET used_at = ${at} WHERE token_hash = ${sha256(token)} AND purpose = ${purpose}
          AND used_at IS NULL AND expires_at > ${at} RETURNING *`.pipe(decodeRows(TokenRow), Effect.map((rows) => rows[0])))

    const sendVerification = Effect.fn("Auth.sendVerification")(function*(user: { readonly id: string; readonly email: string }) {
      const { token } = yield* issueToken("verify", VERIFY_TOKEN_TTL, { email: user.email, userId: user.id })
      yield* mail(user.email, "Confirm your email address", [
        "Confirm the email address of your Inbox account by opening this link within 24 hours:",
        "",
        link("verify-email", token),
        "",
        "If you did not create an account, ignore this message: nothing can be done with the account",
        `until this address is confirmed, and it is deleted after ${Duration.toDays(UNVERIFIED_ACCOUNT_TTL)} days.`
      ])
    })

    /**
     * Counts one attempt against `key`; fails with 429 once more than `limit` were counted in
     * the current window. The window restarts when it has passed.
     */
    const countAttempt = (key: string, limit: number) =>
      Effect.gen(function*() {
        const at = yield* now
        const windowMs = Duration.toMillis(ATTEMPT_WINDOW)
        const cutoff = new Date(at.getTime() - windowMs)
        const rows = yield* sql<{ failures: number; window_start: Date }>`INSERT INTO auth_attempts (key, window_start, failures)
          VALUES (${key}, ${at}, 1)
          ON CONFLICT (key) DO UPDATE SET
            failures = CASE WHEN auth_attempts.window_start <= ${cutoff} THEN 1 ELSE auth_attempts.failures + 1 END,
            window_start = CASE WHEN auth_attempts.window_start <= ${cutoff} THEN ${at} ELSE auth_attempts.window_start END
          RETURNING failures, window_start`.pipe(Effect.orDie)
        const row = rows[0]
        if (row === undefined || row.failures <= limit) return
        const retryAfterSeconds = Math.max(1, Math.ceil((new Date(row.window_start).getTime() + windowMs - at.getTime()) / 1000))
        return yield* new TooManyAttempts({
          message: `Too many wrong passwords or codes; try again in ${retryAfterSeconds} seconds.`,
          retryAfterSeconds
        })
      })

    const forgive = (key: string) => sql`UPDATE auth_attempts SET failures = failures - 1 WHERE key = ${key} AND failures > 0`.pipe(Effect.orDie, Effect.asVoid)

    /** Counts an attempt for the account and the client IP; `succeeded` forgives both. */
    const attempt = (email: string, clientIp: string) => {
      const keys = [`ip:${clientIp}`, `account:${email.toLowerCase()}`] as const
      return {
        count: Effect.andThen(countAttempt(keys[0], IP_ATTEMPTS), countAttempt(keys[1], ACCOUNT_ATTEMPTS)),
        succeeded: Effect.andThen(forgive(keys[0]), forgive(keys[1]))
      }
    }

    /**
     * The authenticator secret: sealed rows open with INBOX_SECRET_KEY (undefined when they do
     * not, so no code is accepted by it; recovery codes still are); rows from before sealing
     * are plain base32.
     */
    const openTotp = (userId: string, stored: string) => openStored(settings.secretKey, "totp", userId, stored)

    /** Accepts an authenticator code (once per time step) or an unused recovery code. */
    const acceptCode = Effect.fn("Auth.acceptCode")(function*(user: UserRow, code: string, allowRecovery: boolean) {
      const at = yield* now
      const totpSecret = user.totp_secret === null ? undefined : yield* openTotp(user.id, user.totp_secret)
      if (totpSecret !== undefined && /^\d{6}$/.test(code.trim())) {
        const delta = totpOf(totpSecret, user.email).validate({ token: code.trim(), timestamp: at.getTime(), window: 1 })
        if (delta === null) return false
        const step = Math.floor(at.getTime() / 1000 / TOTP_PERIOD) + delta
        const taken = yield* sql`UPDATE users SET totp_last_step = ${step} WHERE id = ${user.id}
          AND (totp_last_step IS NULL OR totp_last_step < ${step}) RETURNING id`.pipe(Effect.orDie)
        return taken.length === 1
      }
      if (!allowRecovery) return false
      const used = yield* sql`UPDATE recovery_codes SET used_at = ${at}
        WHERE user_id = ${user.id} AND code_hash = ${sha256(normaliseRecovery(code))} AND used_at IS NULL
        RETURNING user_id`.pipe(Effect.orDie)
      return used.length === 1
    })

    const defaultOrganization = (userId: string) =>
      sql<{ organization_id: string }>`SELECT organization_id FROM memberships WHERE user_id = ${userId}
        ORDER BY (role = 'owner') DESC, created_at, organization_id LIMIT 1`.pipe(Effect.orDie, Effect.map((rows) => rows[0]?.organization_id ?? null))

    const createSession = Effect.fn("Auth.createSession")(function*(userId: string, organizationId: string | null) {
      const sessionId = yield* ids.secret(32)
      const csrfToken = yield* ids.secret(32)
      const at = yield* now
      const expiresAt = new Date(at.getTime() + Duration.toMillis(SESSION_ABSOLUTE))
      yield* sql`INSERT INTO sessions ${
        sql.insert({ id_hash: sha256(sessionId), user_id: userId, organization_id: organizationId, csrf_token: csrfToken, created_at: at, last_seen_at: at, expires_at: expiresAt })
      }`.pipe(Effect.orDie)
      return { sessionId, csrfToken, expiresAt }
    })

    const endSessions = (userId: string) => sql`DELETE FROM sessions WHERE user_id = ${userId}`.pipe(Effect.orDie, Effect.asVoid)

    const storePassword = (userId: string, passwordHash: string) =>
      Effect.gen(function*() {
        const at = yield* now
        yield* sql`UPDATE users SET password_hash = ${passwordHash}, updated_at = ${at} WHERE id = ${userId}`.pipe(Effect.orDie)
        // A new password ends every session: whoever knew the old one is signed out.
        yield* endSessions(userId)
      })

    const samePasswordAsEmail = (email: string, password: string) =>
      password.trim().toLowerCase() === email.toLowerCase()
        ? Effect.fail(validationError([{ path: ["password"], message: "The password may not be the email address" }]))
        : Effect.void

    /**
     * The address is proved (a verification, reset or invitation link reached it): the account
     * is verified and gets the organization it is owed, which it could not own before. The row
     * lock makes one of two links used together create it; the person's sessions without an
     * organization move into it.
     */
    const verifyUser = (user: { readonly id: string; readonly email: string }) =>
      sql.withTransaction(Effect.gen(function*() {
        const at = yield* now
        const row = (yield* sql`SELECT * FROM users WHERE id = ${user.id} FOR UPDATE`.pipe(decodeRows(UserRow)))[0]
        if (row === undefined) return
        if (row.email_verified_at === null || row.pending_organization !== null) {
          yield* sql`UPDATE users SET email_verified_at = ${row.email_verified_at ?? at}, pending_organization = NULL, updated_at = ${at}
            WHERE id = ${user.id}`
        }
        if (row.pending_organization !== null) {
          const { organization } = yield* organizations.create({ ownerEmail: row.email, name: row.pending_organization, verified: true })
          yield* sql`INSERT INTO memberships ${sql.insert({ organization_id: organization.id, user_id: user.id, role: "owner", created_at: at })}`
          yield* sql`UPDATE sessions SET organization_id = ${organization.id} WHERE user_id = ${user.id} AND organization_id IS NULL`
        }
        yield* organizations.verifyOwnerEmail(user.email)
      })).pipe(Effect.orDie)

    /**
     * What was set up on an account before its address was proved, discarded when a reset link
     * proves it: whoever signed up with the address may have set it up (two-step sign-in, an
     * organization with its webhooks, the name of the organization owed). An unverified account
     * can set none of it up (`requireVerified`), so only accounts from before that rule hold any;
     * the reset itself ends every session. An organization it owns alone is deleted with
     * everything in it, and the account is owed a new one.
     */
    const discardUnproved = Effect.fn("Auth.discardUnproved")(function*(user: UserRow) {
      const at = yield* now
      const owned = yield* sql<{ organization_id: string }>`SELECT m.organization_id FROM memberships m
        WHERE m.user_id = ${user.id} AND m.role = 'owner'
        AND NOT EXISTS (SELECT 1 FROM memberships o WHERE o.organization_id = m.organization_id AND o.user_id <> m.user_id)`
      for (const { organization_id } of owned) yield* organizations.discardUnverified(organization_id)
      const memberships = yield* sql`DELETE FROM memberships WHERE user_id = ${user.id} RETURNING organization_id`
      const owed = user.pending_organization !== null || memberships.length > 0 || owned.length > 0
      yield* sql`UPDATE users SET totp_secret = NULL, totp_enabled = false, totp_last_step = NULL,
        pending_organization = ${owed ? user.email : null}, updated_at = ${at} WHERE id = ${user.id}`
      yield* sql`DELETE FROM recovery_codes WHERE user_id = ${user.id}`
    })

    const role = (userId: string, organizationId: string) =>
      sql<{ role: string }>`SELECT role FROM memberships WHERE user_id = ${userId} AND organization_id = ${organizationId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const r = rows[0]?.role
          return r !== undefined && isRole(r) ? r : undefined
        })
      )

    const onlyOwners = () => new Forbidden({ message: "Only the organization owner may manage members and invitations." })

    /** The session's organization when the session is one of its owners. */
    const requireOwner = (session: Session) =>
      Effect.gen(function*() {
        yield* requireVerified(session)
        const organizationId = session.organizationId
        if (organizationId === null || (yield* role(session.userId, organizationId)) !== "owner") return yield* onlyOwners()
        return organizationId
      })

    /**
     * Gives `userId` the role `next`, or removes them (`undefined`), as an owner of the
     * session's organization. The owners' rows are locked before the last-owner rule is
     * checked: two owners demoting or removing each other at once would otherwise each see the
     * other still an owner, and leave the organization with none. A removed member's sessions
     * in the organization end, so nothing they had open keeps acting there.
     */
    const changeMember = Effect.fn("Auth.changeMember")(function*(session: Session, userId: string, next: Role | undefined) {
      yield* requireVerified(session)
      const organizationId = session.organizationId
      if (organizationId === null) return yield* onlyOwners()
      const outcome = yield* sql.withTransaction(Effect.gen(function*() {
        const owners = (yield* sql<{ user_id: string }>`SELECT user_id FROM memberships
          WHERE organization_id = ${organizationId} AND role = 'owner' ORDER BY user_id FOR UPDATE`).map((r) => r.user_id)
        if (!owners.includes(session.userId)) return "forbidden" as const
        const target = (yield* sql<{ email: string; role: string; created_at: Date }>`SELECT u.email, m.role, m.created_at
          FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.organization_id = ${organizationId} AND m.user_id = ${userId} FOR UPDATE OF m`)[0]
        if (target === undefined) return "not_found" as const
        if (target.role === "owner" && next !== "owner" && owners.length === 1) return "last_owner" as const
        if (next === undefined) {
          yield* sql`DELETE FROM memberships WHERE organization_id = ${organizationId} AND user_id = ${userId}`
          yield* sql`DELETE FROM sessions WHERE user_id = ${userId} AND organization_id = ${organizationId}`
          return undefined
        }
        yield* sql`UPDATE memberships SET role = ${next} WHERE organization_id = ${organizationId} AND user_id = ${userId}`
        return { user_id: userId, email: target.email, role: next, joined_at: iso(new Date(target.created_at)) }
      })).pipe(Effect.orDie)
      if (outcome === "forbidden") return yield* onlyOwners()
      if (outcome === "not_found") return yield* new NotFound({ message: `Member ${userId} was not found in this organization.` })
      if (outcome === "last_owner") {
        return yield* new LastOwner({
          message: "The organization's only owner cannot be demoted or removed.",
          fix: "Make another member an owner first."
        })
      }
      return outcome
    })

    const alreadyHasAccount = (email: string) =>
      mail(email, "Someone tried to sign up with your email address", [
        "Someone tried to create an Inbox account with this email address, which already has one.",
        "",
        `If it was you, sign in instead, or reset your password at ${settings.publicUrl}/reset-password.`,
        "If it was not you, ignore this message."
      ])

    /**
     * The rule for a session whose address is not verified: it may read GET /auth/me, sign
     * out, and accept an invitation (the link proves the address, as the verification link
     * does); every other thing it asks, here and as a /v0 principal, is refused.
     */
    const requireVerified = (session: Session) =>
      session.emailVerified ? Effect.void : Effect.fail(
        new EmailNotVerified({
          message: "Verify your email address first: until then the account can do nothing else.",
          fix: "Open the link mailed to you, or POST /auth/resend-verification for a new one."
        })
      )

    return Auth.of({
      attempts: (account, clientIp) => attempt(account, clientIp),
      signUp: Effect.fn("Auth.signUp")(function*(input) {
        yield* samePasswordAsEmail(input.email, input.password)
        if (settings.signup === "closed") {
          return yield* new Forbidden({ message: "Sign-up is closed on this server.", fix: "Ask the operator for an account." })
        }
        // Hashed before anything is looked up, so an existing email answers as slowly as a new one.
        const passwordHash = yield* hashPassword(input.password)
        const email = input.email.toLowerCase()
        const invitation = input.invitation_token === undefined ? undefined : yield* findToken("invite", input.invitation_token)
        if (input.invitation_token !== undefined && (invitation === undefined || invitation.email !== email)) {
          return yield* invalidToken("invitation")
        }
        const existing = yield* userByEmail(email)
        if (existing !== undefined) return yield* alreadyHasAccount(email)
        const id = yield* ids.make("user")
        const at = yield* now
        const created = yield* sql.withTransaction(Effect.gen(function*() {
          const inserted = yield* sql`INSERT INTO users ${
            sql.insert({
              id,
              email,
              password_hash: passwordHash,
              email_verified_at: invitation === undefined ? null : at,
              // Owed an organization, created when the address is verified: until then the account owns nothing.
              pending_organization: invitation === undefined ? input.name ?? email : null,
              created_at: at,
              updated_at: at
            })
          } ON CONFLICT (email) DO NOTHING RETURNING id`
          // A parallel sign-up with the same email won: this one is the existing-account case.
          if (inserted.length === 0) return "exists" as const
          const first = yield* sql`INSERT INTO auth_first_account (user_id) VALUES (${id}) ON CONFLICT DO NOTHING RETURNING user_id`
          if (invitation !== undefined) {
            const used = yield* useToken("invite", input.invitation_token ?? "")
            if (used === undefined || used.organization_id === null) return "invalid" as const
            yield* sql`INSERT INTO memberships ${sql.insert({ organization_id: used.organization_id, user_id: id, role: used.role ?? "member", created_at: at })}`
            return "member" as const
          }
          if (settings.signup === "invite" && first.length === 0) return "forbidden" as const
          return "owner" as const
        }).pipe(
          // Each refusal rolls the account back: a transaction ends in failure, never half done.
          Effect.flatMap((outcome) => outcome === "invalid" || outcome === "forbidden" ? Effect.fail(outcome) : Effect.succeed(outcome))
        )).pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.catch((outcome: "invalid" | "forbidden") =>
            Effect.fail(
              outcome === "invalid"
                ? invalidToken("invitation")
                : new Forbidden({ message: "Sign-up on this server needs an invitation.", fix: "Ask an organization owner to invite you." })
            )
          )
        )
        if (created === "exists") return yield* alreadyHasAccount(email)
        // An invitation mailed to this address already proved it; anyone else confirms it by mail.
        if (created === "owner") yield* sendVerification({ id, email })
      }),

      verifyEmail: Effect.fn("Auth.verifyEmail")(function*(token) {
        const used = yield* useToken("verify", token)
        if (used === undefined || used.user_id === null) return yield* invalidToken("verification")
        yield* verifyUser({ id: used.user_id, email: used.email })
      }),

      resendVerification: Effect.fn("Auth.resendVerification")(function*(email) {
        // Limited per address whether or not it has an account, so the limit tells nothing either.
        yield* limiter.take(email.toLowerCase(), RATE_POLICIES.verificationMailPerAddress)
        const user = yield* userByEmail(email)
        if (user === undefined || user.email_verified_at !== null) return
        yield* sendVerification(user)
      }),

      signIn: Effect.fn("Auth.signIn")(function*(input, clientIp) {
        const tries = attempt(input.email, clientIp)
        yield* tries.count
        const user = yield* userByEmail(input.email)
        const matches = yield* passwordMatches(user?.password_hash ?? (yield* decoyHash), input.password)
        if (user === undefined || !matches) return yield* invalidCredentials()
        if (user.totp_enabled) {
          if (input.totp_code === undefined) {
            // The password was right: asking for the second step is not a wrong guess.
            yield* tries.succeeded
            return yield* new TotpRequired({ message: "Two-step verification is on: send totp_code.", fix: "Send the code of your authenticator app, or a recovery code, as totp_code." })
          }
          if (!(yield* acceptCode(user, input.totp_code, true))) {
            return yield* new InvalidTotp({ message: "The two-step code is wrong or was already used.", fix: "Send the current code of your authenticator app, or an unused recovery code." })
          }
        }
        yield* tries.succeeded
        return yield* createSession(user.id, yield* defaultOrganization(user.id))
      }),

      session: Effect.fn("Auth.session")(function*(sessionId) {
        const idHash = sha256(sessionId)
        const rows = yield* sql`SELECT s.*, u.email, u.email_verified_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ${idHash}`.pipe(
          decodeRows(Schema.Struct({ ...SessionRow.fields, email: Schema.String, email_verified_at: Schema.NullOr(Schema.Date) }))
        )
        const row = rows[0]
        if (row === undefined) return undefined
        const at = yield* now
        const idle = at.getTime() - row.last_seen_at.getTime() >= Duration.toMillis(SESSION_IDLE)
        if (idle || at.getTime() >= row.expires_at.getTime()) {
          yield* sql`DELETE FROM sessions WHERE id_hash = ${idHash}`.pipe(Effect.orDie)
          return undefined
        }
        // Renewed at most once a minute: a write per request would cost more than the minute of precision is worth.
        if (at.getTime() - row.last_seen_at.getTime() >= 60_000) {
          yield* sql`UPDATE sessions SET last_seen_at = ${at} WHERE id_hash = ${idHash}`.pipe(Effect.orDie)
        }
        return {
          idHash,
          userId: row.user_id,
          email: row.email,
          emailVerified: row.email_verified_at !== null,
          organizationId: row.organization_id,
          csrfToken: row.csrf_token,
          expiresAt: row.expires_at
        }
      }),

      principalOf: Effect.fn("Auth.principalOf")(function*(session) {
        // Every /v0 request of a session is admitted here: an unverified person acts on nothing.
        yield* requireVerified(session)
        if (session.organizationId === null) return undefined
        const r = yield* role(session.userId, session.organizationId)
        if (r === undefined) return undefined
        const permissions = permissionsOf(r)
        return {
          organizationId: session.organizationId,
          scope: { type: "organization" as const },
          ...(permissions === undefined ? {} : { permissions }),
          session: { userId: session.userId, role: r }
        }
      }),

      checkCsrf: (session, request) =>
        Effect.gen(function*() {
          if (SAFE_METHODS.has(request.method.toUpperCase())) return
          const failed = (message: string) =>
            new CsrfFailed({ message, fix: "Send the csrf_token of GET /auth/me as x-csrf-token, from a page of this server." })
          // Without a session (sign-in, sign-up) there is no token yet, but a page on another
          // site still may not submit the form: that would sign the victim in as the attacker.
          if (session !== undefined) {
            if (request.csrfToken === undefined || !sameSecret(request.csrfToken, session.csrfToken)) {
              return yield* failed("The x-csrf-token header is missing or does not match the session.")
            }
            if (request.origin === undefined) return yield* failed("A session request that changes data needs a same-origin Origin header.")
          }
          yield* checkSameOrigin(request.origin, request.host).pipe(
            Effect.mapError(() => failed("The request comes from a page on another origin."))
          )
        }),

      signOut: (session) => sql`DELETE FROM sessions WHERE id_hash = ${session.idHash}`.pipe(Effect.orDie, Effect.asVoid),

      me: Effect.fn("Auth.me")(function*(session) {
        const user = yield* userById(session.userId)
        const memberships = yield* sql`SELECT m.organization_id, o.name, m.role FROM memberships m
          JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ${user.id}
          ORDER BY m.created_at, m.organization_id`.pipe(decodeRows(MembershipRow))
        return {
          user: {
            user_id: user.id,
            email: user.email,
            email_verified: user.email_verified_at !== null,
            two_factor_enabled: user.totp_enabled,
            created_at: iso(user.created_at)
          },
          organization_id: session.organizationId,
          organizations: memberships.map((m) => ({ organization_id: m.organization_id, name: m.name, role: m.role })),
          csrf_token: session.csrfToken
        }
      }),

      switchOrganization: Effect.fn("Auth.switchOrganization")(function*(session, organizationId) {
        yield* requireVerified(session)
        if ((yield* role(session.userId, organizationId)) === undefined) {
          return yield* new NotFound({ message: `Organization ${organizationId} was not found.` })
        }
        yield* sql`UPDATE sessions SET organization_id = ${organizationId} WHERE id_hash = ${session.idHash}`.pipe(Effect.orDie)
      }),

      requestPasswordReset: Effect.fn("Auth.requestPasswordReset")(function*(email) {
        yield* limiter.take(email.toLowerCase(), RATE_POLICIES.verificationMailPerAddress)
        const user = yield* userByEmail(email)
        if (user === undefined) return
        const { token } = yield* issueToken("reset", RESET_TOKEN_TTL, { email: user.email, userId: user.id })
        yield* mail(user.email, "Reset your password", [
          "Choose a new password for your Inbox account by opening this link within one hour:",
          "",
          link("reset-password", token),
          "",
          "If you did not ask for this, ignore this message; your password stays as it is."
        ])
      }),

      resetPassword: Effect.fn("Auth.resetPassword")(function*(token, password) {
        const found = yield* findToken("reset", token)
        if (found === undefined || found.user_id === null) return yield* invalidToken("password reset")
        yield* samePasswordAsEmail(found.email, password)
        const used = yield* useToken("reset", token)
        if (used === undefined || used.user_id === null) return yield* invalidToken("password reset")
        const userId = used.user_id
        const passwordHash = yield* hashPassword(password)
        yield* sql.withTransaction(Effect.gen(function*() {
          const user = (yield* sql`SELECT * FROM users WHERE id = ${userId} FOR UPDATE`.pipe(decodeRows(UserRow)))[0]
          if (user === undefined) return
          yield* storePassword(userId, passwordHash)
          const at = yield* now
          // Every other reset link of the account dies with this one.
          yield* sql`UPDATE auth_tokens SET used_at = ${at} WHERE user_id = ${userId} AND purpose = 'reset' AND used_at IS NULL`
          // The owner of an address that was never proved takes the account over: nothing whoever
          // signed up with it set up survives (nor their sessions: storePassword ended them).
          if (user.email_verified_at === null) yield* discardUnproved(user)
          // The link reached the mailbox: that proves the address as a verification link would.
          yield* verifyUser({ id: userId, email: used.email })
        })).pipe(Effect.orDie)
      }),

      changePassword: Effect.fn("Auth.changePassword")(function*(session, input, clientIp) {
        yield* requireVerified(session)
        const user = yield* userById(session.userId)
        yield* samePasswordAsEmail(user.email, input.new_password)
        const tries = attempt(user.email, clientIp)
        yield* tries.count
        if (!(yield* passwordMatches(user.password_hash, input.current_password))) {
          return yield* new InvalidCredentials({ message: "The current password is wrong.", fix: "Send the password you sign in with as current_password." })
        }
        yield* tries.succeeded
        yield* storePassword(user.id, yield* hashPassword(input.new_password))
        return yield* createSession(user.id, session.organizationId)
      }),

      setupTwoFactor: Effect.fn("Auth.setupTwoFactor")(function*(session) {
        yield* requireVerified(session)
        const user = yield* userById(session.userId)
        if (user.totp_enabled) return yield* new TwoFactorAlreadyEnabled({ message: "Two-step verification is already on.", fix: "Disable it first to set up another authenticator." })
        const secret = Secret.fromHex(yield* ids.secret(20)).base32
        const at = yield* now
        // Sealed at rest under INBOX_SECRET_KEY when the server has one (always with the embedded database).
        const stored = sealIfKey(settings.secretKey, "totp", user.id, secret)
        yield* sql`UPDATE users SET totp_secret = ${stored}, totp_last_step = NULL, updated_at = ${at} WHERE id = ${user.id}`.pipe(Effect.orDie)
        return { secret, otpauth_uri: totpOf(secret, user.email).toString() }
      }),

      enableTwoFactor: Effect.fn("Auth.enableTwoFactor")(function*(session, code, clientIp) {
        yield* requireVerified(session)
        const user = yield* userById(session.userId)
        if (user.totp_enabled) return yield* new TwoFactorAlreadyEnabled({ message: "Two-step verification is already on." })
        if (user.totp_secret === null) {
          return yield* new TwoFactorNotSetUp({ message: "Two-step verification was not set up.", fix: "Call POST /auth/2fa/setup first and scan its secret." })
        }
        const tries = attempt(user.email, clientIp)
        yield* tries.count
        if (!(yield* acceptCode(user, code, false))) {
          return yield* new InvalidCode({ message: "The code is wrong.", fix: "Send the current 6-digit code of the authenticator app." })
        }
        yield* tries.succeeded
        const codes: Array<string> = []
        for (let i = 0; i < RECOVERY_CODES; i++) {
          const raw = yield* ids.secret(5)
          codes.push(`${raw.slice(0, 5)}-${raw.slice(5)}`)
        }
        const at = yield* now
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE users SET totp_enabled = true, updated_at = ${at} WHERE id = ${user.id}`
          yield* sql`DELETE FROM recovery_codes WHERE user_id = ${user.id}`
          for (const c of codes) yield* sql`INSERT INTO recovery_codes (user_id, code_hash) VALUES (${user.id}, ${sha256(normaliseRecovery(c))})`
        })).pipe(Effect.orDie)
        return { recovery_codes: codes }
      }),

      disableTwoFactor: Effect.fn("Auth.disableTwoFactor")(function*(session, code, clientIp) {
        yield* requireVerified(session)
        const user = yield* userById(session.userId)
        if (!user.totp_enabled) return yield* new TwoFactorNotSetUp({ message: "Two-step verification is not on." })
        const tries = attempt(user.email, clientIp)
        yield* tries.count
        if (!(yield* acceptCode(user, code, true))) {
          return yield* new InvalidCode({ message: "The code is wrong or was already used.", fix: "Send the current authenticator code or an unused recovery code." })
        }
        yield* tries.succeeded
        const at = yield* now
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE users SET totp_enabled = false, totp_secret = NULL, totp_last_step = NULL, updated_at = ${at} WHERE id = ${user.id}`
          yield* sql`DELETE FROM recovery_codes WHERE user_id = ${user.id}`
        })).pipe(Effect.orDie)
      }),

      invite: Effect.fn("Auth.invite")(function*(session, input) {
        yield* requireVerified(session)
        const user = yield* userById(session.userId)
        const organizationId = session.organizationId
        if (organizationId === null || (yield* role(user.id, organizationId)) !== "owner") {
          return yield* new Forbidden({ message: "Only the organization owner may invite members." })
        }
        const email = input.email.toLowerCase()
        const member = yield* sql`SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
          WHERE m.organization_id = ${organizationId} AND u.email = ${email}`.pipe(Effect.orDie)
        if (member.length > 0) return yield* new AlreadyMember({ message: `${email} is already a member of this organization.` })
        const roleName = input.role ?? "member"
        const invitationId = yield* ids.make("inv")
        const { token, expiresAt } = yield* issueToken("invite", INVITE_TOKEN_TTL, { email, organizationId, role: roleName, invitedBy: user.id, invitationId })
        const org = yield* organizations.get(organizationId).pipe(Effect.orDie)
        yield* mail(email, `You are invited to ${org.name} on Inbox`, [
          `${user.email} invites you to join ${org.name} as ${roleName === "admin" ? "an admin" : "a member"}.`,
          "",
          `Accept within 7 days: ${link("accept-invitation", token)}`,
          "",
          "If you do not know the sender, ignore this message."
        ])
        return { invitation_id: invitationId, organization_id: organizationId, email, role: roleName, expires_at: iso(expiresAt) }
      }),

      acceptInvitation: Effect.fn("Auth.acceptInvitation")(function*(session, token) {
        const found = yield* findToken("invite", token)
        // An invitation is for the address it was mailed to; another signed-in person cannot use a forwarded link.
        if (found === undefined || found.organization_id === null || found.email !== session.email.toLowerCase()) {
          return yield* invalidToken("invitation")
        }
        const organizationId = found.organization_id
        if ((yield* role(session.userId, organizationId)) !== undefined) {
          return yield* new AlreadyMember({ message: "You are already a member of this organization." })
        }
        const used = yield* useToken("invite", token)
        if (used === undefined) return yield* invalidToken("invitation")
        const roleName: Role = used.role !== null && isRole(used.role) ? used.role : "member"
        const at = yield* now
        yield* sql`INSERT INTO memberships ${sql.insert({ organization_id: organizationId, user_id: session.userId, role: roleName, created_at: at })}
          ON CONFLICT DO NOTHING`.pipe(Effect.orDie)
        yield* sql`UPDATE sessions SET organization_id = ${organizationId} WHERE id_hash = ${session.idHash}`.pipe(Effect.orDie)
        yield* verifyUser({ id: session.userId, email: session.email })
        return { organization_id: organizationId, role: roleName }
      }),

      members: Effect.fn("Auth.members")(function*(session) {
        yield* requireVerified(session)
        const organizationId = session.organizationId
        if (organizationId === null || (yield* role(session.userId, organizationId)) === undefined) {
          return yield* new Forbidden({ message: "You are not a member of an organization.", fix: "Accept an invitation, or sign up to own one." })
        }
        const at = yield* now
        const members = yield* sql<{ user_id: string; email: string; role: string; created_at: Date }>`SELECT u.id AS user_id, u.email, m.role, m.created_at
          FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ${organizationId}
          ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, m.created_at, u.email`.pipe(Effect.orDie)
        // Of several invitations to one address, the newest is the one that counts.
        const invitations = yield* sql<{ invitation_id: string; email: string; role: string | null; expires_at: Date }>`SELECT DISTINCT ON (email) invitation_id, email, role, expires_at
          FROM auth_tokens WHERE organization_id = ${organizationId} AND purpose = 'invite' AND used_at IS NULL AND expires_at > ${at}
          ORDER BY email, created_at DESC`.pipe(Effect.orDie)
        const joined = new Set(members.map((m) => m.email))
        return {
          organization_id: organizationId,
          members: members.map((m) => ({ user_id: m.user_id, email: m.email, role: m.role, joined_at: iso(new Date(m.created_at)) })),
          invitations: invitations.filter((i) => !joined.has(i.email)).map((i) => ({ invitation_id: i.invitation_id, email: i.email, role: i.role ?? "member", expires_at: iso(new Date(i.expires_at)) }))
        }
      }),

      revokeInvitation: Effect.fn("Auth.revokeInvitation")(function*(session, invitationId) {
        const organizationId = yield* requireOwner(session)
        const at = yield* now
        // Every pending invitation to the address goes with it: the list shows only the newest,
        // and an older link to the same address must not keep working once the owner said no.
        const gone = yield* sql`DELETE FROM auth_tokens WHERE purpose = 'invite' AND organization_id = ${organizationId} AND used_at IS NULL
          AND email IN (SELECT email FROM auth_tokens WHERE invitation_id = ${invitationId} AND organization_id = ${organizationId}
            AND purpose = 'invite' AND used_at IS NULL AND expires_at > ${at})
          RETURNING token_hash`.pipe(Effect.orDie)
        if (gone.length === 0) return yield* new NotFound({ message: `Invitation ${invitationId} was not found.`, fix: "It may have been accepted, revoked or have expired: GET /auth/members lists those pending." })
      }),

      updateMember: (session, userId, next) =>
        Effect.flatMap(changeMember(session, userId, next), (member) => member === undefined ? Effect.die("a member kept is answered") : Effect.succeed(member)),

      removeMember: (session, userId) => Effect.asVoid(changeMember(session, userId, undefined)),

      // An account that owns something (a membership from before accounts waited for their
      // address) is kept: deleting it would strand its organization; its owner verifies or resets.
      purgeUnverified: (before, limit) =>
        sql.withTransaction(Effect.gen(function*() {
          const gone = yield* sql<{ id: string }>`DELETE FROM users WHERE id IN (
              SELECT id FROM users u WHERE email_verified_at IS NULL AND created_at < ${before}
                AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id)
              ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            RETURNING id`
          // The first account on an invite-only server, never verified, leaves the place free for another.
          if (gone.length > 0) yield* sql`DELETE FROM auth_first_account WHERE user_id IN ${sql.in(gone.map((r) => r.id))}`
          return gone.length
        })).pipe(Effect.orDie)
    })
  }))

  /** Authenticator secrets re-sealed under a rotated INBOX_SECRET_KEY before any is opened. */
  static readonly resealing = resealing(AUTH_SEALED)

  /** With the services it uses (Organizations, RateLimiter), after its own rotation; the ports are the caller's. */
  static readonly layer = Auth.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Organizations.layer, RateLimiter.layer, Auth.resealing)))
}

