/**
 * `inboxctl domains verify ID --wait [--timeout S]`: after the check the command asks for,
 * checks again every few seconds and shows each DNS record's status (on stderr, one block
 * per check) until the domain is VERIFIED (exit 0) or the timeout passes (exit 1, naming
 * the records still missing or wrong). Every check is the catalogue's `domains.verify`, so
 * the rules are core's; this file only repeats and prints. (The options are resources.ts'.)
 */
import { type Credential, Engine } from "@inbox/core"
import { Clock, Effect } from "effect"
import { writeErr, writeOut } from "./ambient.ts"
import { DEFAULT_WAIT_TIMEOUT_SECONDS, type Invocation, WAIT_INTERVAL_SECONDS } from "./resources.ts"
import { authenticate, CLI_CONTEXT, CliError, withEngine } from "./runtime.ts"

interface Shown {
  readonly status: string
  readonly reason?: string | null
  readonly records: ReadonlyArray<{ readonly type: string; readonly name: string; readonly status: string }>
}

const block = (domain: Shown) =>
  [`${domain.status}${domain.reason === undefined || domain.reason === null ? "" : ` (${domain.reason})`}`,
    ...domain.records.map((r) => `  ${r.status.padEnd(8)} ${r.type.padEnd(5)} ${r.name}`)].join("\n")

export const verifyWait = ({ params, extra }: Invocation, key: string | undefined) =>
  extra["wait"] !== true ? Effect.void : withEngine(Effect.gen(function*() {
    const engine = yield* Engine
    const caller: Credential = key === undefined ? { kind: "anonymous" } : { kind: "principal", principal: yield* authenticate(key) }
    const domain_id = params["domain_id"] ?? ""
    const pod_id = params["pod_id"]
    const where = { domain_id, ...(pod_id === undefined ? {} : { pod_id }) }
    const timeoutMs = (typeof extra["timeout"] === "number" ? extra["timeout"] : DEFAULT_WAIT_TIMEOUT_SECONDS) * 1000
    const started = yield* Clock.currentTimeMillis
    for (;;) {
      const domain: Shown = yield* engine.call("domains.get", where, caller, CLI_CONTEXT)
      writeErr(`${block(domain)}\n`)
      if (domain.status === "VERIFIED") {
        writeOut(`Verified: ${domain_id}.\n`)
        return
      }
      if ((yield* Clock.currentTimeMillis) - started + WAIT_INTERVAL_SECONDS * 1000 > timeoutMs) {
        const waiting = domain.records.filter((r) => r.status !== "VALID").map((r) => `${r.type} ${r.name} (${r.status})`)
        return yield* new CliError({ code: "timeout", message: `${domain_id} is still ${domain.status}; not yet valid: ${waiting.join(", ")}.` })
      }
      yield* Effect.sleep(`${WAIT_INTERVAL_SECONDS} seconds`)
      yield* engine.call("domains.verify", where, caller, CLI_CONTEXT)
    }
  }))
