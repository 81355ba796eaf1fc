/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against the
 * server on a loopback port (embedded database). One browser for the file; each test has
 * its own browser context (its own cookies). Mail arrives through the operator inbound route
 * (/inbound/raw), as a forwarder delivers it. With DASHBOARD_SCREENSHOTS=1, screenshots of the
 * main pages land in docs/screenshots/ for the README.
 */
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { CapturedMail, engineLayer, freePort, pglite } from "@inbox/testkit"
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
let runtime: ManagedRuntime.ManagedRuntime<CapturedMail, unknown>
let browser: Browser
// A server on another loopback port: the "remote" images and the other site's form.
let elsewhere: Server
let elsewherePort = 0
const elsewhereHits: Array<string> = []

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
  const served = HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(layerNodeServer({ port, host: "127.0.0.1" }, NODE_SERVER_DEFAULTS)),
    Layer.provideMerge(engineLayer(pglite, { publicUrl: url, allowedHosts: ["127.0.0.1"], signup: "open", inboundSecret: SECRET }))
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
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  elsewhere?.close()
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
