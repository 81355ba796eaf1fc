/**
 * @inbox/mcp: the Model Context Protocol face of the engine. The tools are derived from
 * core's operation catalogue (tools.ts), the protocol answers JSON-RPC messages whatever
 * carries them (protocol.ts), and stdio.ts carries them over a process's stdin and stdout.
 * The HTTP endpoint POST /mcp lives in packages/http and calls `handlePayload`.
 */
export * from "./protocol.ts"
export * from "./stdio.ts"
export * from "./toolkit.ts"
export * from "./tools.ts"
