/**
 * format=flowed bodies (RFC 3676) decoded: soft line breaks joined, space-stuffing undone.
 * mailparser would decode them with libmime's `decodeFlowed`, which runs a soft-broken quote
 * into the reply under it and repeats the quote marks of joined lines; parse-core.ts takes
 * flowed parts away from it and decodes their text here instead. Ours rather than a patch
 * of libmime, because a patch applies only in this workspace, not to the copy npm installs
 * with the published package.
 *
 * Pure and synchronous: it runs in the parsing worker (erasable TypeScript only).
 */

/**
 * `text` unwrapped. A line's quote depth is the number of ">" it starts with; one space after
 * them (or at the start of an unquoted line) is stuffing and goes (4.4). A line ending in a
 * space is soft unless it is the signature separator "-- " (4.3), and it joins the next line
 * only when that line has the same quote depth (4.5: a change of depth ends the paragraph, so
 * a quote is never run into the reply under it). The quote marks of a joined line go with its
 * stuffing; the paragraph is written with its own marks. With `delSp` (DelSp=yes) the space
 * that made a line soft goes too. Pieces are joined once per paragraph, which keeps long
 * soft-wrapped bodies linear.
 */
export const decodeFlowed = (text: string, delSp: boolean): string => {
  const result: Array<string> = []
  let depth = -1
  let parts: Array<string> = []
  let soft = false
  const flush = () => {
    if (depth < 0) return
    const joined = parts.join("")
    result.push(depth > 0 ? ">".repeat(depth) + (joined.length > 0 ? " " + joined : "") : joined)
  }
  for (const line of text.split(/\r?\n/)) {
    let lineDepth = 0
    while (lineDepth < line.length && line.charCodeAt(lineDepth) === 0x3e) lineDepth++
    let content = line.slice(lineDepth)
    if (content.startsWith(" ")) content = content.slice(1)
    const lineSoft = content.endsWith(" ") && content !== "-- "
    if (!(soft && lineDepth === depth)) {
      flush()
      depth = lineDepth
      parts = []
    }
    const piece = lineSoft && delSp ? content.slice(0, -1) : content
    if (piece.length > 0) parts.push(piece)
    soft = lineSoft
  }
  // the line break that ends the body opens no paragraph
  if (depth > 0 || parts.length > 0) flush()
  return result.join("\n")
}
