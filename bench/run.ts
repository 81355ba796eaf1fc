/**
 * `pnpm bench [name ...]`: runs every benchmark (or the ones named) and writes the figures,
 * with the date and machine, to BENCHMARKS.md (one section per benchmark; sections written
 * by other scripts are kept).
 */
import { benchCeiling, ceilingSection } from "./ceiling.ts"
import { benchCli, cliSection } from "./cli.ts"
import { benchColdstart, coldstartSection } from "./coldstart.ts"
import { benchDashboard, dashboardSection } from "./dashboard.ts"
import { benchDrafts, draftsSection } from "./drafts.ts"
import { benchHttp, httpSection } from "./http.ts"
import { benchImap, imapSection } from "./imap.ts"
import { benchIngest, benchListing, benchSend, messagingSection } from "./messaging.ts"
import { benchParse, parseSection } from "./parse.ts"
import { benchMemory, memorySection } from "./memory.ts"
import { benchMetrics, metricsSection } from "./metrics.ts"
import { benchSoak, soakSection } from "./soak.ts"
import { writeSection } from "./report.ts"
import { loadavg } from "node:os"
import { benchDomains, benchSmtp, domainsSection, measuredLoad, smtpSection } from "./smtp.ts"
import { benchWebhooks, benchWebSocket, webhooksSection, webSocketSection } from "./webhooks.ts"

/** name on the command line, section title in BENCHMARKS.md, and the run that makes its body */
const benchmarks: ReadonlyArray<readonly [string, string, () => Promise<string>]> = [
  ["http", "HTTP: inboxes", async () => httpSection(await benchHttp())],
  ["coldstart", "Embedded cold start", async () => coldstartSection(await benchColdstart())],
  ["cli", "inboxctl start", async () => cliSection(await benchCli())],
  ["parse", "Parse", async () => parseSection(await benchParse())],
  ["listing", "Messaging: listing", async () =>
    messagingSection(
      "Listing at scale (issue 7): bench/seed.ts loads the messages into one organization (10 inboxes, conversations of 1 to 5 messages, a year of mail), then each case asks one page (50 messages or threads) or a thread's detail. Goal: p99 under 20 ms for each on PostgreSQL. Each plan line below is the EXPLAIN ANALYZE of our statement for the case.",
      await benchListing(),
      "req/s"
    )],
  ["ingest", "Messaging: ingest", async () =>
    messagingSection(
      "Ingest over `POST /inbound/raw` (issue 7): a 2xx means the message is stored, threaded, labelled and its event written, committed. The reference is node:http and mailparser's simpleParser storing nothing. Goal on PostgreSQL: ratio at least 1.0, and 1,000 messages/s of 5 KB wherever the reference reaches that.",
      await benchIngest(),
      "msg/s"
    )],
  ["ceiling", "Messaging: PostgreSQL's own ceiling for ingest", async () => ceilingSection(await benchCeiling())],
  ["send", "Messaging: send", async () =>
    messagingSection(
      "Sends through the whole send path (validation, lists, suppressions, caps, the message stored and threaded, the relay to an SMTP sink on loopback, the event) against node:http + nodemailer relaying to the same sink and storing nothing.",
      await benchSend(),
      "sends/s"
    )],
  ["smtp", "SMTP: ingest", async () => {
    const before = measuredLoad()
    const sections = await benchSmtp()
    return smtpSection(sections, before, measuredLoad())
  }],
  ["domains", "Domains: verification", async () => {
    const before = measuredLoad()
    const figure = await benchDomains()
    return domainsSection(figure, before, measuredLoad())
  }],
  ["drafts", "Drafts: scheduled send", async () => {
    const before = loadavg().map((x) => x.toFixed(1)).join(" ")
    return draftsSection(await benchDrafts(), before)
  }],
  ["dashboard", "Dashboard page loads", async () => dashboardSection(await benchDashboard())],
  ["webhooks", "Events: webhook deliveries", async () => webhooksSection(await benchWebhooks())],
  ["websocket", "Events: WebSocket fan-out", async () => webSocketSection(await benchWebSocket())],
  ["memory", "Memory", async () => memorySection(await benchMemory())],
  ["soak", "Memory: a soak under inbound mail and webhooks", async () => soakSection(await benchSoak())],
  ["imap", "IMAP beside Dovecot", async () => imapSection(await benchImap())]
]

const main = async () => {
  const only = process.argv.slice(2)
  for (const [name, title, make] of benchmarks) {
    if (only.length > 0 && !only.includes(name)) continue
    const body = await make()
    console.log(body)
    writeSection(title, body)
  }
  if (only.length === 0 || only.includes("metrics")) {
    const body = metricsSection(await benchMetrics())
    console.log(body)
    writeSection("Metrics and shared request limits", body)
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
