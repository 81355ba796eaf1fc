/**
 * The typed API client: openapi-fetch over the types openapi-typescript made from our OpenAPI
 * document (generated/api.d.ts, written by scripts/build.ts from the catalogue). A path, a
 * parameter or a field the API no longer has fails the type check, not the page. It sends
 * the session cookie, and the CSRF token on every request that changes something; a GET the
 * first load started early (early.ts) is taken instead of asking again.
 */
import createClient from "openapi-fetch"
import { session } from "./dom.js"
import { takeEarly } from "./early.ts"
import type { components, operations, paths } from "./generated/api.js"

export type { components, operations, paths }

/** The body of an operation's success answer. */
export type Answer<Op extends keyof operations> = operations[Op]["responses"] extends { 200: { content: { "application/json": infer A } } } ? A : never

/** The spec's error body. */
export type ErrorBody = components["schemas"]["Error"]

export const client = createClient<paths>({
  baseUrl: location.origin,
  credentials: "same-origin",
  fetch: (request: Request) => (request.method === "GET" ? takeEarly(request.url) : undefined) ?? fetch(request)
})

client.use({
  onRequest: ({ request }) => {
    const token = (session.me as { csrf_token?: string } | null)?.csrf_token
    if (request.method !== "GET" && token) request.headers.set("x-csrf-token", token)
    return request
  }
})

/**
 * A failed answer as the Error the pages' forms expect (dom.js `form` and `fieldProblem` read
 * `body` and `status`): thrown, so a page's data is typed as the success answer only.
 */
export const ok = <T>(answer: { data?: T; error?: unknown; response: Response }): T => {
  if (answer.data !== undefined && answer.response.ok) return answer.data
  const body = (answer.error ?? {}) as Partial<ErrorBody>
  throw Object.assign(new Error(body.message ?? answer.response.statusText), { body, status: answer.response.status })
}
