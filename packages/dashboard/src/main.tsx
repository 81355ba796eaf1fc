/**
 * The dashboard's entry: the header's navigation (a Preact component), and hash routes that
 * pick the page. A single-page client of /auth and /v0 with the session cookie, built by Vite
 * (packages/dashboard). Every page is a Preact component typed from the OpenAPI document
 * (client.ts): the mail client (inbox.tsx, thread.tsx, message.tsx, write.tsx, drafts.tsx) and
 * the console (auth.tsx, org.tsx, pods.tsx, policy.tsx, webhooks.tsx over ui.tsx's pieces).
 */
// First of all: the page's own GETs go out before the rest of the script runs (early.ts).
import "./first.ts"
import "./app.css"
import { render } from "preact"
import { $, api, go, refreshMe, session, showFlash } from "./dom.js"
import { dropPrefetched } from "./early.ts"
import { draft, drafts } from "./drafts.tsx"
import { inbox, readingPane, thread } from "./inbox.tsx"
import { closeSocket, wide } from "./mailbox.ts"
import { compose } from "./write.tsx"
import { routeScope } from "./scope.tsx"
import { startShortcuts } from "./keys.tsx"
import { startTheme } from "./theme.tsx"

// The console's pages and the sign-in pages load when first opened (Vite makes each a chunk),
// so a signed-in first load of the mail client parses only the mail client's script.
const auth = () => import("./auth.tsx")
const org = () => import("./org.tsx")
const tenancy = () => import("./pods.tsx")
const policy = () => import("./policy.tsx")
const hooks = () => import("./webhooks.tsx")
const settings = () => import("./settings.tsx")

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
  // mailed links too, so the preload is never left unused); the page's own GETs were started
  // by index.html's first module (early.ts). Later, sign-in and sign-out keep
  // `session.me` themselves: asking again on each route of a signed-out person would leave the
  // sign-in form on screen while the next page waits for the answer, to be typed into and lost.
  if (!asked) {
    asked = true
    await refreshMe()
  }
  if (path === "/verify-email") return (await auth()).verifyEmail()
  if (path === "/reset-password") return (await auth()).resetPassword()
  if (path === "/accept-invitation") return (await auth()).acceptInvitation()
  renderNav(first)
  if (name === "sign-up") return (await auth()).signUp()
  if (name === "forgot") return (await auth()).forgot()
  const me = session.me
  if (!me || name === "sign-in") return (await auth()).signIn()
  if (!me.user.email_verified) {
    return (await auth()).unverified(me.user.email)
  }
  switch (name) {
    case "inboxes": return (await tenancy()).inboxes(scope)
    case "pods": return (await tenancy()).pods(args[0])
    case "inbox": return inbox(args[0] ?? "", args[1], params)
    // Wide: the list with the thread in the reading pane beside it; a phone shows the thread alone.
    case "thread": return wide() ? readingPane(args[0] ?? "", args[1] ?? "", params) : thread(args[0] ?? "", args[1] ?? "", params)
    case "mail-settings": return (await settings()).clientSettings(args[0] ?? "")
    case "compose": return compose(args[0], args[1], args[2])
    case "drafts": return drafts(params)
    case "draft": return draft(args[0] ?? "", args[1] ?? "")
    case "lists": return (await policy()).lists(scope, args[0], args[1])
    case "suppressions": return (await policy()).suppressions(args[0])
    case "webhooks": return (await hooks()).webhooks(scope)
    case "webhook": return (await hooks()).webhook(args[0])
    case "domains": return (await org()).domains(scope)
    case "domain": return (await org()).domain(scope, args[0])
    case "api-keys": return (await org()).apiKeys()
    case "billing": return (await org()).billing()
    case "metrics": return (await org()).metrics(scope, args[0])
    case "security": return (await auth()).security()
    case "members": return (await auth()).members()
    default: return (await org()).overview(me)
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
