/**
 * Preloaded into a server by bench/counts.ts (`--import ./bench/heap-sampler.mjs`): the first
 * SIGUSR2 starts V8's sampling heap profiler keeping the objects the garbage collector has
 * already freed (so it counts every byte allocated, not what survives), the second stops it
 * and writes the profile to HEAP_SAMPLE_FILE, then prints `HEAP_SAMPLE_WRITTEN`; a third starts
 * it again (bench/counts-smtp.ts samples one message size after another).
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"

const session = new Session()
session.connect()
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (e, r) => e ? reject(e) : resolve(r)))
let sampling = false
process.on("SIGUSR2", async () => {
  if (!sampling) {
    sampling = true
    await post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
    process.stdout.write("HEAP_SAMPLE_STARTED\n")
    return
  }
  sampling = false
  const { profile } = await post("HeapProfiler.stopSampling", {})
  writeFileSync(process.env["HEAP_SAMPLE_FILE"], JSON.stringify(profile))
  process.stdout.write("HEAP_SAMPLE_WRITTEN\n")
})
