/**
 * The decision of reply extraction, made once for both body forms. The text path and the
 * HTML path each describe their body as a sequence of items (logical lines, quoted blocks,
 * attributions, structural dividers); `planReply` says which items are the sender's new
 * content. Keeping one decision procedure is what makes `extracted_text` and
 * `extracted_html` of the same message agree.
 */
import {
  attributionStrength,
  headerKind,
  isRuleLike,
  isSeparator,
  normaliseLine,
  type AttributionStrength,
  type HeaderKind
} from "./extract-markers.ts"

export type ItemKind =
  /** a logical line of the body; `text` is normalised for matching */
  | "line"
  /** quoted history: a `>` line (`text` is its content without the markers), a
   * blockquote, a quote container */
  | "quote"
  /** an element that is an attribution by construction (gmail_attr, moz-cite-prefix) */
  | "attr"
  /** an element after which everything is history (Outlook's reply divider) */
  | "cut"

export interface Item {
  readonly kind: ItemKind
  readonly text: string
  /** visible new content: non-blank text or an image; rules and blank lines are not */
  readonly content: boolean
  /** of a `>` line: how many markers it has; 0 for every other item (read only of `>`
   * lines). Present on every item, in this order of keys at every place that makes one:
   * items of one shape keep the planner's code on one hidden class, where the two shapes
   * with and without it deoptimised it again and again while a process warmed up */
  readonly depth: number
}

export interface Plan {
  /** items at or after this index are history */
  readonly cutAt: number
  /** items before `cutAt` that are dropped too (attributions, a leading quote) */
  readonly drop: ReadonlySet<number>
}

/** Attribution lines are sometimes wrapped (Gmail breaks before "wrote:"). */
const MAX_WRAP = 3

const joined = (items: ReadonlyArray<Item>, from: number, to: number, kind: ItemKind): string | undefined => {
  const parts: Array<string> = []
  for (let k = from; k <= to; k++) {
    const item = items[k]
    if (item === undefined || item.kind !== kind || item.text === "") return undefined
    parts.push(item.text)
  }
  return parts.join(" ")
}

const endsWithColon = (text: string): boolean => text.endsWith(":") || text.endsWith("：")

const rank = { weak: 0, strong: 1, led: 2 } as const

/** Whether a line ends inside "<...>": Gmail's plain text breaks a long attribution there
 * ("<date>, <name> <" over "name@example.org>:"), and the rest of the address on the next
 * line starts no attribution of its own. */
const endsInsideAddress = (text: string): boolean => text.lastIndexOf("<") > text.lastIndexOf(">")

/** The attribution span starting at `i`, preferring the shortest wrap. A match over
 * several lines without a lead word ("On", "Am", ...) yields to one at least as strong
 * that starts a line later, so that "Thanks!" above "<name> 写道：" stays with the reply;
 * a weaker tail does not take over ("<name> <address>, <date> tarihinde" wrapped above
 * "şunu yazdı:" is one attribution, not prose above a bare verb), nor does a tail that
 * starts inside an address broken over two lines ("<name> <" above
 * "name@example.org> napisał:"). */
const attributionAt = (
  items: ReadonlyArray<Item>,
  i: number,
  kind: ItemKind = "line"
): { readonly end: number; readonly strength: AttributionStrength } | undefined => {
  for (let k = 0; k < MAX_WRAP; k++) {
    // Items i..i+k-1 passed on earlier rounds; the span is over at the first one that does
    // not continue it. An attribution ends with a colon, so a span whose last line does
    // not is no match, and is not joined: this runs for every line of every body.
    const last = items[i + k]
    if (last === undefined || last.kind !== kind || last.text === "") return undefined
    if (!endsWithColon(last.text)) continue
    const text = joined(items, i, i + k, kind)
    if (text === undefined) return undefined
    const strength = attributionStrength(text)
    if (strength === undefined) continue
    if (k > 0 && strength !== "led") {
      for (let s = i + 1; s <= i + k; s++) {
        // a line that starts inside the address broken over the line above continues it
        if (endsInsideAddress(items[s - 1]?.text ?? "")) continue
        for (let e = s; e <= i + k; e++) {
          const later = joined(items, s, e, kind)
          const laterStrength = later === undefined ? undefined : attributionStrength(later)
          if (laterStrength !== undefined && rank[laterStrength] >= rank[strength]) return undefined
        }
      }
    }
    return { end: i + k, strength }
  }
  return undefined
}

/** A quoted attribution heads its own quote (Apple Mail) only when the quote under it is
 * at its depth; "> On ... wrote:" above ">>" lines is quoted content of the quote. */
const sameDepthFollows = (items: ReadonlyArray<Item>, start: number, end: number): boolean => {
  const depth = items[start]?.depth
  for (let j = end + 1; j < items.length; j++) {
    const item = items[j]
    if (item === undefined || item.kind !== "quote") return false
    if (item.text !== "") return item.depth === depth
  }
  return false
}

const nextNonBlank = (items: ReadonlyArray<Item>, from: number): number => {
  let j = from
  while (j < items.length) {
    const item = items[j]
    if (item === undefined || item.kind !== "line" || item.text !== "") break
    j++
  }
  return j
}

/** The header key of each line, classified once. By index, null for "no key": every line
 * is probed at least once, so a Map cost more than the classification it saved. */
interface HeaderKinds {
  readonly items: ReadonlyArray<Item>
  readonly known: Array<HeaderKind | null | undefined>
}

/** A plain function rather than a closure made in each plan, so that V8 can inline it
 * into its callers (a closure new with each body is a new call target each time). */
const kindAt = (kinds: HeaderKinds, k: number): HeaderKind | undefined => {
  let kind = kinds.known[k]
  if (kind === undefined) {
    const item = kinds.items[k]
    kind = (item !== undefined && item.kind === "line" ? headerKind(item.text) : undefined) ?? null
    kinds.known[k] = kind
  }
  return kind ?? undefined
}

/** A mail header block: consecutive lines with at least three keys of from, sent/date,
 * to, cc and subject, From and a date or Subject among them, in whatever order the client
 * writes them (Outlook: From, Sent, To, Subject; Hotmail: Date, Subject, From, To;
 * Thunderbird's forward table: Subject, Date, From, To), wrapped values of long To: lists
 * allowed; and either an address in From or Outlook's "Sent:". The last rule keeps a memo typed into a
 * body ("From: HR / To: All staff / Date: ...") from being taken for history. */
const isHeaderBlockAt = (items: ReadonlyArray<Item>, i: number, headerKinds: HeaderKinds): boolean => {
  const first = items[i]
  // most lines have no header key: one cached lookup says so
  if (first === undefined || first.kind !== "line" || kindAt(headerKinds, i) === undefined) return false
  const kinds = new Set<HeaderKind>()
  let fromAt = -1
  let continuation = 0
  for (let j = i; j < items.length && j < i + 16; j++) {
    const item = items[j]
    if (item === undefined || item.kind !== "line" || item.text === "") break
    const kind = kindAt(headerKinds, j)
    if (kind !== undefined) {
      kinds.add(kind)
      if (kind === "from" && fromAt < 0) fromAt = j
      continuation = 0
    } else if (continuation < 2) {
      continuation++
    } else {
      break
    }
  }
  if (fromAt < 0) return false
  const dated = kinds.has("sent") || kinds.has("date") || kinds.has("subject")
  return dated && kinds.size >= 3 && (kinds.has("sent") || (items[fromAt]?.text.includes("@") ?? false))
}

/** `reply`: the message answers another (it has In-Reply-To or References). A new message
 * holds history only behind a marker (an attribution, a separator, a header block, a
 * client's quote container or divider): its unattributed `>` lines are quotations the
 * sender wrote. (Client quote containers in HTML are markers: clients write them only
 * when replying or forwarding.) */
export const planReply = (items: ReadonlyArray<Item>, reply = true, sender?: string): Plan => {
  const attributionLines = new Set<number>()
  const hardCut = historyStart(items, attributionLines)
  return planAround(items, reply, hardCut, attributionLines, sender)
}

/** Where the history starts for certain (a divider, a separator, a header block, an
 * attribution that needs no quote under it), or items.length; records in
 * `attributionLines` the attributions right above a quote. A function of its own, apart
 * from what planAround does once per body: as one function the two took V8's optimizing
 * compiler longer to compile than both apart (single-threaded, as the first messages of a
 * process are parsed). */
const historyStart = (items: ReadonlyArray<Item>, attributionLines: Set<number>): number => {
  let hardCut = items.length
  // Each line is looked at by up to 16 header-block probes; classify it once.
  const kinds: HeaderKinds = { items, known: new Array<HeaderKind | null | undefined>(items.length) }

  for (let i = 0; i < items.length; i++) {
    const item = items[i]
    if (item === undefined) break
    if (item.kind === "cut") {
      hardCut = i
      break
    }
    if (item.kind === "quote") {
      // Apple Mail and iOS quote the attribution with the message: the first line(s) of
      // a quote block may be one, which an inline reply must not keep as a question.
      if (items[i - 1]?.kind === "quote") continue
      const quoted = attributionAt(items, i, "quote")
      if (quoted === undefined || !sameDepthFollows(items, i, quoted.end)) continue
      for (let k = i; k <= quoted.end; k++) attributionLines.add(k)
      i = quoted.end
      continue
    }
    if (item.kind !== "line" || item.text === "") continue
    const text = item.text
    if (isSeparator(text)) {
      // the rule drawn above a separator ("—-—-—-—" over Jira's line) belongs to it
      hardCut = i
      while (hardCut > 0 && items[hardCut - 1]?.kind === "line" && items[hardCut - 1]?.content === false) hardCut--
      break
    }
    if (isRuleLike(text) && isHeaderBlockAt(items, nextNonBlank(items, i + 1), kinds)) {
      hardCut = i
      break
    }
    if (isHeaderBlockAt(items, i, kinds)) {
      hardCut = i
      break
    }
    const attribution = attributionAt(items, i)
    if (attribution !== undefined) {
      const after = items[nextNonBlank(items, attribution.end + 1)]
      if (after !== undefined && after.kind === "quote") {
        for (let k = i; k <= attribution.end; k++) attributionLines.add(k)
        i = attribution.end
        continue
      }
      // Clients that do not prefix the old message (Yahoo, Outlook's plain text) leave
      // only the attribution to say where it starts.
      if (attribution.strength !== "weak") {
        hardCut = i
        break
      }
    }
  }
  return hardCut
}

/** The plan from the history's start and the attributions found above quotes. */
const planAround = (
  items: ReadonlyArray<Item>,
  reply: boolean,
  hardCut: number,
  attributionLines: ReadonlySet<number>,
  sender: string | undefined
): Plan => {
  const isAttribution = (k: number): boolean => attributionLines.has(k) || items[k]?.kind === "attr"
  if (!reply && hardCut === items.length && attributionLines.size === 0 && !items.some((item) => item.kind === "attr")) {
    return { cutAt: hardCut, drop: new Set() }
  }
  let firstQuote = -1
  let lastQuote = -1
  for (let k = 0; k < hardCut; k++) {
    if (items[k]?.kind !== "quote") continue
    if (firstQuote < 0) firstQuote = k
    lastQuote = k
  }
  // A signature under the last quote (Thunderbird's "signature below the quote", mutt) is
  // the sender's: it stays, but it is not an answer that would keep the quote above it.
  let signature = -1
  for (let k = lastQuote + 1; firstQuote >= 0 && k < hardCut; k++) {
    const item = items[k]
    if (item?.kind === "line" && item.text === "--") {
      signature = k
      break
    }
  }
  if (signature < 0 && firstQuote >= 0 && sender !== undefined) {
    signature = namedSignature(items, isAttribution, { firstQuote, lastQuote, hardCut }, sender)
  }
  const contentEnd = signature < 0 ? hardCut : signature
  let firstContent = -1
  let lastContent = -1
  for (let k = 0; k < contentEnd; k++) {
    const item = items[k]
    if (item !== undefined && item.kind === "line" && item.content && !isAttribution(k)) {
      if (firstContent < 0) firstContent = k
      lastContent = k
    }
  }
  const plan = shape(items, hardCut, isAttribution, attributionLines, { firstQuote, lastQuote, firstContent, lastContent })
  if (signature < 0 || signature < plan.cutAt || firstContent < 0) return plan
  const drop = new Set(plan.drop)
  for (let k = plan.cutAt; k < signature; k++) drop.add(k)
  return { cutAt: hardCut, drop }
}

/** The plan from where the quotes and the new content lie: top-posting, bottom-posting or
 * inline answers. */
const shape = (
  items: ReadonlyArray<Item>,
  hardCut: number,
  isAttribution: (k: number) => boolean,
  attributionLines: ReadonlySet<number>,
  at: { readonly firstQuote: number; readonly lastQuote: number; readonly firstContent: number; readonly lastContent: number }
): Plan => {
  const { firstQuote, lastQuote, firstContent, lastContent } = at

  const drop = new Set<number>()
  if (firstQuote < 0) {
    // Attributions with nothing quoted after them cannot exist here (they are only
    // recorded above a quote); a structural attribution alone is still history.
    for (let k = 0; k < hardCut; k++) if (isAttribution(k)) drop.add(k)
    return { cutAt: hardCut, drop }
  }

  if (lastContent < firstQuote) {
    // Top-posting (or nothing new at all): the history starts at the quote's attribution.
    let start = firstQuote
    for (let k = firstQuote - 1; k >= 0; k--) {
      const item = items[k]
      if (item === undefined) break
      if (isAttribution(k)) start = k
      else if (!(item.kind === "line" && !item.content)) break
    }
    for (let k = 0; k < start; k++) if (isAttribution(k)) drop.add(k)
    return { cutAt: start, drop }
  }

  if (firstContent > lastQuote) {
    // Bottom-posting: the old message sits above the reply and goes as a whole.
    for (let k = 0; k <= lastQuote; k++) drop.add(k)
    for (let k = lastQuote + 1; k < hardCut; k++) if (isAttribution(k)) drop.add(k)
    return { cutAt: hardCut, drop }
  }

  // Interleaved: the quotes between the answers are the questions being answered, so they
  // stay; attributions and the quoted tail below the last answer go.
  let cutAt = hardCut
  for (let k = lastContent + 1; k < hardCut; k++) {
    const item = items[k]
    if (item !== undefined && (item.kind === "quote" || isAttribution(k))) {
      cutAt = k
      break
    }
  }
  for (let k = 0; k < cutAt; k++) {
    if (!isAttribution(k)) continue
    drop.add(k)
    // The blank line that separated the attribution from its quote goes with it.
    for (let j = k + 1; j < cutAt && isBlank(items[j]) && !attributionLines.has(j); j++) drop.add(j)
  }
  return { cutAt, drop }
}

/** A blank line, or a `>` line with nothing in it (the one under a quoted attribution). */
const isBlank = (item: Item | undefined): boolean =>
  item !== undefined && (item.kind === "line" || item.kind === "quote") && item.text === "" && !item.content

/** The sender's display name, as the signature test compares it: normalised, lower-cased,
 * and its words of two characters or more ("Jane", "Doe"; a CJK name is one word). */
interface Sender {
  readonly name: string
  readonly words: ReadonlyArray<string>
}

const senderOf = (displayName: string): Sender | undefined => {
  const name = withoutEndPunctuation(normaliseLine(displayName.replace(/["“”]/g, "")).toLowerCase())
  if (name.length < 2 || name.length > 80) return undefined
  return { name, words: name.split(" ").map(withoutEndPunctuation).filter((w) => w.length >= 2) }
}

const endPunctuation = /[\s,.;:!?،，。！、]+$/

const withoutEndPunctuation = (text: string): string => text.replace(endPunctuation, "")

/** A line that is the sender's name, a word of it ("Jane" for Jane Doe), its start ("佐藤"
 * for 佐藤花子), or the name followed by more ("이서연 드림", "Jane Doe | Facilities"). */
const namesSender = (text: string, sender: Sender): boolean => {
  if (text.length > sender.name.length + 40) return false
  const line = withoutEndPunctuation(text.toLowerCase())
  if (line.length < 2) return false
  return line === sender.name || line.startsWith(`${sender.name} `) || sender.words.includes(line) ||
    (sender.words.length === 1 && sender.name.startsWith(line))
}

/** A sign-off above the name ("Thanks,", "Viele Grüße", "よろしくお願いいたします。"):
 * a line of at most three words. */
const isShortLine = (text: string): boolean => {
  if (text.length > 32) return false
  let spaces = 0
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 32) spaces++
  return spaces <= 2
}

/**
 * A signature under the quote that has no "-- " line above it (Apple Mail and others place
 * the signature there when asked to): the first new line under the quote, or the line
 * under a short sign-off there, names the sender. Only where the reply sits above the
 * quote and the quote is one block: an inline reply's last answer stays an answer.
 * Returns the signature's first line, or -1.
 */
const namedSignature = (
  items: ReadonlyArray<Item>,
  isAttribution: (k: number) => boolean,
  at: { readonly firstQuote: number; readonly lastQuote: number; readonly hardCut: number },
  senderName: string
): number => {
  const isNew = (k: number): boolean => {
    const item = items[k]
    return item !== undefined && item.kind === "line" && item.content && !isAttribution(k)
  }
  let above = false
  for (let k = 0; k < at.firstQuote && !above; k++) above = isNew(k)
  if (!above) return -1
  for (let k = at.firstQuote + 1; k < at.lastQuote; k++) if (isNew(k)) return -1
  let first = at.lastQuote + 1
  while (first < at.hardCut && !isNew(first)) first++
  const head = items[first]
  if (first >= at.hardCut || head === undefined) return -1
  // read only here: most replies have nothing under their quote
  const sender = senderOf(senderName)
  if (sender === undefined) return -1
  if (namesSender(head.text, sender)) return first
  const next = items[first + 1]
  return first + 1 < at.hardCut && next !== undefined && isNew(first + 1) && isShortLine(head.text) && namesSender(next.text, sender)
    ? first
    : -1
}
