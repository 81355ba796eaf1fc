/**
 * How inboxctl shows answers to a human: aligned tables for lists, aligned "field value"
 * lines for one resource, and errors as `error: <code>: <message>` (then `fix: ...`) on
 * stderr. `--json` bypasses all of this and prints the operation's JSON as the API would.
 */
import { writeOut } from "./ambient.ts"
import { Effect } from "effect"
import { type ApiError, errorBody, PERMISSIONS } from "@inbox/core"

type Json = { readonly [key: string]: unknown }

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** A key's permissions (an object of every permission name to whether it is granted): the granted names. */
const grantedPermissions = (value: Json): ReadonlyArray<string> | undefined => {
  const names = Object.keys(value)
  return names.length > 0 && names.every((name) => typeof value[name] === "boolean" && (PERMISSIONS as ReadonlyArray<string>).includes(name))
    ? names.filter((name) => value[name] === true)
    : undefined
}

/** One cell: objects as `k=v` pairs, lists comma-joined; a key with every permission reads "all", its others the granted names. */
export const cell = (value: unknown): string => {
  if (value === undefined || value === null) return "-"
  const granted = isRecord(value) ? grantedPermissions(value) : undefined
  if (granted !== undefined) return cell(granted)
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

const BARS = "▁▂▃▄▅▆▇█"

/**
 * One sparkline: each value scaled between the series' own min and max (a flat series is a
 * flat low line); `null` (a rate with nothing sent) is a blank, not a zero, so a gap reads
 * as "no data" rather than "0 %".
 */
export const sparkline = (values: ReadonlyArray<number | null>): string => {
  const known = values.filter((v): v is number => v !== null)
  const min = Math.min(...known)
  const span = Math.max(...known) - min
  return values.map((v) =>
    v === null ? " " : BARS[span === 0 ? 0 : Math.round(((v - min) / span) * (BARS.length - 1))]
  ).join("")
}

type Point = { readonly timestamp: string; readonly value?: number; readonly rate?: number | null; readonly sent?: number }

/** A metrics body `{ <series>: [{ timestamp, value | rate, ... }] }` (usage and rates answers). */
export const isSeries = (body: unknown): body is Record<string, ReadonlyArray<Point>> =>
  isRecord(body) && Object.keys(body).length > 0 && Object.values(body).every((points) =>
    Array.isArray(points) && points.every((p) => isRecord(p) && typeof p["timestamp"] === "string")
  )

const number = (n: number) => Number.isInteger(n) ? String(n) : n.toFixed(4).replace(/0+$/, "")

/**
 * Metrics series as one line each: name, sparkline, last value, min and max, then the window.
 * Usage plots `value`; rates plot `rate` and add the recipients sent over the window.
 */
export const seriesLines = (body: Record<string, ReadonlyArray<Point>>): string => {
  const rows = Object.entries(body).map(([name, points]) => {
    const values = points.map((p) => p.value ?? p.rate ?? null)
    const known = values.filter((v): v is number => v !== null)
    const last = values.findLast((v) => v !== null)
    const sent = points.some((p) => p.sent !== undefined) ? points.reduce((sum, p) => sum + (p.sent ?? 0), 0) : undefined
    return {
      series: name,
      trend: known.length === 0 ? "(no data)" : sparkline(values),
      last: last === undefined || last === null ? undefined : number(last),
      min: known.length === 0 ? undefined : number(Math.min(...known)),
      max: known.length === 0 ? undefined : number(Math.max(...known)),
      ...(sent === undefined ? {} : { sent })
    }
  })
  const columns = ["series", "trend", "last", "min", "max", ...(rows.some((r) => "sent" in r) ? ["sent"] : [])]
  const points = Object.values(body)[0] ?? []
  const window = points.length === 0 ? "" : `\n${points.length} buckets from ${points[0]?.timestamp} to ${points[points.length - 1]?.timestamp}`
  return table(rows, columns) + window
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
export const print = (text: string) => Effect.sync(() => writeOut(`${text}\n`))
