/** @inbox/testkit: test ports, storages, and the in-process app harness. */
export * from "./database.ts"
export * from "./transport.ts"
export * from "./ids.ts"
export * from "./engine.ts"
export * from "./app.ts"
export * from "./fixtures.ts"
export * from "./smtp.ts"
export * from "./contracts/mail-transport.ts"
