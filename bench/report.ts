/**
 * Writing figures to BENCHMARKS.md: one section per benchmark, replaced on each run, with
 * the machine named; sections of other benchmarks are kept.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"

const FILE = new URL("../BENCHMARKS.md", import.meta.url)

export const machine = () =>
  `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`

/** Replaces (or appends) the section that starts with `## title`. */
export const writeSection = (title: string, body: string) => {
  const current = existsSync(FILE)
    ? readFileSync(FILE, "utf8")
    : "# Benchmarks\n\nWritten by `pnpm bench`; figures are as measured, on the machine named in each section.\n"
  const section = `## ${title}\n\n${body.trim()}\n`
  const pattern = new RegExp(`## ${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n[\\s\\S]*?(?=\\n## |$)`)
  const next = pattern.test(current) ? current.replace(pattern, section) : `${current.trimEnd()}\n\n${section}`
  writeFileSync(FILE, next.endsWith("\n") ? next : `${next}\n`)
}
