/** @inbox/http: the REST API, /mcp and /health over the engine. */
export { AppRoutes } from "./app.ts"
export { BackgroundLive, launchServer, launchServerWith, runServerMain, ServerLive } from "./server.ts"
export { LoggingLive } from "./observe.ts"
export { RequestId } from "./context.ts"
export { layerNodeServer, makeNodeServer, NODE_SERVER_DEFAULTS, type NodeServerOptions } from "./node.ts"
export { type DirectPath, makeDirectPath, type WireAnswer } from "./direct.ts"
export { makeDirectWebSocket } from "./websocket.ts"
export { fromWeb } from "./wire.ts"
