/**
 * Vitest global setup: build the migrated PGlite template once per run, so each test file
 * loads a ready database instead of running initdb and the migrations again.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildPgliteTemplate, TEMPLATE_ENV } from "./database.ts"

export default async function setup() {
  const dir = mkdtempSync(join(tmpdir(), "inbox-template-"))
  const file = join(dir, "template.tar")
  writeFileSync(file, Buffer.from(await (await buildPgliteTemplate()).arrayBuffer()))
  process.env[TEMPLATE_ENV] = file
  return () => rmSync(dir, { recursive: true, force: true })
}
