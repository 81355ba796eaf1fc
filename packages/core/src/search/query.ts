/**
 * The search query language (docs/search.md), parsed into a tree that Search.ts turns
 * into SQL. It is the one people know from mail clients:
 *   words            all must match (anywhere: from, to, subject, body, attachment names)
 *   "a phrase"       the words in this order
 *   -word, -"p", -from:x   exclusion
 *   a OR b           either (binds tighter than the implicit AND: `x a OR b` is x AND (a OR b))
 *   ( ... )          grouping
 *   from: to: subject:   the value (a word or a "phrase") in that field only
 *   has:attachment   label:name   before:DATE   after:DATE  (DATE is YYYY-MM-DD or ISO 8601;
 *                    before is strictly earlier, after is at or later)
 *   is:unread  is:read   with or without the label `unread`
 * Any other `name:` is an unknown operator, refused with its name (a mistyped operator would
 * otherwise search for the text and quietly find nothing); in quotes it is text, and a word
 * with `://` (a link) is text too.
 * The last word typed matches as a prefix (`invo` finds invoice) when the query does not end
 * in a space. Anything malformed is a ValidationError on `q` that names the problem; a
 * parsed query never reaches the SQL layer in a shape it could refuse.
 */
import type { ValidationError } from "../errors/errors.ts"
import { validationError } from "../shared/validation.ts"

export type Field = "from" | "to" | "subject"

export type Node =
  | { readonly _tag: "Text"; readonly text: string; readonly field?: Field; readonly prefix: boolean; readonly phrase: boolean }
  | { readonly _tag: "Label"; readonly label: string }
  | { readonly _tag: "HasAttachment" }
  | { readonly _tag: "Before"; readonly at: Date }
  | { readonly _tag: "After"; readonly at: Date }
  | { readonly _tag: "Not"; readonly node: Node }
  | { readonly _tag: "And"; readonly nodes: ReadonlyArray<Node> }
  | { readonly _tag: "Or"; readonly nodes: ReadonlyArray<Node> }

export const MAX_QUERY_TERMS = 32
export const MAX_QUERY_LENGTH = 1000

type Token =
  | { readonly _tag: "Word"; readonly text: string; readonly negated: boolean; readonly field?: string; readonly quoted: boolean }
  | { readonly _tag: "Or" }
  | { readonly _tag: "Open"; readonly negated: boolean }
  | { readonly _tag: "Close" }

class QueryProblem {
  constructor(readonly message: string) {}
}

const FIELDS = new Set(["from", "to", "subject", "has", "label", "before", "after", "is"])
const OPERATOR = /^[a-z][a-z_-]*$/i
const KNOWN = "from:, to:, subject:, has:attachment, label:, is:unread, is:read, before:, after:"
const SEARCHABLE = /[\p{L}\p{N}]/u
const DATE = /^\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/

const tokenize = (q: string): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  const readQuoted = (): string => {
    const end = q.indexOf("\"", i + 1)
    if (end < 0) throw new QueryProblem("A quote is not closed: add the closing \".")
    const text = q.slice(i + 1, end)
    i = end + 1
    return text
  }
  while (i < q.length) {
    const c = q[i]!
    if (/\s/.test(c)) {
      i++
      continue
    }
    let negated = false
    if (c === "-" && i + 1 < q.length && !/\s/.test(q[i + 1]!)) {
      negated = true
      i++
    }
    const d = q[i]!
    if (d === "(") {
      tokens.push({ _tag: "Open", negated })
      i++
      continue
    }
    if (d === ")") {
      if (negated) throw new QueryProblem("A - must come before a word, a phrase or a group.")
      tokens.push({ _tag: "Close" })
      i++
      continue
    }
    if (d === "\"") {
      tokens.push({ _tag: "Word", text: readQuoted(), negated, quoted: true })
      continue
    }
    let j = i
    while (j < q.length && !/[\s()"]/.test(q[j]!)) j++
    const word = q.slice(i, j)
    i = j
    const colon = word.indexOf(":")
    const name = colon > 0 ? word.slice(0, colon).toLowerCase() : ""
    if (colon > 0 && FIELDS.has(name)) {
      const rest = word.slice(colon + 1)
      if (rest === "" && q[i] === "\"") {
        tokens.push({ _tag: "Word", text: readQuoted(), negated, field: name, quoted: true })
      } else if (rest === "") {
        throw new QueryProblem(`${name}: needs a value right after the colon.`)
      } else {
        tokens.push({ _tag: "Word", text: rest, negated, field: name, quoted: false })
      }
      continue
    }
    if (colon > 0 && OPERATOR.test(name) && !word.slice(colon + 1).startsWith("//")) {
      throw new QueryProblem(`${name}: is not an operator of the query language (it knows ${KNOWN}); put "${word}" in quotes to search for it as text.`)
    }
    if (word === "OR" && !negated) tokens.push({ _tag: "Or" })
    else tokens.push({ _tag: "Word", text: word, negated, quoted: false })
  }
  return tokens
}

const dateOf = (field: string, value: string): Date => {
  const at = DATE.test(value) ? new Date(value) : new Date(Number.NaN)
  if (Number.isNaN(at.getTime())) throw new QueryProblem(`${field}: needs a date as YYYY-MM-DD (or ISO 8601), not "${value}".`)
  return at
}

const leafOf = (token: Extract<Token, { _tag: "Word" }>, last: boolean, endsWord: boolean): Node | undefined => {
  const field = token.field
  switch (field) {
    case "has":
      if (token.text.toLowerCase() !== "attachment" && token.text.toLowerCase() !== "attachments") {
        throw new QueryProblem(`has: knows only has:attachment, not has:${token.text}.`)
      }
      return { _tag: "HasAttachment" }
    case "is": {
      const state = token.text.toLowerCase()
      if (state === "unread") return { _tag: "Label", label: "unread" }
      if (state === "read") return { _tag: "Not", node: { _tag: "Label", label: "unread" } }
      throw new QueryProblem(`is: knows is:unread and is:read, not is:${token.text}.`)
    }
    case "label":
      if (token.text.length > 64) throw new QueryProblem("label: names a label of at most 64 characters.")
      return { _tag: "Label", label: token.text.toLowerCase() }
    case "before":
      return { _tag: "Before", at: dateOf("before", token.text) }
    case "after":
      return { _tag: "After", at: dateOf("after", token.text) }
    default: {
      // A word with nothing to search for (only punctuation) says nothing: it is left out.
      if (!SEARCHABLE.test(token.text)) return undefined
      const prefix = last && endsWord && !token.quoted && field === undefined && token.text.length >= 2
      return { _tag: "Text", text: token.text, prefix, phrase: token.quoted, ...(field === undefined ? {} : { field: field as Field }) }
    }
  }
}

/** Parses a query; a malformed one is a ValidationError on `q` saying what is wrong. */
export const parseQuery = (q: string): { readonly _tag: "Ok"; readonly node: Node } | { readonly _tag: "Problem"; readonly error: ValidationError } => {
  const problem = (message: string) => ({ _tag: "Problem" as const, error: validationError([{ path: ["q"], message }]) })
  if (q.trim().length === 0) return problem("The query is empty.")
  if (q.length > MAX_QUERY_LENGTH) return problem(`The query is longer than ${MAX_QUERY_LENGTH} characters.`)
  try {
    const tokens = tokenize(q)
    const words = tokens.filter((t) => t._tag === "Word")
    if (words.length > MAX_QUERY_TERMS) throw new QueryProblem(`The query has more than ${MAX_QUERY_TERMS} terms.`)
    const lastWord = words[words.length - 1]
    const endsWord = !/[\s")]$/.test(q)
    let pos = 0

    // sequence := disjunction*  (until a closing parenthesis or the end)
    const sequence = (nested: boolean): Array<Node> => {
      const nodes: Array<Node> = []
      while (pos < tokens.length) {
        const t = tokens[pos]!
        if (t._tag === "Close") {
          if (!nested) throw new QueryProblem("A ) has no matching (.")
          return nodes
        }
        const node = disjunction()
        if (node !== undefined) nodes.push(node)
      }
      if (nested) throw new QueryProblem("A ( is not closed: add the closing ).")
      return nodes
    }
    // disjunction := unit ("OR" unit)*
    const disjunction = (): Node | undefined => {
      if (tokens[pos]?._tag === "Or") throw new QueryProblem("OR needs a term on each side.")
      const first = unit()
      const alternatives: Array<Node | undefined> = [first]
      while (tokens[pos]?._tag === "Or") {
        pos++
        const next = tokens[pos]
        if (next === undefined || next._tag === "Or" || next._tag === "Close") throw new QueryProblem("OR needs a term on each side.")
        alternatives.push(unit())
      }
      // An alternative with nothing to search for would match everything: the OR says nothing.
      if (alternatives.length > 1 && alternatives.some((a) => a === undefined)) return undefined
      const present = alternatives.filter((a): a is Node => a !== undefined)
      return present.length <= 1 ? present[0] : { _tag: "Or", nodes: present }
    }
    const unit = (): Node | undefined => {
      const t = tokens[pos++]!
      if (t._tag === "Open") {
        const inner = sequence(true)
        pos++ // the closing parenthesis
        if (inner.length === 0) return undefined
        const group: Node = inner.length === 1 ? inner[0]! : { _tag: "And", nodes: inner }
        return t.negated ? { _tag: "Not", node: group } : group
      }
      if (t._tag !== "Word") throw new QueryProblem("OR needs a term on each side.")
      const leaf = leafOf(t, t === lastWord, endsWord)
      return leaf === undefined ? undefined : t.negated ? { _tag: "Not", node: leaf } : leaf
    }

    const nodes = sequence(false)
    if (nodes.length === 0) throw new QueryProblem("The query has no word to search for.")
    return { _tag: "Ok", node: nodes.length === 1 ? nodes[0]! : { _tag: "And", nodes } }
  } catch (e) {
    if (e instanceof QueryProblem) return problem(e.message)
    throw e
  }
}

/** The words a result's highlights mark: every searched word not under an exclusion. */
export const highlightTerms = (node: Node): ReadonlyArray<{ readonly word: string; readonly prefix: boolean }> => {
  switch (node._tag) {
    case "Text": {
      const words = foldForMatch(node.text).split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0)
      return words.map((word, i) => ({ word, prefix: node.prefix && i === words.length - 1 }))
    }
    case "And":
    case "Or":
      return node.nodes.flatMap(highlightTerms)
    default:
      return []
  }
}

const ASCII = /^[\x00-\x7f]*$/

/** Lower case without accents: how highlights compare words (the database's unaccent, near enough). */
export const foldForMatch = (s: string): string =>
  // ASCII has nothing to decompose or strip, and is most words: this skips normalize and two
  // regex passes per word (highlights fold every word they read).
  ASCII.test(s) ? s.toLowerCase() : s.toLowerCase().normalize("NFKD").replace(/\p{M}/gu, "").replace(/ß/g, "ss")
