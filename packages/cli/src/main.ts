/**
 * inboxctl entry point: parse the command line and start the chosen command. Commander's
 * own errors (unknown flag, missing argument) exit 2; help and --version exit 0; a
 * command sets its own exit code when it finishes (runtime.ts). Only commander and the
 * command tree load here (program.ts); a command loads the engine if it runs it.
 */
import { CommanderError } from "commander"
import { buildProgram } from "./program.ts"

try {
  await buildProgram().parseAsync(process.argv)
} catch (error) {
  if (!(error instanceof CommanderError)) throw error
  process.exit(error.exitCode === 0 ? 0 : 2)
}
