/**
 * Every operation of the catalogue is reachable three ways, or says why it is not: a REST
 * route (always), an MCP tool, and an inboxctl command. A new operation cannot be forgotten
 * in one adapter: its entry must name its tool and command, or the reason it has none.
 */
import { assert, describe, it } from "@effect/vitest"
import { operations } from "@inbox/core/internal"
import { ALIASES, toolCatalogue } from "@inbox/mcp"
import type { Command } from "commander"
import { buildProgram } from "../src/program.ts"

const commandPaths = (command: Command, prefix: ReadonlyArray<string> = []): ReadonlyArray<string> =>
  command.commands.flatMap((c) => [[...prefix, c.name()].join(" "), ...commandPaths(c, [...prefix, c.name()])])

describe("the catalogue in every adapter", () => {
  it("every operation is an MCP tool or names why it is not", () => {
    // The toolkit's alias names (agent_verify for verify_human) serve the same operations.
    const tools = new Map(toolCatalogue.filter((t) => !(t.tool.name in ALIASES)).map((t) => [t.operation.name, t.tool.name]))
    for (const op of operations) {
      if ("tool" in op.mcp) assert.strictEqual(tools.get(op.name), op.mcp.tool, op.name)
      else assert.isAbove(op.mcp.exclude.length, 10, `${op.name} says why it is not a tool`)
    }
    assert.strictEqual(tools.size, operations.filter((op) => "tool" in op.mcp).length)
  })

  it("every operation is an inboxctl command or names why it is not", () => {
    const commands = new Set(commandPaths(buildProgram()))
    for (const op of operations) {
      if ("command" in op.cli) assert.isTrue(commands.has(op.cli.command), `${op.name}: inboxctl ${op.cli.command}`)
      else assert.isAbove(op.cli.exclude.length, 10, `${op.name} says why it is not a command`)
    }
  })

  it("read-only MCP sessions see exactly the operations that change nothing", () => {
    for (const t of toolCatalogue) assert.strictEqual(t.tool.annotations.readOnlyHint, !t.operation.mutates, t.tool.name)
  })
})
