/**
 * `pnpm bench`: runs every benchmark and writes the figures, with the date and machine, to
 * BENCHMARKS.md (one section per benchmark; sections written by other scripts are kept).
 */
import { benchHttp } from "./http.ts"
import { benchParse, parseSection } from "./parse.ts"
import { machine, writeSection } from "./report.ts"

const main = async () => {
  const only = process.argv.slice(2)
  if (only.length === 0 || only.includes("http")) {
    const figures = await benchHttp()
    const rows = figures.map((f) => `| ${f.storage} | ${f.route} | ${f.rps.toLocaleString("en-US")} | ${f.p50} | ${f.p99} | ${f.errors} |`)
    const body = [
      `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}.`,
      `autocannon, ${process.env["BENCH_CONNECTIONS"] ?? "20"} connections, ${process.env["BENCH_SECONDS"] ?? "10"} s per route, server in its own process on the same machine; creates spread over 40 tenants on the Scale plan.`,
      `Goal for GET on PostgreSQL: at least 5,000 req/s with p99 under 10 ms.`,
      "",
      "| storage | route | req/s | p50 ms | p99 ms | errors + non-2xx |",
      "|---|---|---:|---:|---:|---:|",
      ...rows
    ].join("\n")
    console.log(body)
    writeSection("HTTP: inboxes", body)
  }
  if (only.length === 0 || only.includes("parse")) {
    const body = parseSection(await benchParse())
    console.log(body)
    writeSection("Parse", body)
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
