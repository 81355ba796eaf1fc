/**
 * Prints the "Permissions by route" table (docs/permissions.md) from the operation catalogue:
 *   pnpm -s permissions   (node --import tsx packages/http/src/permission-table.ts)
 * A test (packages/http/test/openapi.test.ts) checks docs/permissions.md holds exactly this table.
 */
import { operations } from "@inbox/core"

export const permissionTable = (): string =>
  [
    "| method | path | permission | MCP tool |",
    "|---|---|---|---|",
    ...operations.flatMap((op) =>
      op.routes.map((r) => {
        const scopes = op.access.kind === "member" ? r.scopes ?? op.access.scopes : undefined
        const permission = op.access.kind === "member"
          ? `\`${op.access.permission}\`${scopes === undefined ? "" : ` (${scopes.join(" or ")} keys)`}`
          : op.access.kind === "operator"
          ? "operator"
          : op.access.kind === "session"
          ? `dashboard session${op.access.session === "optional" ? " (optional)" : ""}`
          : "none"
        return `| ${r.method} | \`${r.path}\` | ${permission} | ${"tool" in op.mcp ? `\`${op.mcp.tool}\`` : "-"} |`
      })
    )
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) console.log(permissionTable())
