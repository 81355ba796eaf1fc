/**
 * `pnpm --filter @inbox/cli generate`: writes what is derived from core's catalogue and
 * settings registry and checked in: the CLI's manifest (src/manifest.generated.ts, which the
 * command tree is built from without loading core) and the CLI reference (docs/cli.md).
 * build.ts writes the manifest too; `pnpm docs` (scripts/docs.ts) writes both with the other
 * generated pages, and packages/cli/test/docs.test.ts fails when either is stale.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { makeManifest, makeSettings, manifestSource } from "./src/catalogue-manifest.ts"
import { buildProgram } from "./src/program.ts"
import { cliReference } from "./src/reference.ts"

export const MANIFEST_FILE = fileURLToPath(new URL("./src/manifest.generated.ts", import.meta.url))
export const REFERENCE_FILE = fileURLToPath(new URL("../../docs/cli.md", import.meta.url))

/** Both files' text, from the catalogue as it is now. */
export const generated = () => {
  const manifest = makeManifest()
  return { manifest: manifestSource(manifest), reference: cliReference(buildProgram(manifest, makeSettings()), manifest) }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { manifest, reference } = generated()
  writeFileSync(MANIFEST_FILE, manifest)
  writeFileSync(REFERENCE_FILE, reference)
  console.log(`generate: ${MANIFEST_FILE}\ngenerate: ${REFERENCE_FILE}`)
}
