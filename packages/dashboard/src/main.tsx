/**
 * The dashboard's entry: the header's navigation (a Preact component), and hash routes that
 * pick the page. A single-page client of /auth and /v0 with the session cookie, built by Vite
 * (packages/dashboard). Every page is a Preact component typed from the OpenAPI document
 * (client.ts): the mail client (inbox.tsx, thread.tsx, message.tsx, write.tsx, drafts.tsx) and
 * the console (auth.tsx, org.tsx, pods.tsx, policy.tsx, webhooks.tsx over ui.tsx's pieces).
 */
import "./app.css"
import { render } from "preact"
import { acceptInvitation, forgot, members, resetPassword, security, signIn, signUp, unverified, verifyEmail } from "./auth.tsx"
import { $, api, dropPrefetched, go, refreshMe, session, showFlash } from "./dom.js"
import { draft, drafts } from "./drafts.tsx"
import { inbox, readingPane, thread } from "./inbox.tsx"
import { closeSocket, prefetchPage, wide } from "./mailbox.ts"
import { compose } from "./write.tsx"
import { apiKeys, billing, domain, domains, metrics, overview } from "./org.tsx"
import { inboxes, pods } from "./pods.tsx"
import { lists, suppressions } from "./policy.tsx"
import { routeScope } from "./scope.tsx"
import { startShortcuts } from "./keys.tsx"
import { clientSettings } from "./settings.tsx"
import { startTheme } from "./theme.tsx"
import { webhook, webhooks } from "./webhooks.tsx"

const NAV: ReadonlyArray<readonly [string, string]> = [["#/", "Overview"], ["#/inboxes", "Inboxes"], ["#/pods", "Pods"], ["#/compose", "Compose"], ["#/drafts", "Drafts"],
  ["#/lists", "Lists"], ["#/suppressions", "Suppressions"], ["#/webhooks", "Webhooks"], ["#/domains", "Domains"], ["#/api-keys", "API keys"], ["#/metrics", "Metrics"],
  ["#/billing", "Billing"], ["#/members", "Members"], ["#/security", "Security"]]
const SIGNED_OUT: ReadonlyArray<readonly [string, string]> = [["#/sign-in", "Sign in"], ["#/sign-up", "Sign up"]]

const signOut = async () => {
  await api("POST", "/auth/sign-out")
  session.me = null
  go("#/sign-in")
}

/** The main navigation: the console's pages when signed in (the current one marked), else sign in and sign up. */
const Nav = ({ signedIn, current }: { readonly signedIn: boolean; readonly current: string }) => (
  <>
    {(signedIn ? NAV : SIGNED_OUT).map(([href, text]) => (
      <a key={href} href={href} aria-current={href === current ? "page" : undefined}>{text}</a>
    ))}
    {signedIn ? <button type="button" onClick={signOut}>Sign out</button> : null}
  </>
)

const renderNav = (first: string) => {
  const nav = $("nav")
  if (nav) render(<Nav signedIn={session.me !== null} current={`#/${first ?? ""}`} />, nav)
}

// Whether `GET /auth/me` was asked on this load.
let asked = false

const route = async () => {
  closeSocket()
  const path = location.pathname
  // `#/inbox/ID/sent?q=from:ann&page=TOKEN`: the path picks the page, the query its state (a search, a page of a list).
  const [hashPath = "", hashQuery = ""] = location.hash.split("?")
  const params = new URLSearchParams(hashQuery)
  const [first = "", ...rest] = hashPath.replace(/^#\/?/, "").split("/").map(decodeURIComponent)
  // `#/pod/ID/webhooks`, `#/inbox/ID/lists/...`: a page at a pod's or an inbox's scope.
  const { scope, name, args } = routeScope(first, rest)
  // On the first load: the answer index.html preloaded, taken by every page (the pages of the
  // mailed links too, so the preload is never left unused). Later, sign-in and sign-out keep
  // `session.me` themselves: asking again on each route of a signed-out person would leave the
  // sign-in form on screen while the next page waits for the answer, to be typed into and lost.
  if (!asked) {
    asked = true
    prefetchPage(name, args, params)
    await refreshMe()
  }
  if (path === "/verify-email") return verifyEmail()
  if (path === "/reset-password") return resetPassword()
  if (path === "/accept-invitation") return acceptInvitation()
  renderNav(first)
  if (name === "sign-up") return signUp()
  if (name === "forgot") return forgot()
  const me = session.me
  if (!me || name === "sign-in") return signIn()
  if (!me.user.email_verified) {
    return unverified(me.user.email)
  }
  switch (name) {
    case "inboxes": return inboxes(scope)
    case "pods": return pods(args[0])
    case "inbox": return inbox(args[0] ?? "", args[1], params)
    // Wide: the list with the thread in the reading pane beside it; a phone shows the thread alone.
    case "thread": return wide() ? readingPane(args[0] ?? "", args[1] ?? "", params) : thread(args[0] ?? "", args[1] ?? "", params)
    case "mail-settings": return clientSettings(args[0] ?? "")
    case "compose": return compose(args[0], args[1], args[2])
    case "drafts": return drafts(params)
    case "draft": return draft(args[0] ?? "", args[1] ?? "")
    case "lists": return lists(scope, args[0], args[1])
    case "suppressions": return suppressions(args[0])
    case "webhooks": return webhooks(scope)
    case "webhook": return webhook(args[0])
    case "domains": return domains(scope)
    case "domain": return domain(scope, args[0])
    case "api-keys": return apiKeys()
    case "billing": return billing()
    case "metrics": return metrics(scope, args[0])
    case "security": return security()
    case "members": return members()
    default: return overview(me)
  }
}

// Move focus to the page's heading after each route, so keyboard and screen-reader users land on the new page.
// `data-route` on <body> says which route is drawn, its data included (the page-load benchmark waits for it).
const show = () => route().then(() => { showFlash(); $("main")?.focus({ preventScroll: true }) }, () => {}).finally(() => {
  dropPrefetched()
  document.body.dataset["route"] = location.hash
})
addEventListener("hashchange", show)
startTheme($("theme"))
startShortcuts()
// The skip link moves focus to the page's content; its `#main` must not change the hash, which routes.
document.querySelector(".skip")?.addEventListener("click", (e) => {
  e.preventDefault()
  $("main")?.focus()
})
void show()
