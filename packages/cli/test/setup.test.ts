/**
 * The setup steps of scripts/start.sh, scripts/test.sh, scripts/inboxctl and .ci/run
 * (scripts/env.sh): none needs a terminal, and a step that fails says what failed and how
 * to fix it instead of exiting 1 without a word (seen with `pnpm install` in a copied
 * checkout, which asks before rebuilding node_modules and refuses without a terminal).
 * Stand-in `pnpm` and `npm` commands play the failures.
 */
import { assert, describe, it } from "@effect/vitest"
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
