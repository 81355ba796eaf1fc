/**
 * `pnpm docs`: writes every page (and part of a page) that is generated from the code, so
 * the docs say what the code does:
 *
 * - docs/settings.md, from core's settings registry (packages/cli/src/settings-reference.ts);
 * - docs/cli.md and the CLI's manifest, from the catalogue and the command tree
 *   (packages/cli/generate.ts);
 * - the table of docs/permissions.md, from the catalogue (packages/http/src/permission-table.ts);
 * - the tool list of docs/mcp.md, from the MCP tool catalogue (packages/mcp/src/reference.ts).
 *
 * A generated part of a hand-written page sits between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->`. packages/cli/test/docs.test.ts fails when any file differs from what
 * this would write.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { generated, MANIFEST_FILE, REFERENCE_FILE } from "../packages/cli/generate.ts"
import { settingsReference } from "../packages/cli/src/settings-reference.ts"
import { permissionTable } from "../packages/http/src/permission-table.ts"
import { toolReference } from "../packages/mcp/src/reference.ts"

export const DOCS_COMMAND = "pnpm docs"

const docs = (name: string) => fileURLToPath(new URL(`../docs/${name}`, import.meta.url))

/** `text` with the part between the NAME markers replaced by `block`. */
export const withBlock = (text: string, name: string, block: string): string => {
  const start = `<!-- ${name}:start -->\n`
  const end = `\n<!-- ${name}:end -->`
  const from = text.indexOf(start)
  const to = text.indexOf(end, from)
  if (from < 0 || to < 0) throw new Error(`the markers <!-- ${name}:start --> and <!-- ${name}:end --> are missing`)
  return text.slice(0, from + start.length) + block + text.slice(to)
}

export interface GeneratedFile {
  readonly file: string
  /** What the file should hold, from the code as it is now. */
  readonly text: string
}

/** Every generated file with the text it should hold. */
export const generatedFiles = (): ReadonlyArray<GeneratedFile> => {
  const cli = generated()
  const block = (name: string, marker: string, content: string): GeneratedFile => ({
    file: docs(name),
    text: withBlock(readFileSync(docs(name), "utf8"), marker, content)
  })
  return [
    { file: docs("settings.md"), text: settingsReference() },
    { file: REFERENCE_FILE, text: cli.reference },
    { file: MANIFEST_FILE, text: cli.manifest },
    block("permissions.md", "permissions", permissionTable()),
    block("mcp.md", "tools", toolReference())
  ]
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const { file, text } of generatedFiles()) {
    if (readFileSync(file, "utf8") === text) continue
    writeFileSync(file, text)
    console.log(`docs: wrote ${file}`)
  }
}
