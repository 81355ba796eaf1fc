// Loaded with `node --import` before inboxctl: writes the URL of every module the process
// resolves to the file named by INBOXCTL_IMPORTS_FILE when it exits (tests: what a command loads).
import { appendFileSync } from "node:fs"
import { registerHooks } from "node:module"

const file = process.env.INBOXCTL_IMPORTS_FILE
const seen = new Set()
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context)
    seen.add(result.url)
    return result
  }
})
process.on("exit", () => {
  if (file !== undefined) appendFileSync(file, [...seen].join("\n") + "\n")
})
