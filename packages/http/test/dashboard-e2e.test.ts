/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against the
 * server on a loopback port (embedded database). One browser for the file; each test has
 * its own browser context (its own cookies). Mail arrives through the operator inbound route
 * (/inbound/raw), as a forwarder delivers it. Egress is the live one with private targets
 * allowed (INBOX_WEBHOOK_ALLOW_PRIVATE=1), so a webhook's test event reaches a receiver on
 * loopback. With DASHBOARD_SCREENSHOTS=1, screenshots of the main pages land in
 * docs/screenshots/ for the README.
 */
import { BlobStores, Egress, Engine, Ids, Organizations } from "@inbox/core"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { CapturedMail, freePort, pglite, settingsLayer } from "@inbox/testkit"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter } from "effect/http"
import { mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { TOTP } from "otpauth"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"

const SECRET = "dashboard-e2e-secret"
const PASSWORD = "correct horse battery"
const SHOTS = new URL("../../../docs/screenshots/", import.meta.url)

let port = 0
let url = ""
let runtime: ManagedRuntime.ManagedRuntime<CapturedMail | Organizations, unknown>
let browser: Browser
// A server on another loopback port: the "remote" images and the other site's form.
let elsewhere: Server
let elsewherePort = 0
const elsewhereHits: Array<string> = []
// A webhook receiver on loopback: the requests it got, with their headers.
let receiver: Server
let receiverUrl = ""
const received: Array<{ readonly url: string; readonly headers: Record<string, unknown> }> = []

let emails = 0
const uniqueEmail = (name: string) => `${name}-${Date.now().toString(36)}-${emails++}@example.org`

const mailedToken = async (address: string, path: string) => {
  const all = await runtime.runPromise(Effect.gen(function*() { return yield* (yield* CapturedMail).all }))
  for (const mail of [...all].reverse()) {
    if (!mail.envelope.to.includes(address.toLowerCase())) continue
    const text = Buffer.from(mail.raw).toString("utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "=")
    const match = new RegExp(`/${path}\\?token=([0-9a-f]{64})`).exec(text)
    if (match?.[1] !== undefined) return match[1]
  }
  throw new Error(`no ${path} link mailed to ${address}`)
}

const deliver = async (to: string, raw: string) => {
  const res = await fetch(`${url}/inbound/raw?to=${encodeURIComponent(to)}`, { method: "POST", headers: { "x-inbound-secret": SECRET }, body: raw })
  assert.strictEqual(res.status, 200, await res.text())
}

/** Screenshots are written only when asked (DASHBOARD_SCREENSHOTS=1): a test run leaves the tree as it found it. */
const shot = async (page: Page, name: string) => {
  if (process.env["DASHBOARD_SCREENSHOTS"] !== "1") return
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true })
}

/** Signs up through the pages, follows the mailed link, signs in: the page shows the overview. */
const signUpAndIn = async (page: Page, email: string, screenshots = false) => {
  await page.goto(`${url}/#/sign-up`)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(PASSWORD)
  if (screenshots) await shot(page, "sign-up")
  await page.getByRole("button", { name: "Create account" }).click()
  await page.getByRole("heading", { name: "Check your mail" }).waitFor()
  await page.goto(`${url}/verify-email?token=${await mailedToken(email, "verify-email")}`)
  await page.getByRole("heading", { name: "Email verified" }).waitFor()
  await signIn(page, email)
}

const signIn = async (page: Page, email: string, code?: string) => {
  await page.goto(`${url}/#/sign-in`)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
  if (code !== undefined) await page.getByLabel(/Two-step code/).fill(code)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Overview" }).waitFor()
}

const createInbox = async (page: Page, username: string) => {
  await page.goto(`${url}/#/inboxes`)
  await page.getByLabel("Username (optional)").fill(username)
  await page.getByRole("button", { name: "Create inbox" }).click()
  const link = page.getByRole("link", { name: new RegExp(`^${username}@`) })
  await link.waitFor({ timeout: 5_000 }).catch(async (e) => {
    throw new Error(`${e}: ${await page.locator("#error").textContent()} / ${await page.locator("main").textContent()}`)
  })
  return (await link.textContent()) ?? ""
}

const mail = (to: string, subject: string, body: string, type = "text/plain") =>
  `From: Ann <ann@example.org>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@example.org>\r\nContent-Type: ${type}; charset=utf-8\r\n\r\n${body}\r\n`

beforeAll(async () => {
  port = await freePort()
  url = `http://127.0.0.1:${port}`
  const settings = settingsLayer({ publicUrl: url, allowedHosts: ["127.0.0.1"], signup: "open", inboundSecret: SECRET, webhookAllowPrivate: true })
  const engine = Engine.layer.pipe(
    Layer.provideMerge(CapturedMail.layer),
    Layer.provideMerge(Layer.mergeAll(Ids.layer, settings, Egress.layer.pipe(Layer.provide(settings)), BlobStores.layerMemory)),
    Layer.provideMerge(pglite)
  )
  const served = HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(layerNodeServer({ port, host: "127.0.0.1" }, NODE_SERVER_DEFAULTS)),
    Layer.provideMerge(engine)
  )
  runtime = ManagedRuntime.make(served) as never
  await runtime.runPromise(Effect.void)
  elsewhere = createServer((req, res) => {
    elsewhereHits.push(req.url ?? "")
    res.setHeader("content-type", "text/html")
    res.end(`<form method="post" action="${url}/v0/inboxes"><input name="username" value="forged"></form><script>document.forms[0].submit()</script>`)
  })
  await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve))
  elsewherePort = (elsewhere.address() as { port: number }).port
  receiver = createServer((req, res) => {
    req.resume()
    req.on("end", () => { received.push({ url: req.url ?? "", headers: req.headers }); res.end("ok") })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks/inbox`
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  elsewhere?.close()
  receiver?.close()
  await runtime?.dispose()
})

describe("Dashboard in Chromium", () => {
  it("sign up, verify through the local outbox, create an inbox, see delivered mail appear without reloading, read it, reply, find the reply in the thread", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await signUpAndIn(page, uniqueEmail("owner"), true)
    await shot(page, "overview")
    const address = await createInbox(page, `e2e${emails}`)
    await shot(page, "inboxes")
    await page.getByRole("link", { name: address }).click()
    await page.getByRole("table", { name: "Threads" }).waitFor()
    await deliver(address, mail(address, "Lunch on Friday?", "Shall we meet at noon?"))
    // No reload: the WebSocket event refreshes the list in place.
    const row = page.getByRole("link", { name: "Lunch on Friday?" })
    await row.waitFor({ timeout: 10_000 })
    assert.include(await page.locator("tr.unread").first().textContent() ?? "", "Lunch on Friday?")
    await shot(page, "inbox")
    await row.click()
    await page.getByText("Shall we meet at noon?").waitFor()
    await page.getByRole("link", { name: "Reply", exact: true }).click()
    await page.getByLabel("Message").fill("Noon works for me.")
    await page.getByRole("button", { name: "Send" }).click()
    await page.getByText("Noon works for me.").waitFor()
    assert.strictEqual(await page.locator("article.message").count(), 2, "the reply joins the thread, after the original")
    await shot(page, "thread")
    await context.close()
  }, 60_000)

  it("an HTML message with a script and a remote image runs nothing and loads nothing until the reader allows images", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const dialogs: Array<string> = []
    page.on("dialog", (d) => { dialogs.push(d.message()); void d.dismiss() })
    await signUpAndIn(page, uniqueEmail("reader"))
    const address = await createInbox(page, `html${emails}`)
    const before = elsewhereHits.length
    await deliver(address, mail(address, "Newsletter", `<p>Hello reader</p><script>alert("ran")</script><img src="http://127.0.0.1:${elsewherePort}/pixel.gif" alt="pixel"><img src="x" onerror="alert('onerror')">`, "text/html"))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Newsletter" }).click()
    const frame = page.frameLocator("iframe.mail")
    await frame.getByText("Hello reader").waitFor()
    await page.waitForTimeout(300)
    assert.deepStrictEqual(dialogs, [], "no script in the message ran")
    assert.strictEqual(elsewhereHits.length, before, "the remote image was not loaded")
    await page.getByRole("button", { name: "Show remote images" }).click()
    await frame.getByText("Hello reader").waitFor()
    await page.waitForTimeout(300)
    assert.include(elsewhereHits.slice(before), "/pixel.gif", "once allowed, the image loads")
    assert.deepStrictEqual(dialogs, [])
    await context.close()
  }, 60_000)

  it("enable 2FA, then sign in with a TOTP code and with a recovery code", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const email = uniqueEmail("careful")
    await signUpAndIn(page, email)
    await page.getByRole("link", { name: "Security" }).click()
    await page.getByRole("button", { name: "Set up two-step verification" }).click()
    // The otpauth:// URI as a QR image drawn in the page (a data URL, so it has loaded pixels).
    const qr = page.getByRole("img", { name: /QR code of the authenticator link/ })
    await qr.waitFor()
    assert.isAbove(await qr.evaluate((img: HTMLImageElement) => img.naturalWidth), 40)
    const secret = (await page.getByTestId("totp-secret").textContent()) ?? ""
    const totp = new TOTP({ secret, digits: 6, period: 30, algorithm: "SHA1" })
    await page.getByLabel("Code").fill(totp.generate())
    await shot(page, "two-step")
    await page.getByRole("button", { name: "Enable" }).click()
    const recovery = page.locator("li code")
    await recovery.first().waitFor()
    assert.strictEqual(await recovery.count(), 10)
    const recoveryCode = (await recovery.first().textContent()) ?? ""
    await page.getByRole("button", { name: "Sign out" }).click()
    // A code is accepted once per time step: the next step's code is within the window.
    await signIn(page, email, totp.generate({ timestamp: Date.now() + 30_000 }))
    await page.getByRole("button", { name: "Sign out" }).click()
    await signIn(page, email, recoveryCode)
    await context.close()
  }, 60_000)

  it("the owner invites a member, who accepts through the mailed link", async () => {
    const owner = await browser.newContext()
    const ownerPage = await owner.newPage()
    await signUpAndIn(ownerPage, uniqueEmail("boss"))
    const inviteeEmail = uniqueEmail("newcomer")
    await ownerPage.getByRole("link", { name: "Members" }).click()
    await ownerPage.getByLabel("Email").fill(inviteeEmail)
    await ownerPage.getByRole("button", { name: "Send invitation" }).click()
    await ownerPage.getByText(`Invitation sent to ${inviteeEmail}.`).waitFor()
    await shot(ownerPage, "members")
    const invitee = await browser.newContext()
    const page = await invitee.newPage()
    await signUpAndIn(page, inviteeEmail)
    await page.goto(`${url}/accept-invitation?token=${await mailedToken(inviteeEmail, "accept-invitation")}`)
    await page.getByRole("heading", { name: "You joined the organization" }).waitFor()
    await owner.close()
    await invitee.close()
  }, 60_000)

  it("a form posted from another site with the session cookie is refused with csrf_failed", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await signUpAndIn(page, uniqueEmail("target"))
    const answer = page.waitForResponse((r) => r.url() === `${url}/v0/inboxes` && r.request().method() === "POST")
    // Another origin on the same site (another port): SameSite=Lax still sends the cookie, so
    // only the CSRF rule (token and same-origin Origin) stands in the way.
    await page.goto(`http://127.0.0.1:${elsewherePort}/attack`)
    const res = await answer
    assert.strictEqual(res.status(), 403)
    assert.strictEqual(((await res.json()) as { code: string }).code, "csrf_failed")
    await context.close()
  }, 60_000)
})

/** Follows a link of the main navigation. */
const navigate = (page: Page, name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click()

/** Waits for `locator`; on failure says what the page showed (its error banner and main text). */
const explained = (page: Page, locator: ReturnType<Page["locator"]>) =>
  locator.waitFor({ timeout: 10_000 }).catch(async (e) => {
    throw new Error(`${e}: ${await page.locator("#error").textContent()} / ${await page.locator("main").textContent()}`)
  })

/** A signed-in owner in a fresh context; confirm() dialogs are accepted. */
const owner = async (name: string) => {
  const context = await browser.newContext()
  const page = await context.newPage()
  page.on("dialog", (d) => void d.accept())
  await signUpAndIn(page, uniqueEmail(name))
  return { context, page }
}

describe("Dashboard pages of the organization in Chromium", () => {
  it("a webhook is created with its secret shown once, and a test event sent to a loopback receiver appears in its delivery log", async () => {
    const { context, page } = await owner("hooks")
    await navigate(page, "Webhooks")
    await page.getByLabel("URL").fill(receiverUrl)
    await page.getByLabel("message.received", { exact: true }).check()
    await page.getByRole("button", { name: "Create webhook" }).click()
    const secret = (await page.getByTestId("secret").textContent()) ?? ""
    assert.match(secret, /^whsec_/)
    await shot(page, "webhooks")
    // Shown once: the list, loaded again, has the webhook and no secret.
    await page.reload()
    const link = page.getByRole("link", { name: receiverUrl })
    await link.waitFor()
    assert.strictEqual(await page.getByTestId("secret").count(), 0)
    assert.notInclude((await page.locator("main").textContent()) ?? "", secret)
    await link.click()
    const before = received.length
    await page.getByRole("button", { name: "Send test event" }).click()
    const row = page.getByRole("table", { name: "Delivery log" }).getByRole("row").filter({ hasText: "test event" })
    await row.waitFor()
    assert.include((await row.textContent()) ?? "", "delivered")
    assert.include((await row.textContent()) ?? "", "200")
    assert.isAbove(received.length, before, "the receiver got the test event")
    assert.property(received.at(-1)?.headers ?? {}, "webhook-signature")
    await shot(page, "webhook-deliveries")
    // Disable from the list.
    await page.getByRole("link", { name: "← All webhooks" }).click()
    await page.getByRole("button", { name: `Disable ${receiverUrl}` }).click()
    await page.getByRole("button", { name: `Enable ${receiverUrl}` }).waitFor()
    await context.close()
  }, 60_000)

  it("a block-list entry with a reason is added to the organization's receive block list, listed after a reload, and deleted", async () => {
    const { context, page } = await owner("lists")
    await navigate(page, "Lists")
    await page.getByRole("link", { name: "receive block" }).waitFor()
    await page.getByLabel("Address or domain").fill("spam.example")
    await page.getByLabel("Reason (optional)").fill("sends junk")
    await page.getByRole("button", { name: "Add entry" }).click()
    const table = page.getByRole("table", { name: "receive block list" })
    await table.getByRole("cell", { name: "spam.example", exact: true }).waitFor()
    await page.reload()
    await table.getByRole("cell", { name: "spam.example", exact: true }).waitFor()
    assert.include((await table.textContent()) ?? "", "sends junk")
    await shot(page, "lists")
    // Allow lists take no reason: the form has no such field there.
    await page.getByRole("link", { name: "send allow" }).click()
    await page.getByRole("form", { name: "Add to the send allow list" }).waitFor()
    assert.strictEqual(await page.getByLabel("Reason (optional)").count(), 0)
    await page.getByRole("link", { name: "receive block" }).click()
    await page.getByRole("button", { name: "Delete spam.example" }).click()
    await page.getByText("This list is empty.").waitFor()
    await context.close()
  }, 60_000)

  it("an API key is created with its secret shown once, works, and stops working when revoked", async () => {
    const { context, page } = await owner("keys")
    await navigate(page, "API keys")
    await page.getByLabel("Name").fill("deploy bot")
    await page.getByRole("button", { name: "Create key" }).click()
    const secret = (await page.getByTestId("secret").textContent()) ?? ""
    assert.match(secret, /^am_/)
    await page.getByRole("button", { name: "Copy the api key" }).waitFor()
    await shot(page, "api-keys")
    const asKey = () => fetch(`${url}/v0/inboxes`, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status)
    assert.strictEqual(await asKey(), 200)
    await page.reload()
    await page.getByRole("cell", { name: "deploy bot", exact: true }).waitFor()
    assert.strictEqual(await page.getByTestId("secret").count(), 0)
    await page.getByRole("button", { name: "Revoke deploy bot" }).click()
    await page.getByText("No API keys.").waitFor()
    assert.strictEqual(await asKey(), 401)
    await context.close()
  }, 60_000)

  it("a draft is created, scheduled for later, and unscheduled", async () => {
    const { context, page } = await owner("drafter")
    await createInbox(page, `drafts${emails}`)
    await navigate(page, "Drafts")
    await page.getByLabel("To (comma-separated)").fill("bob@example.org")
    await page.getByLabel("Subject").fill("Quarterly plan")
    await page.getByLabel("Message").fill("First cut of the plan.")
    await page.getByRole("button", { name: "Save draft" }).click()
    await page.getByRole("link", { name: "Quarterly plan" }).click()
    await page.getByTestId("draft-status").filter({ hasText: "draft" }).waitFor()
    const later = new Date(Date.now() + 86_400_000)
    const local = new Date(later.getTime() - later.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    await page.getByLabel(/Send at/).fill(local)
    await page.getByRole("button", { name: "Save", exact: true }).click()
    await page.getByTestId("draft-status").filter({ hasText: "scheduled for" }).waitFor()
    await page.getByRole("link", { name: "← All drafts" }).click()
    const row = page.getByRole("row").filter({ hasText: "Quarterly plan" })
    assert.include((await row.textContent()) ?? "", "scheduled for")
    await shot(page, "drafts")
    await page.getByRole("button", { name: "Unschedule Quarterly plan" }).click()
    await page.getByRole("button", { name: "Unschedule Quarterly plan" }).waitFor({ state: "detached" })
    assert.notInclude((await page.getByRole("row").filter({ hasText: "Quarterly plan" }).textContent()) ?? "", "scheduled")
    await context.close()
  }, 60_000)

  it("a domain added lists the DNS records to publish with their status, its zone file, and verifies on demand", async () => {
    const { context, page } = await owner("domains")
    // The Free plan has no custom domains: the operator puts this organization on Pro.
    const me = (await page.evaluate(() => fetch("/auth/me").then((r) => r.json()))) as { organization_id: string }
    await runtime.runPromise(Organizations.use((o) => o.setPlan(me.organization_id, "pro", "admin")))
    await navigate(page, "Domains")
    await page.getByLabel("Domain name").fill("mail.example.net")
    await page.getByRole("button", { name: "Add domain" }).click()
    const records = page.getByRole("table", { name: "DNS records" })
    await explained(page, records)
    const text = (await records.textContent()) ?? ""
    for (const type of ["MX", "TXT"]) assert.include(text, type)
    assert.include(text, "MISSING")
    await page.getByRole("button", { name: "Show zone file" }).click()
    await page.getByLabel("Zone file").filter({ hasText: "mail.example.net" }).waitFor()
    await page.getByRole("button", { name: "Verify" }).click()
    await page.getByText("Verification checked").waitFor()
    assert.notStrictEqual(await page.getByTestId("domain-status").textContent(), "VERIFIED", "no DNS server answers in the test")
    await shot(page, "domain")
    await context.close()
  }, 60_000)

  it("labels added to and removed from a thread are reflected in the thread and the inbox", async () => {
    const { context, page } = await owner("labeller")
    const address = await createInbox(page, `labels${emails}`)
    await deliver(address, mail(address, "Contract draft", "Please review."))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Contract draft" }).click()
    await page.getByLabel("New label").fill("legal")
    await page.getByRole("button", { name: "Add label" }).click()
    await page.getByRole("button", { name: "Remove label legal" }).waitFor()
    await shot(page, "labels")
    await page.getByRole("link", { name: "← Back to the inbox" }).click()
    const row = page.getByRole("row").filter({ hasText: "Contract draft" })
    await row.waitFor()
    assert.include((await row.textContent()) ?? "", "legal")
    await page.getByRole("link", { name: "Contract draft" }).click()
    await page.getByRole("button", { name: "Remove label legal" }).click()
    await page.getByRole("button", { name: "Remove label legal" }).waitFor({ state: "detached" })
    await page.reload()
    await page.getByRole("heading", { name: "Labels" }).waitFor()
    assert.strictEqual(await page.getByRole("button", { name: "Remove label legal" }).count(), 0)
    await context.close()
  }, 60_000)

  it("billing shows the plan, and checkout without a payment provider shows billing_not_configured in the spec's words with its fix", async () => {
    const { context, page } = await owner("payer")
    await navigate(page, "Billing")
    await page.getByRole("table", { name: "Plan", exact: true }).getByRole("cell", { name: "Free" }).waitFor()
    await page.getByRole("button", { name: "Go to checkout" }).click()
    const problem = page.locator(".problem[data-code=billing_not_configured]")
    await problem.waitFor()
    const said = (await problem.textContent()) ?? ""
    assert.include(await page.locator("#error").textContent() ?? "", said.split(" — ")[0] ?? "")
    assert.include(said, " — ", "the fix follows the message")
    await shot(page, "billing")
    await context.close()
  }, 60_000)

  it("metrics are drawn as charts of usage, events and rates", async () => {
    const { context, page } = await owner("counter")
    const address = await createInbox(page, `metrics${emails}`)
    await deliver(address, mail(address, "Count me", "One message."))
    await navigate(page, "Metrics")
    await page.getByRole("heading", { name: "Usage" }).waitFor()
    const charts = page.locator("svg.chart[role=img]")
    assert.isAtLeast(await charts.count(), 3)
    assert.include(await page.locator("svg.chart").first().getAttribute("aria-label") ?? "", "latest")
    await page.getByRole("img", { name: /message\.received 1/ }).waitFor()
    await shot(page, "metrics")
    await context.close()
  }, 60_000)
})
