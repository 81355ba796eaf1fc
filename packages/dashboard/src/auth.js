// The /auth pages: sign in (with a two-step or recovery code), sign up, the pages of the mailed
// links (verify, reset, accept an invitation), security (two-step setup with a QR code of the
// otpauth:// URI, enable, disable; password change) and members (invitations).
import { $, api, field, form, go, h, notice, page, refreshMe, select, session, table, when } from "./dom.js"

export const signIn = () => page("Sign in",
  form("Sign in", [...field("Email", { name: "email", type: "email", required: true, autocomplete: "username" }), ...field("Password", { name: "password", type: "password", required: true, autocomplete: "current-password" }),
    ...field("Two-step code or recovery code (if enabled)", { name: "code", autocomplete: "one-time-code" })], "Sign in",
  async (v) => {
    const body = { email: v.email, password: v.password }
    if (v.code) body.totp_code = v.code.trim()
    await api("POST", "/auth/sign-in", body)
    await refreshMe()
    go("#/")
  }),
  h("p", {}, h("a", { href: "#/forgot" }, "Forgot your password?")))

export const signUp = () => page("Sign up",
  form("Sign up", [...field("Email", { name: "email", type: "email", required: true }), ...field("Password", { name: "password", type: "password", required: true, autocomplete: "new-password" })], "Create account",
  async (v) => {
    await api("POST", "/auth/sign-up", v)
    page("Check your mail", h("p", {}, `We sent a verification link to ${v.email}. Follow it, then sign in.`))
  }))

export const forgot = () => page("Reset your password",
  form("Reset password", field("Email", { name: "email", type: "email", required: true }), "Send reset link", async (v) => {
    await api("POST", "/auth/password-reset", v)
    page("Check your mail", h("p", {}, "If this email has an account, a reset link is on its way."))
  }))

const tokenFromUrl = () => new URLSearchParams(location.search).get("token") ?? ""

export const verifyEmail = async () => {
  page("Verifying your email…")
  try {
    await api("POST", "/auth/verify-email", { token: tokenFromUrl() })
    page("Email verified", h("p", {}, h("a", { href: "/#/" }, "Continue to the dashboard")))
  } catch { page("This link cannot be used", h("p", {}, h("a", { href: "/#/sign-in" }, "Sign in"), " to send a new one.")) }
}

export const resetPassword = () => page("Choose a new password",
  form("New password", field("New password", { name: "password", type: "password", required: true, autocomplete: "new-password" }), "Set password", async (v) => {
    await api("POST", "/auth/password-reset/confirm", { token: tokenFromUrl(), password: v.password })
    page("Password changed", h("p", {}, h("a", { href: "/#/sign-in" }, "Sign in")))
  }))

/**
 * The page of a mailed invitation. Signed out, it offers both ways in, each carrying the
 * invitation: a new person creates the account here (sign-up with `invitation_token`, which
 * makes them a member with the address proved, so no verification mail), then is signed in;
 * someone with an account signs in here, then accepts. Under the default invite-only sign-up,
 * the plain sign-up form would refuse a new person ("needs an invitation").
 */
export const acceptInvitation = async () => {
  const token = tokenFromUrl()
  const enter = () => location.assign("/#/")
  const accept = async () => {
    page("Accepting the invitation…")
    try {
      await api("POST", "/auth/invitations/accept", { token })
    } catch (err) {
      return page("This invitation cannot be used", h("p", {}, err.body?.message ?? err.message), h("p", {}, "Ask the person who invited you to send a new one."), h("p", {}, h("a", { href: "/#/" }, "Go to the dashboard")))
    }
    await refreshMe()
    page("You joined the organization", h("p", {}, h("a", { href: "/#/" }, "Continue to the dashboard")))
  }
  if (session.me) return accept()
  page("Join the organization",
    h("p", {}, "You were invited. New here? Create your account with the address the invitation was sent to. Already have an account? Sign in below."),
    h("h2", {}, "Create your account"),
    form("Create your account", [...field("Email", { name: "email", type: "email", required: true, autocomplete: "username" }),
      ...field("Password (at least 8 characters)", { name: "password", type: "password", required: true, autocomplete: "new-password", minLength: 8 })], "Create account and join",
    async (v) => {
      await api("POST", "/auth/sign-up", { email: v.email, password: v.password, invitation_token: token })
      await api("POST", "/auth/sign-in", { email: v.email, password: v.password })
      enter()
    }),
    h("h2", {}, "Sign in"),
    form("Sign in and join", [...field("Your email", { name: "email", type: "email", required: true, autocomplete: "username" }),
      ...field("Your password", { name: "password", type: "password", required: true, autocomplete: "current-password" }),
      ...field("Two-step code or recovery code (if enabled)", { name: "code", autocomplete: "one-time-code" })], "Sign in and join",
    async (v) => {
      const body = { email: v.email, password: v.password }
      if (v.code) body.totp_code = v.code.trim()
      await api("POST", "/auth/sign-in", body)
      await refreshMe()
      await accept()
    }))
}

/**
 * The otpauth:// URI as a QR image (a GIF data URL drawn by the vendored qrcode-generator),
 * loaded only here, so the other pages never fetch the encoder.
 */
const qrImage = async (uri) => {
  const { default: qrcode } = await import("qrcode-generator")
  const qr = qrcode(0, "M")
  qr.addData(uri)
  qr.make()
  return h("img", { className: "qr", src: qr.createDataURL(5, 4), alt: "QR code of the authenticator link: scan it with your authenticator app" })
}

export const security = () => page("Security",
  h("h2", {}, "Two-step verification"),
  session.me.user.two_factor_enabled
    ? form("Disable two-step verification", field("Code", { name: "code", required: true, autocomplete: "one-time-code" }), "Disable", async (v) => { await api("POST", "/auth/2fa/disable", v); await refreshMe(); security() })
    : h("button", { type: "button", onclick: async () => {
      const setup = await api("POST", "/auth/2fa/setup")
      $("totp").replaceChildren(
        h("p", {}, "Scan this code with your authenticator app (or enter the secret), then enter the code it shows."),
        await qrImage(setup.otpauth_uri),
        h("p", {}, "Secret: ", h("code", { "data-testid": "totp-secret" }, setup.secret)),
        h("p", {}, h("a", { href: setup.otpauth_uri }, "otpauth link")),
        form("Enable two-step verification", field("Code", { name: "code", required: true, autocomplete: "one-time-code" }), "Enable", async (v) => {
          const enabled = await api("POST", "/auth/2fa/enable", v)
          $("totp").replaceChildren(h("p", {}, "Two-step verification is on. Keep these recovery codes; each works once:"), h("ul", {}, enabled.recovery_codes.map((c) => h("li", {}, h("code", {}, c)))))
          await refreshMe()
        }))
    } }, "Set up two-step verification"),
  h("div", { id: "totp" }),
  h("h2", {}, "Change password"),
  form("Change password", [...field("Current password", { name: "current_password", type: "password", required: true }), ...field("New password", { name: "new_password", type: "password", required: true })], "Change password",
    async (v) => { await api("POST", "/auth/password", v); notice("Password changed.") }))

const ROLE_WORDS = { owner: "Owner", admin: "Admin", member: "Member" }

/** The organization's people with their roles, its invitations not yet accepted, and (for its owner) a form to invite. */
export const members = async () => {
  const data = await api("GET", "/auth/members", undefined, { quiet: true }).catch((err) => err)
  const failed = data instanceof Error
  page("Members",
    h("p", {}, "Your organizations: ", session.me.organizations.map((o) => `${o.name ?? o.organization_id} (${o.role})`).join(", ")),
    failed ? h("p", { className: "muted" }, data.body?.message ?? data.message) : [
      table("Members", ["Email", "Role", "Joined"], data.members.map((m) => [m.email, ROLE_WORDS[m.role] ?? m.role, when(m.joined_at)])),
      h("h2", {}, "Invitations not yet accepted"),
      data.invitations.length === 0 ? h("p", { className: "muted" }, "None.")
        : table("Pending invitations", ["Email", "Role", "Link expires"], data.invitations.map((i) => [i.email, ROLE_WORDS[i.role] ?? i.role, when(i.expires_at)]))
    ],
    h("h2", {}, "Invite a member"),
    form("Invite", [...field("Email", { name: "email", type: "email", required: true }), ...select("Role", "role", [["member", "Member"], ["admin", "Admin"]])], "Send invitation",
      async (v) => { await api("POST", "/auth/invitations", v); await members(); notice(`Invitation sent to ${v.email}.`) }))
}
