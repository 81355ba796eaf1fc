// The dashboard: a single-page client of /auth and /v0 with the session cookie. No framework
// and no build: plain ES modules served from memory (dom.js: the DOM helper and the API call;
// auth.js, mail.js, pods.js, policy.js, webhooks.js, org.js: the pages; scope.js: the organization, pod
// or inbox a page shows; charts.js: SVG charts; qrcode.mjs: the vendored QR encoder), and hash
// routes that pick the page. This module is the entry: navigation and routing.
import { acceptInvitation, forgot, members, resetPassword, security, signIn, signUp, verifyEmail } from "/dashboard/auth.js"
import { $, api, dropPrefetched, go, h, page, refreshMe, session, showFlash } from "/dashboard/dom.js"
import { closeSocket, compose, draft, drafts, inbox, prefetchPage, thread } from "/dashboard/mail.js"
import { apiKeys, billing, domain, domains, metrics, overview } from "/dashboard/org.js"
import { inboxes, pods } from "/dashboard/pods.js"
import { lists, suppressions } from "/dashboard/policy.js"
import { routeScope } from "/dashboard/scope.js"
import { webhook, webhooks } from "/dashboard/webhooks.js"

const NAV = [["#/", "Overview"], ["#/inboxes", "Inboxes"], ["#/pods", "Pods"], ["#/compose", "Compose"], ["#/drafts", "Drafts"], ["#/lists", "Lists"], ["#/suppressions", "Suppressions"],
  ["#/webhooks", "Webhooks"], ["#/domains", "Domains"], ["#/api-keys", "API keys"], ["#/metrics", "Metrics"], ["#/billing", "Billing"], ["#/members", "Members"], ["#/security", "Security"]]

const renderNav = () => {
  const links = session.me ? NAV : [["#/sign-in", "Sign in"], ["#/sign-up", "Sign up"]]
  // replaceChildren writes a null as the text "null": the sign-out button is added only when signed in.
  $("nav").replaceChildren(...links.map(([href, text]) => h("a", { href }, text)),
    ...(session.me ? [h("button", { type: "button", onclick: async () => { await api("POST", "/auth/sign-out"); session.me = null; go("#/sign-in") } }, "Sign out")] : []))
}

const route = async () => {
  closeSocket()
  const path = location.pathname
  // `#/inbox/ID/sent?q=from:ann&page=TOKEN`: the path picks the page, the query its state (a search, a page of a list).
  const [hashPath = "", hashQuery = ""] = location.hash.split("?")
  const params = new URLSearchParams(hashQuery)
  const [first, ...rest] = hashPath.replace(/^#\/?/, "").split("/").map(decodeURIComponent)
  // `#/pod/ID/webhooks`, `#/inbox/ID/lists/...`: a page at a pod's or an inbox's scope.
  const { scope, name, args } = routeScope(first, rest)
  // On the first load: the answer index.html preloaded, taken by every page (the pages of the
  // mailed links too, so the preload is never left unused).
  if (session.me === null) {
    prefetchPage(name, args, params)
    await refreshMe()
  }
  if (path === "/verify-email") return verifyEmail()
  if (path === "/reset-password") return resetPassword()
  if (path === "/accept-invitation") return acceptInvitation()
  renderNav()
  if (name === "sign-up") return signUp()
  if (name === "forgot") return forgot()
  const me = session.me
  if (!me || name === "sign-in") return signIn()
  if (!me.user.email_verified) {
    return page("Verify your email", h("p", {}, `Follow the link we sent to ${me.user.email}.`),
      h("button", { type: "button", onclick: () => api("POST", "/auth/resend-verification", { email: me.user.email }) }, "Send the link again"))
  }
  switch (name) {
    case "inboxes": return inboxes(scope)
    case "pods": return pods(args[0])
    case "inbox": return inbox(args[0], args[1], params)
    case "thread": return thread(args[0], args[1])
    case "compose": return compose(args[0], args[1], args[2])
    case "drafts": return drafts()
    case "draft": return draft(args[0], args[1])
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
  document.body.dataset.route = location.hash
})
addEventListener("hashchange", show)
show()
