/**
 * Agent onboarding: an agent creates its own organization, inbox and key with no prior
 * account; a human it names receives a 6-digit code by mail, and submitting the code
 * verifies the owner email and unlocks sending.
 *
 * Rules (spec, "Email verification and agent accounts"): a taken username is 409
 * already_exists; sign-up is rate limited per IP; a code is valid 24 hours and allows 10
 * attempts, after which (or after expiry) verify answers 429 too_many_attempts; a wrong
 * code is 400 validation_error and counts as an attempt even though the request fails;
 * the human can be replaced at most twice (409 human_replacement_limit; re-sending to the
 * same human is not a replacement); verifying twice is 409 already_verified; agent routes
 * on an organization that was not created by sign-up are 409 not_an_agent_organization.
 * At most five codes an hour go to one human address, from sign-up and attach-human alike.
 *
 * An attempt is counted by one conditional UPDATE (`code_attempts < 10 ... RETURNING`), so
 * parallel guesses on several connections cannot pass the limit.
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, timingSafeEqual } from "node:crypto"
import type { Principal } from "../access/Principal.ts"
import { ApiKeys } from "../apikeys/ApiKeys.ts"
import {
  AlreadyVerified,
  type DomainNotVerified,
  HumanReplacementLimit,
  NotAnAgentOrganization,
  type RateLimited,
  type ReservedUsername,
  TooManyAttempts,
  UsernameTaken,
  type ValidationError
} from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { Egress } from "../egress/Egress.ts"
import { compose } from "../mail/compose.ts"
import { Organizations } from "../organizations/Organizations.ts"
import { Ids } from "../platform/Ids.ts"
import { RATE_POLICIES, RateLimiter } from "../ratelimit/RateLimiter.ts"
import { Settings } from "../settings/Settings.ts"
import { EmailAddress, Username } from "../shared/fields.ts"
import { decodeRows } from "../shared/sql.ts"
import { now } from "../shared/time.ts"
import { validationError } from "../shared/validation.ts"
import { MailTransport } from "../transport/MailTransport.ts"

export const CODE_TTL = Duration.hours(24)
export const CODE_MAX_ATTEMPTS = 10
export const MAX_HUMAN_REPLACEMENTS = 2
/** Retry-After of a spent or expired code: a retry only helps after attach-human sent a new one. */
export const EXHAUSTED_RETRY_AFTER_SECONDS = 60

export const SignUpInput = Schema.Struct({ username: Username, human_email: EmailAddress })
export const AttachHumanInput = Schema.Struct({ human_email: EmailAddress })
export const VerifyInput = Schema.Struct({
  otp_code: Schema.String.check(Schema.isPattern(/^\d{6}$/, { message: "otp_code is 6 digits" }))
})

export const SignUpResult = Schema.Struct({ organization_id: Schema.String, inbox_id: Schema.String, api_key: Schema.String })
export type SignUpResult = typeof SignUpResult.Type
export const AttachHumanResult = Schema.Struct({ human_email: Schema.String, instructions: Schema.String })
export const VerifyResult = Schema.Struct({ verified: Schema.Literal(true) })

const HumanRow = Schema.Struct({
  organization_id: Schema.String,
  human_email: Schema.String,
  replacements: Schema.Number,
  code_hash: Schema.NullOr(Schema.String),
  code_expires_at: Schema.NullOr(Schema.Date),
  code_attempts: Schema.Number,
  verified_at: Schema.NullOr(Schema.Date)
})

const hashCode = (organizationId: string, code: string) => createHash("sha256").update(`${organizationId}:${code}`).digest("hex")

export class Agents extends Context.Service<Agents, {
  signUp(input: typeof SignUpInput.Type, clientIp: string): Effect.Effect<
    SignUpResult,
    RateLimited | ValidationError | ReservedUsername | DomainNotVerified | UsernameTaken
  >
  attachHuman(principal: Principal, input: typeof AttachHumanInput.Type): Effect.Effect<
    typeof AttachHumanResult.Type,
    NotAnAgentOrganization | AlreadyVerified | HumanReplacementLimit | RateLimited
  >
  verify(principal: Principal, input: typeof VerifyInput.Type): Effect.Effect<
    typeof VerifyResult.Type,
    NotAnAgentOrganization | AlreadyVerified | TooManyAttempts | ValidationError
  >
}>()("inbox/Agents") {
  static readonly layerNoDeps = Layer.effect(Agents, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const settings = yield* Settings
    const organizations = yield* Organizations
    const inboxes = yield* Inboxes
    const apiKeys = yield* ApiKeys
    const transport = yield* MailTransport
    const limiter = yield* RateLimiter
    const egress = yield* Egress

    const newCode = Effect.gen(function*() {
      const code = yield* ids.digits(6)
      const at = yield* now
      return { code, at, expiresAt: new Date(at.getTime() + Duration.toMillis(CODE_TTL)) }
    })

    const mailCode = Effect.fn("Agents.mailCode")(function*(to: string, code: string, inbox: string) {
      const text = [
        `An AI agent using the inbox ${inbox} named you as its human owner.`,
        ``,
        `Your verification code is ${code}. It is valid for 24 hours.`,
        ``,
        `Give this code to the agent, or submit it as otp_code to POST /v0/agent/verify.`,
        `If you did not expect this, ignore this message.`
      ].join("\n")
      const mail = yield* compose("send", { to, subject: `Your verification code: ${code}`, text }, {
        inbox: { email: settings.systemFrom, display_name: "Inbox verification" }
      }).pipe(Effect.orDie, Effect.provideService(Egress, egress), Effect.provideService(Ids, ids))
      yield* transport.send({ envelope: mail.envelope, raw: mail.raw, subject: mail.subject }).pipe(
        // The relay refusing the human's address is not the agent's request failing: the
        // code can be re-sent with attach-human.
        Effect.catchTag("MessageRejected", (e) => Effect.logWarning(`verification mail to ${to} refused: ${e.message}`))
      )
    })

    const human = (organizationId: string) =>
      sql`SELECT * FROM agent_humans WHERE organization_id = ${organizationId}`.pipe(
        decodeRows(HumanRow),
        Effect.map((rows) => rows[0])
      )

    const agentOrg = Effect.fn("Agents.agentOrg")(function*(principal: Principal) {
      const org = yield* organizations.get(principal.organizationId).pipe(Effect.orDie)
      const row = yield* human(org.id)
      if (!org.is_agent || row === undefined) {
        return yield* new NotAnAgentOrganization({ message: "This route is only for organizations created by agent sign-up." })
      }
      if (row.verified_at !== null) return yield* new AlreadyVerified({ message: "The human owner is already verified." })
      return row
    })

    return Agents.of({
      signUp: Effect.fn("Agents.signUp")(function*(input, clientIp) {
        const address = yield* inboxes.address({ username: input.username })
        yield* limiter.take(clientIp, RATE_POLICIES.agentSignUpPerIp)
        yield* limiter.take(input.human_email.toLowerCase(), RATE_POLICIES.verificationMailPerAddress)
        const humanEmail = input.human_email.toLowerCase()
        const { code, at, expiresAt } = yield* newCode
        const result = yield* sql.withTransaction(Effect.gen(function*() {
          const { organization, defaultPodId } = yield* organizations.create({ ownerEmail: humanEmail, name: input.username, isAgent: true })
          const inbox = yield* inboxes.insert(organization.id, defaultPodId, {}, address).pipe(
            Effect.catchTag("AlreadyExists", (e) => Effect.fail(new UsernameTaken({ message: e.message, fix: "Choose another username." })))
          )
          yield* sql`INSERT INTO agent_humans (organization_id, human_email, code_hash, code_expires_at, updated_at)
            VALUES (${organization.id}, ${humanEmail}, ${hashCode(organization.id, code)}, ${expiresAt}, ${at})`
          const key = yield* apiKeys.issue(organization.id, { name: "agent" })
          return { organization_id: organization.id, inbox_id: inbox.id, api_key: key.api_key, email: inbox.email }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        yield* mailCode(humanEmail, code, result.email)
        return { organization_id: result.organization_id, inbox_id: result.inbox_id, api_key: result.api_key }
      }),
      attachHuman: Effect.fn("Agents.attachHuman")(function*(principal, input) {
        const current = yield* agentOrg(principal)
        const humanEmail = input.human_email.toLowerCase()
        const replacing = humanEmail !== current.human_email
        if (replacing && current.replacements >= MAX_HUMAN_REPLACEMENTS) {
          return yield* new HumanReplacementLimit({ message: `The human has already been replaced ${MAX_HUMAN_REPLACEMENTS} times.` })
        }
        yield* limiter.take(humanEmail, RATE_POLICIES.verificationMailPerAddress)
        const { code, at, expiresAt } = yield* newCode
        yield* sql`UPDATE agent_humans SET human_email = ${humanEmail},
          replacements = replacements + ${replacing ? 1 : 0}, code_hash = ${hashCode(principal.organizationId, code)},
          code_expires_at = ${expiresAt}, code_attempts = 0, updated_at = ${at}
          WHERE organization_id = ${principal.organizationId}`.pipe(Effect.orDie)
        const inbox = yield* sql<{ email: string }>`SELECT email FROM inboxes WHERE organization_id = ${principal.organizationId}
          ORDER BY created_at LIMIT 1`.pipe(Effect.orDie)
        yield* mailCode(humanEmail, code, inbox[0]?.email ?? principal.organizationId)
        return {
          human_email: humanEmail,
          instructions: `A 6-digit code was sent to ${humanEmail}. Ask the human for it and submit it as otp_code to POST /v0/agent/verify within 24 hours.`
        }
      }),
      verify: Effect.fn("Agents.verify")(function*(principal, input) {
        const row = yield* agentOrg(principal)
        const at = yield* now
        const exhausted = (expired: boolean) =>
          new TooManyAttempts({
            message: expired ? "The verification code has expired." : "Too many wrong verification codes.",
            fix: "Request a new code with POST /v0/agent/attach-human.",
            retryAfterSeconds: EXHAUSTED_RETRY_AFTER_SECONDS
          })
        // Counting the attempt first, in one conditional statement, is what keeps parallel
        // guesses under the limit: each guess needs a row this UPDATE returns.
        const counted = yield* sql<{ code_attempts: number; code_hash: string }>`UPDATE agent_humans
          SET code_attempts = code_attempts + 1, updated_at = ${at}
          WHERE organization_id = ${principal.organizationId} AND verified_at IS NULL AND code_hash IS NOT NULL
            AND code_expires_at >= ${at} AND code_attempts < ${CODE_MAX_ATTEMPTS}
          RETURNING code_attempts, code_hash`.pipe(Effect.orDie)
        const attempt = counted[0]
        if (attempt === undefined) {
          const expired = row.code_expires_at === null || at.getTime() > row.code_expires_at.getTime()
          return yield* exhausted(expired)
        }
        const given = Buffer.from(hashCode(principal.organizationId, input.otp_code))
        if (!timingSafeEqual(given, Buffer.from(attempt.code_hash))) {
          const left = CODE_MAX_ATTEMPTS - attempt.code_attempts
          return yield* validationError(
            [{ path: ["otp_code"], message: "Wrong verification code" }],
            `Wrong verification code; ${left} attempt${left === 1 ? "" : "s"} left.`
          )
        }
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE agent_humans SET verified_at = ${at}, code_hash = NULL, updated_at = ${at}
            WHERE organization_id = ${principal.organizationId}`
          yield* organizations.humanVerified(principal.organizationId, row.human_email)
        })).pipe(Effect.orDie)
        return { verified: true as const }
      })
    })
  }))

  /** With the services it uses (ApiKeys, Inboxes, Organizations, RateLimiter); the ports are the caller's. */
  static readonly layer = Agents.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(ApiKeys.layer, Inboxes.layer, Organizations.layer, RateLimiter.layer)))
}
