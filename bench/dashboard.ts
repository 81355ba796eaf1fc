/**
 * `pnpm bench dashboard`: how long the dashboard's mail client takes to show what it is for in
 * Chromium (Debian's /usr/bin/chromium driven by playwright-core) on the embedded database
 * (PGlite in a data folder) with about 10,000 threads in one inbox, against a bare page.
 *
 * A load is a cold navigation (about:blank first, so nothing of the last page stays) timed
 * from the navigation's start to the moment the page shows what it is for: (a) the inbox's
 * first thread row, (b) an opened thread's first message. A script installed before the
 * page's own (addInitScript) watches the DOM and records `performance.now()` then, so no
 * polling delay is counted; the dashboard's code is not changed for the bench.
 *
 * The reference, interleaved with ours round by round in the same browser, is a bare page the
 * bench serves at the same origin (so it has the session cookie): a static HTML string whose
 * inline script, with no framework, fetches the same API answers the dashboard fetches on that
 * first load (`/auth/me`, the inbox, its first page of threads; for a thread, the thread with
 * its messages, and the list beside it as the dashboard's reading pane shows it on a wide
 * screen) and writes the same rows: a table of threads and an <article> per message.
 * The initial JavaScript is the dashboard's index.html's module scripts and module preloads,
 * gzipped (the chunks loaded later, such as the QR code's, are not initial).
 * The seeded organization is the bench's seed (bench/seed.ts) in one inbox; the person who
 * signs in is made one of its owners by a membership row.
 */
import { Database, Organizations } from "@inbox/core/internal"
import { AppRoutes, layerNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import { CapturedMail, chromiumPath, engineLayer, freePort } from "@inbox/testkit"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { chromium, type Page } from "playwright-core"
import { machine } from "./report.ts"
import { seed } from "./seed.ts"

// Smaller runs (BENCH_DASHBOARD_MESSAGES, BENCH_DASHBOARD_ROUNDS) check that the bench still
// drives the page; the figures are taken with the defaults.
// The seed writes about 2.3 messages a thread: 23,000 messages are about 10,000 threads.
const MESSAGES = Number(process.env["BENCH_DASHBOARD_MESSAGES"] ?? "23000")
const ROUNDS = Number(process.env["BENCH_DASHBOARD_ROUNDS"] ?? "30")
const WARMUP = 3
const PASSWORD = "correct horse battery"
const GOAL_MS = 200
const GOAL_RATIO = 1.5
const GOAL_JS_GZIP = 150 * 1024

export interface DashboardResult {
  readonly messages: number
  readonly threads: number
  readonly threadMessages: number
  readonly seedSeconds: number
  readonly rounds: number
  readonly inbox: { readonly page: ReadonlyArray<number>; readonly bare: ReadonlyArray<number> }
  readonly thread: { readonly page: ReadonlyArray<number>; readonly bare: ReadonlyArray<number> }
  /** The initial JavaScript of the dashboard: each file's name and its size raw and gzipped. */
  readonly javascript: ReadonlyArray<{ readonly file: string; readonly bytes: number; readonly gzip: number }>
  /** Load times of every other page of the navigation, by name. */
  readonly others: Readonly<Record<string, ReadonlyArray<number>>>
  /** One more inbox load: each request's start and end, then the first row, in ms from navigation start. */
  readonly trace: ReadonlyArray<string>
  readonly loadBefore: ReadonlyArray<number>
  readonly loadAfter: ReadonlyArray<number>
}

// Runs in the page before its scripts: note when the first thread row and the first message
// appear, and when main.tsx marks the route drawn.
const WATCH = `
  window.__row = undefined
  window.__message = undefined
  window.__drawn = undefined
  new MutationObserver((_, observer) => {
    if (window.__row === undefined && document.querySelector("#threads tbody tr")) window.__row = performance.now()
    if (window.__message === undefined && document.querySelector("article.message")) window.__message = performance.now()
    if (window.__drawn === undefined && document.body?.dataset.route !== undefined) window.__drawn = performance.now()
  }).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-route"] })
`

/**
 * The bare page: the same API answers as the dashboard's first load, the same rows written with
 * plain DOM calls. `#inbox/ID` lists; `#thread/ID/THREAD` shows the thread beside the list.
 */
const BARE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bare</title></head><body><main></main><script>
const enc = encodeURIComponent
const get = (p) => fetch(p, { headers: { accept: "application/json" }, credentials: "same-origin" }).then((r) => r.json())
const el = (tag, text) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e }
const [kind, inbox, threadId] = location.hash.slice(1).split("/").map(decodeURIComponent)
const base = "/v0/inboxes/" + enc(inbox)
const rows = (list) => {
  const box = el("div"); box.id = "threads"
  const table = el("table"), body = el("tbody")
  for (const t of list.threads) {
    const tr = el("tr")
    const check = el("td"); const input = el("input"); input.type = "checkbox"; check.append(input)
    const subject = el("td"); const a = el("a", t.subject || "(no subject)"); a.href = "#thread/" + enc(inbox) + "/" + enc(t.thread_id)
    subject.append(a, el("div", t.preview))
    const labels = el("td"); for (const l of t.labels) labels.append(el("span", l))
    tr.append(check, el("td", t.senders.join(", ")), subject, el("td", new Date(t.timestamp).toLocaleString()), labels)
    body.append(tr)
  }
  table.append(body); box.append(table)
  return box
}
const article = (m) => {
  const a = el("article"); a.className = "message"
  const dl = el("dl")
  dl.append(el("dt", "From"), el("dd", m.from), el("dt", "To"), el("dd", (m.to || []).join(", ")), el("dt", "Date"), el("dd", new Date(m.timestamp).toLocaleString()))
  a.append(dl, el("pre", m.extracted_text || m.text || ""))
  return a
}
const main = document.querySelector("main")
const listed = Promise.all([get("/auth/me"), get(base), get(base + "/threads?limit=50&exclude_labels=archived")])
if (kind === "inbox") {
  listed.then(([, , list]) => main.append(rows(list)))
} else {
  Promise.all([listed, get(base + "/threads/" + enc(threadId))]).then(async ([[, , list], t]) => {
    const summaries = [...(t.messages || [])].sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)))
    const messages = await Promise.all(summaries.map((m) => m.text !== undefined || m.html !== undefined ? m : get(base + "/messages/" + enc(m.message_id))))
    const pane = el("section")
    pane.append(el("h2", t.subject || "(no subject)"), ...messages.map(article))
    main.append(rows(list), pane)
  })
}
</script></body></html>`

/** The bare page's route, beside the application's. */
const BareRoute = HttpRouter.add("GET", "/bench/bare", Effect.succeed(HttpServerResponse.text(BARE, { contentType: "text/html; charset=utf-8" })))

/** The dashboard's initial JavaScript, from its built index.html: each module script and module preload, gzipped. */
const initialJavaScript = () => {
  const dist = new URL("../packages/dashboard/dist/", import.meta.url)
  const html = readFileSync(new URL("index.html", dist), "utf8")
  const named = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="\/dashboard\/([^"]+\.js)"/g)].map((m) => m[1]!)
  const present = new Set(readdirSync(dist))
  return [...new Set(named)].filter((f) => present.has(f)).map((file) => {
    const body = readFileSync(new URL(file, dist))
    return { file, bytes: body.length, gzip: gzipSync(body).length }
  })
}

/** Every other page of the navigation, timed to the moment its route is drawn (body[data-route], main.tsx). */
const OTHER_PAGES: ReadonlyArray<readonly [string, string]> = [
  ["overview", "#/"], ["inboxes", "#/inboxes"], ["pods", "#/pods"], ["compose", "#/compose"], ["drafts", "#/drafts"],
  ["lists", "#/lists"], ["suppressions", "#/suppressions"], ["webhooks", "#/webhooks"], ["domains", "#/domains"],
  ["API keys", "#/api-keys"], ["metrics", "#/metrics"], ["billing", "#/billing"], ["members", "#/members"], ["security", "#/security"]
]

const loadTime = async (page: Page, url: string, until: "__row" | "__message" | "__drawn") => {
  await page.goto("about:blank")
  await page.goto(url)
  await page.waitForFunction((key) => (window as unknown as Record<string, number | undefined>)[key] !== undefined, until, { timeout: 10_000 })
  return page.evaluate((key) => (window as unknown as Record<string, number>)[key]!, until)
}

export const benchDashboard = async (): Promise<DashboardResult> => {
  const dir = mkdtempSync(join(tmpdir(), "inbox-bench-dashboard-"))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const engine = engineLayer(Database.layerPglite({ dataDir: join(dir, "data") }), { publicUrl: url, allowedHosts: ["127.0.0.1"], signup: "open" })
  const served = HttpRouter.serve(Layer.mergeAll(AppRoutes, BareRoute), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(layerNodeServer({ port, host: "127.0.0.1" }, NODE_SERVER_DEFAULTS)),
    Layer.provideMerge(engine)
  )
  const runtime = ManagedRuntime.make(served)
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] })
  try {
    const seeded = await runtime.runPromise(seed(MESSAGES, 1))
    const inboxId = seeded.inboxIds[0] ?? ""

    // A person: signed up, verified through the captured mail, made an owner of the seeded organization.
    const email = "reader@bench.example"
    const json = { "content-type": "application/json", origin: url }
    await fetch(`${url}/auth/sign-up`, { method: "POST", headers: json, body: JSON.stringify({ email, password: PASSWORD }) })
    const token = await runtime.runPromise(Effect.gen(function*() {
      const all = yield* (yield* CapturedMail).all
      const raw = Buffer.from(all.at(-1)?.raw ?? new Uint8Array()).toString("utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "=")
      return /verify-email\?token=([0-9a-f]{64})/.exec(raw)?.[1] ?? ""
    }))
    await fetch(`${url}/auth/verify-email`, { method: "POST", headers: json, body: JSON.stringify({ token }) })
    await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO memberships (organization_id, user_id, role, created_at)
        SELECT ${seeded.organizationId}, id, 'owner', now() FROM users WHERE email = ${email}`
      yield* Organizations.use((o) => o.setPlan(seeded.organizationId, "scale", "admin"))
    }))

    const context = await browser.newContext()
    const page = await context.newPage()
    await page.addInitScript(WATCH)
    await page.goto(`${url}/#/sign-in`)
    await page.evaluate(async ({ email, password, organization }) => {
      await fetch("/auth/sign-in", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) })
      const me = await (await fetch("/auth/me")).json() as { csrf_token: string }
      await fetch("/auth/organization", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": me.csrf_token }, body: JSON.stringify({ organization_id: organization }) })
    }, { email, password: PASSWORD, organization: seeded.organizationId })

    // The thread page: the longest conversation on the inbox's first page.
    const box = encodeURIComponent(inboxId)
    const listed = await page.evaluate(async (p) => (await (await fetch(p)).json()) as { threads: Array<{ thread_id: string; message_count: number }> }, `/v0/inboxes/${box}/threads`)
    if (listed.threads.length === 0) throw new Error("the seeded inbox lists no threads: is the session in the seeded organization?")
    const chosen = [...listed.threads].sort((a, b) => b.message_count - a.message_count)[0]!
    const threadPath = `/v0/inboxes/${box}/threads/${encodeURIComponent(chosen.thread_id)}`
    const detail = await page.evaluate(async (p) => (await (await fetch(p)).json()) as { messages: Array<{ message_id: string }> }, threadPath)

    const inboxUrl = `${url}/#/inbox/${box}`
    const threadUrl = `${url}/#/thread/${box}/${encodeURIComponent(chosen.thread_id)}`
    const bareInboxUrl = `${url}/bench/bare#inbox/${box}`
    const bareThreadUrl = `${url}/bench/bare#thread/${box}/${encodeURIComponent(chosen.thread_id)}`

    const threads = await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [counted] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM threads WHERE inbox_id = ${inboxId}`
      return counted?.n ?? 0
    }))
    const loadBefore = loadavg()
    const result = { inbox: { page: [] as Array<number>, bare: [] as Array<number> }, thread: { page: [] as Array<number>, bare: [] as Array<number> } }
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      const keep = round >= WARMUP
      // Which goes first alternates by round, so neither side always follows the other.
      const inboxPair = round % 2 === 0
        ? [await loadTime(page, inboxUrl, "__row"), await loadTime(page, bareInboxUrl, "__row")]
        : [await loadTime(page, bareInboxUrl, "__row"), await loadTime(page, inboxUrl, "__row")].reverse()
      const threadPair = round % 2 === 0
        ? [await loadTime(page, threadUrl, "__message"), await loadTime(page, bareThreadUrl, "__message")]
        : [await loadTime(page, bareThreadUrl, "__message"), await loadTime(page, threadUrl, "__message")].reverse()
      if (!keep) continue
      result.inbox.page.push(inboxPair[0]!)
      result.inbox.bare.push(inboxPair[1]!)
      result.thread.page.push(threadPair[0]!)
      result.thread.bare.push(threadPair[1]!)
    }
    const others: Record<string, Array<number>> = Object.fromEntries(OTHER_PAGES.map(([name]) => [name, []]))
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      for (const [name, hash] of OTHER_PAGES) {
        const time = await loadTime(page, `${url}/${hash}`, "__drawn")
        if (round >= WARMUP) others[name]!.push(time)
      }
    }
    // Where one more inbox load spends its time: the resource timing of each request.
    await loadTime(page, inboxUrl, "__row")
    const trace = await page.evaluate(() => [
      ...performance.getEntriesByType("resource").map((e) =>
        `${e.name.replace(location.origin, "").replace(/inbox_[0-9a-f]+/, ":inbox_id")} ${e.startTime.toFixed(0)}–${(e as PerformanceResourceTiming).responseEnd.toFixed(0)} ms`),
      `first thread row ${(window as unknown as { __row: number }).__row.toFixed(0)} ms`
    ])
    await context.close()
    return {
      messages: MESSAGES,
      threads,
      threadMessages: detail.messages.length,
      seedSeconds: seeded.seconds,
      rounds: ROUNDS,
      ...result,
      javascript: initialJavaScript(),
      others,
      trace,
      loadBefore,
      loadAfter: loadavg()
    }
  } finally {
    await browser.close()
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}
const ms = (x: number) => `${x.toFixed(1)} ms`

export const dashboardSection = (r: DashboardResult) => {
  const row = (name: string, s: { readonly page: ReadonlyArray<number>; readonly bare: ReadonlyArray<number> }) => {
    const page = quantile(s.page, 0.5)
    const bare = quantile(s.bare, 0.5)
    const ratio = page / bare
    return `| ${name} | ${ms(page)} | ${ms(quantile(s.page, 0.9))} | ${ms(bare)} | ${ms(quantile(s.bare, 0.9))} | ${ratio.toFixed(2)}× | ${ratio <= GOAL_RATIO ? "yes" : "no"} |`
  }
  const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(" / ")
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  const gzip = r.javascript.reduce((n, f) => n + f.gzip, 0)
  return [
    `The dashboard's mail client (issue 27) in Chromium (${"`/usr/bin/chromium`"}, headless, playwright-core) against the server on loopback, on the embedded database (PGlite in a data folder) with ${r.threads.toLocaleString("en-US")} threads (${r.messages.toLocaleString("en-US")} messages) in one inbox (bench/seed.ts, ${r.seedSeconds} s to seed). A load is a cold navigation from about:blank, timed from its start until (a) the inbox's first thread row or (b) an opened thread's first message (a conversation of ${r.threadMessages} messages, shown in the reading pane beside the list at the browser's 1280 px) appears in the DOM: HTML, scripts, ${"`GET /auth/me`"} and the API calls included. Reference: a bare page the bench serves at the same origin, in the same browser and run, interleaved round by round (which goes first alternates): a static HTML string whose inline script, with no framework, fetches the same API answers and writes the same rows (the thread table; an article per message beside it). ${r.rounds} rounds after ${WARMUP} warm-up rounds. Goal: at most ${GOAL_RATIO}× the bare page.`,
    "",
    `Machine: ${machine()}; load average (1/5/15 min) ${load(r.loadBefore)} before, ${load(r.loadAfter)} after.`,
    "",
    "| page load | dashboard p50 | dashboard p90 | bare page p50 | bare page p90 | ratio (p50) | at most 1.5× |",
    "|---|---|---|---|---|---|---|",
    row("(a) inbox, cold, to the first thread row", r.inbox),
    row(`(b) thread, cold, to its first message (${r.threadMessages} messages)`, r.thread),
    "",
    `Initial JavaScript (the built index.html's module script and module preloads, gzipped by zlib at its default level): ${kib(gzip)} (${r.javascript.map((f) => `${f.file} ${kib(f.bytes)}, ${kib(f.gzip)} gzipped`).join("; ")}); goal at most 150 KiB: ${gzip <= GOAL_JS_GZIP ? "yes" : "no"}.`,
    "",
    `Every other page of the navigation, on the same data, timed from the navigation's start until its route is drawn with its data (main.tsx marks \`body[data-route]\`), ${r.rounds} rounds after ${WARMUP} warm-up rounds:`,
    "",
    "| page | load p50 | load p90 | load max | under 200 ms |",
    "|---|---|---|---|---|",
    ...Object.entries(r.others).map(([name, times]) =>
      `| ${name} | ${ms(quantile(times, 0.5))} | ${ms(quantile(times, 0.9))} | ${ms(Math.max(...times))} | ${Math.max(...times) < GOAL_MS ? "yes" : quantile(times, 0.9) < GOAL_MS ? "p90 yes, max no" : "no"} |`),
    "",
    `Where one more inbox load spent its time (from the navigation's start; the HTML came before the first of these): ${r.trace.join("; ")}.`,
    "",
    "Run: `pnpm bench dashboard` (smaller: BENCH_DASHBOARD_MESSAGES, BENCH_DASHBOARD_ROUNDS)."
  ].join("\n")
}
