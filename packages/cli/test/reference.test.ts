/**
 * What is generated from the catalogue and checked in stays fresh: the manifest the command
 * tree is built from (src/manifest.generated.ts) and the CLI reference (docs/cli.md). Run
 * `pnpm --filter @inbox/cli generate` after changing an operation or a command.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { generated, MANIFEST_FILE, REFERENCE_FILE } from "../generate.ts"

describe("generated from the catalogue", () => {
  const fresh = generated()

  it("the CLI's manifest matches the catalogue (pnpm --filter @inbox/cli generate)", () => {
    assert.strictEqual(readFileSync(MANIFEST_FILE, "utf8"), fresh.manifest, "src/manifest.generated.ts is stale: run pnpm --filter @inbox/cli generate")
  })

  it("docs/cli.md names every command with its arguments and options (pnpm --filter @inbox/cli generate)", () => {
    const page = readFileSync(REFERENCE_FILE, "utf8")
    assert.strictEqual(page, fresh.reference, "docs/cli.md is stale: run pnpm --filter @inbox/cli generate")
    for (const heading of ["### inboxctl pods create", "### inboxctl messages list", "### inboxctl org create", "### inboxctl mcp", "### inboxctl events tail"]) {
      assert.include(page, heading)
    }
    assert.include(page, "| `--inbox <inbox_id>` | the inbox (required) |")
  })
})
