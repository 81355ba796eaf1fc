/**
 * The /auth pages: sign in (with a two-step or recovery code), sign up, the pages of the
 * mailed links (verify, reset, accept an invitation), security (two-step setup with a QR
 * code of the otpauth:// URI, enable, disable; password change) and members (the people with
 * their roles, the invitations not yet accepted, and an invitation to send; the owner changes
 * roles, removes members and revokes invitations). Typed from the
 * OpenAPI document like the /v0 pages.
 */
import { useState } from "preact/hooks"
import { type Answer, client } from "./client.ts"
import { go, notice, refreshMe, session } from "./dom.js"
import { Action, answer, Beside, done, type Failure, Field, Form, mount, Muted, Page, Select, Table, useAttempt, when } from "./ui.tsx"

type Me = Answer<"auth.me">
const me = () => session.me as Me | null

/** A sign-in body: the code, when given, as `totp_code` (a two-step or a recovery code). */
const credentials = (v: Readonly<Record<string, string>>) => {
  const code = (v["code"] ?? "").trim()
  return { email: v["email"] ?? "", password: v["password"] ?? "", ...(code ? { totp_code: code } : {}) }
}

const SignIn = () => (
  <Page title="Sign in">
    <Form label="Sign in" submit="Sign in" busy="Signing in…" action={async (v) => {
      await answer(client.POST("/auth/sign-in", { body: credentials(v) }))
      await refreshMe()
      go("#/")
    }}>
      <Field label="Email" name="email" type="email" required autocomplete="username" />
      <Field label="Password" name="password" type="password" required autocomplete="current-password" />
      <Field label="Two-step code or recovery code (if enabled)" name="code" autocomplete="one-time-code" />
    </Form>
    <p><a href="#/forgot">Forgot your password?</a></p>
  </Page>
)
export const signIn = () => mount(<SignIn />)

const CheckMail = ({ children }: { readonly children: string }) => (
  <Page title="Check your mail"><p>{children}</p></Page>
)

export const signUp = () => mount(
  <Page title="Sign up">
    <Form label="Sign up" submit="Create account" busy="Creating…" action={async (v) => {
      const email = v["email"] ?? ""
      await answer(client.POST("/auth/sign-up", { body: { email, password: v["password"] ?? "" } }))
      mount(<CheckMail>{`We sent a verification link to ${email}. Follow it, then sign in.`}</CheckMail>)
    }}>
      <Field label="Email" name="email" type="email" required />
      <Field label="Password" name="password" type="password" required autocomplete="new-password" />
    </Form>
  </Page>
)

export const forgot = () => mount(
  <Page title="Reset your password">
    <Form label="Reset password" submit="Send reset link" action={async (v) => {
      await answer(client.POST("/auth/password-reset", { body: { email: v["email"] ?? "" } }))
      mount(<CheckMail>If this email has an account, a reset link is on its way.</CheckMail>)
    }}>
      <Field label="Email" name="email" type="email" required />
    </Form>
  </Page>
)

/** Asks for a new verification link (signed in with an address not yet verified). */
export const unverified = (email: string) => mount(
  <Page title="Verify your email">
    <p>{`Follow the link we sent to ${email}.`}</p>
    <Action action={async () => {
      await answer(client.POST("/auth/resend-verification", { body: { email } }))
      notice(`A new link is on its way to ${email}.`)
    }}>Send the link again</Action>
  </Page>
)

const tokenFromUrl = () => new URLSearchParams(location.search).get("token") ?? ""

const Linked = ({ title, href, text, children }: { readonly title: string; readonly href: string; readonly text: string; readonly children?: string }) => (
  <Page title={title}>
    {children ? <p>{children}</p> : null}
    <p><a href={href}>{text}</a></p>
  </Page>
)

export const verifyEmail = async () => {
  mount(<Page title="Verifying your email…" />)
  try {
    await answer(client.POST("/auth/verify-email", { body: { token: tokenFromUrl() } }))
    mount(<Linked title="Email verified" href="/#/" text="Continue to the dashboard" />)
  } catch {
    mount(
      <Page title="This link cannot be used">
        <p><a href="/#/sign-in">Sign in</a> to send a new one.</p>
      </Page>
    )
  }
}

export const resetPassword = () => mount(
  <Page title="Choose a new password">
    <Form label="New password" submit="Set password" action={async (v) => {
      await answer(client.POST("/auth/password-reset/confirm", { body: { token: tokenFromUrl(), password: v["password"] ?? "" } }))
      mount(<Linked title="Password changed" href="/#/sign-in" text="Sign in" />)
    }}>
      <Field label="New password" name="password" type="password" required autocomplete="new-password" />
    </Form>
  </Page>
)

/**
 * The page of a mailed invitation. Signed out, it offers both ways in, each carrying the
 * invitation: a new person creates the account here (sign-up with `invitation_token`, which
 * makes them a member with the address proved, so no verification mail), then is signed in;
 * someone with an account signs in here, then accepts. Under the default invite-only sign-up,
 * the plain sign-up form would refuse a new person ("needs an invitation").
 */
export const acceptInvitation = async () => {
  const token = tokenFromUrl()
  const accept = async () => {
    mount(<Page title="Accepting the invitation…" />)
    try {
      await answer(client.POST("/auth/invitations/accept", { body: { token } }))
    } catch (error) {
      const err = error as Failure
      return mount(
        <Page title="This invitation cannot be used">
          <p>{err.body?.message ?? err.message}</p>
          <p>Ask the person who invited you to send a new one.</p>
          <p><a href="/#/">Go to the dashboard</a></p>
        </Page>
      )
    }
    await refreshMe()
    mount(<Linked title="You joined the organization" href="/#/" text="Continue to the dashboard" />)
  }
  if (me()) return accept()
  mount(
    <Page title="Join the organization">
      <p>You were invited. New here? Create your account with the address the invitation was sent to. Already have an account? Sign in below.</p>
      <h2>Create your account</h2>
      <Form label="Create your account" submit="Create account and join" busy="Creating…" action={async (v) => {
        const email = v["email"] ?? ""
        const password = v["password"] ?? ""
        await answer(client.POST("/auth/sign-up", { body: { email, password, invitation_token: token } }))
        await answer(client.POST("/auth/sign-in", { body: { email, password } }))
        location.assign("/#/")
      }}>
        <Field label="Email" name="email" type="email" required autocomplete="username" />
        <Field label="Password (at least 8 characters)" name="password" type="password" required autocomplete="new-password" minLength={8} />
      </Form>
      <h2>Sign in</h2>
      <Form label="Sign in and join" submit="Sign in and join" busy="Signing in…" action={async (v) => {
        await answer(client.POST("/auth/sign-in", { body: credentials(v) }))
        await refreshMe()
        await accept()
      }}>
        <Field label="Your email" name="email" type="email" required autocomplete="username" />
        <Field label="Your password" name="password" type="password" required autocomplete="current-password" />
        <Field label="Two-step code or recovery code (if enabled)" name="code" autocomplete="one-time-code" />
      </Form>
    </Page>
  )
}

// ---------- security ----------

/**
 * The otpauth:// URI as a QR image (a GIF data URL drawn by qrcode-generator), loaded only
 * here, so the other pages never fetch the encoder.
 */
const qrDataUrl = async (uri: string) => {
  const { default: qrcode } = await import("qrcode-generator")
  const qr = qrcode(0, "M")
  qr.addData(uri)
  qr.make()
  return qr.createDataURL(5, 4)
}

type Setup = Answer<"auth.setupTwoFactor"> & { readonly qr: string }

const TwoStep = () => {
  const [setup, setSetup] = useState<Setup | null>(null)
  const [codes, setCodes] = useState<ReadonlyArray<string> | null>(null)
  const [enabled, setEnabled] = useState(me()?.user.two_factor_enabled ?? false)
  if (codes) {
    return (
      <div id="totp">
        <p>Two-step verification is on. Keep these recovery codes; each works once:</p>
        <ul>{codes.map((c) => <li key={c}><code>{c}</code></li>)}</ul>
      </div>
    )
  }
  if (enabled) {
    return (
      <Form label="Disable two-step verification" submit="Disable" action={async (v) => {
        await answer(client.POST("/auth/2fa/disable", { body: { code: v["code"] ?? "" } }))
        await refreshMe()
        setEnabled(false)
        setSetup(null)
      }}>
        <Field label="Code" name="code" required autocomplete="one-time-code" />
      </Form>
    )
  }
  return (
    <>
      {setup ? null : (
        <Action action={async () => {
          const started = await answer(client.POST("/auth/2fa/setup"))
          setSetup({ ...started, qr: await qrDataUrl(started.otpauth_uri) })
        }}>Set up two-step verification</Action>
      )}
      <div id="totp">
        {setup
          ? (
            <>
              <p>Scan this code with your authenticator app (or enter the secret), then enter the code it shows.</p>
              <img class="qr" src={setup.qr} alt="QR code of the authenticator link: scan it with your authenticator app" />
              <p>Secret: <code data-testid="totp-secret">{setup.secret}</code></p>
              <p><a href={setup.otpauth_uri}>otpauth link</a></p>
              <Form label="Enable two-step verification" submit="Enable" action={async (v) => {
                const on = await answer(client.POST("/auth/2fa/enable", { body: { code: v["code"] ?? "" } }))
                setCodes(on.recovery_codes)
                await refreshMe()
              }}>
                <Field label="Code" name="code" required autocomplete="one-time-code" />
              </Form>
            </>
          )
          : null}
      </div>
    </>
  )
}

export const security = () => mount(
  <Page title="Security">
    <h2>Two-step verification</h2>
    <TwoStep />
    <h2>Change password</h2>
    <Form label="Change password" submit="Change password" action={async (v) => {
      await answer(client.POST("/auth/password", { body: { current_password: v["current_password"] ?? "", new_password: v["new_password"] ?? "" } }))
      notice("Password changed.")
    }}>
      <Field label="Current password" name="current_password" type="password" required />
      <Field label="New password" name="new_password" type="password" required />
    </Form>
  </Page>
)

// ---------- members ----------

const ROLES = ["owner", "admin", "member"] as const
type Role = typeof ROLES[number]
const ROLE_WORDS: Readonly<Record<string, string>> = { owner: "Owner", admin: "Admin", member: "Member" }
const roleWords = (role: string) => ROLE_WORDS[role] ?? role
type MemberList = Answer<"auth.members">
type Member = MemberList["members"][number]
type Invitation = MemberList["invitations"][number]

const readMembers = () => answer(client.GET("/auth/members"), { quiet: true }).catch((err: Failure) => err)

/** After a change to the person's own membership: their roles are read again; removed, they are signed out of it. */
const changedSelf = async (userId: string, removed: boolean) => {
  if (userId !== me()?.user.user_id) return false
  if (removed) {
    session.me = null
    go("#/sign-in")
    return true
  }
  await refreshMe()
  return false
}

/** A member's role, changed as soon as another is chosen; a refusal (the last owner) is said beside it. */
const RoleChoice = ({ member, reload }: { readonly member: Member; readonly reload: () => Promise<void> }) => {
  const attempt = useAttempt()
  return (
    <>
      <select aria-label={`Role of ${member.email}`} value={member.role} disabled={attempt.busy} {...attempt.attributes} onChange={(e) => {
        const select = e.currentTarget
        const role = select.value as Role
        void attempt.run(async () => {
          try {
            await answer(client.PATCH("/auth/members/{user_id}", { params: { path: { user_id: member.user_id } }, body: { role } }), { quiet: true })
          } catch (err) {
            select.value = member.role
            throw err
          }
          await changedSelf(member.user_id, false)
          await reload()
          notice(`${member.email} is now ${roleWords(role).toLowerCase()}.`)
        })
      }}>
        {ROLES.map((r) => <option key={r} value={r}>{roleWords(r)}</option>)}
      </select>
      <Beside attempt={attempt} />
    </>
  )
}

const RemoveMember = ({ member, reload }: { readonly member: Member; readonly reload: () => Promise<void> }) => {
  const attempt = useAttempt()
  return (
    <>
      <button type="button" aria-label={`Remove ${member.email}`} disabled={attempt.busy} {...attempt.attributes} onClick={() => {
        if (!confirm(`Remove ${member.email} from the organization? They lose access to it at once.`)) return
        void attempt.run(async () => {
          await done(client.DELETE("/auth/members/{user_id}", { params: { path: { user_id: member.user_id } } }), { quiet: true })
          if (await changedSelf(member.user_id, true)) return
          await reload()
          notice(`${member.email} was removed.`)
        })
      }}>Remove</button>
      <Beside attempt={attempt} />
    </>
  )
}

const RevokeInvitation = ({ invitation, reload }: { readonly invitation: Invitation; readonly reload: () => Promise<void> }) => {
  const attempt = useAttempt()
  return (
    <>
      <button type="button" aria-label={`Revoke the invitation of ${invitation.email}`} disabled={attempt.busy} {...attempt.attributes} onClick={() => {
        if (!confirm(`Revoke the invitation of ${invitation.email}? Its link stops working.`)) return
        void attempt.run(async () => {
          await done(client.DELETE("/auth/invitations/{invitation_id}", { params: { path: { invitation_id: invitation.invitation_id } } }), { quiet: true })
          await reload()
          notice(`Invitation of ${invitation.email} revoked.`)
        })
      }}>Revoke</button>
      <Beside attempt={attempt} />
    </>
  )
}

/**
 * The organization's people with their roles and its invitations not yet accepted. The owner
 * also changes roles, removes members, revokes invitations and invites; everyone else reads.
 */
const Members = ({ first }: { readonly first: MemberList | Failure }) => {
  const [data, setData] = useState(first)
  const reload = async () => setData(await readMembers())
  const organizations = me()?.organizations ?? []
  const owner = !(data instanceof Error) && organizations.some((o) => o.organization_id === data.organization_id && o.role === "owner")
  return (
    <Page title="Members">
      <p>{`Your organizations: ${organizations.map((o) => `${o.name ?? o.organization_id} (${o.role})`).join(", ")}`}</p>
      {data instanceof Error
        ? <Muted>{data.body?.message ?? data.message}</Muted>
        : (
          <>
            <Table
              name="Members"
              heads={owner ? ["Email", "Role", "Joined", "Actions"] : ["Email", "Role", "Joined"]}
              rows={data.members.map((m) => [m.user_id, owner
                ? [m.email, <RoleChoice member={m} reload={reload} />, when(m.joined_at), <RemoveMember member={m} reload={reload} />]
                : [m.email, roleWords(m.role), when(m.joined_at)]])}
            />
            <h2>Invitations not yet accepted</h2>
            {data.invitations.length === 0
              ? <Muted>None.</Muted>
              : (
                <Table
                  name="Pending invitations"
                  heads={owner ? ["Email", "Role", "Link expires", "Actions"] : ["Email", "Role", "Link expires"]}
                  rows={data.invitations.map((i) => [i.invitation_id, owner
                    ? [i.email, roleWords(i.role), when(i.expires_at), <RevokeInvitation invitation={i} reload={reload} />]
                    : [i.email, roleWords(i.role), when(i.expires_at)]])}
                />
              )}
          </>
        )}
      <h2>Invite a member</h2>
      {owner
        ? (
          <>
            <Muted>The invited person gets a link: new here, they create their account on its page; with an account, they sign in there and join.</Muted>
            <Form label="Invite" submit="Send invitation" busy="Sending…" action={async (v) => {
              const email = v["email"] ?? ""
              await answer(client.POST("/auth/invitations", { body: { email, role: v["role"] === "admin" ? "admin" : "member" } }))
              await reload()
              notice(`Invitation sent to ${email}.`)
            }}>
              <Field label="Email" name="email" type="email" required />
              <Select label="Role" name="role" options={[["member", "Member"], ["admin", "Admin"]]} />
            </Form>
          </>
        )
        // The server refuses anyone else (403): the form would only lead to that refusal.
        : <Muted>Only the organization's owners invite members: ask one of them.</Muted>}
    </Page>
  )
}

export const members = async () => {
  const first = await readMembers()
  mount(<Members first={first} />)
}
