/**
 * scripts/test.sh's two checks around vitest. `check`: in CI mode (INBOX_TEST_REQUIRE_ALL=1)
 * a file whose need is missing (testkit requirements.ts) stops the run before it starts.
 * `summary REPORT STATUS [vitest arguments]`: from vitest's JSON report, the files left out
 * with their reasons and one closing line (passed, failed, skipped, the failed files); exits
 * with the run's status, which CI mode fails when any test was skipped. Left-out files are
 * named only when the arguments asked for them (all of them when no file was named).
 */
import { readFileSync } from "node:fs"
import { isAbsolute, relative, resolve } from "node:path"
import { REQUIRE_ALL_ENV, requireAll, unmetFiles } from "../packages/testkit/src/requirements.ts"

interface Report {
  readonly numPassedTests: number
  readonly numFailedTests: number
  readonly numPendingTests: number
  readonly numTodoTests: number
  readonly testResults: ReadonlyArray<{
    readonly name: string
    readonly status: string
    readonly assertionResults: ReadonlyArray<{ readonly fullName: string; readonly status: string }>
  }>
}

const root = process.cwd()
const [command, ...rest] = process.argv.slice(2)

/** The file filters among vitest's arguments: what is neither an option nor an option's value. */
const fileFilters = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const filters: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "-t" || arg === "--testNamePattern") i++
    else if (!arg.startsWith("-")) filters.push(arg)
  }
  return filters
}

// vitest's own matching: a filter selects the files whose path relative to the root contains it.
const matches = (file: string, filter: string) => {
  const lower = file.toLowerCase()
  return lower.includes(filter.toLowerCase()) ||
    lower.includes(relative(root, isAbsolute(filter) ? filter : resolve(root, filter)).toLowerCase())
}

if (command === "check") {
  const unmet = unmetFiles()
  if (requireAll() && unmet.length > 0) {
    console.error(`setup: running every test file (${REQUIRE_ALL_ENV}=1, as in CI) failed; these cannot run here:`)
    for (const { file, reason } of unmet) console.error(`  ${file}: ${reason}`)
    console.error(`  fix: provide what is missing, or unset ${REQUIRE_ALL_ENV} to skip those files.`)
    process.exit(1)
  }
} else if (command === "summary") {
  const [reportFile = "", statusText = "1", ...args] = rest
  let status = Number(statusText)
  const filters = fileFilters(args)
  const leftOut = (requireAll() ? [] : unmetFiles()).filter(({ file }) => filters.length === 0 || filters.some((f) => matches(file, f)))
  for (const { file, reason } of leftOut) console.log(`skipped ${file}: ${reason}`)
  let report: Report | undefined
  try {
    report = JSON.parse(readFileSync(reportFile, "utf8")) as Report
  } catch {
    report = undefined
  }
  if (report === undefined) {
    console.log("tests: vitest wrote no report; its errors are above")
    process.exit(status === 0 ? 1 : status)
  }
  // vitest fails a run that finds no file; when every file named was left out, that is a skip.
  if (status !== 0 && report.testResults.length === 0 && filters.length > 0 && filters.every((f) => leftOut.some(({ file }) => matches(file, f)))) status = 0
  const skipped = report.numPendingTests + report.numTodoTests
  const failedFiles = report.testResults.filter((r) => r.status === "failed").map((r) => relative(root, r.name))
  const skippedInCi = requireAll() && skipped > 0
  if (skippedInCi) {
    for (const r of report.testResults) {
      for (const a of r.assertionResults) {
        if (a.status !== "passed" && a.status !== "failed") console.log(`skipped ${relative(root, r.name)} > ${a.fullName}`)
      }
    }
    if (status === 0) status = 1
  }
  const parts = [`tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`]
  if (leftOut.length > 0) parts.push(`${leftOut.length} file${leftOut.length === 1 ? "" : "s"} not run (above)`)
  if (failedFiles.length > 0) parts.push(`failed files: ${failedFiles.join(", ")}`)
  if (skippedInCi) parts.push(`${REQUIRE_ALL_ENV}=1 (CI) fails a run that skips a test`)
  else if (status !== 0 && failedFiles.length === 0) parts.push("the run failed: see vitest's errors above")
  console.log(parts.join("; "))
  process.exit(status)
} else {
  console.error("usage: test-report.ts check | summary REPORT STATUS [vitest arguments]")
  process.exit(2)
}
