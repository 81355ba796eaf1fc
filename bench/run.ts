/**
 * `pnpm bench`: runs every benchmark and writes the figures, with the date and machine, to
 * BENCHMARKS.md (one section per benchmark; sections written by other scripts are kept).
 */
import { benchHttp, httpSection } from "./http.ts"
import { benchParse, parseSection } from "./parse.ts"
import { benchMetrics, metricsSection } from "./metrics.ts"
import { writeSection } from "./report.ts"

const main = async () => {
  const only = process.argv.slice(2)
  if (only.length === 0 || only.includes("http")) {
    const body = httpSection(await benchHttp())
    console.log(body)
    writeSection("HTTP: inboxes", body)
  }
  if (only.length === 0 || only.includes("parse")) {
    const body = parseSection(await benchParse())
    console.log(body)
    writeSection("Parse", body)
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
