/**
 * Builds the published @inbox/mailserver (scripts/build-library.ts says how): the entry
 * point ".". mailauth and smtp-server stay imported on demand, when a receiver starts.
 *
 * Bundled like the other library packages, for one way of building them all: at two
 * modules, file by file would start as fast.
 */
import { fileURLToPath } from "node:url"
import { buildLibrary } from "../../scripts/build-library.ts"

await buildLibrary({ dir: fileURLToPath(new URL(".", import.meta.url)), entries: { index: "src/index.ts" } })
