/**
 * Preloaded into a server (with --expose-gc) by a benchmark that reads its memory: SIGUSR2
 * runs a full garbage collection, so a reading shows what the server holds, not how far its
 * heap had grown since the last collection (bench/imap.ts, before and after its idle
 * connections open).
 */
process.on("SIGUSR2", () => globalThis.gc?.({ type: "major", execution: "sync" }))
