/**
 * A `fetch` that keeps what went over the wire, for tests of HTTP clients we do not own
 * (the `agentmail` SDK): each exchange's method, URL, status and body (JSON when it parses,
 * else the text), so a test checks the request forms a client sends as well as its answers.
 */

export interface Exchange {
  readonly method: string
  readonly url: URL
  readonly status: number
  readonly body: unknown
}

export const recordingFetch = (): { readonly fetch: typeof fetch; readonly exchanges: Array<Exchange> } => {
  const exchanges: Array<Exchange> = []
  const recording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    const text = await response.clone().text()
    let body: unknown = text
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      // not JSON: kept as text
    }
    const url = new URL(input instanceof Request ? input.url : String(input))
    exchanges.push({ method: init?.method ?? (input instanceof Request ? input.method : "GET"), url, status: response.status, body })
    return response
  }
  return { fetch: recording, exchanges }
}
