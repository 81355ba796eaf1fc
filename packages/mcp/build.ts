/**
 * Builds the published @inbox/mcp (scripts/build-library.ts says how): the entry point ".".
 *
 * Bundled like the other library packages, for one way of building them all: at four
 * modules, file by file would start as fast.
 */
import { fileURLToPath } from "node:url"
import { buildLibrary } from "../../scripts/build-library.ts"

await buildLibrary({ dir: fileURLToPath(new URL(".", import.meta.url)), entries: { index: "src/index.ts" } })
