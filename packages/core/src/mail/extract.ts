/**
 * Reply extraction: `extracted_text` and `extracted_html` of a message are what its sender
 * wrote, without the quoted history under (or around) it. Both bodies go through one
 * decision procedure (`extract-plan.ts`) over markers shared by every client we know
 * (`extract-markers.ts`); the HTML path (`extract-html.ts`) adds each client's quote
 * markup. The function is pure, synchronous and linear in the body size. The golden
 * corpus in packages/testkit/fixtures/mail/replies shows each rule on real client output.
 *
 * Where the history starts, whichever comes first:
 * - a quote: `>` lines; gmail_quote, blockquote type=cite (Apple Mail, Thunderbird,
 *   Roundcube), yahoo_quoted, protonmail_quote; a plain blockquote right under an
 *   attribution;
 * - its attribution right above it: "On <date>, <name> wrote:" in English, German,
 *   French, Spanish, Portuguese, Italian, Dutch, Russian, Polish, Swedish, Czech,
 *   Turkish, Japanese, Chinese, Korean, Hebrew and Arabic (bidi marks ignored), Lotus
 *   Notes' "wrote on <date>:", mutt's "* <name> [<date>]:", also wrapped over up to three
 *   lines (Gmail breaks a long one inside the sender's "<address>" too), also quoted as
 *   the quote's first line (Apple Mail), plus gmail_attr and moz-cite-prefix. An
 *   attribution naming a date or an address ends the reply even with no `>` quote under
 *   it (Yahoo's text part);
 * - a separator: "-----Original Message-----", "---------- Forwarded message ---------",
 *   "-------- Forwarded Message --------", "Begin forwarded message:", localised; a
 *   ticketing system's "Please type your reply above this line" (with the rule above it);
 * - a mail header block: From and at least two of Sent/Date, To, Cc, Subject on
 *   consecutive lines, in any order (Outlook's From/Sent/To/Subject, Hotmail's
 *   Date/Subject/From/To; localised: Von/Gesendet/An/Betreff, De/Envoyé/À/Objet, ...), with
 *   an address in From or Outlook's "Sent:" (so a memo typed into a body is not one), with
 *   the rule above it (Hotmail's `<hr>` divider is one);
 * - Outlook's HTML dividers: divRplyFwdMsg, appendonsend, the reference-message container
 *   of Outlook mobile, the top-bordered div holding the header, moz-forward-container,
 *   old Hotmail's hr#stopSpelling.
 *   Everything after a divider or separator is history, whatever its markup.
 *
 * What is kept:
 * - Top-posting: the text above the quote and its attribution.
 * - Bottom-posting (all new text below the quote): the text below; the quote and its
 *   attribution go.
 * - Inline replies (new text between quotes and after them): the quotes between answers
 *   are the questions being answered and stay; attributions and the quoted tail after
 *   the last answer go.
 * - Forwards: the sender's note above the forwarded block; the block is history.
 * - Signatures ("-- ") and mobile footers ("Sent from my iPhone", "Von meinem iPhone
 *   gesendet", "Sent from Outlook for Android") are the sender's and stay, in every
 *   language; a signature under the last quote stays and the quote above it goes. Under
 *   a reply that sits above one quote, a signature without "-- " (Apple Mail's) is known
 *   by naming the sender: its first line, or the line under a short sign-off, is the From
 *   display name or a part of it. Text under the quote that does not is an answer.
 * - A new message (no In-Reply-To, no References) keeps its unattributed `>` lines: a
 *   quotation, not history. A Mailman digest ("Today's Topics:") is kept whole.
 * - A message with nothing new (only a quote, a forward without a note) extracts to "":
 *   repeating the history would present old text as new.
 *
 * Form of the output: each field is present exactly when its input is. Text: line ends
 * become "\n", leading blank lines and trailing whitespace go. HTML: the kept markup is
 * the source's byte for byte minus removed nodes, so it nests as the source did; blank
 * markup left at the edges (empty paragraphs, `<br>`, rules) is trimmed as blank lines
 * are, and so is a wrapper a removed span left empty (Gmail's `<div><br></div>` between
 * the quote and a signature below it); a body in which nothing is quoted comes back
 * unchanged.
 */
import { isRule, normaliseLine } from "./extract-markers.ts"
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

/** A Mailman digest's table of contents: the messages below it are the content, each
 * with its own headers and quotes, and none is history of the digest. */
const isDigest = (lines: ReadonlyArray<string>): boolean => {
  for (let k = 0; k < lines.length && k < 40; k++) if (lines[k]?.trim() === "Today's Topics:") return true
  return false
}

/** Zero-width marks (which normaliseLine drops, so that "-\u200b-" reads as "--") and the
 * first word of "above this line", in any case. */
const hiddenOrAbove = /[\u200b\u200e\u200f\ufeff\u202a-\u202e\u2066-\u2069]|above/i

/** Whether a text body can hold no history: every marker the plan looks for, in a line as
 * normaliseLine leaves it, has a `>` (a quote), a colon (attributions, header blocks,
 * forward openers; "：" too), two dashes ("-----Original Message-----") or "above this
 * line". Normalising drops zero-width marks and collapses whitespace, so a body holding
 * a mark or "above" in any case is read in full. Most new messages pass with four native
 * searches and one regex over the body, and skip a line-by-line reading. */
const cannotHoldHistory = (text: string): boolean =>
  !text.includes(">") && !text.includes(":") && !text.includes("：") && !text.includes("--") && !hiddenOrAbove.test(text)

/** The lines of a body, split at CRLF, CR or LF. mailparser has already turned CRLF into
 * LF in text parts, and a split at a string is native work, cheaper than the regex split
 * on the reply corpus's text bodies. */
const linesOf = (text: string): Array<string> => (text.includes("\r") ? text.split(/\r\n|\r|\n/) : text.split("\n"))

/** The reply of a text body, and whether anything in it was history. */
export const extractText = (text: string, reply: boolean, sender?: string): { readonly text: string; readonly history: boolean } =>
  cannotHoldHistory(text) ? { text: keptLines(linesOf(text)), history: false } : planText(text, reply, sender)

/** extractText reading every line: what it gives whenever the body can hold history.
 * Exported for the test that the shortcut above changes no answer. */
export const planText = (text: string, reply: boolean, sender?: string): { readonly text: string; readonly history: boolean } => {
  const lines = linesOf(text)
  if (isDigest(lines)) return { text: keptLines(lines), history: false }
  // pushed, not mapped: the HTML path pushes its items too, and an array from `map` may
  // have another elements kind (holey), which the planner's optimised code then meets as
  // a second hidden class and deoptimises on
  const items: Array<Item> = []
  for (const line of lines) {
    if (isQuotedLine(line)) {
      const markers = /^[\s>]+/.exec(line)?.[0] ?? ""
      const quoted = normaliseLine(line.slice(markers.length))
      items.push({ kind: "quote", text: quoted, content: quoted !== "", depth: quoteDepth(markers) })
    } else {
      const normalised = normaliseLine(line)
      items.push({ kind: "line", text: normalised, content: normalised !== "" && !isRule(normalised), depth: 0 })
    }
  }
  const plan = planReply(items, reply, sender)
  const kept: Array<string> = []
  for (let k = 0; k < plan.cutAt; k++) {
    const line = lines[k]
    if (line !== undefined && !plan.drop.has(k)) kept.push(line)
  }
  return { text: keptLines(kept), history: plan.cutAt < items.length || plan.drop.size > 0 }
}

/** Lines joined, without the blank lines at the start and the whitespace at the end. */
const keptLines = (lines: ReadonlyArray<string>): string => {
  let first = 0
  while (first < lines.length && (lines[first] ?? "").trim() === "") first++
  return lines.slice(first).join("\n").trimEnd()
}

/** Any client's quote markup: an HTML body without it can only hold history as text
 * (attributions, separators, header blocks), which its text alternative holds too.
 * Spelled as the clients write it rather than with the `i` flag (V8 scans case-folded
 * alternations slowly). Each marker is matched from a rare character in it (`<`, `_`,
 * `-`, a capital), the rest looked behind: V8 tries the alternation only where one of
 * those first characters stands, where "gmail_|moz-cite|..." tried it at nearly every
 * letter of the body (a large share of `toResult` on the 32 KB HTML benchmark message,
 * several times slower than this form). */
const quoteMarkup =
  /<(?:blockquote|BLOCKQUOTE)|(?<=gmail)_|(?<=[dD]iv)RplyFwdMsg|(?<=appendon)send|(?<=reference)-message|(?<=moz)-(?:cite|forward)|(?<=yahoo)_quoted|(?<=protonmail)_quote|(?<=freshdesk)_quote|(?<=border)-top|(?<=BORDER)-TOP|(?<=stop)Spelling|(?<=Outlook)MessageHeader/

/**
 * The two bodies of a message are alternatives carrying the same words. When the text
 * holds no history and the HTML no quote markup, the HTML holds no history either, and is
 * kept as it is without being read (most new messages: the tokenizer is most of the cost
 * of extraction). `sameWords` says the text is the HTML's alternative (or was derived from
 * it); a text from another part of the message decides nothing about the HTML.
 * `sender` is the From display name, which a signature below the quote names.
 */
export const extractReply = (
  input: { text?: string; html?: string; sameWords?: boolean; reply?: boolean; sender?: string }
): { text?: string; html?: string } => {
  const reply = input.reply ?? true
  const text = input.text === undefined ? undefined : extractText(input.text, reply, input.sender)
  const html = input.html === undefined
    ? undefined
    : input.sameWords === true && text !== undefined && !text.history && !quoteMarkup.test(input.html)
    ? input.html
    : extractHtml(input.html, input.sender)
  return {
    ...(text === undefined ? {} : { text: text.text }),
    ...(html === undefined ? {} : { html })
  }
}
