/**
 * The dashboard as a new person meets it (issue 27), in Debian's Chromium driven by
 * playwright-core, against a server with the default sign-up rule (`invite`: the first person
 * owns the first organization, everyone else comes with an invitation). Controls are found by
 * accessible role and name, as a person using a screen reader would find them. Mail arrives
 * through the operator route /inbound/raw, as a forwarder delivers it.
 *
 * The first test is the first person on the server; the others sign in as that owner (each
 * with its own inbox), so the file runs in order and shares one organization.
 */
import { BlobStores, Egress, Engine, Ids, Organizations } from "@inbox/core/internal"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import AxeBuilder from "@axe-core/playwright"
import { CapturedMail, chromiumPath, freePort, pglite, settingsLayer } from "@inbox/testkit"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter } from "effect/http"
import { mkdirSync } from "node:fs"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"

const SECRET = "dashboard-newcomer-secret"
const PASSWORD = "correct horse battery"
const SHOTS = new URL("../../../docs/screenshots/", import.meta.url)

let url = ""
let runtime: ManagedRuntime.ManagedRuntime<CapturedMail | Organizations, unknown>
let browser: Browser

let emails = 0
const uniqueEmail = (name: string) => `${name}-${Date.now().toString(36)}-${emails++}@example.org`

/** The newest link to `path` mailed to `address` (the local outbox of the server). */
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

const mail = (to: string, subject: string, body: string, extra = "") =>
  `From: Ann <ann@example.org>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@example.org>\r\n${extra}Content-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n`

/** Screenshots only when asked (DASHBOARD_SCREENSHOTS=1): a test run leaves docs/ as it was. */
const shot = async (page: Page, name: string) => {
  if (process.env["DASHBOARD_SCREENSHOTS"] !== "1") return
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true })
}

/** Waits for `locator`; on failure says what the page showed (its error banner and main text). */
const explained = (page: Page, locator: ReturnType<Page["locator"]>, timeout = 10_000) =>
  locator.waitFor({ timeout }).catch(async (e) => {
    throw new Error(`${e}: ${await page.locator("#error").textContent()} / ${await page.locator("main").textContent()}`)
  })

// The first person of the server, once they exist: every later test signs in as them.
let ownerEmail: string | undefined

/** The owner, signed up through the API if the first test did not run (a filtered run). */
const theOwner = async () => {
  if (ownerEmail !== undefined) return ownerEmail
  const email = uniqueEmail("first")
  const res = await fetch(`${url}/auth/sign-up`, { method: "POST", headers: { "content-type": "application/json", origin: url }, body: JSON.stringify({ email, password: PASSWORD }) })
  assert.isTrue(res.ok, await res.text())
  const verified = await fetch(`${url}/auth/verify-email`, { method: "POST", headers: { "content-type": "application/json", origin: url }, body: JSON.stringify({ token: await mailedToken(email, "verify-email") }) })
  assert.isTrue(verified.ok, await verified.text())
  ownerEmail = email
  return email
}

const signIn = async (page: Page, email: string) => {
  await page.goto(`${url}/#/sign-in`)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
  await page.getByRole("button", { name: "Sign in" }).click()
  await explained(page, page.getByRole("heading", { name: "Overview" }))
}

let onScale = false

/**
 * A signed-in owner in a fresh context (confirm() dialogs accepted). The organization is put on
 * the Scale plan by the operator once: the tests together make more inboxes than Free's three.
 */
const owner = async (): Promise<{ context: BrowserContext; page: Page }> => {
  const context = await browser.newContext()
  const page = await context.newPage()
  page.on("dialog", (d) => void d.accept())
  await signIn(page, await theOwner())
  if (!onScale) {
    const me = await page.evaluate(() => fetch("/auth/me").then((r) => r.json())) as { organization_id: string }
    await runtime.runPromise(Organizations.use((o) => o.setPlan(me.organization_id, "scale", "admin")))
    onScale = true
  }
  return { context, page }
}

const createInbox = async (page: Page, username: string) => {
  await page.goto(`${url}/#/inboxes`)
  await page.getByLabel("Username (optional)").fill(username)
  await page.getByRole("button", { name: "Create inbox" }).click()
  const link = page.getByRole("link", { name: new RegExp(`^${username}@`) })
  await explained(page, link)
  return (await link.textContent()) ?? ""
}

beforeAll(async () => {
  const port = await freePort()
  url = `http://127.0.0.1:${port}`
  // The default sign-up rule, invite: what a new server does.
  const settings = settingsLayer({ publicUrl: url, allowedHosts: ["127.0.0.1"], inboundSecret: SECRET })
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
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await runtime?.dispose()
})

describe("A new person in the dashboard (Chromium)", () => {
  it("the first person signs up, verifies, follows \"Continue to the dashboard\", signs in there and reaches the overview", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const email = uniqueEmail("first")
    const icons: Array<string> = []
    page.on("request", (r) => { if (new URL(r.url()).pathname === "/favicon.ico") icons.push(r.url()) })
    await page.goto(`${url}/`)
    await page.getByRole("heading", { name: "Sign in" }).waitFor()
    const asked: Array<string> = []
    page.on("request", (r) => { if (new URL(r.url()).pathname === "/auth/me") asked.push(r.url()) })
    await page.getByRole("link", { name: "Sign up" }).click()
    // As a person does, the form is filled once it is on screen.
    await explained(page, page.getByRole("heading", { name: "Sign up" }))
    assert.deepStrictEqual(asked, [], "a signed-out person's next page does not ask GET /auth/me again: the first load's answer holds")
    await page.getByLabel("Email").fill(email)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Create account" }).click()
    await explained(page, page.getByRole("heading", { name: "Check your mail" }))
    await page.goto(`${url}/verify-email?token=${await mailedToken(email, "verify-email")}`)
    await page.getByRole("heading", { name: "Email verified" }).waitFor()
    await page.getByRole("link", { name: "Continue to the dashboard" }).click()
    // The link lands on `#/` signed out: the sign-in form is shown there, and signing in on it leaves it.
    await page.getByRole("heading", { name: "Sign in" }).waitFor()
    await page.getByLabel("Email").fill(email)
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await explained(page, page.getByRole("heading", { name: "Overview" }))
    assert.strictEqual(await page.getByRole("button", { name: "Sign in" }).count(), 0, "the sign-in form is gone")
    assert.deepStrictEqual(icons, [], "the page's own icon: no /favicon.ico to answer 404")
    ownerEmail = email
    await context.close()
  }, 60_000)

  it("under invite-only sign-up, a brand-new person invited by the owner opens the mailed link, creates the account there and is in the organization as a member", async () => {
    const { context: ownerContext, page: ownerPage } = await owner()
    const invitee = uniqueEmail("newcomer")
    await ownerPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Members" }).click()
    await ownerPage.getByLabel("Email").fill(invitee)
    await ownerPage.getByRole("button", { name: "Send invitation" }).click()
    await explained(ownerPage, ownerPage.getByText(`Invitation sent to ${invitee}.`))
    const pending = ownerPage.getByRole("table", { name: "Pending invitations" })
    await explained(ownerPage, pending.getByRole("row").filter({ hasText: invitee }))
    assert.include(await pending.getByRole("row").filter({ hasText: invitee }).textContent() ?? "", "Member")
    await ownerContext.close()

    const context = await browser.newContext()
    const page = await context.newPage()
    // Without the invitation, sign-up on this server is refused: the plain form says so.
    await page.goto(`${url}/#/sign-up`)
    await page.getByLabel("Email").fill(invitee)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Create account" }).click()
    await explained(page, page.getByText(/needs an invitation/).first())

    await page.goto(`${url}/accept-invitation?token=${await mailedToken(invitee, "accept-invitation")}`)
    await page.getByRole("heading", { name: "Join the organization" }).waitFor()
    const create = page.getByRole("form", { name: "Create your account" })
    await create.getByLabel("Email").fill(invitee)
    await create.getByLabel(/^Password/).fill(PASSWORD)
    await shot(page, "accept-invitation")
    await create.getByRole("button", { name: "Create account and join" }).click()
    await explained(page, page.getByRole("heading", { name: "Overview" }))
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Members" }).click()
    await explained(page, page.getByText(/\(member\)/))
    const people = page.getByRole("table", { name: "Members" })
    await explained(page, people.getByRole("row").filter({ hasText: invitee }))
    assert.include(await people.getByRole("row").filter({ hasText: invitee }).textContent() ?? "", "Member")
    assert.include(await people.getByRole("row").filter({ hasText: ownerEmail ?? "" }).textContent() ?? "", "Owner")
    assert.strictEqual(await page.getByRole("table", { name: "Pending invitations" }).getByRole("row").filter({ hasText: invitee }).count(), 0)
    // Only an owner may invite (the spec's 403 otherwise): a member is told so instead of offered the form.
    await explained(page, page.getByText("Only the organization's owners invite members: ask one of them."))
    assert.strictEqual(await page.getByRole("button", { name: "Send invitation" }).count(), 0, "no invitation form for a member")
    await shot(page, "members-as-member")
    if (process.env["DASHBOARD_SCREENSHOTS"] === "1") {
      await page.setViewportSize({ width: 390, height: 844 })
      await page.emulateMedia({ colorScheme: "dark" })
      await shot(page, "phone-members-as-member-dark")
      await page.setViewportSize({ width: 1280, height: 720 })
      await page.emulateMedia({ colorScheme: "light" })
    }
    const me = await page.evaluate(() => fetch("/auth/me").then((r) => r.json())) as { user: { email: string; email_verified: boolean }; organizations: Array<{ role: string }> }
    assert.strictEqual(me.user.email, invitee)
    assert.isTrue(me.user.email_verified, "the invitation's link proved the address")
    assert.deepStrictEqual(me.organizations.map((o) => o.role), ["member"])
    await context.close()
  }, 60_000)

  it("the owner manages members: invites, revokes an invitation (its link then fails), changes a role, is told beside the select that the last owner stays, and removes a member", async () => {
    const { context: ownerContext, page } = await owner()
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Members" }).click()
    const pending = page.getByRole("table", { name: "Pending invitations" })
    const people = page.getByRole("table", { name: "Members" })

    const revoked = uniqueEmail("revoked")
    await page.getByLabel("Email").fill(revoked)
    await page.getByRole("button", { name: "Send invitation" }).click()
    await explained(page, pending.getByRole("row").filter({ hasText: revoked }))
    await page.getByRole("button", { name: `Revoke the invitation of ${revoked}` }).click()
    await explained(page, page.getByText(`Invitation of ${revoked} revoked.`))
    assert.strictEqual(await page.getByRole("row").filter({ hasText: revoked }).count(), 0, "a revoked invitation is no longer pending")
    const stranger = await browser.newContext()
    const strangerPage = await stranger.newPage()
    await strangerPage.goto(`${url}/accept-invitation?token=${await mailedToken(revoked, "accept-invitation")}`)
    const create = strangerPage.getByRole("form", { name: "Create your account" })
    await create.getByLabel("Email").fill(revoked)
    await create.getByLabel(/^Password/).fill(PASSWORD)
    await create.getByRole("button", { name: "Create account and join" }).click()
    await explained(strangerPage, create.getByText("This link is invalid, already used or expired."))
    await stranger.close()

    // A teammate joins through an invitation (the API, as the accept page does), and one more waits.
    const teammate = uniqueEmail("teammate")
    await page.getByLabel("Email").fill(teammate)
    await page.getByRole("button", { name: "Send invitation" }).click()
    await explained(page, pending.getByRole("row").filter({ hasText: teammate }))
    const joined = await fetch(`${url}/auth/sign-up`, { method: "POST", headers: { "content-type": "application/json", origin: url },
      body: JSON.stringify({ email: teammate, password: PASSWORD, invitation_token: await mailedToken(teammate, "accept-invitation") }) })
    assert.isTrue(joined.ok, await joined.text())
    const waiting = uniqueEmail("waiting")
    await page.getByLabel("Email").fill(waiting)
    await page.getByRole("button", { name: "Send invitation" }).click()
    await explained(page, people.getByRole("row").filter({ hasText: teammate }))

    const role = page.getByRole("combobox", { name: `Role of ${teammate}` })
    await role.selectOption({ label: "Admin" })
    await explained(page, page.getByText(`${teammate} is now admin.`))
    const roles = async () => (await page.evaluate(() => fetch("/auth/members").then((r) => r.json())) as { members: Array<{ email: string; role: string }> }).members
    assert.strictEqual((await roles()).find((m) => m.email === teammate)?.role, "admin")
    assert.strictEqual(await role.inputValue(), "admin")

    const mine = page.getByRole("combobox", { name: `Role of ${ownerEmail ?? ""}` })
    await mine.selectOption({ label: "Member" })
    const refusal = people.getByRole("alert")
    await explained(page, refusal)
    assert.strictEqual(await refusal.textContent(), "The organization needs an owner: make another member an owner first.")
    assert.strictEqual(await mine.inputValue(), "owner", "the select shows the role kept")
    assert.strictEqual(await mine.getAttribute("aria-invalid"), "true")
    await shot(page, "members")
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark", isMobile: true, hasTouch: true })
    const phonePage = await phone.newPage()
    await signIn(phonePage, await theOwner())
    await phonePage.goto(`${url}/#/members`)
    await explained(phonePage, phonePage.getByRole("button", { name: `Remove ${teammate}` }))
    const overflow = await phonePage.evaluate(() => [...document.querySelectorAll("table")].map((t) => t.scrollWidth - t.clientWidth))
    assert.isAtMost(Math.max(...overflow), 0, "the member tables fit a phone's width, the role selects and buttons whole")
    await shot(phonePage, "phone-members-dark")
    await phone.close()

    await page.getByRole("button", { name: `Remove ${teammate}` }).click()
    await explained(page, page.getByText(`${teammate} was removed.`))
    assert.notInclude((await roles()).map((m) => m.email), teammate)
    assert.strictEqual(await people.getByRole("row").filter({ hasText: teammate }).count(), 0)
    await ownerContext.close()
  }, 60_000)

  it("the thread list pages with \"Older\" through every thread of an inbox, down to the oldest of 500", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `paging${emails++}`)
    const total = 500
    const subject = (i: number) => `Thread ${String(i).padStart(3, "0")}`
    // The oldest first and alone, then the rest a few at a time.
    await deliver(address, mail(address, subject(0), "the first of all"))
    for (let i = 1; i < total; i += 10) {
      await Promise.all(Array.from({ length: Math.min(10, total - i) }, (_, k) => deliver(address, mail(address, subject(i + k), `number ${i + k}`))))
    }
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    const seen: Array<string> = []
    let pages = 0
    for (;;) {
      const table = page.getByRole("table", { name: "Threads" })
      await explained(page, table)
      pages++
      const links = await table.getByRole("link").allTextContents()
      assert.isAbove(links.length, 0)
      seen.push(...links)
      const status = (await page.getByTestId("threads-status").textContent()) ?? ""
      assert.include(status, `threads ${seen.length - links.length + 1}–${seen.length}`)
      const older = page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Older" })
      if (await older.count() === 0) break
      await older.click()
      // The next page is drawn when its first row is not the one this page began with.
      await page.waitForFunction((first) => document.querySelector("table[aria-label=Threads] a")?.textContent !== first, links[0])
    }
    assert.strictEqual(pages, Math.ceil(total / 50))
    assert.strictEqual(seen.length, total, "every thread once")
    assert.strictEqual(new Set(seen).size, total, "no thread twice")
    assert.strictEqual(seen.at(-1), subject(0), "the last row of the last page is the oldest thread")
    // The page is in the address: Back returns to the newer page.
    assert.match(page.url(), /[?&]page=/)
    await page.getByRole("link", { name: "Newest" }).click()
    await page.waitForFunction(() => !location.hash.includes("page="))
    await explained(page, page.getByRole("link", { name: subject(total - 1) }).or(page.getByRole("link", { name: subject(total - 2) })).first())
    await context.close()
  }, 120_000)

  it("attachments dropped on the compose form are sent with the message", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `drop${emails++}`)
    await page.goto(`${url}/#/compose/${encodeURIComponent(address)}`)
    await page.getByLabel("To (comma-separated)").fill("ann@example.org")
    await page.getByLabel("Subject").fill("Dropped files")
    await page.getByLabel("Message", { exact: true }).fill("Two files, dragged in.")
    for (const [name, body] of [["notes.txt", "hello"], ["plan.txt", "step one"]]) {
      const files = await page.evaluateHandle(([n, b]) => {
        const transfer = new DataTransfer()
        transfer.items.add(new File([b ?? ""], n ?? "", { type: "text/plain" }))
        return transfer
      }, [name, body])
      await page.getByRole("form", { name: "Compose" }).dispatchEvent("drop", { dataTransfer: files })
    }
    // The form's file field holds both (the live region's note may be cleared by a draft save meanwhile).
    const held = await page.getByLabel("Attachments (or drop files on this form)").evaluate((i: HTMLInputElement) => [...(i.files ?? [])].map((f) => f.name))
    assert.deepStrictEqual(held, ["notes.txt", "plan.txt"])
    await page.getByRole("button", { name: "Send" }).click()
    const attachments = page.getByRole("list", { name: "Attachments" })
    await explained(page, attachments.getByRole("link", { name: "notes.txt (5 bytes)" }))
    await explained(page, attachments.getByRole("link", { name: "plan.txt (8 bytes)" }))
    await context.close()
  }, 60_000)

  it("Send is disabled and says \"Sending…\" while a message is sent: a double click sends one message", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `twice${emails++}`)
    await page.goto(`${url}/#/compose/${encodeURIComponent(address)}`)
    await page.getByLabel("To (comma-separated)").fill("ann@example.org")
    await page.getByLabel("Subject").fill("Only once")
    await page.getByLabel("Message", { exact: true }).fill("One click, one message.")
    // The send is held until the page has been looked at mid-send.
    let sends = 0
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    await page.route("**/messages/send", async (route) => {
      sends++
      await held
      await route.continue()
    })
    await page.getByRole("button", { name: "Send" }).dblclick()
    const busy = page.getByRole("button", { name: "Sending…" })
    await busy.waitFor()
    assert.isTrue(await busy.isDisabled(), "disabled while sending")
    assert.strictEqual(await page.getByRole("form", { name: "Compose" }).getAttribute("aria-busy"), "true")
    release()
    await explained(page, page.getByRole("article").getByText("One click, one message."))
    await page.getByRole("heading", { name: "Only once" }).waitFor()
    assert.strictEqual(sends, 1, "one request")
    const sent = await page.evaluate((inbox) => fetch(`/v0/inboxes/${encodeURIComponent(inbox)}/messages?labels=sent`).then((r) => r.json()), address) as { messages: Array<unknown> }
    assert.strictEqual(sent.messages.length, 1, "one message sent")
    await context.close()
  }, 60_000)

  it("a search keeps its query in the address and its results while new mail arrives; nothing found says so; is:unread works and an unknown operator is named beside the box", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `search${emails++}`)
    await deliver(address, mail(address, "Harbour invoice", "Please pay the harbour invoice."))
    await deliver(address, mail(address, "Lunch", "Noon at the harbour?"))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await explained(page, page.getByRole("link", { name: "Lunch" }))
    const box = page.getByRole("searchbox", { name: /^Search/ })
    await box.fill("invoice")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.waitForFunction(() => location.hash.includes("q=invoice"))
    const rows = page.getByRole("table", { name: "Threads" }).getByRole("link")
    await explained(page, page.getByTestId("threads-status").filter({ hasText: "for “invoice”" }))
    assert.deepStrictEqual(await rows.allTextContents(), ["Harbour invoice"])
    // New mail while the results are shown: they stay, and a note offers the newest.
    await deliver(address, mail(address, "Ferry", "The ferry leaves at nine."))
    await explained(page, page.getByRole("link", { name: "show the newest in Inbox" }))
    assert.deepStrictEqual(await rows.allTextContents(), ["Harbour invoice"], "the results were not replaced by the inbox")
    assert.strictEqual(await box.inputValue(), "invoice")
    // The address is the search: a reload shows it again.
    await page.reload()
    await explained(page, page.getByTestId("threads-status").filter({ hasText: "for “invoice”" }))
    assert.deepStrictEqual(await rows.allTextContents(), ["Harbour invoice"])
    await box.fill("zeppelin")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await explained(page, page.getByRole("status").filter({ hasText: "Nothing found for “zeppelin” in Inbox." }))
    // Opening a thread marks it read: is:unread then leaves it out, is:read finds it.
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    const markedRead = page.waitForResponse((r) => r.url().includes("/messages/batch-update"))
    await page.getByRole("link", { name: "Lunch" }).click()
    await explained(page, page.getByRole("article").getByText("Noon at the harbour?"))
    await markedRead
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}?q=${encodeURIComponent("harbour is:unread")}`)
    await explained(page, page.getByTestId("threads-status").filter({ hasText: "harbour is:unread" }))
    assert.deepStrictEqual(await rows.allTextContents(), ["Harbour invoice"])
    await box.fill("harbour is:read")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await explained(page, page.getByTestId("threads-status").filter({ hasText: "harbour is:read" }))
    assert.deepStrictEqual(await rows.allTextContents(), ["Lunch"])
    // An unknown operator: named beside the search box, in words, not only in the banner.
    await box.fill("in:inbox harbour")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    const problem = page.locator(".field-error")
    await explained(page, problem)
    assert.include(await problem.textContent() ?? "", "in: is not an operator")
    assert.strictEqual(await box.getAttribute("aria-invalid"), "true")
    assert.strictEqual(await page.getByRole("searchbox", { name: /^Search/, description: /in: is not an operator/ } as never).count(), 1)
    await shot(page, "search")
    await context.close()
  }, 60_000)

  it("errors are shown beside the field in plain words: a wrong password beside Password, a bad second recipient (the API's to.1) beside To", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${url}/#/sign-in`)
    await page.getByLabel("Email").fill(await theOwner())
    const password = page.getByLabel("Password", { exact: true })
    await password.fill("not the password")
    await page.getByRole("button", { name: "Sign in" }).click()
    await explained(page, page.getByRole("textbox", { name: "Password", description: "The email or password is wrong." } as never))
    assert.strictEqual(await password.getAttribute("aria-invalid"), "true")
    // Typing again and succeeding clears it.
    await password.fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await explained(page, page.getByRole("heading", { name: "Overview" }))

    const address = await createInbox(page, `words${emails++}`)
    await page.goto(`${url}/#/compose/${encodeURIComponent(address)}`)
    const to = page.getByLabel("To (comma-separated)")
    await to.fill("ann@example.org, not-an-address")
    await page.getByLabel("Message", { exact: true }).fill("Hello")
    await page.getByRole("button", { name: "Send" }).click()
    const note = page.locator(`#${await to.getAttribute("id")}-problem`)
    await explained(page, note)
    const words = (await note.textContent()) ?? ""
    assert.match(words, /^To \(address 2\) is not an email address\.$/, "the field's name and the item, not the API's path to.1")
    assert.notInclude(words, "to.1")
    assert.strictEqual(await to.getAttribute("aria-describedby"), await note.getAttribute("id"))
    await shot(page, "field-error")
    await context.close()
  }, 60_000)

  it("triage on a thread: archive and back, trash and restore, spam and not spam, mark unread; the Sent, Archived, Spam and Trash views list them", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `triage${emails++}`)
    await deliver(address, mail(address, "Quarterly report", "Numbers attached soon."))
    const inbox = `${url}/#/inbox/${encodeURIComponent(address)}`
    const views = page.getByRole("navigation", { name: "Views" })
    const rows = page.getByRole("table", { name: "Threads" }).getByRole("link")
    const open = async () => {
      await page.goto(inbox)
      await page.getByRole("link", { name: "Quarterly report" }).click()
      await explained(page, page.getByRole("group", { name: "Thread actions" }))
    }
    /** The subjects a view lists (none when it is empty). */
    const listed = async (view: string) => {
      // From a thread, through the inbox's sidebar.
      if (await views.count() === 0) await page.goto(inbox)
      await views.getByRole("link", { name: view, exact: true }).click()
      await explained(page, page.getByTestId("threads-status").filter({ hasText: view }))
      return rows.allTextContents()
    }
    const act = async (name: string) => {
      await page.getByRole("group", { name: "Thread actions" }).getByRole("button", { name }).click()
    }
    await open()
    await act("Archive")
    await explained(page, page.getByText("Archived: it is in Archived."))
    assert.deepStrictEqual(await listed("Inbox"), [], "archived threads leave the Inbox")
    assert.deepStrictEqual(await listed("Archived"), ["Quarterly report"])
    await page.getByRole("link", { name: "Quarterly report" }).click()
    await act("Move to Inbox")
    await explained(page, page.getByText("Moved to the Inbox."))
    assert.deepStrictEqual(await listed("Inbox"), ["Quarterly report"])

    await open()
    await act("Move to Trash")
    await explained(page, page.getByText("Moved to the Trash."))
    assert.deepStrictEqual(await listed("Inbox"), [])
    assert.deepStrictEqual(await listed("Trash"), ["Quarterly report"])
    await page.getByRole("link", { name: "Quarterly report" }).click()
    await act("Restore")
    await explained(page, page.getByText("Restored from the Trash."))
    assert.deepStrictEqual(await listed("Trash"), [])

    await open()
    await act("Report spam")
    await explained(page, page.getByText("Reported as spam: it is in Spam."))
    assert.deepStrictEqual(await listed("Spam"), ["Quarterly report"])
    await page.getByRole("link", { name: "Quarterly report" }).click()
    await act("Not spam")
    await explained(page, page.getByText("Marked as not spam."))
    assert.deepStrictEqual(await listed("Inbox"), ["Quarterly report"])

    await open()
    await act("Mark unread")
    await explained(page, page.locator("tr.unread").filter({ hasText: "Quarterly report" }))
    // A reply sent from the inbox is in Sent.
    await page.getByRole("link", { name: "Quarterly report" }).click()
    await page.getByRole("link", { name: "Reply", exact: true }).click()
    await page.getByLabel("Message", { exact: true }).fill("Thanks, waiting for them.")
    await page.getByRole("button", { name: "Send" }).click()
    await explained(page, page.getByText("Thanks, waiting for them.").first())
    await page.goto(inbox)
    assert.deepStrictEqual(await listed("Sent"), ["Quarterly report"])
    await shot(page, "sent")
    await context.close()
  }, 90_000)

  it("the overview reads each send limit from its field, the signed-out menu says no \"null\", labels are words", async () => {
    const signedOut = await browser.newContext()
    const first = await signedOut.newPage()
    await first.goto(`${url}/`)
    await first.getByRole("heading", { name: "Sign in" }).waitFor()
    const menu = (await first.getByRole("navigation", { name: "Main" }).textContent()) ?? ""
    assert.notInclude(menu, "null")
    assert.strictEqual(menu.trim(), "Sign inSign up")
    await signedOut.close()

    const { context, page } = await owner()
    const usage = page.getByRole("table", { name: "Usage" })
    await explained(page, usage)
    const row = async (what: string) => (await usage.getByRole("row").filter({ hasText: what }).getByRole("cell").allTextContents()).map((c) => c.trim())
    // Each row's limit is the API's own field for it (spec: Billing usage `{ plan, limits, usage }`).
    const api = await page.evaluate(() => fetch("/v0/billing/usage").then((r) => r.json())) as {
      plan: string
      limits: Record<string, number | null>
      usage: Record<string, number>
    }
    const limitOf = (n: number | null | undefined, none: string) => n === null || n === undefined ? none : String(n)
    assert.deepStrictEqual((await row("Inboxes")).slice(1), [String(api.usage["inboxes"]), limitOf(api.limits["inboxes"], "no limit")])
    assert.deepStrictEqual((await row("Sends this month")).slice(1), [String(api.usage["sends_this_month"]), limitOf(api.limits["sends_per_month"], "no limit")])
    assert.deepStrictEqual((await row("Sends today")).slice(1), [String(api.usage["sends_today"]), limitOf(api.limits["sends_per_day"], "no daily limit")])
    assert.deepStrictEqual((await row("Custom domains")).slice(1), [String(api.usage["domains"]), limitOf(api.limits["domains"], "no limit")])
    assert.deepStrictEqual((await row("Webhooks")).slice(1), [String(api.usage["webhooks"]), limitOf(api.limits["webhooks"], "no limit")])
    assert.notInclude((await usage.textContent()) ?? "", "—")
    assert.notInclude((await usage.textContent()) ?? "", "_")
    assert.strictEqual(await page.getByRole("meter", { name: `Sends this month: ${api.usage["sends_this_month"]} of ${api.limits["sends_per_month"]}` }).count(), 1)
    await page.getByRole("heading", { name: `Plan: ${api.plan.charAt(0).toUpperCase()}${api.plan.slice(1)}` }).waitFor()
    await shot(page, "overview")

    const address = await createInbox(page, `words${emails++}`)
    await deliver(address, mail(address, "Junk offer", "Buy now"))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Junk offer" }).click()
    await page.getByRole("group", { name: "Thread actions" }).getByRole("button", { name: "Report spam" }).click()
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Spam", exact: true }).click()
    const chips = page.getByRole("table", { name: "Threads" }).locator(".label")
    await explained(page, chips.first())
    assert.deepStrictEqual(await chips.allTextContents(), ["Spam"], "the service's label in words, received and unread not shown as chips")
    await context.close()
  }, 60_000)

  it("at 360 px (light) and 390 px (dark) wide no page scrolls sideways; dark mode follows the system's preference", async () => {
    const address = await (async () => {
      const { context, page } = await owner()
      const made = await createInbox(page, `phone${emails++}`)
      await context.close()
      return made
    })()
    const long = "A-very-long-unbroken-word-in-a-subject-that-could-push-the-page-sideways-on-a-phone"
    await deliver(address, mail(address, long, `${long} ${long}`, "Cc: Bea <bea-with-a-long-address-name@example.org>\r\n"))
    for (const [scheme, width] of [["light", 360], ["dark", 390]] as const) {
      const context = await browser.newContext({ viewport: { width, height: 844 }, colorScheme: scheme, isMobile: true, hasTouch: true })
      const page = await context.newPage()
      await signIn(page, await theOwner())
      const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
      assert.isAtMost(await sideways(), 0, `overview (${scheme})`)
      const header = await page.locator("header").boundingBox()
      assert.isBelow(header?.height ?? 999, 120, "the menu does not fill the screen")
      await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
      await explained(page, page.getByRole("link", { name: long }))
      assert.isAtMost(await sideways(), 0, `inbox (${scheme})`)
      await shot(page, `phone-inbox-${scheme}`)
      await page.getByRole("link", { name: long }).click()
      await explained(page, page.getByRole("group", { name: "Thread actions" }))
      assert.isAtMost(await sideways(), 0, `thread (${scheme})`)
      await shot(page, `phone-thread-${scheme}`)
      await page.goto(`${url}/#/compose/${encodeURIComponent(address)}`)
      await page.getByRole("button", { name: "Send" }).waitFor()
      assert.isAtMost(await sideways(), 0, `compose (${scheme})`)
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor)
      const [r = 0, g = 0, b = 0] = (background.match(/\d+/g) ?? []).map(Number)
      const light = (r + g + b) / 3
      if (scheme === "dark") assert.isBelow(light, 60, `a dark page (${background})`)
      else assert.isAbove(light, 200, `a light page (${background})`)
      await context.close()
    }
    const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" })
    const page = await desktop.newPage()
    await signIn(page, await theOwner())
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await explained(page, page.getByRole("link", { name: long }))
    await shot(page, "inbox-dark")
    await desktop.close()
  }, 90_000)

  it("a thread shows each message's From, To and Cc; reply all shows its recipients, the subject with Re: and the original quoted, and sends them", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `reply${emails++}`)
    await deliver(address, mail(address, "Picnic plans", "Shall we meet at the lake?\nBring a blanket.", "Cc: Bea <bea@example.org>\r\n"))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Picnic plans" }).click()
    const first = page.getByRole("article", { name: /^Message 1/ })
    await explained(page, first)
    const envelope = (await first.locator("dl.envelope").textContent()) ?? ""
    assert.include(envelope, "FromAnn <ann@example.org>")
    assert.include(envelope, `To${address}`)
    assert.include(envelope, "CcBea <bea@example.org>")
    await page.getByRole("link", { name: "Reply all", exact: true }).click()
    await page.getByRole("heading", { name: "Reply all" }).waitFor()
    const recipients = page.getByRole("definition").filter({ hasText: "@" })
    await explained(page, recipients.first())
    assert.strictEqual(await page.getByTestId("reply-to").textContent(), "Ann <ann@example.org>")
    assert.strictEqual(await page.getByTestId("reply-cc").textContent(), "Bea <bea@example.org>")
    assert.strictEqual(await page.getByLabel("Subject").inputValue(), "Re: Picnic plans")
    const quoted = (await page.getByLabel("Quoted original").textContent()) ?? ""
    assert.include(quoted, "> Shall we meet at the lake?\n> Bring a blanket.")
    assert.isTrue(await page.getByRole("checkbox", { name: "Include the original, quoted" }).isChecked())
    await page.getByLabel("Message", { exact: true }).fill("Yes, noon at the lake.")
    await shot(page, "reply")
    await page.getByRole("button", { name: "Send" }).click()
    const reply = page.getByRole("article", { name: /^Message 2/ })
    await explained(page, reply)
    await reply.getByText("Yes, noon at the lake.").first().waitFor()
    const sent = (await reply.locator("dl.envelope").textContent()) ?? ""
    assert.include(sent, "ann@example.org")
    assert.match(sent, /Cc[^@]*bea@example\.org/)
    // The service's labels are shown but offer no removal, which the API refuses.
    assert.strictEqual(await page.getByRole("button", { name: /^Remove (label )?(received|sent)\b/ }).count(), 0)
    assert.include(await page.getByRole("list", { name: "Thread labels" }).textContent() ?? "", "Received")
    // The quote went with the reply, folded behind "Show quoted text" on the thread.
    await reply.getByText("Show quoted text").click()
    await reply.getByText("> Bring a blanket.").waitFor()
    await context.close()
  }, 60_000)

  it("an HTML message's inline cid: image shows in the sandboxed frame through its signed download URL, and is not listed as an attachment", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `inline${emails++}`)
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAEklEQVR42mP8z8DwnwEJMKJzAEvoBf7HjX6qAAAAAElFTkSuQmCC"
    const raw = [
      "From: Ann <ann@example.org>", `To: ${address}`, "Subject: Our new logo", `Message-ID: <${Math.random().toString(36).slice(2)}@example.org>`,
      "MIME-Version: 1.0", "Content-Type: multipart/related; boundary=\"b1\"", "",
      "--b1", "Content-Type: text/html; charset=utf-8", "", "<p>Here it is:</p><img src=\"cid:logo@example.org\" alt=\"Logo\">",
      "--b1", "Content-Type: image/png", "Content-Transfer-Encoding: base64", "Content-ID: <logo@example.org>", "Content-Disposition: inline; filename=\"logo.png\"", "", png,
      "--b1--", ""
    ].join("\r\n")
    await deliver(address, raw)
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Our new logo" }).click()
    const frame = page.frameLocator("iframe.mail")
    await frame.getByText("Here it is:").waitFor()
    const image = frame.getByRole("img", { name: "Logo" })
    await image.waitFor()
    const width = await image.evaluate(async (img: HTMLImageElement) => {
      if (!img.complete) await new Promise((resolve) => { img.onload = resolve; img.onerror = resolve })
      return img.naturalWidth
    })
    assert.strictEqual(width, 2, "the image loaded in the frame")
    assert.match(await image.getAttribute("src") ?? "", /\/downloads\//, "through a signed download URL, not the session")
    assert.strictEqual(await page.getByRole("list", { name: "Attachments" }).count(), 0, "the inline image is not listed as an attachment")
    await shot(page, "inline-image")
    await context.close()
  }, 60_000)
})

/** axe-core's serious and critical violations on the page as it is now, one line each. */
const accessibilityProblems = async (page: Page) => {
  const result = await new AxeBuilder({ page }).analyze()
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`)
}

describe("The mail client and console's feel (Chromium)", () => {
  it("the Dark theme toggle turns the page dark and back, and the choice stays after a reload", async () => {
    const context = await browser.newContext({ colorScheme: "light" })
    const page = await context.newPage()
    await signIn(page, await theOwner())
    const brightness = async () => {
      const [r = 0, g = 0, b = 0] = ((await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).match(/\d+/g) ?? []).map(Number)
      return (r + g + b) / 3
    }
    const toggle = page.getByRole("button", { name: "Dark theme" })
    assert.strictEqual(await toggle.getAttribute("aria-pressed"), "false")
    assert.isAbove(await brightness(), 200, "light, as the system prefers")
    await toggle.click()
    assert.strictEqual(await toggle.getAttribute("aria-pressed"), "true")
    assert.isBelow(await brightness(), 60, "dark once chosen")
    await page.reload()
    await explained(page, page.getByRole("heading", { name: "Overview" }))
    assert.isBelow(await brightness(), 60, "still dark after a reload")
    await page.getByRole("button", { name: "Dark theme" }).click()
    assert.isAbove(await brightness(), 200, "light again")
    await context.close()
  }, 60_000)

  it("the sidebar lists Inbox, Sent, Drafts, Scheduled, Archived, Spam, Blocked, Trash and All mail, marks the current one, and All mail lists an archived thread", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `views${emails++}`)
    await deliver(address, mail(address, "Kept in All mail", "Archived, still in All mail."))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    const views = page.getByRole("navigation", { name: "Views" })
    await explained(page, views.getByRole("link", { name: "All mail" }))
    const names = await views.getByRole("link").allTextContents()
    assert.deepStrictEqual(names, ["Inbox", "Sent", "Drafts", "Scheduled", "Archived", "Spam", "Blocked", "Trash", "All mail"])
    assert.strictEqual(await views.getByRole("link", { name: "Inbox" }).getAttribute("aria-current"), "page")
    await page.getByRole("link", { name: "Kept in All mail" }).click()
    await page.getByRole("group", { name: "Thread actions" }).getByRole("button", { name: "Archive" }).click()
    await explained(page, page.getByText("Inbox: no mail yet."))
    await views.getByRole("link", { name: "All mail" }).click()
    await explained(page, page.getByRole("link", { name: "Kept in All mail" }))
    assert.strictEqual(await views.getByRole("link", { name: "All mail" }).getAttribute("aria-current"), "page")
    await views.getByRole("link", { name: "Blocked" }).click()
    await explained(page, page.getByText("Nothing in Blocked."))
    await context.close()
  }, 60_000)

  it("keyboard shortcuts: ? lists them, / goes to the search box, j and Enter open a thread, r replies, e archives it and # trashes another", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `keys${emails++}`)
    await deliver(address, mail(address, "First by keyboard", "One."))
    await deliver(address, mail(address, "Second by keyboard", "Two."))
    const inbox = `${url}/#/inbox/${encodeURIComponent(address)}`
    await page.goto(inbox)
    await explained(page, page.getByRole("link", { name: "Second by keyboard" }))
    await page.keyboard.press("?")
    const help = page.getByRole("dialog", { name: "Keyboard shortcuts" })
    await explained(page, help)
    assert.include(await help.textContent(), "Archive the open thread")
    await shot(page, "shortcuts")
    await page.keyboard.press("Escape")
    await help.waitFor({ state: "detached" })
    await page.keyboard.press("/")
    assert.strictEqual(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name), "q")
    await page.locator("main h1").click()
    await page.keyboard.press("j")
    await page.keyboard.press("j")
    await page.keyboard.press("Enter")
    await explained(page, page.getByRole("heading", { name: "First by keyboard" }))
    await page.keyboard.press("r")
    await explained(page, page.getByRole("heading", { name: "Reply" }))
    await page.goBack()
    await explained(page, page.getByRole("group", { name: "Thread actions" }))
    await page.keyboard.press("e")
    await explained(page, page.getByText("Archived: it is in Archived."))
    await page.keyboard.press("j")
    await page.keyboard.press("o")
    await explained(page, page.getByRole("heading", { name: "Second by keyboard" }))
    await page.keyboard.press("#")
    await explained(page, page.getByText("Moved to the Trash."))
    await explained(page, page.getByText("Inbox: no mail yet."))
    await context.close()
  }, 60_000)

  it("the reading pane: on a wide screen the open thread sits beside the list, which keeps its search; j and o open the next one there; on a phone the thread has the page to itself", async () => {
    const { context, page } = await owner()
    await page.setViewportSize({ width: 1280, height: 800 })
    const address = await createInbox(page, `pane${emails++}`)
    await deliver(address, mail(address, "Pane older", "The older of two."))
    await deliver(address, mail(address, "Pane newer", "The newer of two."))
    await deliver(address, mail(address, "Not about it", "Left out by the search."))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}?q=${encodeURIComponent("subject:pane")}`)
    const list = page.getByRole("table", { name: "Threads" })
    const pane = page.getByRole("region", { name: "Reading pane" })
    await explained(page, list.getByRole("link", { name: "Pane newer" }))
    await explained(page, pane.getByText("Choose a thread to read it here."))
    await list.getByRole("link", { name: "Pane newer" }).click()
    await explained(page, pane.getByRole("heading", { name: "Pane newer" }))
    await explained(page, pane.getByRole("article").getByText("The newer of two."))
    // The list is still there, still the search's, with the open thread marked and no longer bold.
    assert.deepStrictEqual(await list.locator("tbody a").allTextContents(), ["Pane newer", "Pane older"])
    const open = list.getByRole("row").filter({ hasText: "Pane newer" })
    assert.strictEqual(await open.getAttribute("aria-current"), "true")
    await explained(page, list.locator("tr:not(.unread)").filter({ hasText: "Pane newer" }))
    const hash = new URL(page.url()).hash
    assert.match(hash, /^#\/thread\/[^/]+\/[^/?]+\?q=subject%3Apane$/, "the address carries the thread and the search")
    const [paneBox, listBox] = [await pane.boundingBox(), await list.boundingBox()]
    assert.isAbove(paneBox?.x ?? 0, (listBox?.x ?? 0) + (listBox?.width ?? 0) - 1, "the pane is beside the list, not below it")
    await shot(page, "reading-pane")
    // j: the thread after the open one; o opens it in the pane.
    await page.locator("main h1").click()
    await page.keyboard.press("j")
    await page.keyboard.press("o")
    await explained(page, pane.getByRole("heading", { name: "Pane older" }))
    assert.strictEqual(await list.getByRole("row").filter({ hasText: "Pane older" }).getAttribute("aria-current"), "true")
    // A reload shows the same: list, search and thread.
    await page.reload()
    await explained(page, pane.getByRole("heading", { name: "Pane older" }))
    assert.strictEqual(await list.locator("tbody tr").count(), 2)
    // A phone: the same address shows the thread alone, with the way back to the search.
    const phone = await context.newPage()
    await phone.setViewportSize({ width: 390, height: 844 })
    await phone.goto(page.url())
    await explained(phone, phone.getByRole("heading", { name: "Pane older", level: 1 }))
    assert.strictEqual(await phone.getByRole("table", { name: "Threads" }).count(), 0, "no list beside it on a phone")
    await shot(phone, "reading-phone")
    await phone.getByRole("link", { name: "← Back to the inbox" }).click()
    await explained(phone, phone.getByTestId("threads-status").filter({ hasText: "for “subject:pane”" }))
    await context.close()
  }, 60_000)

  it("bulk triage: a click selects a thread, a shift-click the range to it, and Archive archives the three selected; Mark read on all marks each read", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `bulk${emails++}`)
    for (const n of [1, 2, 3, 4]) await deliver(address, mail(address, `Bulk ${n}`, `Number ${n}.`))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await explained(page, page.getByRole("link", { name: "Bulk 1" }))
    const actions = page.getByRole("group", { name: "Selected threads" })
    assert.isTrue(await actions.getByRole("button", { name: "Archive" }).isDisabled(), "nothing selected, nothing to do")
    // Newest first: Bulk 4, 3, 2, 1. A click on 3, a shift-click on 1: 3, 2 and 1.
    await page.getByRole("checkbox", { name: "Select Bulk 3" }).click()
    await page.getByRole("checkbox", { name: "Select Bulk 1" }).click({ modifiers: ["Shift"] })
    await explained(page, actions.getByText("3 selected"))
    assert.isTrue(await page.getByRole("checkbox", { name: "Select Bulk 2" }).isChecked())
    assert.isFalse(await page.getByRole("checkbox", { name: "Select Bulk 4" }).isChecked())
    await shot(page, "bulk-selection")
    await actions.getByRole("button", { name: "Archive" }).click()
    await explained(page, page.getByText("Archive: 3 threads."))
    await explained(page, page.getByText("Inbox: threads 1–1, newest first."))
    assert.deepStrictEqual(await page.locator("#threads tbody a").allTextContents(), ["Bulk 4"])
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Archived" }).click()
    await explained(page, page.getByRole("link", { name: "Bulk 1" }))
    assert.strictEqual(await page.locator("#threads tbody tr.unread").count(), 3, "never opened: unread")
    await page.getByRole("checkbox", { name: "Select all" }).check()
    await actions.getByRole("button", { name: "Mark read" }).click()
    await explained(page, page.getByText("Mark read: 3 threads."))
    assert.strictEqual(await page.locator("#threads tbody tr.unread").count(), 0)
    await context.close()
  }, 60_000)

  it("compose keeps what is typed as a draft: after leaving the page it is filled again, the inbox's Drafts lists it, and sending (with Bcc) deletes it", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `keep${emails++}`)
    const compose = `${url}/#/compose/${encodeURIComponent(address)}`
    await page.goto(compose)
    await page.getByLabel("To (comma-separated)").fill("ann@example.org")
    await page.getByLabel("Subject").fill("Kept while typing")
    await page.getByLabel("Message").fill("Half a thought")
    await explained(page, page.getByRole("status").filter({ hasText: /^Draft saved at/ }))
    await page.getByLabel("Message").fill("Half a thought, and the rest")
    // Leaving at once, before the pause after typing: saved on the way out.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click()
    await explained(page, page.getByRole("heading", { name: "Overview" }))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Drafts" }).click()
    await explained(page, page.getByRole("link", { name: "Kept while typing" }))
    await page.goto(compose)
    await explained(page, page.getByText("Your unsent text was kept as a draft."))
    assert.strictEqual(await page.getByLabel("Message").inputValue(), "Half a thought, and the rest")
    assert.strictEqual(await page.getByLabel("To (comma-separated)").inputValue(), "ann@example.org")
    await page.getByLabel("Bcc (not shown to the others)").fill("bea@example.org")
    await page.getByRole("button", { name: "Send" }).click()
    await explained(page, page.getByRole("group", { name: "Thread actions" }))
    const sent = await page.evaluate((inbox) => fetch(`/v0/inboxes/${encodeURIComponent(inbox)}/messages?labels=sent`).then((r) => r.json()), address) as { messages: Array<{ bcc?: Array<string> }> }
    assert.deepStrictEqual(sent.messages[0]?.bcc, ["bea@example.org"])
    await page.goto(`${url}/#/drafts?inbox=${encodeURIComponent(address)}`)
    await explained(page, page.getByText("No drafts."))
    await context.close()
  }, 60_000)

  it("an inbox's Mail app settings page shows its user name and each IMAP and SMTP server the API names, or that none is configured", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `settings${emails++}`)
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Mail app settings" }).click()
    const answer = await page.evaluate((inbox) => fetch(`/v0/inboxes/${encodeURIComponent(inbox)}/client-settings`).then((r) => r.json()), address) as { username: string; imap: Array<{ host: string; port: number }>; smtp: Array<{ host: string; port: number }> }
    assert.strictEqual(answer.username, address)
    await explained(page, page.getByRole("heading", { name: `Mail app settings · ${address}` }))
    await explained(page, page.getByRole("heading", { name: "IMAP (reading)" }))
    for (const [name, servers] of [["IMAP", answer.imap], ["SMTP", answer.smtp]] as const) {
      if (servers.length === 0) await explained(page, page.getByText(`${name}: not configured on this server.`))
      for (const server of servers) await explained(page, page.getByRole("table", { name: `${name} servers` }).getByRole("row").filter({ hasText: String(server.port) }))
    }
    await page.getByRole("link", { name: "← Back to the inbox" }).click()
    await explained(page, page.getByRole("navigation", { name: "Views" }))
    await context.close()
  }, 60_000)

  it("compose suggests recipients from the inbox's past correspondents as an address is typed", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `suggest${emails++}`)
    await deliver(address, mail(address, "Hello from Ann", "Hi."))
    await page.goto(`${url}/#/compose/${encodeURIComponent(address)}`)
    const to = page.getByLabel("To (comma-separated)")
    await to.pressSequentially("an")
    const list = await to.getAttribute("list")
    assert.isString(list)
    await page.locator(`datalist[id="${list}"] option[value="ann@example.org"]`).waitFor({ state: "attached", timeout: 10_000 })
    assert.strictEqual(await page.locator(`datalist[id="${list}"] option[value="ann@example.org"]`).getAttribute("label"), "Ann <ann@example.org>")
    await context.close()
  }, 60_000)

  it("a skip link is the first stop of the keyboard and moves focus to the page; the menu marks the current page", async () => {
    const { context, page } = await owner()
    await page.goto(`${url}/#/webhooks`)
    await explained(page, page.getByRole("heading", { level: 1, name: "Webhooks" }))
    const skip = page.getByRole("link", { name: "Skip to content" })
    // First in the keyboard's order: the first control of the document.
    assert.isTrue(await skip.evaluate((el) => el === document.querySelector("a[href], button, input, select, textarea")))
    await skip.focus()
    assert.isTrue(await skip.isVisible(), "shown once focused")
    await page.keyboard.press("Enter")
    assert.strictEqual(await page.evaluate(() => document.activeElement?.id), "main")
    assert.strictEqual(page.url().split("#")[1], "/webhooks", "the skip link does not change the page")
    const menu = page.getByRole("navigation", { name: "Main" })
    assert.strictEqual(await menu.getByRole("link", { name: "Webhooks" }).getAttribute("aria-current"), "page")
    assert.isNull(await menu.getByRole("link", { name: "Domains" }).getAttribute("aria-current"))
    await context.close()
  }, 60_000)

  it("each message reads as plain text, HTML, its source (the raw message) or its parsed headers, chosen per message, with no serious or critical accessibility violation", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `views${emails++}`)
    const boundary = "b-views"
    await deliver(address, `From: Ann <ann@example.org>\r\nTo: ${address}\r\nSubject: Four views\r\nMessage-ID: <views-${emails}@example.org>\r\nX-Trace: seen-in-headers\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=${boundary}\r\n\r\n--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe plain words.\r\n` +
      `--${boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>The <b>rich</b> words.</p>\r\n--${boundary}--\r\n`)
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Four views" }).click()
    const views = page.getByRole("group", { name: "View of message 1" })
    await explained(page, views)
    // HTML mail opens in its HTML view.
    assert.strictEqual(await views.getByRole("button", { name: "HTML" }).getAttribute("aria-pressed"), "true")
    await page.frameLocator("iframe[title='HTML message']").getByText("rich").waitFor()
    await views.getByRole("button", { name: "Plain" }).click()
    await explained(page, page.getByRole("article", { name: /^Message 1,/ }).getByText("The plain words."))
    assert.isFalse(await page.locator("iframe[title='HTML message']").isVisible(), "the frame is hidden in the plain view")
    await views.getByRole("button", { name: "Source" }).click()
    const source = page.getByLabel("Message source")
    await explained(page, source)
    const raw = await source.textContent() ?? ""
    assert.include(raw, "Content-Type: multipart/alternative")
    assert.include(raw, "<p>The <b>rich</b> words.</p>", "the source is shown as text, not as HTML")
    await shot(page, "message-source")
    assert.deepStrictEqual(await accessibilityProblems(page), [])
    await views.getByRole("button", { name: "Headers" }).click()
    assert.include(await page.getByLabel("Message headers").textContent() ?? "", "seen-in-headers")
    await views.getByRole("button", { name: "HTML" }).click()
    assert.isTrue(await page.locator("iframe[title='HTML message']").isVisible(), "the HTML view again")
    await context.close()
  }, 60_000)

  it("forwarding a message with attachments lists them on the form and carries them to the forwarded message", async () => {
    const { context, page } = await owner()
    const address = await createInbox(page, `fwd${emails++}`)
    const boundary = "b-fwd"
    await deliver(address, `From: Ann <ann@example.org>\r\nTo: ${address}\r\nSubject: The report\r\nMessage-ID: <fwd-${emails}@example.org>\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=${boundary}\r\n\r\n--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nAttached.\r\n` +
      `--${boundary}\r\nContent-Type: text/plain; name=report.txt\r\nContent-Disposition: attachment; filename=report.txt\r\n\r\nfigures\r\n--${boundary}--\r\n`)
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "The report" }).click()
    await page.getByRole("link", { name: "Forward", exact: true }).click()
    await explained(page, page.getByRole("heading", { name: "Forward", exact: true }))
    const listed = page.getByRole("list", { name: "Forwarded attachments" })
    await explained(page, listed.getByText(/^report\.txt \(\d+ bytes\)$/))
    await page.getByLabel("To (comma-separated)").fill("bea@example.org")
    await page.getByLabel("Message", { exact: true }).fill("See the attached report.")
    await shot(page, "forward")
    await page.getByRole("button", { name: "Send" }).click()
    // The forward is a new thread of its own, opened after sending, with the original's file.
    await explained(page, page.getByRole("list", { name: "Attachments" }).getByRole("link", { name: /^report\.txt \(\d+ bytes\)$/ }))
    await explained(page, page.getByText("See the attached report."))
    await context.close()
  }, 60_000)

  it("a label added or removed in the reading pane shows in the thread's row of the list at once, without a reload", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    await signIn(page, await theOwner())
    const address = await createInbox(page, `rowlabel${emails++}`)
    await deliver(address, mail(address, "Label me in place", "Hello."))
    await page.goto(`${url}/#/inbox/${encodeURIComponent(address)}`)
    await page.getByRole("link", { name: "Label me in place" }).click()
    await explained(page, page.getByRole("region", { name: "Reading pane" }).getByRole("heading", { name: "Label me in place" }))
    const row = page.getByRole("table", { name: "Threads" }).getByRole("row").filter({ hasText: "Label me in place" })
    await page.getByLabel("New label").fill("invoices")
    await page.getByRole("button", { name: "Add label" }).click()
    await explained(page, row.getByText("invoices", { exact: true }))
    await page.getByRole("button", { name: "Remove label invoices" }).click()
    await row.getByText("invoices", { exact: true }).waitFor({ state: "detached" })
    // The header's menu is one row at 1280 px: as tall as the brand's line, not two.
    const header = await page.locator("header").boundingBox()
    assert.isBelow(header?.height ?? 999, 60, "the header does not wrap at 1280 px")
    await context.close()
  }, 60_000)

  it("every page has no serious or critical accessibility violation (axe-core), signed out and in, light and dark, and writes no error to the console", async () => {
    const problems: Array<string> = []
    const check = async (page: Page, name: string) => {
      for (const line of await accessibilityProblems(page)) problems.push(`${name}: ${line}`)
    }
    const out = await browser.newContext()
    const guest = await out.newPage()
    for (const [hash, heading] of [["#/sign-in", "Sign in"], ["#/sign-up", "Sign up"], ["#/forgot", "Reset your password"]] as const) {
      await guest.goto(`${url}/${hash}`)
      await explained(guest, guest.getByRole("heading", { name: heading }))
      await check(guest, hash)
    }
    await out.close()
    const { context, page } = await owner()
    // No page writes an error to the console (a failed request, a missing icon, a script error).
    const consoleErrors: Array<string> = []
    page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(`${m.text()} (${page.url()})`) })
    page.on("pageerror", (e) => consoleErrors.push(`${e.message} (${page.url()})`))
    const address = await createInbox(page, `axe${emails++}`)
    // A webhook made before the mail arrives: its page has a delivery whose payload is opened below.
    const hookId = await page.evaluate(async () => {
      const me = (await fetch("/auth/me").then((r) => r.json())) as { csrf_token: string }
      const made = await fetch("/v0/webhooks", {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": me.csrf_token },
        body: JSON.stringify({ url: "https://93.184.215.14/axe" })
      })
      return ((await made.json()) as { webhook_id: string }).webhook_id
    })
    await deliver(address, mail(address, "Checked by axe", "Hello.", "Cc: Bea <bea@example.org>\r\n"))
    const pages = ["#/", "#/inboxes", "#/pods", "#/compose", "#/drafts", "#/lists", "#/suppressions", "#/webhooks", "#/domains", "#/api-keys",
      "#/metrics", "#/billing", "#/members", "#/security", `#/webhook/${hookId}`, `#/inbox/${encodeURIComponent(address)}`]
    for (const dark of [false, true]) {
      await page.emulateMedia({ colorScheme: dark ? "dark" : "light" })
      for (const hash of pages) {
        await page.goto(`${url}/${hash}`)
        // The page marks the route drawn, its data included (main.tsx).
        await explained(page, page.locator(`body[data-route="${hash}"] main h1`))
        await check(page, `${hash}${dark ? " (dark)" : ""}`)
        if (hash.startsWith("#/webhook/")) {
          // The webhook's page again with a delivery's payload opened.
          await page.getByRole("table", { name: "Delivery log" }).getByRole("button", { name: /^Payload of/ }).first().click()
          await explained(page, page.locator("pre.payload"))
          await check(page, `webhook payload${dark ? " (dark)" : ""}`)
        }
      }
      await page.getByRole("link", { name: "Checked by axe" }).click()
      await explained(page, page.getByRole("group", { name: "Thread actions" }))
      await check(page, `thread${dark ? " (dark)" : ""}`)
    }
    await context.close()
    assert.deepStrictEqual(problems, [])
    assert.deepStrictEqual(consoleErrors, [])
  }, 180_000)
})
