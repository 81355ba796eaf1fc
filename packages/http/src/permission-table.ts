/**
 * The "Permissions by route" table of docs/permissions.md, from the operation catalogue.
 * `pnpm docs` writes it (scripts/docs.ts); packages/cli/test/docs.test.ts fails when the
 * page holds another table.
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

