/**
 * The packages as an app outside the repository gets them: tarballs installed with plain npm
 * (third-party dependencies from the registry, as for any user), and Node versions other
 * than the one running the tests, from the npm registry too (the node-<platform>-<arch>
 * packages ship the binary, as scripts/env.sh uses for Node 24), kept in the repository's
 * .tools folder so a second run needs no download.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const TOOLS = fileURLToPath(new URL("../../../.tools/", import.meta.url))

export interface Exited {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command` to its end (10 minutes at most); never rejects. */
export const runToEnd = (command: string, args: ReadonlyArray<string>, options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {}): Promise<Exited> =>
  new Promise((resolve) => {
    execFile(command, args, { ...options, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1
      resolve({ code, stdout, stderr: error !== null && stderr === "" ? error.message : stderr })
    })
  })

/** What a registry answering wrongly or not at all looks like in npm's output. */
const REGISTRY_HICCUP = /ETARGET|notarget|ECONNRESET|ETIMEDOUT|EAI_AGAIN|E5\d\d|E429/

/**
 * `npm install ARGS` in `cwd`, twice more when the registry answered wrongly. npm resolves
 * the dependencies' own ranges from the registry, whose metadata is not always consistent:
 * a CI run failed with `notarget` for a version served twenty minutes earlier and again a
 * minute later. A failure of ours (a missing file, a broken manifest) fails every attempt.
 */
export const npmInstall = async (cwd: string, args: ReadonlyArray<string>): Promise<Exited> => {
  const common = ["install", "--no-audit", "--no-fund", "--loglevel=error"]
  let installed = await runToEnd("npm", [...common, ...args], { cwd })
  for (let retry = 0; retry < 2 && installed.code !== 0 && REGISTRY_HICCUP.test(installed.stderr); retry++) {
    await new Promise((resolve) => setTimeout(resolve, 5_000))
    installed = await runToEnd("npm", [...common, "--prefer-online", ...args], { cwd })
  }
  return installed
}

/** The `node` binary of `version` (e.g. "22.19.0"), installed from the npm registry on first use. */
export const nodeFromRegistry = async (version: string): Promise<string> => {
  const dir = join(TOOLS, `node-${version}`)
  const pkg = `node-${process.platform}-${process.arch}`
  const binary = join(dir, "node_modules", pkg, "bin", "node")
  if (existsSync(binary)) return binary
  mkdirSync(dir, { recursive: true })
  const installed = await npmInstall(dir, ["--prefix", dir, "--no-save", `${pkg}@${version}`])
  if (installed.code !== 0) throw new Error(`installing Node ${version} (${pkg}) from the npm registry failed: ${installed.stderr}`)
  return binary
}
