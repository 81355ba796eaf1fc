/**
 * Builds the published @inbox/core (scripts/build-library.ts says how): the entry points "."
 * and "./ports" ("./internal" is the workspace's, for tests and the testkit), the mail-parsing
 * worker as dist/parse-worker.js, which parse.ts starts by URL beside itself, and the SQL
 * migrations in dist/migrations, which Database.ts reads beside itself. The same layout as
 * the CLI's bundle, so both find them alike.
 *
 * Bundled rather than transpiled file by file: the engine is some 140 modules, which Node
 * would resolve, read and compile one by one at every start of an app; bundled they are one
 * file and a few shared chunks (the worker shares the parsing code with the engine's
 * in-thread parser).
 */
import { fileURLToPath } from "node:url"
import { buildLibrary } from "../../scripts/build-library.ts"

await buildLibrary({
  dir: fileURLToPath(new URL(".", import.meta.url)),
  entries: { index: "src/index.ts", ports: "src/ports.ts", "parse-worker": "src/mail/parse-worker.ts" },
  copy: { "src/db/migrations": "migrations" }
})
