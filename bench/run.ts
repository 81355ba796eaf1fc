/**
 * `pnpm bench`: runs every benchmark and writes the figures, with the date and machine, to
 * BENCHMARKS.md (one section per benchmark; sections written by other scripts are kept).
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { benchHttp } from "./http.ts"

const FILE = "BENCHMARKS.md"

export const machine = () =>
  `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`

/** Replaces (or appends) the section that starts with `## title`. */
export const writeSection = (title: string, body: string) => {
  const current = existsSync(FILE) ? readFileSync(FILE, "utf8") : "# Benchmarks\n\nWritten by `pnpm bench`; figures are as measured, on the machine named in each section.\n"
  const section = `## ${title}\n\n${body.trim()}\n`
  const pattern = new RegExp(`## ${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n[\\s\\S]*?(?=\\n## |$)`)
  const next = pattern.test(current) ? current.replace(pattern, section) : `${current.trimEnd()}\n\n${section}`
  writeFileSync(FILE, next.endsWith("\n") ? next : `${next}\n`)
}

const main = async () => {
  const only = process.argv.slice(2)
  if (only.length === 0 || only.includes("http")) {
    const figures = await benchHttp()
    const rows = figures.map((f) => `| ${f.storage} | ${f.route} | ${f.rps.toLocaleString("en-US")} | ${f.p50} | ${f.p99} | ${f.errors} |`)
    const body = [
      `Measured ${new Date().toISOString().slice(0, 10)} on ${machine()}.`,
      `autocannon, ${process.env["BENCH_CONNECTIONS"] ?? "20"} connections, ${process.env["BENCH_SECONDS"] ?? "10"} s per route, server in its own process on the same machine; creates spread over 40 tenants on the Scale plan.`,
      `Goal for GET on PostgreSQL: at least 5,000 req/s with p99 under 10 ms.`,
      "",
      "| storage | route | req/s | p50 ms | p99 ms | errors + non-2xx |",
      "|---|---|---:|---:|---:|---:|",
      ...rows
    ].join("\n")
    console.log(body)
    writeSection("HTTP: inboxes", body)
  }
  if ((only.length === 0 || only.includes("parse")) && existsSync("bench/parse.ts")) {
    execFileSync(process.execPath, ["--import", "tsx", "bench/parse.ts", "--write"], { stdio: "inherit" })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
