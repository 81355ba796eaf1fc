/**
 * The signed POST both webhook references send (bench/reference-webhooks.ts, the bare one;
 * bench/reference-webhooks-durable.ts): Standard Webhooks headers (HMAC-SHA256 over
 * `id.timestamp.body`, keyed by the decoded `whsec_` secret) over keep-alive connections.
 */
import { createHmac } from "node:crypto"
import { Agent, request } from "node:http"

/**
 * `post(body, id)` to `url`: a request that fails on the wire (a kept-alive connection the
 * receiver closed while idle, which Node's server does after 5 s) is sent again at once, as
 * a sender that must not lose the event would: counted as lost, it left the benchmark
 * waiting for ever.
 */
export const signedPoster = (url: URL, whsec: string) => {
  const secret = Buffer.from(whsec.replace(/^whsec_/, ""), "base64")
  const agent = new Agent({ keepAlive: true })
  const attempt = (body: string, id: string) =>
    new Promise<boolean>((resolve) => {
      const timestamp = Math.floor(Date.now() / 1000).toString()
      const signature = `v1,${createHmac("sha256", secret).update(`${id}.${timestamp}.`).update(body).digest("base64")}`
      const req = request(url, {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body).toString(),
          "webhook-id": id,
          "webhook-timestamp": timestamp,
          "webhook-signature": signature
        }
      }, (res) => {
        res.resume()
        res.on("end", () => resolve((res.statusCode ?? 500) < 300))
        res.on("error", () => resolve(false))
      })
      req.on("error", () => resolve(false))
      req.end(body)
    })
  return async (body: string, id: string): Promise<void> => {
    while (!(await attempt(body, id)));
  }
}
