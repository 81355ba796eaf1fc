/**
 * An in-process harness for the whole HTTP app: requests go through the real router,
 * middleware and operations as web Requests, with no port. The engine comes from the
 * surrounding layer, so a test can also reach its services (the captured outbox, say).
 */
import { type EngineServices } from "@inbox/core/internal"
import { AppRoutes, fromWeb, makeDirectPath } from "@inbox/http"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { buildMail, type TestMail } from "./mail-builder.ts"
import { TEST_HOST } from "./engine.ts"

export interface TestResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  readonly body: any
}

export interface RequestOptions {
  /** API key sent as `Authorization: Bearer`. */
  readonly key?: string
  /** JSON-encoded with Content-Type: application/json. */
  readonly json?: unknown
  /** Sent as is (bytes too, for bodies that are not valid text). */
  readonly body?: string | Uint8Array<ArrayBuffer>
  readonly headers?: Record<string, string>
}

export class TestApp extends Context.Service<TestApp, {
  request(method: string, path: string, options?: RequestOptions): Effect.Effect<TestResponse>
  /** The raw web handler, for clients that speak fetch (the MCP SDK's HTTP transport). */
  readonly fetch: (request: Request) => Promise<Response>
}>()("testkit/TestApp") {
  static readonly layer = Layer.effect(TestApp, Effect.gen(function*() {
    const context = yield* Effect.context<EngineServices>()
    const { handler, dispose } = HttpRouter.toWebHandler(
      AppRoutes.pipe(Layer.provide(HttpServer.layerServices)),
      { disableLogger: true }
    )
    yield* Effect.addFinalizer(() => Effect.promise(dispose))
    // As Node's server does: the direct path first (direct.ts), the router app for the rest.
    const direct = yield* makeDirectPath
    const fetch = async (request: Request) => {
      const answer = direct.answerWeb(fromWeb(request))
      if (answer === undefined) return handler(request, context as never)
      const { status, headers, body } = await answer
      return new Response(body ?? null, { status, headers })
    }
    return TestApp.of({
      fetch,
      request: (method, path, options = {}) =>
        Effect.promise(async () => {
          const headers: Record<string, string> = { ...options.headers }
          if (options.key !== undefined) headers["authorization"] = `Bearer ${options.key}`
          let body: string | Uint8Array<ArrayBuffer> | undefined = options.body
          if (options.json !== undefined) {
            body = JSON.stringify(options.json)
            headers["content-type"] ??= "application/json"
          }
          const response = await fetch(new Request(`http://${TEST_HOST}${path}`, { method, headers, ...(body === undefined ? {} : { body }) }))
          const text = await response.text()
          let parsed: unknown
          try {
            parsed = text === "" ? undefined : JSON.parse(text)
          } catch {
            parsed = undefined
          }
          return { status: response.status, headers: response.headers, text, body: parsed }
        })
    })
  }))
}

/** The inbound secret the testkit's tests configure (engineLayer settings `inboundSecret`). */
export const TEST_INBOUND_SECRET = "forwarder-secret"

/** POST /inbound/raw as the operator's forwarder does, with a message built by `buildMail`. */
export const deliverMail = (
  to: string | ReadonlyArray<string>,
  mail: TestMail = {},
  headers: Record<string, string> = {}
) =>
  Effect.gen(function*() {
    const app = yield* TestApp
    const raw = yield* Effect.promise(() => buildMail({ to, ...mail }))
    return yield* app.request("POST", `/inbound/raw?to=${encodeURIComponent(typeof to === "string" ? to : to.join(","))}`, {
      body: Buffer.from(raw).toString("latin1"),
      headers: { "x-inbound-secret": TEST_INBOUND_SECRET, "content-type": "message/rfc822", ...headers }
    })
  })
