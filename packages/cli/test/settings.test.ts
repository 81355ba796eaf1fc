/**
 * Settings are environment variables, each also a flag of `inboxctl serve` (or of every
 * storage command), each a row of the settings table (docs/settings.md). This keeps the three
 * in step: a variable the code reads without a flag or a row fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { SERVE_SETTINGS, STORAGE_SETTINGS } from "../src/settings.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

/** INBOX_* names the command-line tool reads for its own use, not the server's settings. */
const NOT_SERVER_SETTINGS = new Set(["INBOX_API_KEY"])

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  )

const readByCode = (): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const pkg of ["core", "http", "cli"]) {
    for (const file of sources(join(ROOT, "packages", pkg, "src"))) {
      for (const m of readFileSync(file, "utf8").matchAll(/"(INBOX_[A-Z_]+)"/g)) {
        if (m[1] !== undefined && !NOT_SERVER_SETTINGS.has(m[1])) names.add(m[1])
      }
    }
  }
  return names
}

const flagOf = (flag: string) => flag.split(" ")[0] ?? flag

describe("settings", () => {
  const settings = [...SERVE_SETTINGS, ...STORAGE_SETTINGS]

  it("every INBOX_* variable the server reads is a flag of inboxctl", () => {
    const flagged = new Set<string>(settings.map((s) => s.env))
    const read = readByCode()
    assert.isAbove(read.size, 10)
    for (const name of read) assert.isTrue(flagged.has(name), `${name} has no inboxctl flag`)
  })

  it("every setting is a row of docs/settings.md, with its flag", () => {
    const page = readFileSync(join(ROOT, "docs", "settings.md"), "utf8")
    for (const s of settings) {
      assert.include(page, `| \`${s.env}\` | \`${flagOf(s.flag)}\` |`, `${s.env} is missing from docs/settings.md`)
    }
  })
})
