/**
 * The walls of docs/architecture.md, as CI checks them: dependency-cruiser with the repo's
 * .dependency-cruiser.cjs over packages/. A second run over a small house built to break each
 * kind of wall shows that the rules bite, so a config that matched nothing could not pass.
 */
import { execFile } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..")
const depcruise = join(root, "node_modules/.bin/depcruise")
const config = join(root, ".dependency-cruiser.cjs")

interface Violation {
  readonly from: string
  readonly to: string
  readonly rule: { readonly name: string }
}

const cruise = async (cwd: string): Promise<{ violations: ReadonlyArray<Violation>; cruised: number }> => {
  // depcruise exits non-zero when it finds an error-level violation; the JSON is on stdout.
  const { stdout } = await promisify(execFile)(depcruise, ["--config", config, "--output-type", "json", "packages"], {
    cwd,
    maxBuffer: 64 * 1024 * 1024
  }).catch((error: { stdout?: string }) => {
    if (typeof error.stdout === "string" && error.stdout.startsWith("{")) return { stdout: error.stdout }
    throw error
  })
  const report = JSON.parse(stdout) as { summary: { violations: ReadonlyArray<Violation>; totalCruised: number } }
  return { violations: report.summary.violations, cruised: report.summary.totalCruised }
}

describe("the walls (pnpm walls)", () => {
  it("hold in the repository: no import cycle, core imports no adapter, adapters use only core's public entries, each layer of core imports only those below it", async () => {
    const { violations, cruised } = await cruise(root)
    expect(violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([])
    // Every package's sources are in the graph, not only some of them.
    expect(cruised).toBeGreaterThan(200)
  }, 60_000)

  it("are found broken in a house built to break them", async () => {
    const house = await mkdtemp(join(tmpdir(), "walls-"))
    try {
      const files: Record<string, string> = {
        "tsconfig.json": JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }),
        "packages/core/src/index.ts": `export * from "./pods/Pods.ts"\n`,
        "packages/core/src/pods/Pods.ts": `import "./Inboxes.ts"\nimport "../engine/Engine.ts"\nexport const pods = 1\n`,
        "packages/core/src/pods/Inboxes.ts": `import "./Pods.ts"\nexport const inboxes = 1\n`,
        "packages/core/src/engine/Engine.ts": `import "../index.ts"\nexport const engine = 1\n`,
        "packages/core/src/access/Principal.ts": `import "../pods/Pods.ts"\nexport const principal = 1\n`,
        "packages/core/src/shared/json.ts": `import "../pods/Pods.ts"\nexport const json = 1\n`,
        "packages/core/src/mail/parse.ts": `import "../pods/Pods.ts"\nexport const parse = 1\n`,
        "packages/core/src/jobs/Jobs.ts": `import "../../../http/src/server.ts"\nimport "../pods/Pods.ts"\nexport const jobs = 1\n`,
        "packages/http/src/server.ts": `import "../../core/src/pods/Pods.ts"\nexport const server = 1\n`
      }
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(house, path)), { recursive: true })
        await writeFile(join(house, path), text)
      }
      const { violations } = await cruise(house)
      const broken = new Set(violations.map((v) => v.rule.name))
      expect([...broken].sort()).toEqual([
        "adapters-use-the-public-api",
        "catalogue-below-the-domains",
        "core-imports-no-adapter",
        "domains-below-the-engine",
        "engine-below-the-entries",
        "foundation-imports-nothing-above",
        "mail-engine-is-pure",
        "no-circular",
        "ports-import-no-domain"
      ])
    } finally {
      await rm(house, { recursive: true, force: true })
    }
  }, 60_000)
})
