/** @inbox/http: the REST API, /mcp and /health over the engine. */
export { AppRoutes } from "./app.ts"
export { launchServer, runServerMain, ServerLive } from "./server.ts"
export { RequestId } from "./context.ts"
