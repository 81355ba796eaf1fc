/**
 * The dashboard's /auth operations (spec: "Dashboard accounts"; docs/auth.md): sign-up, verification, sign-in and out, the current person, password reset and
 * change, two-step sign-in, invitations. Each takes the browser's session (`access.kind:
 * "session"`: runOperation applies the CSRF rule and counts the request against the client
 * IP), and those that start or end a session say so in their output, which the HTTP adapter
 * writes as the session cookie. They are in the OpenAPI document; not MCP tools or CLI
 * commands, since a session belongs to a browser. Every rule is the Auth service's.
 */
import { Effect, Schema } from "effect"
import type { NewSession } from "../access/Session.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { Auth, Me, Member, Members } from "./Auth.ts"
import {
  ChangePasswordInput,
  CodeInput,
  EmailInput,
  InviteInput,
  ResetPasswordInput,
  ROLES,
  SignInInput,
  SignUpInput,
  SwitchOrganizationInput,
  TokenInput,
  UpdateMemberInput
} from "./model.ts"

const BROWSER_ONLY = "a dashboard session belongs to a browser"
const faces = { mcp: { exclude: BROWSER_ONLY }, cli: { exclude: BROWSER_ONLY } } as const

/** /auth bodies are small: an email, a password, a code. */
const BODY_LIMIT = 16 * 1024

export const Accepted = Schema.Struct({ status: Schema.Literal("accepted"), message: Schema.String })
const accepted = (message: string) => ({ status: "accepted" as const, message })

export const Invitation = Schema.Struct({
  invitation_id: Schema.String,
  organization_id: Schema.String,
  email: Schema.String,
  role: Schema.Literals(ROLES),
  expires_at: Schema.String
})
export const TwoFactorSetup = Schema.Struct({ secret: Schema.String, otpauth_uri: Schema.String })

/** The signed-in answer: the new session's person (as `GET /auth/me` shows it) and the session for the cookie. */
const signedIn = (created: NewSession) =>
  Effect.gen(function*() {
    const auth = yield* Auth
    const session = yield* auth.session(created.sessionId)
    if (session === undefined) return yield* Effect.die("a session just created is not live")
    return { body: yield* auth.me(session), session: created }
  })

export const signUp = operation({
  name: "auth.signUp",
  summary: "Create a dashboard account; a verification link is mailed to the address. The same answer whether or not the address had an account.",
  routes: [route.post("/auth/sign-up")],
  access: { kind: "session", session: "optional" },
  body: SignUpInput,
  bodyLimit: BODY_LIMIT,
  output: Output.accepted(Accepted),
  mutates: true,
  ...faces,
  run: ({ input }) => Effect.as(Auth.use((a) => a.signUp(input)), accepted("If the address can be used, a message is on its way to it. Follow it, then sign in."))
})

export const verifyEmail = operation({
  name: "auth.verifyEmail",
  summary: "Verify the address of an account with the mailed link's token.",
  routes: [route.post("/auth/verify-email")],
  access: { kind: "session", session: "optional" },
  body: TokenInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Schema.Struct({ verified: Schema.Literal(true) })),
  mutates: true,
  ...faces,
  run: ({ input }) => Effect.as(Auth.use((a) => a.verifyEmail(input.token)), { verified: true as const })
})

export const resendVerification = operation({
  name: "auth.resendVerification",
  summary: "Mail a new verification link to an unverified account's address.",
  routes: [route.post("/auth/resend-verification")],
  access: { kind: "session", session: "optional" },
  body: EmailInput,
  bodyLimit: BODY_LIMIT,
  output: Output.accepted(Accepted),
  mutates: true,
  ...faces,
  run: ({ input }) => Effect.as(Auth.use((a) => a.resendVerification(input.email)), accepted("If the address has an unverified account, a new link is on its way."))
})

export const signIn = operation({
  name: "auth.signIn",
  summary: "Sign in with email and password (and the two-step code when it is on); starts a session.",
  routes: [route.post("/auth/sign-in")],
  access: { kind: "session", session: "optional" },
  body: SignInInput,
  bodyLimit: BODY_LIMIT,
  output: Output.session(Me),
  mutates: true,
  ...faces,
  run: ({ input, principal: previous, context }) =>
    Effect.gen(function*() {
      const auth = yield* Auth
      const created = yield* auth.signIn(input, context.clientIp)
      // Renewed on sign-in: a session the browser held before (perhaps planted) ends here.
      if (previous !== undefined) yield* auth.signOut(previous)
      return yield* signedIn(created)
    })
})

export const signOut = operation({
  name: "auth.signOut",
  summary: "End the current session.",
  routes: [route.post("/auth/sign-out")],
  access: { kind: "session", session: "required" },
  output: Output.sessionEnded,
  mutates: true,
  ...faces,
  run: ({ principal }) => Effect.as(Auth.use((a) => a.signOut(principal)), { body: undefined, session: "end" as const })
})

export const me = operation({
  name: "auth.me",
  summary: "The signed-in person, their organizations and roles, and the session's CSRF token.",
  routes: [route.get("/auth/me")],
  access: { kind: "session", session: "required" },
  output: Output.json(Me),
  mutates: false,
  ...faces,
  run: ({ principal }) => Auth.use((a) => a.me(principal))
})

export const switchOrganization = operation({
  name: "auth.switchOrganization",
  summary: "Act in another organization the person belongs to.",
  routes: [route.post("/auth/organization")],
  access: { kind: "session", session: "required" },
  body: SwitchOrganizationInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Me),
  mutates: true,
  ...faces,
  run: ({ principal, input }) =>
    Effect.gen(function*() {
      const auth = yield* Auth
      yield* auth.switchOrganization(principal, input.organization_id)
      return { ...(yield* auth.me(principal)), organization_id: input.organization_id }
    })
})

export const requestPasswordReset = operation({
  name: "auth.requestPasswordReset",
  summary: "Mail a password reset link to the address of an account.",
  routes: [route.post("/auth/password-reset")],
  access: { kind: "session", session: "optional" },
  body: EmailInput,
  bodyLimit: BODY_LIMIT,
  output: Output.accepted(Accepted),
  mutates: true,
  ...faces,
  run: ({ input }) => Effect.as(Auth.use((a) => a.requestPasswordReset(input.email)), accepted("If the address has an account, a reset link is on its way."))
})

export const resetPassword = operation({
  name: "auth.resetPassword",
  summary: "Set a new password with the mailed reset link's token; every session of the person ends.",
  routes: [route.post("/auth/password-reset/confirm")],
  access: { kind: "session", session: "optional" },
  body: ResetPasswordInput,
  bodyLimit: BODY_LIMIT,
  output: Output.session(Schema.Struct({ reset: Schema.Literal(true) })),
  mutates: true,
  ...faces,
  run: ({ input }) => Effect.as(Auth.use((a) => a.resetPassword(input.token, input.password)), { body: { reset: true as const }, session: "end" as const })
})

export const changePassword = operation({
  name: "auth.changePassword",
  summary: "Change the password (the current one required); other sessions end and this one is renewed.",
  routes: [route.post("/auth/password")],
  access: { kind: "session", session: "required" },
  body: ChangePasswordInput,
  bodyLimit: BODY_LIMIT,
  output: Output.session(Me),
  mutates: true,
  ...faces,
  run: ({ principal, input, context }) => Effect.flatMap(Auth.use((a) => a.changePassword(principal, input, context.clientIp)), signedIn)
})

export const setupTwoFactor = operation({
  name: "auth.setupTwoFactor",
  summary: "Start two-step sign-in: a new authenticator secret and its otpauth URI.",
  routes: [route.post("/auth/2fa/setup")],
  access: { kind: "session", session: "required" },
  output: Output.json(TwoFactorSetup),
  mutates: true,
  ...faces,
  run: ({ principal }) => Auth.use((a) => a.setupTwoFactor(principal))
})

export const enableTwoFactor = operation({
  name: "auth.enableTwoFactor",
  summary: "Turn two-step sign-in on with a code from the authenticator; answers ten recovery codes, shown once.",
  routes: [route.post("/auth/2fa/enable")],
  access: { kind: "session", session: "required" },
  body: CodeInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Schema.Struct({ enabled: Schema.Literal(true), recovery_codes: Schema.Array(Schema.String) })),
  mutates: true,
  ...faces,
  run: ({ principal, input, context }) =>
    Effect.map(Auth.use((a) => a.enableTwoFactor(principal, input.code, context.clientIp)), (r) => ({ enabled: true as const, ...r }))
})

export const disableTwoFactor = operation({
  name: "auth.disableTwoFactor",
  summary: "Turn two-step sign-in off with a code from the authenticator or a recovery code.",
  routes: [route.post("/auth/2fa/disable")],
  access: { kind: "session", session: "required" },
  body: CodeInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Schema.Struct({ enabled: Schema.Literal(false) })),
  mutates: true,
  ...faces,
  run: ({ principal, input, context }) => Effect.as(Auth.use((a) => a.disableTwoFactor(principal, input.code, context.clientIp)), { enabled: false as const })
})

export const invite = operation({
  name: "auth.invite",
  summary: "Invite a person to the current organization by email (owner only); the link is mailed.",
  routes: [route.post("/auth/invitations")],
  access: { kind: "session", session: "required" },
  body: InviteInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Invitation),
  mutates: true,
  ...faces,
  run: ({ principal, input }) => Auth.use((a) => a.invite(principal, input))
})

export const acceptInvitation = operation({
  name: "auth.acceptInvitation",
  summary: "Join the organization of a mailed invitation.",
  routes: [route.post("/auth/invitations/accept")],
  access: { kind: "session", session: "required" },
  body: TokenInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Schema.Struct({ organization_id: Schema.String, role: Schema.Literals(ROLES) })),
  mutates: true,
  ...faces,
  run: ({ principal, input }) => Auth.use((a) => a.acceptInvitation(principal, input.token))
})

export const members = operation({
  name: "auth.members",
  summary: "The members of the current organization with their roles, and its invitations not yet accepted.",
  routes: [route.get("/auth/members")],
  access: { kind: "session", session: "required" },
  output: Output.json(Members),
  mutates: false,
  ...faces,
  run: ({ principal }) => Auth.use((a) => a.members(principal))
})

export const revokeInvitation = operation({
  name: "auth.revokeInvitation",
  summary: "Revoke a pending invitation of the current organization (owner only); its link then answers invalid_token.",
  routes: [route.delete("/auth/invitations/:invitation_id")],
  access: { kind: "session", session: "required" },
  output: Output.empty,
  mutates: true,
  ...faces,
  run: ({ principal, params }) => Auth.use((a) => a.revokeInvitation(principal, params.invitation_id))
})

export const updateMember = operation({
  name: "auth.updateMember",
  summary: "Give a member of the current organization another role (owner only); the last owner cannot be demoted.",
  routes: [route.patch("/auth/members/:user_id")],
  access: { kind: "session", session: "required" },
  body: UpdateMemberInput,
  bodyLimit: BODY_LIMIT,
  output: Output.json(Member),
  mutates: true,
  ...faces,
  run: ({ principal, params, input }) => Auth.use((a) => a.updateMember(principal, params.user_id, input.role))
})

export const removeMember = operation({
  name: "auth.removeMember",
  summary: "Remove a member from the current organization (owner only); their sessions there end. The last owner cannot be removed.",
  routes: [route.delete("/auth/members/:user_id")],
  access: { kind: "session", session: "required" },
  output: Output.empty,
  mutates: true,
  ...faces,
  run: ({ principal, params }) => Auth.use((a) => a.removeMember(principal, params.user_id))
})

export const authOperations = [
  signUp,
  verifyEmail,
  resendVerification,
  signIn,
  signOut,
  me,
  switchOrganization,
  requestPasswordReset,
  resetPassword,
  changePassword,
  setupTwoFactor,
  enableTwoFactor,
  disableTwoFactor,
  invite,
  acceptInvitation,
  revokeInvitation,
  members,
  updateMember,
  removeMember
]

