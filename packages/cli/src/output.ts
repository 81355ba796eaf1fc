/**
 * How inboxctl shows answers to a human: aligned tables for lists, aligned "field value"
 * lines for one resource, and errors as `error: <code>: <message>` (then `fix: ...`) on
 * stderr. `--json` bypasses all of this and prints the operation's JSON as the API would.
 */
import { Effect } from "effect"
import { type ApiError, errorBody, PERMISSIONS } from "@inbox/core"

type Json = { readonly [key: string]: unknown }

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** One cell: objects as `k=v` pairs, lists comma-joined; a key with every permission reads "all". */
export const cell = (value: unknown): string => {
  if (value === undefined || value === null) return "-"
  if (Array.isArray(value)) {
    return value.length === PERMISSIONS.length && PERMISSIONS.every((p) => value.includes(p)) ? "all" : value.map(cell).join(",")
  }
  if (isRecord(value)) return Object.entries(value).map(([k, v]) => `${k}=${cell(v)}`).join(" ") || "-"
  return String(value)
}

export const table = (rows: ReadonlyArray<Json>, columns: ReadonlyArray<string>): string => {
  const cells = [columns.map((c) => c.toUpperCase()), ...rows.map((row) => columns.map((c) => cell(row[c])))]
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)))
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ")).join("\n")
}

export const fields = (value: Json): string => {
  const width = Math.max(0, ...Object.keys(value).map((k) => k.length))
  return Object.entries(value).map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join("\n")
}

/** A list body `{ count, limit, next_page_token?, <plural>: [] }` as a table and a paging hint. */
export const listing = (body: Json, columns: ReadonlyArray<string>, noun: string): string => {
  const items = Object.values(body).find(Array.isArray) as ReadonlyArray<Json> | undefined ?? []
  if (items.length === 0) return `No ${noun}.`
  const next = typeof body["next_page_token"] === "string" ? `\nMore: --page-token ${body["next_page_token"]}` : ""
  return table(items, columns) + next
}

export const errorLines = (error: ApiError): string => {
  const body = errorBody(error)
  const issues = (body.errors ?? []).flatMap((issue) =>
    isRecord(issue) && Array.isArray(issue["path"]) && issue["path"].length > 0 && (body.errors?.length ?? 0) > 1
      ? [`  ${issue["path"].join(".")}: ${String(issue["message"])}`]
      : []
  )
  return [`error: ${body.code}: ${body.message}`, ...issues, ...(body.fix === undefined ? [] : [`fix: ${body.fix}`])].join("\n")
}

export const json = (value: unknown): string => JSON.stringify(value, null, 2)

/** One line on stdout. */
export const print = (text: string) => Effect.sync(() => void process.stdout.write(`${text}\n`))
