/**
 * Builds the publishable inboxctl package: the CLI and the workspace packages it uses
 * (core, http, mcp) bundled by esbuild into `dist/inboxctl.js` (ES module, source map, Node
 * 22.19+), the mail-parsing worker beside it as `dist/parse-worker.js`, and the SQL
 * migrations copied to `dist/migrations/` and the dashboard's files to `dist/dashboard/`,
 * where the bundled code looks for them (relative to its own URL). Third-party packages stay
 * external: they are the `dependencies` of this package.json and npm installs them with the
 * tarball. The build fails when a workspace package imports a third-party package that is
 * not listed there, so the tarball can never install without one of its imports.
 *
 * Exceptions, for start-up time: Effect and its Node and PostgreSQL packages, and mailparser
 * with libmime and everything they import, are bundled. Left external they are several
 * hundred modules that Node resolves and compiles one by one at every start of the server
 * and of the parsing worker; bundled, esbuild keeps what is used. They stay declared
 * dependencies (harmless). The bundled CommonJS gets a real `require` (createRequire) for
 * Node's built-in modules.
 *
 * The bundle is split (esbuild `splitting`): the entry `dist/inboxctl.js` holds commander's
 * command tree and the catalogue's manifest, and the rest (the engine, HTTP, MCP) sits in
 * chunks beside it that a command imports when it runs here; `--help`, a usage error and a
 * command a running server answers never load them. The build fails when the entry's static
 * imports reach core or Effect. Chunks sit in `dist/` itself, so the URL-relative lookups
 * of the migrations and the worker resolve as in one file. The manifest is written afresh
 * from the catalogue first (src/manifest.generated.ts).
 *
 * Run by `pnpm pack` (prepack) and `pnpm --filter @inbox/cli build`.
 */
import { build, type Metafile, type Plugin } from "esbuild"
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, "dist")
const core = join(here, "..", "core", "src")
const manifest = JSON.parse(readFileSync(join(here, "package.json"), "utf8")) as { dependencies: Record<string, string> }
const declared = new Set(Object.keys(manifest.dependencies))

/** The package name of a bare import (`@scope/name/sub` → `@scope/name`). */
const packageOf = (path: string) => path.split("/").slice(0, path.startsWith("@") ? 2 : 1).join("/")

/** Packages bundled from the workspace, for start-up time. */
const bundled = new Set(["libmime", "mailparser", "effect", "@effect/platform-node", "@effect/platform-node-shared", "@effect/sql-pg"])
const insideBundled = (importer: string) => importer.includes("node_modules")

const missing = new Set<string>()
// Workspace packages are bundled; every other bare import must be a declared dependency.
const externals: Plugin = {
  name: "externals",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("node:") || args.path.startsWith("@inbox/")) return undefined
      const name = packageOf(args.path)
      // Only bundled packages' own files import from inside node_modules (externals are never read).
      if (bundled.has(name) || insideBundled(args.importer)) return undefined
      if (!declared.has(name)) missing.add(`${name} (imported by ${args.importer})`)
      return { path: args.path, external: true }
    })
  }
}

// The command tree's data, from the catalogue as it is now.
const { manifestSource } = await import("./src/catalogue-manifest.ts")
const manifestFile = join(here, "src", "manifest.generated.ts")
const source = manifestSource()
if (readFileSync(manifestFile, "utf8") !== source) {
  writeFileSync(manifestFile, source)
  console.log(`build: wrote ${manifestFile} (commit it)`)
}

rmSync(dist, { recursive: true, force: true })
const result = await build({
  entryPoints: {
    inboxctl: join(here, "src", "main.ts"),
    "parse-worker": join(core, "mail", "parse-worker.ts")
  },
  outdir: dist,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  sourcemap: true,
  splitting: true,
  // Chunks beside the entry (not in a subfolder): the bundled code finds the migrations and
  // the worker relative to its own URL, the same from any file in dist/.
  chunkNames: "chunk-[hash]",
  metafile: true,
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __inboxRequire } from \"node:module\"\nconst require = __inboxRequire(import.meta.url)"
  },
  plugins: [externals],
  logLevel: "warning"
})
cpSync(join(core, "db", "migrations"), join(dist, "migrations"), { recursive: true })
cpSync(join(here, "..", "dashboard", "dist"), join(dist, "dashboard"), { recursive: true })

/** The inputs of an output file and of every output it imports statically. */
const staticInputs = (meta: Metafile, output: string, seen = new Set<string>()): ReadonlySet<string> => {
  if (seen.has(output)) return new Set()
  seen.add(output)
  const file = meta.outputs[output]
  const inputs = new Set(Object.keys(file?.inputs ?? {}))
  for (const i of file?.imports ?? []) {
    if (i.kind === "import-statement" && !i.external) for (const input of staticInputs(meta, i.path, seen)) inputs.add(input)
  }
  return inputs
}
const entry = Object.keys(result.metafile.outputs).find((o) => o.endsWith("/inboxctl.js")) ?? ""
const eager = [...staticInputs(result.metafile, entry)].filter((i) => i.includes("packages/core/") || i.includes("node_modules/effect/") || i.includes("packages/http/"))
if (eager.length > 0) {
  console.error(`build: the entry loads the engine before any command runs:\n  ${eager.slice(0, 10).join("\n  ")}`)
  process.exit(1)
}

if (missing.size > 0) {
  console.error(`build: imports missing from packages/cli/package.json dependencies:\n  ${[...missing].join("\n  ")}`)
  process.exit(1)
}
console.log(`build: ${dist}`)
