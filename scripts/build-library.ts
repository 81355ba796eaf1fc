/**
 * The build of a library package (@inbox/core, @inbox/http, @inbox/mcp, @inbox/mailserver),
 * called by each package's build.ts, which says what it builds and why it is bundled;
 * `pnpm -r build` and `pnpm pack` (prepack) run those. In the workspace the packages run from
 * their TypeScript source; a published package runs what this writes to its dist/:
 *
 * - JavaScript: esbuild bundles each entry point into one ES module (source map beside it,
 *   Node 22 syntax); code two entries share goes to a chunk beside them, so each class and
 *   service tag of the package exists once. Every package import stays external: third-party
 *   packages (npm installs them with the tarball), the other @inbox packages, and Effect,
 *   which must be the same instance in the app and the engine (an app passes Effects and
 *   Layers across). Each must be a dependency or peer dependency in the package.json, or the
 *   build fails: a tarball can never install without one of its imports. A dependency that
 *   nothing imports fails it too, so the tarball names only real dependencies.
 * - Type declarations: TypeScript's own emit, `tsc -p tsconfig.build.json`, one `.d.ts` per
 *   source module the entries reach.
 * - Files the code reads at run time relative to its own URL (SQL migrations, the dashboard),
 *   copied where the bundled code looks: beside it, since the bundle and its chunks sit at
 *   the top of dist/.
 */
import { build, type Plugin } from "esbuild"
import { execFileSync } from "node:child_process"
import { cpSync, readFileSync, rmSync } from "node:fs"
import { createRequire, isBuiltin } from "node:module"
import { dirname, join } from "node:path"

export interface LibraryBuild {
  /** the package's folder */
  readonly dir: string
  /** output name (without .js) to source file, relative to the package's folder */
  readonly entries: Readonly<Record<string, string>>
  /** source folder to folder in dist/, both relative */
  readonly copy?: Readonly<Record<string, string>>
  /** dependencies the code finds by path at run time rather than importing them */
  readonly located?: ReadonlyArray<string>
}

/** The package name of a bare import (`@scope/name/sub` → `@scope/name`). */
const packageOf = (path: string) => path.split("/").slice(0, path.startsWith("@") ? 2 : 1).join("/")

const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc")

export const buildLibrary = async ({ copy = {}, dir, entries, located = [] }: LibraryBuild): Promise<void> => {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    readonly name: string
    readonly dependencies?: Record<string, string>
    readonly peerDependencies?: Record<string, string>
  }
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
  const missing = new Set<string>()
  const imported = new Set(located)
  const externals: Plugin = {
    name: "externals",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { path: args.path, external: true }
        const name = packageOf(args.path)
        imported.add(name)
        if (!declared.has(name)) missing.add(`${name} (imported by ${args.importer})`)
        return { path: args.path, external: true }
      })
    }
  }

  const dist = join(dir, "dist")
  rmSync(dist, { recursive: true, force: true })
  await build({
    entryPoints: Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, join(dir, file)])),
    outdir: dist,
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node22",
    sourcemap: true,
    plugins: [externals],
    logLevel: "warning"
  })
  if (missing.size > 0) {
    throw new Error(`${manifest.name}: imports missing from package.json dependencies:\n  ${[...missing].join("\n  ")}`)
  }
  const unused = Object.keys(manifest.dependencies ?? {}).filter((name) => !imported.has(name))
  if (unused.length > 0) throw new Error(`${manifest.name}: dependencies nothing imports: ${unused.join(", ")}`)
  execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.build.json")], { cwd: dir, stdio: "inherit" })
  for (const [from, to] of Object.entries(copy)) cpSync(join(dir, from), join(dist, to), { recursive: true })
  console.log(`build: ${manifest.name} in ${dist}`)
}
