/**
 * The docs stay true to the code: every page generated from it (settings, the CLI
 * reference and the CLI's manifest, the permission table, the MCP tool list: scripts/docs.ts)
 * is what `pnpm docs` would write now, every link between the README and the pages under
 * docs/ reaches a file and a heading that exist, and the README stays short.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { DOCS_COMMAND, generatedFiles, withBlock } from "../../../scripts/docs.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

const pages = (): ReadonlyArray<string> => [
  join(ROOT, "README.md"),
  join(ROOT, "BENCHMARKS.md"),
  ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(ROOT, "docs", f))
]

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const anchorOf = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-")

/** The anchors of a Markdown file's headings (outside code blocks). */
const anchors = (file: string): ReadonlySet<string> => {
  let fenced = false
  const found = new Set<string>()
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced
    const heading = fenced ? null : /^#+ (.*)$/.exec(line)
    if (heading?.[1] !== undefined) found.add(anchorOf(heading[1]))
  }
  return found
}

/** The relative links of a Markdown file (outside code blocks and inline code). */
const links = (file: string): ReadonlyArray<string> => {
  let fenced = false
  const found: Array<string> = []
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced
    if (fenced) continue
    for (const m of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] ?? ""
      if (!/^[a-z]+:/.test(target)) found.push(target)
    }
  }
  return found
}

describe("docs", () => {
  it(`every generated page is fresh (${DOCS_COMMAND})`, () => {
    for (const { file, text } of generatedFiles()) {
      assert.strictEqual(readFileSync(file, "utf8"), text, `${relative(ROOT, file)} is stale: run ${DOCS_COMMAND} and commit the result`)
    }
  })

  it("the generated pages hold what a reader looks for", () => {
    const read = (name: string) => readFileSync(join(ROOT, "docs", name), "utf8")
    const cli = read("cli.md")
    for (const heading of ["### inboxctl pods create", "### inboxctl messages list", "### inboxctl org create", "### inboxctl mcp", "### inboxctl events tail"]) {
      assert.include(cli, heading)
    }
    assert.include(cli, "| `--inbox <inbox_id>` | the inbox (required) |")
    assert.include(cli, "| `--port <port>` | HTTP port (default 3000) [INBOX_PORT] |")
    assert.include(read("settings.md"), "| `INBOX_PORT` | `--port` | `3000` | HTTP port |")
    assert.include(read("permissions.md"), "| POST | `/v0/inboxes` | `inbox_create` (organization or pod keys) | `create_inbox` |")
    const mcp = read("mcp.md")
    assert.include(mcp, "### create_inbox")
    assert.include(mcp, "Permission: `inbox_create`. Changes data.")
  })

  it("a stale generated part is caught: withBlock replaces only what its markers hold", () => {
    const page = "# Page\n\nkept\n\n<!-- t:start -->\nold\n<!-- t:end -->\n\nkept too\n"
    assert.strictEqual(withBlock(page, "t", "new"), "# Page\n\nkept\n\n<!-- t:start -->\nnew\n<!-- t:end -->\n\nkept too\n")
    assert.throws(() => withBlock("# Page\n", "t", "new"), /markers/)
  })

  it("every link of the README and the docs reaches a file, and a heading of it", () => {
    const broken: Array<string> = []
    for (const page of pages()) {
      for (const link of links(page)) {
        const [path = "", anchor] = link.split("#")
        const target = path === "" ? page : join(dirname(page), decodeURIComponent(path))
        // Links out of the repository (the spec beside it) are not ours to check.
        if (relative(ROOT, target).startsWith("..")) continue
        if (!existsSync(target)) broken.push(`${relative(ROOT, page)}: ${link} (no such file)`)
        else if (anchor !== undefined && target.endsWith(".md") && !anchors(target).has(anchor)) {
          broken.push(`${relative(ROOT, page)}: ${link} (no such heading)`)
        }
      }
    }
    assert.deepStrictEqual(broken, [])
  })

  it("the README is at most 250 lines, with the docs linked from it", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8")
    assert.isAtMost(readme.split("\n").length, 250)
    for (const page of readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md"))) {
      assert.include(readme, `](docs/${page}`, `README.md does not link docs/${page}`)
    }
  })
})
