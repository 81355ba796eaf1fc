/**
 * Builds the published @inbox/http (scripts/build-library.ts says how): the entry point "."
 * and the dashboard's built files (packages/dashboard/dist, Vite's output) in dist/dashboard,
 * which dashboard.ts serves from beside itself.
 *
 * Bundled, as core is: one file for the server's twenty modules, resolved once at start.
 */
import { fileURLToPath } from "node:url"
import { buildLibrary } from "../../scripts/build-library.ts"

await buildLibrary({
  dir: fileURLToPath(new URL(".", import.meta.url)),
  entries: { index: "src/index.ts" },
  copy: { "../dashboard/dist": "dashboard" }
})
