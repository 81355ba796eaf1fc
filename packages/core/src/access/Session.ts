/**
 * A person's dashboard session, as the engine admits it: who, whether their address is
 * verified, the organization they act in, and the CSRF token their state-changing requests
 * must carry. Sessions are made and ended by auth/Auth.ts; this is their shape, which the
 * catalogue hands to the operations that take a session.
 */
export interface Session {
  readonly idHash: string
  readonly userId: string
  readonly email: string
  /** Whether the person's address is verified: an unverified session may do almost nothing. */
  readonly emailVerified: boolean
  readonly organizationId: string | null
  readonly csrfToken: string
  readonly expiresAt: Date
}

/** A session just made (sign-in, a password change): the cookie's value and the CSRF token. */
export interface NewSession {
  readonly sessionId: string
  readonly csrfToken: string
  readonly expiresAt: Date
}
