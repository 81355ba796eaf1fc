/**
 * `pnpm crash`: kill -9 of a server in the middle of a burst of inbound deliveries and
 * sends, on PGlite (a data folder, files blob store) and on PostgreSQL (a fresh database,
 * PostgreSQL blob store). Then a restart, a count, and the clients' retries
 * (testkit crash.ts, which the crash test runs with smaller numbers):
 *
 * 1. a real `inboxctl serve` takes deliveries to one inbox (8 at a time; every third one a
 *    reply to an earlier one) and sends with an Idempotency-Key each (2 at a time) relayed
 *    to an SMTP sink on loopback; after CRASH_AFTER acknowledged deliveries it gets SIGKILL;
 * 2. restarted on the same storage, every delivery that got a 2xx must be there once, with
 *    its raw bytes exactly as sent (downloaded through the API), in a thread; then the
 *    server is stopped and the database read: no message without its event or with two,
 *    every thread equal to its messages, no sent message left `sending` once retried;
 * 3. the clients retry what got no answer (the forwarder the same bytes, the sender the same
 *    Idempotency-Key): every retry is 2xx, nothing stored twice.
 *
 * Sends: the rule (sending/Idempotency.ts) is at least once toward the relay, exactly once
 * in our store. A send in flight at the kill may reach the relay again on its retry; the
 * count of such repeats is printed.
 *
 * The same again with the deliveries arriving as SMTP conversations with the built-in
 * receiver (INBOX_SMTP_LISTEN; nodemailer, one connection per message, 8 at a time): every
 * message that got `250` must be stored after the restart, its bytes after the receiver's
 * Authentication-Results header identical.
 *
 * The counts go to BENCHMARKS.md ("Crash: kill -9 mid-burst", "Crash: kill -9 mid-SMTP-burst").
 * CRASH_MESSAGES (300), CRASH_SENDS (40), CRASH_AFTER (120); CRASH_VIA (http,smtp: both);
 * BENCH_POSTGRES_URL as for pnpm bench.
 */
import { type CrashResult, crashFailures, crashOnce, pgliteStorage, postgresStorage } from "@inbox/testkit"
import { machine, writeSection } from "./report.ts"

const MESSAGES = Number(process.env["CRASH_MESSAGES"] ?? "300")
const SENDS = Number(process.env["CRASH_SENDS"] ?? "40")
const CRASH_AFTER = Number(process.env["CRASH_AFTER"] ?? "120")
const SERVER = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const VIA = (process.env["CRASH_VIA"] ?? "http,smtp").split(",").map((v) => v.trim()).filter((v): v is "http" | "smtp" => v === "http" || v === "smtp")

/** One section: both storages, deliveries arriving `via`. Whether anything failed. */
const run = async (via: "http" | "smtp") => {
  const results: Array<CrashResult> = []
  for (const make of [pgliteStorage, () => postgresStorage(SERVER)]) {
    const storage = await make()
    try {
      const r = await crashOnce(storage, { messages: MESSAGES, sends: SENDS, crashAfter: CRASH_AFTER, via })
      console.error(JSON.stringify(r))
      results.push(r)
    } finally {
      await storage.done()
    }
  }
  const bad = results.filter((r) => crashFailures(r).length > 0)
  const rows = (f: (r: (typeof results)[number]) => string | number) => results.map((r) => ` ${f(r)} |`).join("")
  const how = via === "smtp"
    ? `${MESSAGES} inbound deliveries as SMTP conversations with the built-in receiver (nodemailer, 8 at a time, two thirds of them replies; acknowledged = \`250\`)`
    : `${MESSAGES} inbound deliveries (8 at a time, two thirds of them replies)`
  const body = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}. \`pnpm crash\` (bench/crash.ts): a burst of ${how} and ${SENDS} sends with an Idempotency-Key each (2 at a time), a webhook subscribed to message.received whose endpoint fails one first attempt in five, \`kill -9\` of the server after ${CRASH_AFTER} deliveries were acknowledged, a restart on the same storage, a check of every acknowledged delivery through the API (there once, its raw bytes identical), the clients' retries of everything unanswered, the wait until every event reached the webhook (retries and the killed process's job leases of 30 s included), then the database read directly and every webhook request verified with \`standardwebhooks\`.`,
    "",
    `| | ${results.map((r) => r.storage).join(" | ")} |`,
    `|---|${results.map(() => "---:").join("|")}|`,
    `| deliveries acknowledged (${via === "smtp" ? "250" : "2xx"}) before the kill |${rows((r) => r.ackedBeforeKill)}`,
    `| of those, missing after the restart |${rows((r) => r.missing)}`,
    `| of those, raw bytes not identical |${rows((r) => r.damaged)}`,
    `| requests retried after the restart (deliveries + sends) |${rows((r) => r.retried)}`,
    `| retries not answered 2xx |${rows((r) => r.retriesFailed)}`,
    `| received messages stored in the end (of ${MESSAGES}) |${rows((r) => r.stored)}`,
    `| messages stored twice |${rows((r) => r.storedTwice)}`,
    `| received messages without their event |${rows((r) => r.withoutEvent)}`,
    `| events written twice for one message |${rows((r) => r.eventsTwice)}`,
    `| threads not equal to their messages |${rows((r) => r.threadsInconsistent)}`,
    `| sends acknowledged before the kill (of ${SENDS}) |${rows((r) => r.sendsAckedBeforeKill)}`,
    `| sent messages stored in the end / message.sent events |${rows((r) => `${r.sentStored} / ${r.sentEvents}`)}`,
    `| sent messages left \`sending\` |${rows((r) => r.sentLeftSending)}`,
    `| distinct messages the relay received / received twice (a send in flight at the kill, resent by its retry: at least once) |${rows((r) => `${r.relayedMessages} / ${r.relayedTwice}`)}`,
    `| webhook: message.received events / first attempts the endpoint failed on purpose (503) |${rows((r) => `${r.webhookEvents} / ${r.webhookFailuresInjected}`)}`,
    `| webhook: events never delivered |${rows((r) => r.webhookNotDelivered)}`,
    `| webhook: repeated deliveries (same \`webhook-id\`: an attempt cut by the kill, sent again) |${rows((r) => r.webhookRepeats)}`,
    `| webhook: bad signatures, or ids that are no event |${rows((r) => r.webhookBadSignatures + r.webhookUnknownIds)}`,
    "",
    bad.length === 0
      ? "Nothing acknowledged was lost, nothing was half-stored or stored twice."
      : `**Failed:** ${bad.map((r) => `${r.storage}: ${crashFailures(r).join(", ")}`).join("; ")}.`
  ].join("\n")
  console.log(body)
  writeSection(via === "smtp" ? "Crash: kill -9 mid-SMTP-burst" : "Crash: kill -9 mid-burst", body)
  return bad.length > 0
}

const main = async () => {
  let failed = false
  for (const via of VIA) failed = (await run(via)) || failed
  if (failed) process.exit(1)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
