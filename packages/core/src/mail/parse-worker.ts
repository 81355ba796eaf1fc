/**
 * Entry point of a parsing worker thread (see parse.ts): receives `{ id, raw }`, answers
 * `{ id, outcome }` with attachment bytes transferred, not copied. One job at a time; the
 * pool replaces the whole thread when a job times out or the thread dies, which is the only
 * way to stop synchronous work that has gone on too long.
 */
import { parentPort, workerData } from "node:worker_threads"
import { defaultLimits, type ParseLimits, parseRaw } from "./parse-core.ts"

const limits: ParseLimits = { ...defaultLimits, ...(workerData as Partial<ParseLimits> | null) }

parentPort?.postMessage({ ready: true })

parentPort?.on("message", (job: { readonly id: number; readonly raw: Uint8Array }) => {
  void parseRaw(job.raw, limits).then((outcome) => {
    const transfer = outcome.ok
      ? outcome.result.attachments.flatMap((a) => (a.content.buffer instanceof ArrayBuffer ? [a.content.buffer] : []))
      : []
    parentPort?.postMessage({ id: job.id, outcome }, transfer)
  })
})
