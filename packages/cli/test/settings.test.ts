/**
 * One registry of settings (core's settings/registry.ts): every INBOX_* variable the code
 * reads is in it, each is a flag of inboxctl, and the code that reads one takes its default
 * from it, so the flag, docs/settings.md (generated from it, docs.test.ts) and the behaviour
 * say the same. A variable read without an entry, or a default written by hand beside its
 * read, fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import { SETTINGS } from "@inbox/core"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { buildProgram } from "../src/program.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const REGISTRY = join(ROOT, "packages/core/src/settings/registry.ts")

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.tsx?$/.test(e.name) && !e.name.endsWith(".generated.ts") ? [join(dir, e.name)] : []
  )

/** The source files of every package but the testkit (whose INBOX_TEST_* variables are the test run's). */
const packageSources = (): ReadonlyArray<string> =>
  readdirSync(join(ROOT, "packages"), { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== "testkit")
    .flatMap((e) => {
      const src = join(ROOT, "packages", e.name, "src")
      try {
        return sources(src)
      } catch {
        return []
      }
    })
    .filter((file) => file !== REGISTRY)

/** INBOX_* names written as strings in the sources, with the files that name them. */
const namedByCode = (): ReadonlyMap<string, ReadonlyArray<string>> => {
  const names = new Map<string, Array<string>>()
  for (const file of packageSources()) {
    for (const m of readFileSync(file, "utf8").matchAll(/["'`](INBOX_[A-Z0-9_]+)["'`]/g)) {
      const name = m[1] ?? ""
      names.set(name, [...(names.get(name) ?? []), relative(ROOT, file)])
    }
  }
  return names
}

describe("settings", () => {
  const registered = new Set<string>(SETTINGS.map((s) => s.env))

  it("every INBOX_* variable the code reads is in the settings registry", () => {
    const named = namedByCode()
    assert.isAbove(named.size, 40)
    for (const [name, files] of named) {
      assert.isTrue(registered.has(name), `${name} (read in ${files.join(", ")}) is not in packages/core/src/settings/registry.ts`)
    }
  })

  it("every setting of the registry is read by the code", () => {
    const named = namedByCode()
    for (const name of registered) assert.isTrue(named.has(name), `${name} is in the registry but no source reads it`)
  })

  it("every setting is a flag of inboxctl serve, or of every command", () => {
    const program = buildProgram()
    const serve = program.commands.find((c) => c.name() === "serve")
    const longOf = (flag: string) => flag.split(" ")[0]
    for (const s of SETTINGS) {
      const owner = s.scope === "serve" ? serve : program
      assert.isTrue(owner?.options.some((o) => o.long === longOf(s.flag)) === true, `${s.env}: ${s.flag} is not an option of ${s.scope === "serve" ? "serve" : "inboxctl"}`)
      const option = owner?.options.find((o) => o.long === longOf(s.flag))
      assert.include(option?.description ?? "", `[${s.env}]`)
    }
  })

  it("no reader of a setting writes its default by hand: it takes settingDefault from the registry", () => {
    const byHand: Array<string> = []
    for (const file of packageSources()) {
      // A read with its default in one expression: Config.X("INBOX_Y")...withDefault(<literal>).
      for (const m of readFileSync(file, "utf8").matchAll(/"(INBOX_[A-Z0-9_]+)"\)[^;\n]*?withDefault\(([^()]*)\)/g)) {
        const value = (m[2] ?? "").trim()
        // "" is no value (a list or a switch left empty), not a default to document.
        if (/^-?\d/.test(value) || /^"[^"]+"/.test(value)) byHand.push(`${relative(ROOT, file)}: ${m[1]} defaults to ${value}`)
      }
    }
    assert.deepStrictEqual(byHand, [])
  })
})
