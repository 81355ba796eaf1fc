/**
 * Builds the publishable inboxctl package: the CLI and the workspace packages it uses
 * (core, http, mcp) bundled by esbuild into `dist/inboxctl.js` (ES module, source map, Node
 * 22.19+), the mail-parsing worker beside it as `dist/parse-worker.js`, and the SQL
 * migrations copied to `dist/migrations/` and the dashboard's files to `dist/dashboard/`, where the bundled code looks for them (both are
 * found relative to the bundle's own URL). Third-party packages stay external: they are the
 * `dependencies` of this package.json and npm installs them with the tarball. The build
 * fails when a workspace package imports a third-party package that is not listed there,
 * so the tarball can never install without one of its imports.
 *
 * Exception: libmime carries our format=flowed fix as a pnpm patch
 * (patches/libmime@5.4.6.patch), which npm would not apply to the copy it installs. So libmime
 * is bundled from the workspace's patched copy, and so is mailparser (which decodes flowed
 * bodies through its own `require("libmime")`) together with everything it imports; the
 * bundled CommonJS gets a real `require` (createRequire) for Node's built-in modules.
 *
 * Effect and its Node and PostgreSQL packages are bundled too, for start-up time: left
 * external they are several hundred ES modules that Node resolves and compiles one by one at
 * every start of every command (most of `inboxctl --help`'s time); bundled, esbuild keeps
 * what is used, in one file. They stay declared dependencies (harmless, and the worker shares
 * nothing with the CLI at run time).
 *
 * Run by `pnpm pack` (prepack) and `pnpm --filter @inbox/cli build`.
 */
import { build, type Plugin } from "esbuild"
import { cpSync, readFileSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, "dist")
const core = join(here, "..", "core", "src")
const manifest = JSON.parse(readFileSync(join(here, "package.json"), "utf8")) as { dependencies: Record<string, string> }
const declared = new Set(Object.keys(manifest.dependencies))

/** The package name of a bare import (`@scope/name/sub` → `@scope/name`). */
const packageOf = (path: string) => path.split("/").slice(0, path.startsWith("@") ? 2 : 1).join("/")

/** Packages bundled from the workspace: libmime for its pnpm patch (with mailparser), Effect for start-up time. */
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

rmSync(dist, { recursive: true, force: true })
await build({
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
  // One file, no chunks: the bundled code finds migrations and the worker relative to its
  // own URL, which a chunk in a subfolder would change.
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __inboxRequire } from \"node:module\"\nconst require = __inboxRequire(import.meta.url)"
  },
  plugins: [externals],
  logLevel: "warning"
})
cpSync(join(core, "db", "migrations"), join(dist, "migrations"), { recursive: true })
cpSync(join(here, "..", "http", "src", "dashboard"), join(dist, "dashboard"), { recursive: true })

if (missing.size > 0) {
  console.error(`build: imports missing from packages/cli/package.json dependencies:\n  ${[...missing].join("\n  ")}`)
  process.exit(1)
}
console.log(`build: ${dist}`)
