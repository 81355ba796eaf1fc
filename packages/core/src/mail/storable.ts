/**
 * Text that PostgreSQL can hold, from text that mail carries. Real mail holds code points
 * no text or jsonb column takes: a NUL (a raw byte in a body, `=00` in quoted-printable, a
 * base64 part) and, from an encoded word or a body in a UTF-16 charset, a lone surrogate
 * (jsonb refuses its `\ud800` escape; in a text column Node's UTF-8 encoding would turn it
 * into U+FFFD anyway). Either failed the whole transaction, so the message could never be
 * stored and its sender retried for days. Each becomes U+FFFD, as a reader of the bytes
 * would show it; the raw message is stored as it came, byte for byte.
 *
 * Pure and erasable TypeScript: it runs in the parsing worker too (parse-core.ts).
 */

/** `text` with each NUL and lone surrogate replaced by U+FFFD; `text` itself when it has none. */
export const storableText = (text: string): string =>
  // two native scans (memchr, and a check that is free on one-byte strings) before any copy
  text.includes("\0") || !text.isWellFormed() ? text.toWellFormed().replaceAll("\0", "\uFFFD") : text

/**
 * `value` with every string in it, object keys included, made storable (storableText);
 * arrays and plain objects are copied only where something changed, anything else (numbers,
 * byte arrays) is kept as it is. For the parsed model, a few levels deep, not for input of
 * unbounded depth.
 */
export const storable = <A>(value: A): A => {
  if (typeof value === "string") return storableText(value) as A
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return value
  if (Array.isArray(value)) {
    let copy: Array<unknown> | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const clean = storable(item)
      if (clean !== item) (copy ??= value.slice())[i] = clean
    }
    return (copy ?? value) as A
  }
  let copy: Record<string, unknown> | undefined
  for (const [key, item] of Object.entries(value)) {
    const cleanKey = storableText(key)
    const clean = storable(item)
    if (cleanKey === key && clean === item) continue
    const into: Record<string, unknown> = copy ??= { ...(value as Record<string, unknown>) }
    if (cleanKey !== key) delete into[key]
    into[cleanKey] = clean
  }
  return (copy ?? value) as A
}
