/**
 * The dashboard in a real browser: Debian's Chromium (or INBOX_TEST_CHROMIUM) driven by
 * playwright-core against the server on a loopback port (embedded database). One browser for the file; each test has
 * its own browser context (its own cookies). Mail arrives through the operator inbound route
 * (/inbound/raw), as a forwarder delivers it. Egress is the live one with private targets
 * allowed (INBOX_WEBHOOK_ALLOW_PRIVATE=1), so a webhook's test event reaches a receiver on
 * loopback. With DASHBOARD_SCREENSHOTS=1, screenshots of the main pages land in
 * docs/screenshots/ for the README.
 */
import { BlobStores, Egress, Engine, Ids, Jobs, Organizations, Suppressions } from "@inbox/core/internal"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { CapturedMail, chromiumPath, freePort, pglite, settingsLayer } from "@inbox/testkit"
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
let runtime: ManagedRuntime.ManagedRuntime<CapturedMail | Organizations | Suppressions, unknown>
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

const mail = (to: string, subject: string, body: string, type = "text/plain", id = `<${Math.random().toString(36).slice(2)}@example.org>`, extra = "") =>
  `From: Ann <ann@example.org>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: ${id}\r\n${extra}Content-Type: ${type}; charset=utf-8\r\n\r\n${body}\r\n`

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
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] })
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
    // An empty inbox says so, and waits for mail.
    await page.getByRole("status").filter({ hasText: "No mail yet." }).waitFor()
    await deliver(address, mail(address, "Lunch on Friday?", "Shall we meet at noon?"))
    // No reload: the WebSocket event refreshes the list in place.
    const row = page.getByRole("link", { name: "Lunch on Friday?" })
    await row.waitFor({ timeout: 10_000 })
    assert.include(await page.locator("tr.unread").first().textContent() ?? "", "Lunch on Friday?")
    await shot(page, "inbox")
    await row.click()
    // On a wide screen the thread opens in the reading pane, beside the list (which shows its preview too).
    await page.getByRole("region", { name: "Reading pane" }).getByRole("article").getByText("Shall we meet at noon?").waitFor()
    assert.match(new URL(page.url()).hash, /^#\/thread\//, "the address carries the open thread")
    await page.getByRole("link", { name: "Reply", exact: true }).click()
    // The thread's label controls name "message" too: fill the field of the Reply page once it is shown.
    await page.getByRole("heading", { name: "Reply" }).waitFor()
    await page.getByLabel("Message", { exact: true }).fill("Noon works for me.")
    await page.getByRole("button", { name: "Send" }).click()
    // The reply quotes the original: its own words show, and again in the folded full text.
    await page.getByText("Noon works for me.").first().waitFor()
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

  it("the HTML message's frame is as tall as its content, and the page's policy blocks a script in it even without the sandbox", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const dialogs: Array<string> = []
    page.on("dialog", (d) => { dialogs.push(d.message()); void d.dismiss() })
    await signUpAndIn(page, uniqueEmail("tall"))
    const address = await createInbox(page, `tall${emails}`)
    const lines = Array.from({ length: 80 }, (_, i) => `<p>Line ${i + 1}</p>`).join("")
    await deliver(address, mail(address, "Long letter", `${lines}<img src="x" onerror="alert('onerror')"><script>alert("ran")</script>`, "text/html"))
    await deliver(address, mail(address, "Short note", "<p>Just one line</p>", "text/html"))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    const measure = () => page.locator("iframe.mail").first().evaluate((f: HTMLIFrameElement) =>
      [f.getBoundingClientRect().height, f.contentDocument?.documentElement.scrollHeight ?? -1, f.contentDocument?.documentElement.clientHeight ?? -1] as const)
    await page.getByRole("link", { name: "Long letter" }).click()
    const long = page.frameLocator("iframe.mail")
    await long.getByText("Line 80", { exact: true }).waitFor()
    await page.waitForFunction(() => (document.querySelector("iframe.mail") as HTMLIFrameElement | null)?.style.height.endsWith("px"))
    const [height, content, inner] = await measure()
    assert.isAbove(height, 1500, "eighty paragraphs are not squeezed into a box")
    assert.isAtMost(content, inner, "nothing is left below the frame's edge to scroll to")
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Short note" }).click()
    await page.frameLocator("iframe.mail").getByText("Just one line").waitFor()
    await page.waitForFunction(() => (document.querySelector("iframe.mail") as HTMLIFrameElement | null)?.style.height.endsWith("px"))
    const [short] = await measure()
    assert.isBelow(short, 150, "a one-line mail takes a line's room, not a fixed box")
    assert.deepStrictEqual(dialogs, [], "neither the script nor the onerror handler ran")
    // Defence in depth: with the sandbox taken away, the page's Content-Security-Policy (which a
    // srcdoc frame inherits) still refuses inline scripts and handlers.
    await page.locator("iframe.mail").first().evaluate((f: HTMLIFrameElement) => {
      f.removeAttribute("sandbox")
      f.srcdoc = `<p>Unsandboxed</p><img src="x" onerror="alert('onerror')"><script>alert("ran")</script>`
    })
    await page.frameLocator("iframe.mail").getByText("Unsandboxed").waitFor()
    await page.waitForTimeout(300)
    assert.deepStrictEqual(dialogs, [], "the page's policy blocked both")
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

/** Runs the due jobs (webhook deliveries) now: this server has no background worker. */
const runJobs = () => runtime.runPromise(Jobs.use((jobs) => jobs.runDue({ wait: true })) as never)

/** Follows a link of the main navigation. */
const navigate = (page: Page, name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click()

/** Waits for `locator`; on failure says what the page showed (its error banner and main text). */
const explained = (page: Page, locator: ReturnType<Page["locator"]>) =>
  locator.waitFor({ timeout: 10_000 }).catch(async (e) => {
    throw new Error(`${e}: ${await page.locator("#error").textContent()} / ${await page.locator("main").textContent()}`)
  })

/** The signed-in person's organization (GET /auth/me). */
const organizationOf = async (page: Page) =>
  ((await page.evaluate(() => fetch("/auth/me").then((r) => r.json()))) as { organization_id: string }).organization_id

/** The Free plan has no custom domains: the operator puts the page's organization on Pro. */
const onPro = async (page: Page) => {
  const organization = await organizationOf(page)
  await runtime.runPromise(Organizations.use((o) => o.setPlan(organization, "pro", "admin")))
}

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

  it("a delivery in a webhook's log opens to its payload, pretty and copyable, and is redelivered as a new delivery with the same webhook-id", async () => {
    const { context, page } = await owner("payload")
    await context.grantPermissions(["clipboard-read", "clipboard-write"])
    const address = await createInbox(page, `payload${emails}`)
    const hook = `${receiverUrl}?payload=${emails}`
    await navigate(page, "Webhooks")
    await page.getByLabel("URL").fill(hook)
    await page.getByRole("button", { name: "Create webhook" }).click()
    await page.getByTestId("secret").waitFor()
    await deliver(address, mail(address, "Payload please", "Show me the JSON."))
    const sent = () => received.filter((r) => r.url.endsWith(new URL(hook).search))
    await runJobs()
    assert.lengthOf(sent(), 1, "the receiver got the delivery")
    await page.getByRole("link", { name: hook }).click()
    const log = page.getByRole("table", { name: "Delivery log" })
    const row = log.getByRole("row").filter({ hasText: "message.received" })
    await explained(page, row)
    await row.getByRole("button", { name: /^Payload of the message\.received delivery/ }).click()
    const payload = page.getByRole("region", { name: /^The message\.received delivery/ }).locator("pre.payload")
    await explained(page, payload)
    const json = JSON.parse((await payload.textContent()) ?? "") as { event_type: string; event_id: string; message: { subject: string } }
    assert.strictEqual(json.event_type, "message.received")
    assert.strictEqual(json.message.subject, "Payload please")
    assert.include((await payload.textContent()) ?? "", '\n  "event_type": "message.received"', "pretty, two spaces a level")
    await page.getByRole("button", { name: /^Copy the payload of delivery/ }).click()
    await page.getByText("Copied.").waitFor()
    assert.deepStrictEqual(JSON.parse(await page.evaluate(() => navigator.clipboard.readText())), json)
    await shot(page, "webhook-payload")
    // On a phone, dark: the payload scrolls within itself, the page does not scroll sideways.
    await page.emulateMedia({ colorScheme: "dark" })
    await fitsPhone(page)
    await page.setViewportSize({ width: 390, height: 844 })
    await shot(page, "phone-webhook-payload-dark")
    await page.emulateMedia({ colorScheme: "light" })
    await page.setViewportSize({ width: 1280, height: 720 })
    await page.getByRole("button", { name: /^Redeliver the message\.received event/ }).click()
    await page.getByText(/^Sent again as a new delivery/).waitFor()
    await explained(page, log.getByRole("row").filter({ hasText: "message.received" }).nth(1))
    await runJobs()
    assert.lengthOf(sent(), 2, "the receiver got it again")
    assert.strictEqual(sent()[1]?.headers["webhook-id"], json.event_id)
    assert.strictEqual(sent()[0]?.headers["webhook-id"], json.event_id)
    const deliveries = await asSession(page, "GET", `/v0/webhooks/${(await asSession(page, "GET", "/v0/webhooks")).body["webhooks"][0].webhook_id}/deliveries`)
    assert.strictEqual(deliveries.body["count"], 2)
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
    await page.getByLabel("Name", { exact: true }).fill("deploy bot")
    await page.getByRole("button", { name: "Create key" }).click()
    const secret = (await page.getByTestId("secret").textContent()) ?? ""
    assert.match(secret, /^am_/)
    await page.getByRole("button", { name: "Copy the api key" }).waitFor()
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

  it("a domain added lists the DNS records to publish with their status and copy buttons, its zone file, and verifies on demand", async () => {
    const { context, page } = await owner("domains")
    await context.grantPermissions(["clipboard-read", "clipboard-write"])
    await onPro(page)
    await navigate(page, "Domains")
    await page.getByLabel("Domain name").fill("mail.example.net")
    await page.getByRole("button", { name: "Add domain" }).click()
    const records = page.getByRole("table", { name: "DNS records" })
    await explained(page, records)
    const text = (await records.textContent()) ?? ""
    for (const type of ["MX", "TXT"]) assert.include(text, type)
    assert.include(text, "MISSING")
    // Each record's name and value are copied by a button beside it.
    const value = (await records.getByRole("row").nth(1).locator("td:nth-child(3) code").textContent()) ?? ""
    await records.getByRole("button", { name: /^Copy the value of record 1 / }).click()
    await page.getByText("Copied.").waitFor()
    assert.strictEqual(await page.evaluate(() => navigator.clipboard.readText()), value)
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
    // The list beside the reading pane shows the thread's labels as they are now.
    await page.reload()
    const row = page.getByRole("row").filter({ hasText: "Contract draft" })
    await row.waitFor()
    assert.include((await row.textContent()) ?? "", "legal")
    await page.getByRole("link", { name: "Contract draft" }).click()
    await page.getByRole("button", { name: "Remove label legal" }).click()
    await page.getByRole("button", { name: "Remove label legal" }).waitFor({ state: "detached" })
    await page.reload()
    await page.getByRole("heading", { name: "Thread labels" }).waitFor()
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

  it("billing compares the plans side by side with their prices and limits, the organization's plan marked", async () => {
    const { context, page } = await owner("compare")
    await onPro(page)
    await navigate(page, "Billing")
    const compared = page.getByRole("table", { name: "Plans compared" })
    await explained(page, compared)
    const plans = (await page.evaluate(() => fetch("/public/plans").then((r) => r.json()))) as { plans: Array<{ name: string; limits: Record<string, number | null> }> }
    const heads = (await compared.getByRole("columnheader").allTextContents()).map((t) => t.trim())
    assert.deepStrictEqual(heads, plans.plans.map((p) => p.name === "Pro" ? "Proyour plan" : p.name))
    const current = compared.locator("th[aria-current=true]")
    assert.strictEqual((await current.textContent())?.trim(), "Proyour plan")
    const row = async (what: string) => (await compared.getByRole("row").filter({ has: page.getByRole("rowheader", { name: what, exact: true }) }).getByRole("cell").allTextContents()).map((c) => c.trim())
    assert.deepStrictEqual(await row("Inboxes"), plans.plans.map((p) => String(p.limits["inboxes"]?.toLocaleString("en-US"))))
    assert.deepStrictEqual(await row("Sends a day"), plans.plans.map((p) => p.limits["sends_per_day"] === null ? "no daily limit" : String(p.limits["sends_per_day"]?.toLocaleString("en-US"))))
    assert.deepStrictEqual(await row("Webhooks"), plans.plans.map((p) => String(p.limits["webhooks"])))
    await page.getByRole("table", { name: "Plan", exact: true }).getByRole("cell", { name: "Pro" }).waitFor()
    await shot(page, "billing")
    await page.emulateMedia({ colorScheme: "dark" })
    await fitsPhone(page)
    await page.setViewportSize({ width: 390, height: 844 })
    await shot(page, "phone-billing-dark")
    await context.close()
  }, 60_000)

  it("metrics are drawn as charts of usage, events and rates, with values on their axes and a tooltip at each period", async () => {
    const { context, page } = await owner("counter")
    const address = await createInbox(page, `metrics${emails}`)
    await deliver(address, mail(address, "Count me", "One message."))
    await navigate(page, "Metrics")
    await page.getByRole("heading", { name: "Usage" }).waitFor()
    const charts = page.locator("svg.chart[role=img]")
    assert.isAtLeast(await charts.count(), 3)
    assert.include(await page.locator("svg.chart").first().getAttribute("aria-label") ?? "", "latest")
    // The axes: the highest value and 0 on the left, the first and last period below.
    const first = page.locator("svg.chart").first()
    const ticks = await first.locator("text.tick").allTextContents()
    assert.include(ticks, "0")
    assert.isAtLeast(ticks.filter((t) => t !== "").length, 4, ticks.join(" | "))
    // A dot at each period, its tooltip the period's time and value.
    const tips = await first.locator("circle.dot title").allTextContents()
    assert.isAtLeast(tips.length, 1)
    assert.match(tips[0] ?? "", /: \d+$/)
    await page.getByRole("img", { name: /message\.received 1/ }).waitFor()
    await shot(page, "metrics")
    await context.close()
  }, 60_000)
})

/** Calls the API from the page with its session and CSRF token, as the dashboard does: the state the pages should show. */
const asSession = (page: Page, method: string, path: string, body?: unknown) =>
  page.evaluate(async ([method, path, body]) => {
    const me = (await fetch("/auth/me").then((r) => r.json())) as { csrf_token: string }
    const headers: Record<string, string> = { "x-csrf-token": me.csrf_token }
    if (body !== undefined) headers["content-type"] = "application/json"
    const res = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, any> }
  }, [method, path, body] as const)

/** Picks a scope in the page's picker and switches to it. */
const switchScope = async (page: Page, label: string) => {
  await page.getByLabel("Scope", { exact: true }).selectOption({ label })
  await page.getByRole("button", { name: "Switch scope" }).click()
}

/** The page does not scroll sideways at phone width: its content fits (wide tables scroll inside themselves). */
const fitsPhone = async (page: Page) => {
  await page.setViewportSize({ width: 375, height: 800 })
  const [content, viewport, widest] = await page.evaluate(() => {
    // The text that reaches furthest right, to say what overflows when something does (a long
    // word overflows its element without widening the element's own box).
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    const range = document.createRange()
    let far = { right: 0, text: "" }
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      range.selectNodeContents(node)
      const right = range.getBoundingClientRect().right
      if (right > far.right) far = { right, text: node.textContent ?? "" }
    }
    return [document.documentElement.scrollWidth, window.innerWidth, far.text.slice(0, 80)] as const
  })
  assert.isAtMost(content, viewport, `no sideways scroll at phone width (${widest})`)
}

describe("Dashboard pages at a pod's or an inbox's scope in Chromium", () => {
  it("an inbox's receive block list is chosen with the scope picker by keyboard: an entry added there is on the inbox's list, not the organization's", async () => {
    const { context, page } = await owner("scoper")
    const address = await createInbox(page, `scoped${emails}`)
    await navigate(page, "Lists")
    // The inboxes page has a picker too: wait for the lists page's own.
    await page.getByTestId("list-scope").waitFor()
    const picker = page.getByLabel("Scope", { exact: true })
    // The options: the organization, the default pod, the inbox. Arrowing through them does not navigate; the button does.
    await picker.focus()
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("ArrowDown")
    assert.strictEqual(new URL(page.url()).hash, "#/lists")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await explained(page, page.getByTestId("list-scope").filter({ hasText: `inbox ${address}` }))
    assert.match(new URL(page.url()).hash, /^#\/inbox\/inbox_[0-9a-f]+\/lists\/receive\/block$/)
    await page.getByLabel("Address or domain").fill("pest.example")
    await page.getByRole("button", { name: "Add entry" }).click()
    await page.getByRole("table", { name: "receive block list" }).getByRole("cell", { name: "pest.example", exact: true }).waitFor()
    await fitsPhone(page)
    const inboxList = await asSession(page, "GET", `/v0/inboxes/${encodeURIComponent(address)}/lists/receive/block`)
    assert.deepStrictEqual(inboxList.body["entries"].map((e: { entry: string }) => e.entry), ["pest.example"])
    const organizationList = await asSession(page, "GET", "/v0/lists/receive/block")
    assert.deepStrictEqual(organizationList.body["entries"], [])
    // The inbox's own page leads to the same list.
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "This inbox's lists" }).click()
    await page.getByRole("cell", { name: "pest.example", exact: true }).waitFor()
    await switchScope(page, "the whole organization")
    await page.getByText("This list is empty.").waitFor()
    await context.close()
  }, 60_000)

  it("a webhook created at a pod's scope is that pod's: listed under the pod, and shown with its pod in the organization's list", async () => {
    const { context, page } = await owner("podhooks")
    const pod = await asSession(page, "POST", "/v0/pods", { name: "sales" })
    assert.strictEqual(pod.status, 200, JSON.stringify(pod.body))
    await navigate(page, "Webhooks")
    await switchScope(page, "pod sales")
    await explained(page, page.getByTestId("webhook-scope").filter({ hasText: "pod sales" }))
    const hook = `${receiverUrl}?pod=sales`
    await page.getByLabel("URL").fill(hook)
    await page.getByRole("button", { name: "Create webhook" }).click()
    await page.getByTestId("secret").waitFor()
    await page.getByRole("link", { name: hook }).waitFor()
    const listed = await asSession(page, "GET", `/v0/pods/${pod.body["pod_id"]}/webhooks`)
    assert.deepStrictEqual(listed.body["webhooks"].map((w: { url: string }) => w.url), [hook])
    assert.strictEqual(listed.body["webhooks"][0].pod_id, pod.body["pod_id"])
    await switchScope(page, "the whole organization")
    const row = page.getByRole("row").filter({ hasText: hook })
    await row.waitFor()
    assert.include((await row.textContent()) ?? "", "pod sales")
    // Its page leads back to the pod's webhooks.
    await page.getByRole("link", { name: hook }).click()
    await page.getByRole("link", { name: "← The pod's webhooks" }).click()
    await page.getByTestId("webhook-scope").filter({ hasText: "pod sales" }).waitFor()
    await context.close()
  }, 60_000)

  it("a domain added at a pod's scope belongs to that pod: listed under it and not under another pod, its records and verify on the pod's page", async () => {
    const { context, page } = await owner("poddomains")
    await onPro(page)
    const pod = await asSession(page, "POST", "/v0/pods", { name: "brand" })
    await navigate(page, "Domains")
    // Domains have no inbox scope in the API: the picker offers the organization and pods only.
    assert.strictEqual(await page.getByLabel("Scope", { exact: true }).locator("optgroup[label=Inboxes]").count(), 0)
    await switchScope(page, "pod brand")
    await explained(page, page.getByTestId("domain-scope").filter({ hasText: "pod brand" }))
    await page.getByLabel("Domain name").fill("brand.example.net")
    await page.getByRole("button", { name: "Add domain" }).click()
    await explained(page, page.getByRole("table", { name: "DNS records" }))
    assert.match(new URL(page.url()).hash, /^#\/pod\/pod_[0-9a-f]+\/domain\/brand\.example\.net$/)
    await page.getByRole("button", { name: "Verify" }).click()
    await page.getByText("Verification checked").waitFor()
    const underPod = await asSession(page, "GET", `/v0/pods/${pod.body["pod_id"]}/domains`)
    assert.deepStrictEqual(underPod.body["domains"].map((d: { domain: string }) => d.domain), ["brand.example.net"])
    await page.getByRole("link", { name: "← The pod's domains" }).click()
    await page.getByRole("link", { name: "brand.example.net" }).waitFor()
    await switchScope(page, "pod default")
    await page.getByTestId("domain-scope").filter({ hasText: "pod default" }).waitFor()
    await page.getByText("No custom domains yet.").waitFor()
    await context.close()
  }, 60_000)

  it("metrics at an inbox's scope count that inbox's mail only, and say that event counts are the organization's", async () => {
    const { context, page } = await owner("podmetrics")
    const busy = await createInbox(page, `busy${emails}`)
    const quiet = await createInbox(page, `quiet${emails}`)
    await deliver(busy, mail(busy, "Counted here", "One message."))
    await navigate(page, "Metrics")
    await page.getByTestId("metrics-scope").waitFor()
    await switchScope(page, `inbox ${busy}`)
    await explained(page, page.getByTestId("metrics-scope").filter({ hasText: busy }))
    await page.getByRole("img", { name: /^message_count: latest 1,/ }).waitFor()
    await page.getByText("Event counts are kept for the whole organization only").waitFor()
    await switchScope(page, `inbox ${quiet}`)
    await page.getByTestId("metrics-scope").filter({ hasText: quiet }).waitFor()
    await page.getByRole("img", { name: /^message_count: latest 0,/ }).waitFor()
    // The period is kept in the address with the scope.
    await page.getByLabel("Period of each bar").selectOption("86400")
    await page.getByRole("button", { name: "Show", exact: true }).click()
    await page.waitForURL(/#\/inbox\/inbox_[0-9a-f]+\/metrics\/86400$/)
    await page.getByTestId("metrics-scope").filter({ hasText: quiet }).waitFor()
    await context.close()
  }, 60_000)
})

describe("Dashboard webhook headers, message labels and suppressions in Chromium", () => {
  it("a webhook's custom headers are set at creation and changed on its page: names shown, values never, and deliveries carry them", async () => {
    const { context, page } = await owner("headers")
    await navigate(page, "Webhooks")
    const hook = `${receiverUrl}?headers=1`
    await page.getByLabel("URL").fill(hook)
    await page.getByLabel(/^Custom headers/).fill("X-Team: mail\nAuthorization: Bearer s3cret-token")
    await page.getByRole("button", { name: "Create webhook" }).click()
    await page.getByTestId("secret").waitFor()
    await page.getByRole("link", { name: hook }).click()
    const names = page.getByRole("list", { name: "Custom headers" })
    await explained(page, names)
    assert.deepStrictEqual(await names.getByRole("listitem").allTextContents(), ["authorization×", "x-team×"])
    assert.notInclude((await page.locator("main").textContent()) ?? "", "s3cret-token", "header values are write-only")
    await page.getByRole("button", { name: "Send test event" }).click()
    await page.getByText("Test event delivered").waitFor()
    const first = received.filter((r) => r.url.endsWith("?headers=1")).at(-1)?.headers ?? {}
    assert.strictEqual(first["x-team"], "mail")
    assert.strictEqual(first["authorization"], "Bearer s3cret-token")
    // A header the delivery sets itself is refused in the API's words.
    await page.getByLabel("Header name").fill("Content-Type")
    await page.getByLabel("Header value").fill("text/plain")
    await page.getByRole("button", { name: "Set header" }).click()
    await page.locator("#error").filter({ hasText: "This header is set by the delivery and cannot be replaced" }).waitFor()
    await page.getByLabel("Header name").fill("X-Env")
    await page.getByLabel("Header value").fill("staging")
    await page.getByRole("button", { name: "Set header" }).click()
    await page.getByText("Header X-Env set.").waitFor()
    await page.getByRole("button", { name: "Remove header authorization" }).click()
    await page.getByText("Header authorization removed.").waitFor()
    assert.deepStrictEqual(await names.getByRole("listitem").allTextContents(), ["x-env×", "x-team×"])
    await page.getByRole("button", { name: "Send test event" }).click()
    await page.getByText("Test event delivered").waitFor()
    const second = received.filter((r) => r.url.endsWith("?headers=1")).at(-1)?.headers ?? {}
    assert.strictEqual(second["x-env"], "staging")
    assert.notProperty(second, "authorization")
    // The URL and event types change on the same page.
    await page.getByLabel("message.sent", { exact: true }).uncheck()
    await page.getByRole("button", { name: "Save changes" }).click()
    await page.getByText("Webhook saved.").waitFor()
    const saved = await asSession(page, "GET", "/v0/webhooks")
    assert.notInclude(saved.body["webhooks"][0].event_types, "message.sent")
    assert.include(saved.body["webhooks"][0].event_types, "message.received")
    await context.close()
  }, 60_000)

  it("a label added to one message of a thread shows on that message only, stays after a reload, and is removed from it", async () => {
    const { context, page } = await owner("msglabels")
    const address = await createInbox(page, `msglabels${emails}`)
    const firstId = `<budget-${emails}@example.org>`
    await deliver(address, mail(address, "Budget for Q3", "Numbers attached.", "text/plain", firstId))
    await deliver(address, mail(address, "Re: Budget for Q3", "Agreed.", "text/plain", undefined, `In-Reply-To: ${firstId}\r\nReferences: ${firstId}\r\n`))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Budget for Q3" }).first().click()
    await explained(page, page.getByRole("article", { name: /^Message 2, from/ }))
    assert.strictEqual(await page.locator("article.message").count(), 2, "the reply joined the thread")
    const field = page.getByLabel("Add a label to message 2")
    await field.fill("todo")
    await page.getByRole("button", { name: "Add to message 2" }).click()
    await page.getByRole("button", { name: "Remove todo from message 2" }).waitFor()
    assert.strictEqual(await page.getByRole("button", { name: "Remove todo from message 1" }).count(), 0, "the other message is unchanged")
    assert.isTrue(await field.evaluate((el) => el === document.activeElement), "focus stays in the field of the labels just changed")
    // The thread's labels are its messages': they show the new one too.
    await page.getByRole("list", { name: "Thread labels" }).getByText("todo").waitFor()
    await page.reload()
    await page.getByRole("button", { name: "Remove todo from message 2" }).waitFor()
    assert.strictEqual(await page.getByRole("button", { name: "Remove todo from message 1" }).count(), 0)
    await fitsPhone(page)
    await page.getByRole("button", { name: "Remove todo from message 2" }).click()
    await page.getByRole("button", { name: "Remove todo from message 2" }).waitFor({ state: "detached" })
    const messages = await asSession(page, "GET", `/v0/inboxes/${encodeURIComponent(address)}/messages`)
    for (const m of messages.body["messages"] as Array<{ labels: Array<string> }>) assert.notInclude(m.labels, "todo")
    await context.close()
  }, 60_000)

  it("suppressions are listed page by page, and one is deleted after a confirm; one already gone shows not_found in the API's words", async () => {
    const { context, page } = await owner("suppressor")
    const dialogs: Array<string> = []
    page.on("dialog", (d) => void dialogs.push(d.message()))
    const organization = await organizationOf(page)
    // One more than a page (50): the second page holds the oldest.
    for (let i = 0; i <= 50; i++) {
      const address = `bounced-${String(i).padStart(2, "0")}@example.com`
      await runtime.runPromise(Suppressions.use((s) => s.add(organization, { address, reason: "bounce" })))
    }
    await navigate(page, "Suppressions")
    const table = page.getByRole("table", { name: "Suppressions" })
    await explained(page, table)
    assert.strictEqual(await table.getByRole("row").count(), 51, "a header and 50 rows")
    await page.getByRole("link", { name: "Next page" }).click()
    await page.getByRole("link", { name: "First page" }).waitFor()
    assert.strictEqual(await table.getByRole("row").count(), 2, "a header and the last one")
    assert.strictEqual(await page.getByRole("link", { name: "Next page" }).count(), 0)
    await page.getByRole("link", { name: "First page" }).click()
    await page.getByRole("link", { name: "Next page" }).waitFor()
    const addressIn = async (row: number) => (await table.getByRole("row").nth(row).getByRole("cell").first().textContent()) ?? ""
    const [gone, kept] = [await addressIn(1), await addressIn(2)]
    await page.getByRole("button", { name: `Delete the suppression of ${gone}` }).click()
    await page.getByText(`${gone} may receive mail again.`).waitFor()
    assert.include(dialogs.at(-1) ?? "", gone, "the confirm names the address")
    assert.strictEqual(await table.getByRole("cell", { name: gone, exact: true }).count(), 0)
    const left = await asSession(page, "GET", "/v0/suppressions?limit=100")
    assert.strictEqual(left.body["count"], 50)
    // Deleted elsewhere meanwhile: the page shows the API's not_found body in its words (message, then the fix when it has one).
    const elsewhere = await asSession(page, "DELETE", `/v0/suppressions/${kept}`)
    assert.strictEqual(elsewhere.status, 204)
    const again = await asSession(page, "DELETE", `/v0/suppressions/${kept}`)
    assert.strictEqual(again.body["code"], "not_found")
    await page.getByRole("button", { name: `Delete the suppression of ${kept}` }).click()
    const said = `${again.body["message"]}${again.body["fix"] ? ` — ${again.body["fix"]}` : ""}`
    await page.locator("#error").filter({ hasText: said }).waitFor()
    assert.strictEqual(await page.locator("#error").textContent(), said)
    await context.close()
  }, 60_000)
})

describe("Dashboard pods, pod-scoped API keys and narrowed webhooks in Chromium", () => {
  it("a pod is created with a client_id, gets an inbox on its own inboxes page, and is refused deletion with pod_not_empty in the spec's words and its fix until the inbox is gone", async () => {
    const { context, page } = await owner("pods")
    await navigate(page, "Pods")
    await page.getByLabel("Name", { exact: true }).fill("support")
    await page.getByLabel(/^Client ID/).fill("crm-42")
    // By keyboard: Enter in a field submits its form.
    await page.getByLabel(/^Client ID/).press("Enter")
    await explained(page, page.getByText("Pod support is ready."))
    const row = page.getByRole("table", { name: "Pods" }).getByRole("row").filter({ hasText: "support" })
    assert.include((await row.textContent()) ?? "", "crm-42")
    await shot(page, "pods")
    const listed = await asSession(page, "GET", "/v0/pods")
    const pod = (listed.body["pods"] as Array<{ pod_id: string; name: string; client_id?: string }>).find((p) => p.name === "support")
    assert.strictEqual(pod?.client_id, "crm-42")
    await fitsPhone(page)
    // Each pod leads to its own scoped pages.
    await page.getByRole("link", { name: "Webhooks of pod support" }).click()
    await explained(page, page.getByTestId("webhook-scope").filter({ hasText: "pod support" }))
    assert.strictEqual(new URL(page.url()).hash, `#/pod/${pod?.pod_id}/webhooks`)
    await navigate(page, "Pods")
    await page.getByRole("link", { name: "Inboxes of pod support" }).click()
    await explained(page, page.getByTestId("inbox-scope").filter({ hasText: "pod support" }))
    await page.getByLabel("Username (optional)").fill(`inpod${emails}`)
    await page.getByRole("button", { name: "Create inbox" }).click()
    const link = page.getByRole("link", { name: new RegExp(`^inpod${emails}@`) })
    await explained(page, link)
    const address = (await link.textContent()) ?? ""
    const inPod = await asSession(page, "GET", `/v0/pods/${pod?.pod_id}/inboxes`)
    assert.deepStrictEqual(inPod.body["inboxes"].map((i: { email: string }) => i.email), [address])
    // The organization's inboxes name each one's pod.
    await switchScope(page, "the whole organization")
    await explained(page, page.getByRole("row").filter({ hasText: address }).filter({ hasText: "pod support" }))
    // Deleting the pod while it has an inbox: the API's 409 pod_not_empty, message and fix, in the banner and beside the table.
    await navigate(page, "Pods")
    await page.getByRole("button", { name: "Delete pod support" }).focus()
    await page.keyboard.press("Enter")
    const refused = await asSession(page, "DELETE", `/v0/pods/${pod?.pod_id}`)
    assert.strictEqual(refused.status, 409)
    assert.strictEqual(refused.body["code"], "pod_not_empty")
    const words = `${refused.body["message"]} — ${refused.body["fix"]}`
    await explained(page, page.locator("#error").filter({ hasText: words }))
    assert.strictEqual(await page.locator(".problem[data-code=pod_not_empty]").textContent(), words)
    // The fix is one link away: the pod's inboxes, where the inbox is deleted; then the pod goes.
    await page.getByRole("link", { name: "Open the inboxes of pod support" }).click()
    await page.getByRole("button", { name: `Delete ${address}` }).click()
    await page.getByText("No inboxes yet.").waitFor()
    await navigate(page, "Pods")
    await page.getByRole("button", { name: "Delete pod support" }).click()
    await explained(page, page.getByText("Pod support deleted."))
    assert.strictEqual(await page.getByRole("button", { name: "Delete pod support" }).count(), 0)
    assert.strictEqual((await asSession(page, "GET", `/v0/pods/${pod?.pod_id}`)).status, 404)
    // The default pod is protected: 403 pod_protected in the API's words.
    await page.getByRole("button", { name: "Delete pod default" }).click()
    await page.locator(".problem[data-code=pod_protected]").waitFor()
    assert.include((await page.locator("#error").textContent()) ?? "", "default pod cannot be deleted")
    await context.close()
  }, 60_000)

  it("an API key limited to a pod is created with its scope and permissions chosen from grouped checkboxes, listed with them, and reaches only that pod", async () => {
    const { context, page } = await owner("podkeys")
    const pod = await asSession(page, "POST", "/v0/pods", { name: "ops" })
    const inside = await asSession(page, "POST", `/v0/pods/${pod.body["pod_id"]}/inboxes`, { username: `inside${emails}` })
    await asSession(page, "POST", "/v0/inboxes", { username: `outside${emails}` })
    await navigate(page, "API keys")
    await page.getByLabel("Name", { exact: true }).fill("ops bot")
    await page.getByLabel("Scope", { exact: true }).selectOption({ label: "pod ops" })
    await page.getByRole("group", { name: "Inboxes" }).getByRole("checkbox", { name: "inbox_read" }).check()
    await page.getByRole("group", { name: "Messages" }).getByRole("checkbox", { name: "message_read" }).check()
    await page.getByRole("button", { name: "Create key" }).click()
    const secret = (await page.getByTestId("secret").textContent()) ?? ""
    assert.match(secret, /^am_/)
    const row = page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ hasText: "ops bot" })
    assert.include((await row.textContent()) ?? "", "pod ops")
    await row.getByText("2 permissions").click()
    await row.getByText("inbox_read, message_read").waitFor()
    await shot(page, "api-keys")
    await fitsPhone(page)
    const keys = await asSession(page, "GET", "/v0/api-keys")
    const key = (keys.body["api_keys"] as Array<Record<string, unknown>>).find((k) => k["name"] === "ops bot")
    assert.strictEqual(key?.["scope"], "pod")
    assert.strictEqual(key?.["pod_id"], pod.body["pod_id"])
    const granted = key?.["permissions"] as Record<string, boolean>
    assert.deepStrictEqual(Object.keys(granted).filter((p) => granted[p]), ["inbox_read", "message_read"])
    // The key sees the pod's inbox only.
    const seen = await fetch(`${url}/v0/inboxes`, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.json()) as { inboxes: Array<{ email: string }> }
    assert.deepStrictEqual(seen.inboxes.map((i) => i.email), [inside.body["email"]])
    // An inbox's key and the organization's: each listed with its scope.
    await page.getByLabel("Name", { exact: true }).fill("inbox bot")
    await page.getByLabel("Scope", { exact: true }).selectOption({ label: `inbox ${inside.body["email"]}` })
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByRole("row").filter({ hasText: "inbox bot" }).filter({ hasText: `inbox ${inside.body["email"]}` }).waitFor()
    // The inbox bot was created with none ticked: every permission within its scope.
    assert.isFalse(await page.getByRole("checkbox", { name: "inbox_read" }).isChecked(), "the form is new again")
    await context.close()
  }, 60_000)

  it("a webhook narrowed to some inboxes and pods on creation, and changed on its page, shows them in its details; an inbox deleted meanwhile is not_found in the API's words", async () => {
    const { context, page } = await owner("narrow")
    await onPro(page)
    const pod = await asSession(page, "POST", "/v0/pods", { name: "west" })
    const first = await createInbox(page, `narrowa${emails}`)
    const second = await createInbox(page, `narrowb${emails}`)
    await navigate(page, "Webhooks")
    const hook = `${receiverUrl}?narrow=1`
    await page.getByLabel("URL").fill(hook)
    await page.getByText("Narrow to some inboxes or pods (optional)").click()
    await page.getByRole("group", { name: "Only these inboxes" }).getByLabel(first).check()
    await page.getByRole("button", { name: "Create webhook" }).click()
    await explained(page, page.getByTestId("secret"))
    await page.getByRole("row").filter({ hasText: hook }).filter({ hasText: `the whole organization, only those of inbox ${first}` }).waitFor()
    const created = (await asSession(page, "GET", "/v0/webhooks")).body["webhooks"][0] as { webhook_id: string; inbox_ids?: Array<string>; pod_ids?: Array<string> }
    const ids = await Promise.all([first, second].map(async (a) => (await asSession(page, "GET", `/v0/inboxes/${encodeURIComponent(a)}`)).body["inbox_id"] as string))
    assert.deepStrictEqual(created.inbox_ids, [ids[0]])
    assert.isUndefined(created.pod_ids)
    // On its page: the other inbox and the pod instead, by keyboard (Space toggles a checkbox).
    await page.getByRole("link", { name: hook }).click()
    await explained(page, page.getByTestId("webhook-receives").filter({ hasText: `only those of inbox ${first}` }))
    const inboxBoxes = page.getByRole("form", { name: "Edit webhook" }).getByRole("group", { name: "Only these inboxes" })
    await inboxBoxes.getByLabel(first).focus()
    await page.keyboard.press("Space")
    await inboxBoxes.getByLabel(second).focus()
    await page.keyboard.press("Space")
    await page.getByRole("form", { name: "Edit webhook" }).getByRole("group", { name: "Only these pods" }).getByLabel("west").check()
    await page.getByRole("button", { name: "Save changes" }).click()
    await page.getByText("Webhook saved.").waitFor()
    await explained(page, page.getByTestId("webhook-receives").filter({ hasText: `the whole organization, only those of inbox ${second} or pod west` }))
    const changed = (await asSession(page, "GET", `/v0/webhooks/${created.webhook_id}`)).body
    assert.deepStrictEqual(changed["inbox_ids"], [ids[1]])
    assert.deepStrictEqual(changed["pod_ids"], [pod.body["pod_id"]])
    await shot(page, "webhook-narrowed")
    await fitsPhone(page)
    // An inbox chosen here and deleted elsewhere meanwhile: the save shows the API's not_found in its words.
    await inboxBoxes.getByLabel(first).check()
    assert.strictEqual((await asSession(page, "DELETE", `/v0/inboxes/${ids[0]}`)).status, 204)
    const again = await asSession(page, "PATCH", `/v0/webhooks/${created.webhook_id}`, { inbox_ids: [ids[0]] })
    assert.strictEqual(again.body["code"], "not_found")
    await page.getByRole("button", { name: "Save changes" }).click()
    await explained(page, page.locator("#error").filter({ hasText: String(again.body["message"]) }))
    // Clearing every choice gives the webhook its whole scope again.
    await page.reload()
    await inboxBoxes.getByLabel(second).uncheck()
    await page.getByRole("form", { name: "Edit webhook" }).getByRole("group", { name: "Only these pods" }).getByLabel("west").uncheck()
    await page.getByRole("button", { name: "Save changes" }).click()
    await page.getByTestId("webhook-receives").filter({ hasText: /^Receives the events of the whole organization\.$/ }).waitFor()
    // A pod's webhook is narrowed to that pod's inboxes only: no pods are offered.
    await page.goto(`${url}/#/pod/${pod.body["pod_id"]}/webhooks`)
    await page.getByText("Narrow to some inboxes or pods (optional)").click()
    assert.strictEqual(await page.getByRole("group", { name: "Only these pods" }).count(), 0)
    await page.getByRole("group", { name: "Only these inboxes" }).getByText("None yet.").waitFor()
    await context.close()
  }, 60_000)
})

/**
 * Holds back the answer to requests matching `held` until a request to `path` has been made:
 * if the page made that request only after the held one answered, it would never load. So a
 * page that loads shows the two go out together, with no timing.
 */
const holdUntilAsked = async (page: Page, held: string, path: string) => {
  const paths: Array<string> = []
  let asked = () => {}
  const askedOnce = new Promise<void>((resolve) => { asked = resolve })
  page.on("request", (r) => {
    const at = new URL(r.url()).pathname
    paths.push(at)
    if (at === path) asked()
  })
  await page.route(held, async (route) => { await askedOnce; await route.continue() })
  return paths
}

describe("Dashboard page loads in Chromium", () => {
  it("a page load asks GET /auth/me once, while its modules are still loading", async () => {
    const { context } = await owner("firstload")
    const page = await context.newPage()
    const paths = await holdUntilAsked(page, "**/dashboard/app.js", "/auth/me")
    await page.goto(`${url}/#/webhooks`)
    await explained(page, page.getByTestId("webhook-scope"))
    assert.deepStrictEqual(paths.filter((p) => p === "/auth/me"), ["/auth/me"], "the preloaded answer is the one the page takes")
    await context.close()
  }, 60_000)

  it("the drafts page asks for its drafts and for the inboxes of its form at once", async () => {
    const { context, page } = await owner("draftsload")
    await createInbox(page, `draftsload${emails}`)
    await holdUntilAsked(page, "**/v0/drafts", "/v0/inboxes")
    await navigate(page, "Drafts")
    await explained(page, page.getByText("No drafts."))
    await context.close()
  }, 60_000)
})
