/**
 * The HTML path of reply extraction. The body is read by htmlparser2's tokenizer (entities
 * decoded by `entities`) into a tree whose nodes keep their source text (tags as spans of
 * the body), so whatever is not removed is serialised back byte for byte: the kept part is
 * the sender's own markup, not a re-rendering. The tree is walked in document order into
 * the items `planReply` decides on (quote containers of each client, Outlook's reply
 * dividers, and logical lines for the text markers), and the plan is applied by marking
 * nodes removed.
 *
 * Everything is linear in the input: nesting is capped (deeper start tags open no further
 * level, which no mail client needs and which keeps every recursion shallow), and the
 * blank/content test is memoised per node.
 */
import { decodeHTML } from "entities"
import { Tokenizer } from "htmlparser2"

type TokenizerCallbacks = ConstructorParameters<typeof Tokenizer>[1]
import { attributionStrength, headerKind, normaliseLine } from "./extract-markers.ts"
import { planReply, type Item, type ItemKind } from "./extract-plan.ts"

interface TextNode {
  readonly type: "text"
  readonly raw: string
  parent: ElementNode
  index: number
  removed: boolean
}

/** Comments, doctypes, conditional comments, stray end tags: kept verbatim, never content. */
interface OtherNode {
  readonly type: "other"
  readonly raw: string
  parent: ElementNode
  index: number
  removed: boolean
}

/** Tags are kept as spans of the source, not as strings: most are never serialised. */
interface ElementNode {
  readonly type: "element"
  readonly name: string
  /** the start tag as written: html[from, to) */
  readonly from: number
  readonly to: number
  /** VOID, BLOCK, ... of `name` */
  readonly flags: number
  /** the attributes the markers look at */
  readonly markup: MarkupAttributes
  /** the end tag as written, html[endFrom, endTo); endFrom -1 when the source left it implied */
  endFrom: number
  endTo: number
  readonly children: Array<Node>
  parent: ElementNode | undefined
  index: number
  removed: boolean
}

type Node = TextNode | OtherNode | ElementNode

const MAX_DEPTH = 256

const voidElements = new Set([
  "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
  "basefont", "bgsound", "frame", "keygen"
])
const closesParagraph = new Set([
  "address", "article", "aside", "blockquote", "div", "dl", "fieldset", "footer", "form", "h1", "h2", "h3", "h4",
  "h5", "h6", "header", "hr", "menu", "nav", "ol", "p", "pre", "section", "table", "ul"
])
/** Elements that end a logical line, as a renderer would break it. */
const blockElements = new Set([
  ...closesParagraph, "body", "html", "li", "tr", "dt", "dd", "center", "tbody", "thead", "tfoot", "caption",
  "main", "figure", "figcaption", "details", "summary"
])
const invisibleElements = new Set(["head", "style", "script", "title", "meta", "link", "template", "xml", "noscript"])
const contentElements = new Set(["img", "video", "audio", "object", "embed", "iframe", "svg", "canvas", "input"])

// The sets above as bits, looked up once per start tag: the tokenizer and the walk ask
// up to seven of these questions of every element.
const VOID = 1
const CLOSES_P = 4
const BLOCK = 8
const INVISIBLE = 16
const CONTENT = 32
const elementFlags: ReadonlyMap<string, number> = (() => {
  const flags = new Map<string, number>()
  const add = (names: ReadonlySet<string>, flag: number): void => {
    for (const name of names) flags.set(name, (flags.get(name) ?? 0) | flag)
  }
  add(voidElements, VOID)
  add(closesParagraph, CLOSES_P)
  add(blockElements, BLOCK)
  add(invisibleElements, INVISIBLE)
  add(contentElements, CONTENT)
  return flags
})()

/** The parse's state: the tree so far and the elements still open. */
interface TreeBuilder {
  readonly root: ElementNode
  readonly stack: Array<ElementNode>
  /** open `pre` and `listing` elements, inside which a newline is a line break */
  preDepth: number
}

const element = (name: string, from: number, to: number, markup: MarkupAttributes): ElementNode => ({
  type: "element", name, from, to, flags: elementFlags.get(name) ?? 0, markup, endFrom: -1, endTo: -1,
  children: [], parent: undefined, index: 0, removed: false
})

const top = (b: TreeBuilder): ElementNode => b.stack[b.stack.length - 1] ?? b.root

const append = (b: TreeBuilder, node: Node): void => {
  const parent = top(b)
  node.parent = parent
  node.index = parent.children.length
  parent.children.push(node)
}

const appendText = (b: TreeBuilder, raw: string): void => {
  if (raw === "") return
  if (b.preDepth === 0 || !raw.includes("\n")) {
    append(b, { type: "text", raw, parent: b.root, index: 0, removed: false })
    return
  }
  // Inside <pre> a newline is a line break; one text node per line lets a cut fall there.
  let from = 0
  while (from < raw.length) {
    const nl = raw.indexOf("\n", from)
    const to = nl < 0 ? raw.length : nl + 1
    append(b, { type: "text", raw: raw.slice(from, to), parent: b.root, index: 0, removed: false })
    from = to
  }
}

const appendOther = (b: TreeBuilder, raw: string): void =>
  append(b, { type: "other", raw, parent: b.root, index: 0, removed: false })

const popTo = (b: TreeBuilder, depth: number): void => {
  while (b.stack.length > depth) {
    const el = b.stack.pop()
    if (el !== undefined && (el.name === "pre" || el.name === "listing")) b.preDepth--
  }
}

/** Index of the nearest open `name` above any of `stops`, or -1. */
const openIndex = (b: TreeBuilder, names: ReadonlyArray<string>, stops: ReadonlyArray<string>): number => {
  for (let k = b.stack.length - 1; k > 0; k--) {
    const name = b.stack[k]?.name ?? ""
    if (names.includes(name)) return k
    if (stops.includes(name)) return -1
  }
  return -1
}

const startTag = (b: TreeBuilder, el: ElementNode, selfClosing: boolean): void => {
  const name = el.name
  if ((el.flags & CLOSES_P) !== 0 && top(b).name === "p") popTo(b, b.stack.length - 1)
  let implied = -1
  if (name === "li") implied = openIndex(b, ["li"], ["ul", "ol", "div", "td", "blockquote"])
  else if (name === "dt" || name === "dd") implied = openIndex(b, ["dt", "dd"], ["dl", "div"])
  else if (name === "td" || name === "th") implied = openIndex(b, ["td", "th"], ["tr", "table"])
  else if (name === "tr") implied = openIndex(b, ["tr"], ["table", "tbody", "thead", "tfoot"])
  else if (name === "option") implied = openIndex(b, ["option"], ["select"])
  if (implied > 0) popTo(b, implied)
  append(b, el)
  if ((el.flags & VOID) !== 0 || selfClosing || b.stack.length > MAX_DEPTH) return
  b.stack.push(el)
  if (name === "pre" || name === "listing") b.preDepth++
}

/** The end tag html[from, to): closes the nearest open `name`, or is kept as written. */
const endTag = (b: TreeBuilder, html: string, from: number, to: number, name: string): void => {
  for (let k = b.stack.length - 1; k > 0; k--) {
    const el = b.stack[k]
    if (el !== undefined && el.name === name) {
      el.endFrom = from
      el.endTo = to
      popTo(b, k)
      return
    }
  }
  appendOther(b, html.slice(from, to))
}

/** Reads the body with htmlparser2's tokenizer, whose source offsets give each tag's
 * span; the tree is built here, with the implied closes mail needs and a nesting cap
 * (htmlparser2's own tree builder is quadratic in nesting depth). Entities are left
 * undecoded so text stays as written. What no event covers (comments, doctypes, stray
 * end tags) is kept as an `other` node from the gap between events, so serialising the
 * tree gives back every byte. */
const parse = (html: string): ElementNode => {
  const reader = new TreeReader(html)
  const tokenizer = new Tokenizer({ decodeEntities: false }, reader)
  tokenizer.write(html)
  tokenizer.end()
  reader.catchUp(html.length, html.length)
  return reader.b.root
}

/** The tokenizer's callbacks, as methods of one class rather than closures made for each
 * body: the tokenizer then calls the same functions on every body, which V8 can inline
 * into its states, where closures new with each body were a new call target each time
 * (deoptimising the tokenizer's optimised code once it had met one). */
class TreeReader implements TokenizerCallbacks {
  readonly html: string
  readonly b: TreeBuilder
  /** how far the events have covered the body */
  done = 0
  tagFrom = 0
  name = ""
  // Only the four marking attributes are read (markupOf), so they are kept in fields: an
  // object per start tag, a key added to it per attribute (a megamorphic store each), was
  // measurably slower on the reply corpus's HTML bodies.
  id: string | undefined = undefined
  cls: string | undefined = undefined
  style: string | undefined = undefined
  type: string | undefined = undefined
  /** which of the four the attribute being read is (MARKING_ATTRIBUTES), 0 for none */
  attr = 0
  attrValue = ""

  constructor(html: string) {
    this.html = html
    const root = element("#root", 0, 0, noMarkup)
    this.b = { root, stack: [root], preDepth: 0 }
  }

  catchUp(from: number, to: number): void {
    if (from > this.done) appendOther(this.b, this.html.slice(this.done, from))
    this.done = to
  }

  openTag(end: number, selfClosing: boolean): void {
    this.catchUp(this.tagFrom, end + 1)
    const markup = markupOf(this.name, this.id, this.cls, this.style, this.type)
    startTag(this.b, element(this.name, this.tagFrom, end + 1, markup), selfClosing)
  }

  ontext(from: number, to: number): void {
    this.catchUp(from, to)
    appendText(this.b, this.html.slice(from, to))
  }

  onopentagname(from: number, to: number): void {
    this.tagFrom = from - 1
    this.name = this.html.slice(from, to).toLowerCase()
    this.id = this.cls = this.style = this.type = undefined
  }

  onattribname(from: number, to: number): void {
    // only the marking attributes are read: most of a body's attributes are styles
    const length = to - from
    this.attr = length === 2 || length === 4 || length === 5 ? MARKING_ATTRIBUTES.get(this.html.slice(from, to).toLowerCase()) ?? 0 : 0
    this.attrValue = ""
  }

  onattribdata(from: number, to: number): void {
    if (this.attr !== 0) this.attrValue += this.html.slice(from, to)
  }

  onattribend(): void {
    // the first of a repeated attribute counts
    if (this.attr === ID) this.id ??= this.attrValue
    else if (this.attr === CLASS) this.cls ??= this.attrValue
    else if (this.attr === STYLE) this.style ??= this.attrValue
    else if (this.attr === TYPE) this.type ??= this.attrValue
  }

  onopentagend(end: number): void {
    this.openTag(end, false)
  }

  onselfclosingtag(end: number): void {
    this.openTag(end, true)
  }

  onclosetag(from: number, to: number): void {
    const close = this.html.indexOf(">", to)
    const end = close < 0 ? this.html.length : close + 1
    this.catchUp(from - 2, end)
    endTag(this.b, this.html, from - 2, end, this.html.slice(from, to).toLowerCase())
  }

  onattribentity(): void {}
  ontextentity(): void {}
  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}
  onend(): void {}
}

/** The attributes that mark a client's quote markup; an absent one reads as "". */
interface MarkupAttributes {
  readonly id: string
  readonly classes: ReadonlyArray<string>
  readonly style: string
  readonly type: string
}

const noMarkup: MarkupAttributes = { id: "", classes: [], style: "", type: "" }

const ID = 1
const CLASS = 2
const STYLE = 3
const TYPE = 4
const MARKING_ATTRIBUTES: ReadonlyMap<string, number> = new Map([["id", ID], ["class", CLASS], ["style", STYLE], ["type", TYPE]])

/** `id` and `class`, `style` of a div, `type` of a blockquote: no other element is
 * recognised by them. Each is the tag's attribute value, undefined when it has none. */
const markupOf = (
  name: string,
  id: string | undefined,
  cls: string | undefined,
  divStyle: string | undefined,
  blockquoteType: string | undefined
): MarkupAttributes => {
  const style = name === "div" ? divStyle : undefined
  const type = name === "blockquote" ? blockquoteType : undefined
  if (id === undefined && cls === undefined && style === undefined && type === undefined) return noMarkup
  return {
    id: id ?? "",
    classes: cls === undefined || cls === "" ? [] : cls.split(/\s+/).filter((c) => c !== ""),
    style: style ?? "",
    type: type ?? ""
  }
}

const hasClass = (el: ElementNode, name: string): boolean => el.markup.classes.includes(name)

const decodeEntities = (raw: string): string => (raw.includes("&") ? decodeHTML(raw) : raw)

const isBlankText = (raw: string): boolean => normaliseLine(decodeEntities(raw)) === ""

/** Recognised by the client markup alone. */
const structuralKind = (el: ElementNode): ItemKind | undefined => {
  const markup = el.markup
  // no id, class, style or type: nothing below can match (most elements of a body)
  if (markup === noMarkup) return undefined
  const id = markup.id.toLowerCase()
  if (id.endsWith("divrplyfwdmsg") || id.endsWith("appendonsend") || id === "mail-editor-reference-message-container") {
    return "cut"
  }
  const cls = markup.classes
  if (cls.includes("moz-forward-container") || cls.includes("OutlookMessageHeader")) return "cut"
  // old Hotmail / Outlook.com: the history starts at this rule
  if (el.name === "hr" && id === "stopspelling") return "cut"
  if (el.name === "div") {
    const style = markup.style.toLowerCase().replace(/\s+/g, "")
    // Outlook desktop draws its reply header as a div with only a top border; a signature
    // may draw the same border, so the header's first key must be there too.
    if (style.includes("border:none") && style.includes("border-top:solid") &&
      headerKind(normaliseLine(textOf(el, 200))) !== undefined) return "cut"
  }
  if (cls.includes("gmail_attr") || cls.includes("moz-cite-prefix")) return "attr"
  if (el.name === "blockquote") {
    if (markup.type.toLowerCase() === "cite" || cls.includes("gmail_quote")) return "quote"
  }
  if (cls.some((c) => c.endsWith("yahoo_quoted")) || cls.includes("protonmail_quote") || cls.includes("freshdesk_quote")) return "quote"
  if (cls.includes("gmail_quote") || cls.includes("gmail_quote_container")) return "quote"
  return undefined
}

/** Whether a node renders anything: non-blank text, an image or the like. Memoised per
 * element in `memo`, which must be cleared when nodes are removed. */
const hasContent = (memo: Map<Node, boolean>, node: Node): boolean => {
  if (node.removed) return false
  if (node.type === "text") return !isBlankText(node.raw)
  if (node.type === "other") return false
  const known = memo.get(node)
  if (known !== undefined) return known
  let result = false
  if ((node.flags & CONTENT) !== 0) result = true
  else if ((node.flags & INVISIBLE) === 0) {
    for (const child of node.children) {
      if (hasContent(memo, child)) {
        result = true
        break
      }
    }
  }
  memo.set(node, result)
  return result
}

/** Gmail's quote container holds the sender's text when they answered inline; it is
 * then only a wrapper and its blockquotes are the quotes. */
const isWrapperWithAnswers = (memo: Map<Node, boolean>, el: ElementNode): boolean =>
  el.name === "div" &&
  el.children.some((c) => c.type === "element" && c.name === "blockquote") &&
  el.children.some((c) =>
    c.type === "element"
      ? c.name !== "blockquote" && !hasClass(c, "gmail_attr") && hasContent(memo, c)
      : c.type === "text" && hasContent(memo, c)
  )

/** The walk's state: the items so far and the logical line being gathered. */
interface ItemReader {
  readonly items: Array<Item>
  /** the nodes each item stands for, by item index */
  readonly itemNodes: Array<ReadonlyArray<Node>>
  readonly contentMemo: Map<Node, boolean>
  lineText: string
  lineNodes: Array<Node>
  lineContent: boolean
}

const pushItem = (
  r: ItemReader,
  kind: ItemKind,
  text: string,
  content: boolean,
  nodes: ReadonlyArray<Node>,
  depth = 0
): void => {
  r.items.push({ kind, text, content, depth })
  r.itemNodes.push(nodes)
}

/** Ends the logical line being gathered, if it has any node. */
const flush = (r: ItemReader): void => {
  if (r.lineNodes.length === 0) return
  const text = normaliseLine(r.lineText)
  if (text.startsWith(">")) {
    // A `>` line in HTML is a plain-text quote that a client converted without markup.
    const markers = /^[\s>]+/.exec(text)?.[0] ?? ""
    const quoted = text.slice(markers.length)
    pushItem(r, "quote", quoted, quoted !== "", r.lineNodes, markers.replace(/\s/g, "").length)
  } else {
    pushItem(r, "line", text, r.lineContent || text !== "", r.lineNodes)
  }
  r.lineText = ""
  r.lineNodes = []
  r.lineContent = false
}

const previousIsAttribution = (items: ReadonlyArray<Item>): boolean => {
  const texts: Array<string> = []
  // A few blank lines may sit between an attribution and its quote; not thousands.
  for (let k = items.length - 1; k >= 0 && k >= items.length - 12 && texts.length < 3; k--) {
    const item = items[k]
    if (item === undefined || item.kind !== "line") break
    if (item.text === "") {
      if (texts.length > 0) break
      continue
    }
    texts.unshift(item.text)
    if (attributionStrength(texts.join(" ")) !== undefined) return true
  }
  return false
}

const inPre = (node: Node): boolean => {
  for (let p: ElementNode | undefined = node.parent; p !== undefined; p = p.parent) {
    if (p.name === "pre" || p.name === "listing") return true
  }
  return false
}

/** Document order into items: quote containers and dividers become one item each, the
 * rest logical lines. */
const walk = (r: ItemReader, node: Node): void => {
  if (node.type === "other") return
  if (node.type === "text") {
    r.lineText += decodeEntities(node.raw)
    r.lineNodes.push(node)
    if (node.raw.endsWith("\n") && inPre(node)) flush(r)
    return
  }
  const name = node.name
  if ((node.flags & INVISIBLE) !== 0) return
  let kind = structuralKind(node)
  if (kind === "quote" && name !== "blockquote" && isWrapperWithAnswers(r.contentMemo, node)) kind = undefined
  if (kind === undefined && name === "blockquote" && previousIsAttribution(r.items)) kind = "quote"
  if (kind !== undefined) {
    flush(r)
    if (kind === "quote") {
      const attribution = leadingAttribution(node)
      if (attribution.length > 0) pushItem(r, "attr", "", false, attribution)
    }
    pushItem(r, kind, "", kind === "quote", [node])
    return
  }
  if (name === "br") {
    r.lineNodes.push(node)
    flush(r)
    return
  }
  if (name === "hr") {
    flush(r)
    pushItem(r, "line", "__________", false, [node])
    return
  }
  if ((node.flags & CONTENT) !== 0) {
    r.lineNodes.push(node)
    r.lineContent = true
    return
  }
  const block = (node.flags & BLOCK) !== 0
  if (block) flush(r)
  for (const child of node.children) walk(r, child)
  if (block) flush(r)
}

export const extractHtml = (html: string, sender?: string): string => {
  const root = parse(html)
  const r: ItemReader = {
    items: [], itemNodes: [], contentMemo: new Map(), lineText: "", lineNodes: [], lineContent: false
  }
  for (const child of root.children) walk(r, child)
  flush(r)
  const { itemNodes, contentMemo } = r

  const plan = planReply(r.items, true, sender)
  if (plan.cutAt >= r.items.length && plan.drop.size === 0) return html

  const dropParents = new Set<ElementNode>()
  for (const k of plan.drop) {
    for (const node of itemNodes[k] ?? []) {
      node.removed = true
      if (node.parent !== undefined) dropParents.add(node.parent)
    }
  }
  removeEmptied(dropParents)
  const cutFrom = itemNodes[plan.cutAt]?.[0]
  if (cutFrom !== undefined) {
    // Document order: the node, its later siblings, and the later siblings of every
    // ancestor. The ancestors themselves stay, end tags included, so the result nests.
    cutFrom.removed = true
    for (let node: Node = cutFrom; node.parent !== undefined; node = node.parent) {
      const siblings = node.parent.children
      for (let k = node.index + 1; k < siblings.length; k++) {
        const sibling = siblings[k]
        if (sibling !== undefined) sibling.removed = true
      }
    }
  }

  contentMemo.clear()
  const body = findBody(root) ?? root
  trimEdge(body, "end", contentMemo)
  if (plan.drop.size > 0) trimEdge(body, "start", contentMemo)
  if (!hasContent(contentMemo, root)) return ""
  return serialise(html, root)
}

/** Wrappers left empty by a drop go with what they held: Gmail's `<div><br></div>` between
 * the quote and a signature below it is one blank line, not an empty div to keep. Only
 * the text-level wrappers a line sits in; never a table cell, a list item or the body.
 * Each element's children are counted once (then kept up to date as wrappers under it
 * go), so a drop of many lines in one wrapper stays linear. */
const removeEmptied = (parents: ReadonlySet<ElementNode>): void => {
  const visible = new Map<ElementNode, number>()
  for (const start of parents) {
    for (let el: ElementNode | undefined = start; el !== undefined && !el.removed && emptiable.has(el.name); el = el.parent) {
      const count = visible.get(el) ?? visibleChildren(el)
      if (count > 0) {
        visible.set(el, count)
        break
      }
      el.removed = true
      const parent = el.parent
      const parentCount = parent === undefined ? undefined : visible.get(parent)
      if (parent !== undefined && parentCount !== undefined) visible.set(parent, parentCount - 1)
    }
  }
}

const visibleChildren = (el: ElementNode): number => {
  let count = 0
  for (const c of el.children) if (!c.removed && c.type !== "other" && !(c.type === "text" && isBlankText(c.raw))) count++
  return count
}

const emptiable = new Set(["div", "p", "span", "font"])

/** Apple Mail puts the attribution inside the blockquote, as its first line; returned as
 * the nodes to remove with it (and the `<br>`s under it), or none. */
const leadingAttribution = (quote: ElementNode): ReadonlyArray<Node> => {
  const kids = quote.children
  let k = 0
  while (k < kids.length && kids[k]?.type !== "element" && isBlankish(kids[k])) k++
  const first = kids[k]
  if (first === undefined) return []
  const nodes: Array<Node> = []
  let text = ""
  if (first.type === "element" && (first.flags & BLOCK) !== 0) {
    nodes.push(first)
    text = textOf(first, 600)
    k++
  } else {
    for (; k < kids.length; k++) {
      const node = kids[k]
      if (node === undefined || (node.type === "element" && (node.flags & BLOCK) !== 0)) break
      nodes.push(node)
      if (node.type === "element" && node.name === "br") {
        k++
        break
      }
      text += node.type === "text" ? decodeEntities(node.raw) : node.type === "element" ? textOf(node, 600) : ""
      if (text.length > 600) return []
    }
  }
  if (attributionStrength(normaliseLine(text)) === undefined) return []
  for (; k < kids.length; k++) {
    const node = kids[k]
    if (node === undefined || !(isBlankish(node) || (node.type === "element" && node.name === "br"))) break
    nodes.push(node)
  }
  return nodes
}

const isBlankish = (node: Node | undefined): boolean =>
  node === undefined || node.type === "other" || (node.type === "text" && isBlankText(node.raw))

/** The decoded text of an element, or of its first `limit` characters. */
const textOf = (el: ElementNode, limit: number): string => {
  let out = ""
  const visit = (node: Node): void => {
    if (out.length > limit) return
    if (node.type === "text") out += decodeEntities(node.raw)
    else if (node.type === "element" && (node.flags & INVISIBLE) === 0) {
      if (node.name === "br") out += " "
      for (const child of node.children) visit(child)
    }
  }
  visit(el)
  return out
}

const findBody = (el: ElementNode): ElementNode | undefined => {
  for (const child of el.children) {
    if (child.type !== "element") continue
    if (child.name === "body") return child
    if (child.name === "html") return findBody(child)
  }
  return undefined
}

/** Whether a blank element renders as vertical space (a blank line), not as nothing. */
const breaksLine = (el: ElementNode): boolean =>
  el.name === "br" || el.name === "hr" || (el.flags & BLOCK) !== 0 ||
  el.children.some((c) => !c.removed && c.type === "element" && breaksLine(c))

/** Blank markup at the edge of the kept part is what blank lines are in text: empty
 * paragraphs, `<br>`s, rules and whitespace left where the quote was. Invisible elements
 * (style, meta), comments and empty inline elements (Outlook's `<o:p></o:p>`) are stepped
 * over, never removed: they are part of the sender's markup, not blank lines. */
const trimEdge = (el: ElementNode, edge: "start" | "end", contentMemo: Map<Node, boolean>): void => {
  let current: ElementNode = el
  for (;;) {
    const kids = current.children
    let next: ElementNode | undefined
    for (let step = 0; step < kids.length; step++) {
      const child = kids[edge === "end" ? kids.length - 1 - step : step]
      if (child === undefined || child.removed || child.type === "other") continue
      if (child.type === "element" && (child.flags & INVISIBLE) !== 0) continue
      if (!hasContent(contentMemo, child)) {
        if (child.type === "text" || breaksLine(child)) child.removed = true
        continue
      }
      if (child.type === "element" && (child.flags & CONTENT) === 0) next = child
      break
    }
    if (next === undefined) return
    current = next
  }
}

const serialise = (html: string, root: ElementNode): string => {
  const out: Array<string> = []
  const emit = (node: Node): void => {
    if (node.removed) return
    if (node.type !== "element") {
      out.push(node.raw)
      return
    }
    out.push(html.slice(node.from, node.to))
    for (const child of node.children) emit(child)
    if (node.endFrom >= 0) out.push(html.slice(node.endFrom, node.endTo))
  }
  emit(root)
  return out.join("")
}
