/**
 * The setup steps of scripts/start.sh, scripts/test.sh, scripts/inboxctl and .ci/run
 * (scripts/env.sh): none needs a terminal, and a step that fails says what failed and how
 * to fix it instead of exiting 1 without a word (seen with `pnpm install` in a copied
 * checkout, which asks before rebuilding node_modules and refuses without a terminal).
 * Stand-in `pnpm` and `npm` commands play the failures. And what scripts/test.sh brings and
 * reports: Debian's Chromium when it runs as root (stand-in `id` and `apt-get`), the files
 * that cannot run here named with their reason, one closing line from vitest's JSON report
 * (written here by hand), and CI mode (INBOX_TEST_REQUIRE_ALL=1) failing on what is missing
 * or skipped.
 */
import { assert, describe, it } from "@effect/vitest"
import { CHROMIUM_FILES, POSTGRES_FILES } from "@inbox/testkit"
import { spawnSync } from "node:child_process"
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

/** A folder of executable stand-ins, each a bash script body. */
const fakeBin = (scripts: Record<string, string>): string => {
  const dir = mkdtempSync(join(tmpdir(), "setup-bin-"))
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, name), `#!/usr/bin/env bash\n${body}\n`)
    chmodSync(join(dir, name), 0o755)
  }
  return dir
}

const bash = (script: string, env: Record<string, string>) => {
  const run = spawnSync("bash", ["-c", script], { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

const PNPM_PIN = /PNPM_PIN=(\S+)/.exec(readFileSync(join(ROOT, "scripts/env.sh"), "utf8"))?.[1] ?? ""

describe("setup scripts", () => {
  it("install_deps never asks: pnpm runs in CI mode with the lockfile frozen and the modules purge confirmed", () => {
    const record = join(mkdtempSync(join(tmpdir(), "setup-")), "calls")
    const bin = fakeBin({ pnpm: `echo "CI=$CI $*" >> "${record}"` })
    const run = bash(`source scripts/env.sh && PATH="${bin}:$PATH" && install_deps`, {})
    assert.strictEqual(run.code, 0, run.stderr)
    const call = readFileSync(record, "utf8")
    assert.match(call, /^CI=true install /)
    assert.include(call, "--frozen-lockfile")
    assert.include(call, "--config.confirm-modules-purge=false")
    rmSync(bin, { recursive: true, force: true })
  })

  it("start.sh stops with exit 1, pnpm's own words, what failed and how to fix it when the install fails", () => {
    const bin = fakeBin({
      pnpm: `if [ "$1" = "--version" ]; then echo ${PNPM_PIN}; exit 0; fi
echo " ERR_PNPM_ABORTED_REMOVE_MODULES_DIR_NO_TTY  Aborted removal of modules directory due to no TTY" >&2
exit 1`
    })
    const run = bash(`PATH="${bin}:$PATH" bash scripts/start.sh --port 1`, {})
    assert.strictEqual(run.code, 1)
    assert.include(run.stderr, "ERR_PNPM_ABORTED_REMOVE_MODULES_DIR_NO_TTY")
    assert.include(run.stderr, "setup: installing the dependencies (pnpm install --frozen-lockfile) failed.")
    assert.match(run.stderr, /\n {2}fix: .+/)
    assert.notInclude(run.stdout + run.stderr, "Listening")
    rmSync(bin, { recursive: true, force: true })
  })

  it("without a usable Node and with the registry unreachable, env.sh says what failed and how to fix it", () => {
    // A checkout of its own (no .tools yet) whose PATH has an old node and a failing npm.
    const checkout = mkdtempSync(join(tmpdir(), "setup-checkout-"))
    mkdirSync(join(checkout, "scripts"))
    copyFileSync(join(ROOT, "scripts/env.sh"), join(checkout, "scripts/env.sh"))
    const bin = fakeBin({
      node: `[ "$1" = "--version" ] && echo v20.0.0; exit 1`,
      npm: `echo "npm error code ENOTFOUND" >&2; exit 1`
    })
    const inCheckout = spawnSync("bash", ["-c", `PATH="${bin}:/usr/bin:/bin"; source scripts/env.sh; echo "status=$?"`], {
      cwd: checkout,
      encoding: "utf8"
    })
    assert.include(inCheckout.stdout, "status=1")
    assert.include(inCheckout.stderr, "npm error code ENOTFOUND")
    assert.include(inCheckout.stderr, "setup: installing Node")
    assert.include(inCheckout.stderr, "from the npm registry failed.")
    assert.include(inCheckout.stderr, "fix: check that the npm registry is reachable")
    rmSync(checkout, { recursive: true, force: true })
    rmSync(bin, { recursive: true, force: true })
  })
})

/** The environment of a run without PostgreSQL, CI mode or a chosen browser. */
const bare = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  delete env["INBOX_TEST_DATABASE_URL"]
  delete env["INBOX_TEST_REQUIRE_ALL"]
  delete env["INBOX_TEST_CHROMIUM"]
  return env
}

const testReport = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const run = spawnSync(process.execPath, ["--import", "tsx", "scripts/test-report.ts", ...args], {
    cwd: ROOT,
    env: { ...bare(), ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"]
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

/** A vitest JSON report (the fields test-report.ts reads): a.test.ts failed one test, b.test.ts skipped one. */
const writeReport = (results: ReadonlyArray<{ file: string; statuses: ReadonlyArray<string> }>): string => {
  const file = join(mkdtempSync(join(tmpdir(), "test-report-")), "report.json")
  const all = results.flatMap((r) => r.statuses)
  writeFileSync(file, JSON.stringify({
    numPassedTests: all.filter((s) => s === "passed").length,
    numFailedTests: all.filter((s) => s === "failed").length,
    numPendingTests: all.filter((s) => s === "pending").length,
    numTodoTests: all.filter((s) => s === "todo").length,
    testResults: results.map((r) => ({
      name: join(ROOT, r.file),
      status: r.statuses.includes("failed") ? "failed" : "passed",
      assertionResults: r.statuses.map((status, i) => ({ fullName: `case ${i}`, status }))
    }))
  }))
  return file
}

describe("scripts/test.sh", () => {
  const chromiumRun = (uid: string, apt: string, bring = "DEBIAN_CHROMIUM=/nonexistent/chromium && bring_chromium") => {
    const record = join(mkdtempSync(join(tmpdir(), "setup-")), "calls")
    writeFileSync(record, "")
    const bin = fakeBin({ id: `echo ${uid}`, "apt-get": `echo "apt-get $*" >> "${record}"\n${apt}` })
    const run = spawnSync("bash", ["-c", `source scripts/env.sh && PATH="${bin}:$PATH" && ${bring}; echo "status=$?"`], {
      cwd: ROOT,
      env: bare(),
      encoding: "utf8"
    })
    rmSync(bin, { recursive: true, force: true })
    return { stdout: run.stdout, stderr: run.stderr, calls: readFileSync(record, "utf8") }
  }

  it("installs Debian's chromium through apt-get when it is missing and it runs as root, saying so in one line", () => {
    const run = chromiumRun("0", "exit 0")
    assert.include(run.stdout, "status=0")
    assert.strictEqual(run.calls, "apt-get update -qq\napt-get install -y -qq chromium\n")
    assert.strictEqual(run.stderr, "setup: installing Debian's chromium (apt-get) for the dashboard's browser tests\n")
  })

  it("installs Debian's isync (mbsync, the IMAP test's mail client) the same way when it is missing", () => {
    const run = chromiumRun("0", "exit 0", "DEBIAN_MBSYNC=/nonexistent/mbsync && bring_mbsync")
    assert.include(run.stdout, "status=0")
    assert.strictEqual(run.calls, "apt-get update -qq\napt-get install -y -qq isync\n")
    assert.strictEqual(run.stderr, "setup: installing Debian's isync (apt-get) for the IMAP test with mbsync\n")
    const present = chromiumRun("0", "exit 0", `DEBIAN_MBSYNC=${process.execPath} && bring_mbsync`)
    assert.strictEqual(present.calls, "", "a binary that is there is not installed again")
  })

  it("goes on without a browser when not root, and when apt-get fails says so with a fix", () => {
    const user = chromiumRun("1000", "exit 0")
    assert.strictEqual(user.calls, "")
    assert.strictEqual(user.stderr, "")
    assert.include(user.stdout, "status=0")
    const failing = chromiumRun("0", `echo "E: Unable to locate package chromium" >&2; exit 100`)
    assert.include(failing.stdout, "status=0")
    assert.include(failing.stderr, "E: Unable to locate package chromium")
    assert.include(failing.stderr, "setup: installing chromium (apt-get install chromium) failed.")
    assert.match(failing.stderr, /\n {2}fix: .+INBOX_TEST_CHROMIUM/)
  })

  it("without PostgreSQL or Chromium names each file it skips with its reason, above one closing line with the failed files", () => {
    const report = writeReport([
      { file: "packages/core/test/a.test.ts", statuses: ["passed", "failed"] },
      { file: "packages/core/test/b.test.ts", statuses: ["passed", "pending"] }
    ])
    const run = testReport(["summary", report, "1"], { INBOX_TEST_CHROMIUM: "/nonexistent/chromium" })
    assert.strictEqual(run.code, 1, run.stderr)
    assert.deepStrictEqual(run.stdout.trimEnd().split("\n"), [
      ...POSTGRES_FILES.map((f) => `skipped ${f}: no PostgreSQL (set INBOX_TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test)`),
      ...CHROMIUM_FILES.map((f) => `skipped ${f}: no Chromium at /nonexistent/chromium (INBOX_TEST_CHROMIUM)`),
      `tests: 2 passed, 1 failed, 1 skipped; ${POSTGRES_FILES.length + CHROMIUM_FILES.length} files not run (above); failed files: packages/core/test/a.test.ts`
    ])
    // Files named on the command line: only those of them that cannot run; none found is no failure.
    const named = testReport(["summary", writeReport([]), "1", "packages/core/test/signals.test.ts"], {})
    assert.strictEqual(named.code, 0, named.stdout + named.stderr)
    assert.deepStrictEqual(named.stdout.trimEnd().split("\n"), [
      "skipped packages/core/test/signals.test.ts: no PostgreSQL (set INBOX_TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test)",
      "tests: 0 passed, 0 failed, 0 skipped; 1 file not run (above)"
    ])
    assert.strictEqual(testReport(["check"], {}).code, 0)
  })

  it("in CI mode (INBOX_TEST_REQUIRE_ALL=1) stops before the run when PostgreSQL is missing, and fails a run that skipped a test", () => {
    const check = testReport(["check"], { INBOX_TEST_REQUIRE_ALL: "1", INBOX_TEST_CHROMIUM: process.execPath })
    assert.strictEqual(check.code, 1)
    for (const file of POSTGRES_FILES) assert.include(check.stderr, `  ${file}: no PostgreSQL`)
    for (const file of CHROMIUM_FILES) assert.notInclude(check.stderr, file)
    assert.match(check.stderr, /\n {2}fix: .+/)
    const ci = { INBOX_TEST_REQUIRE_ALL: "1", INBOX_TEST_DATABASE_URL: "postgres://127.0.0.1:1/unused", INBOX_TEST_CHROMIUM: process.execPath }
    assert.strictEqual(testReport(["check"], ci).code, 0)
    const run = testReport(["summary", writeReport([{ file: "packages/core/test/b.test.ts", statuses: ["passed", "pending", "todo"] }]), "0"], ci)
    assert.strictEqual(run.code, 1)
    assert.deepStrictEqual(run.stdout.trimEnd().split("\n"), [
      "skipped packages/core/test/b.test.ts > case 1",
      "skipped packages/core/test/b.test.ts > case 2",
      "tests: 1 passed, 0 failed, 2 skipped; INBOX_TEST_REQUIRE_ALL=1 (CI) fails a run that skips a test"
    ])
  })
})
