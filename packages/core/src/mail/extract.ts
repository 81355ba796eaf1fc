/**
 * Reply extraction: `extracted_text` and `extracted_html` of a message are what its sender
 * wrote, without the quoted history under (or around) it. Both bodies go through one
 * decision procedure (`extract-plan.ts`) over markers shared by every client we know
 * (`extract-markers.ts`); the HTML path (`extract-html.ts`) adds each client's quote
 * markup. The function is pure, synchronous and linear in the body size.
 *
 * Rules:
 * - History starts at the first of: an attribution line above a quote ("On <date>, <name>
 *   wrote:" in English, German, French, Spanish, Portuguese, Italian, Dutch, Russian,
 *   Polish, Swedish, Japanese, Chinese; wrapped over up to three lines), a `>` quote, a
 *   separator ("-----Original Message-----", "---------- Forwarded message ---------",
 *   "Begin forwarded message:", localised), an Outlook header block ("From:/Sent:/To:/
 *   Subject:", localised, with or without the underscore rule above it), or a client's
 *   quote markup (gmail_quote, blockquote type=cite, moz-cite-prefix, yahoo_quoted,
 *   Outlook's divRplyFwdMsg / appendonsend / top-border divider). Everything from there on
 *   goes, including anything after an Outlook divider.
 * - Forwards: the sender's note above the forwarded block is the new content; the
 *   forwarded block is history. A forward without a note extracts to "".
 * - Quote only: a message with nothing but quoted history extracts to "" (there is no new
 *   content; repeating the quote would present old text as new).
 * - Bottom-posting: when all new text sits below the quote, the quote and its attribution
 *   above it go and the text below is the reply.
 * - Inline replies (new text both between and after quotes): the quotes between answers
 *   are the questions being answered and stay; the attribution and the quoted tail after
 *   the last answer go.
 * - Kept as the sender's: signatures ("-- "), mobile footers ("Sent from my iPhone").
 * - Text: line ends become "\n"; leading blank lines and trailing whitespace are trimmed.
 *   HTML: the kept markup is the source's, byte for byte, minus removed nodes; blank
 *   markup left at the edges (empty paragraphs, `<br>`, rules) is trimmed; a body with no
 *   quote at all is returned unchanged.
 * - Each output is present exactly when the matching input is.
 */
import { normaliseLine } from "./extract-markers.ts"
import { extractHtml } from "./extract-html.ts"
import { planReply, type Item } from "./extract-plan.ts"

/** A `>` line, allowing the little indentation some clients put before the marker. */
const isQuotedLine = (line: string): boolean => {
  let i = 0
  while (i < 3 && (line[i] === " " || line[i] === "\t")) i++
  return line[i] === ">"
}

const quoteDepth = (markers: string): number => {
  let depth = 0
  for (const c of markers) if (c === ">") depth++
  return depth
}

const extractText = (text: string): string => {
  const lines = text.split(/\r\n|\r|\n/)
  const items: Array<Item> = lines.map((line) => {
    if (isQuotedLine(line)) {
      const markers = /^[\s>]+/.exec(line)?.[0] ?? ""
      const quoted = normaliseLine(line.slice(markers.length))
      return { kind: "quote", text: quoted, content: quoted !== "", depth: quoteDepth(markers) }
    }
    const normalised = normaliseLine(line)
    return { kind: "line", text: normalised, content: normalised !== "" && !/^[-_=*]{5,}$/.test(normalised) }
  })
  const plan = planReply(items)
  const kept: Array<string> = []
  for (let k = 0; k < plan.cutAt; k++) {
    const line = lines[k]
    if (line !== undefined && !plan.drop.has(k)) kept.push(line)
  }
  let first = 0
  while (first < kept.length && (kept[first] ?? "").trim() === "") first++
  return kept.slice(first).join("\n").trimEnd()
}

export const extractReply = (input: { text?: string; html?: string }): { text?: string; html?: string } => ({
  ...(input.text === undefined ? {} : { text: extractText(input.text) }),
  ...(input.html === undefined ? {} : { html: extractHtml(input.html) })
})
