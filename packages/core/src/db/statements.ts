/**
 * Splits a migration file into statements, because the extended query protocol that the
 * driver speaks runs one statement per message. The split happens only at a `;` outside
 * quotes, quoted identifiers, comments and dollar-quoted bodies (`$$ ... $$`,
 * `$tag$ ... $tag$`), so a plpgsql function or a string holding `;` stays whole.
 */
export const splitStatements = (text: string): ReadonlyArray<string> => {
  const statements: Array<string> = []
  let start = 0
  let i = 0
  const push = (end: number) => {
    const statement = text.slice(start, end).trim()
    if (statement.replace(/--[^\n]*/g, "").trim().length > 0) statements.push(statement)
  }
  while (i < text.length) {
    const c = text[i]
    if (c === "-" && text[i + 1] === "-") {
      const end = text.indexOf("\n", i)
      i = end === -1 ? text.length : end + 1
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2)
      i = end === -1 ? text.length : end + 2
    } else if (c === "'" || c === "\"") {
      // A doubled quote inside is an escaped one: scanning on past it is the same thing.
      const end = text.indexOf(c, i + 1)
      i = end === -1 ? text.length : end + 1
    } else if (c === "$") {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i, i + 64))?.[0]
      if (tag === undefined) {
        i++
      } else {
        const end = text.indexOf(tag, i + tag.length)
        i = end === -1 ? text.length : end + tag.length
      }
    } else if (c === ";") {
      push(i)
      i++
      start = i
    } else {
      i++
    }
  }
  push(text.length)
  return statements
}
