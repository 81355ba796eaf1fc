/**
 * Keyboard shortcuts in Gmail's spirit, for the mail pages: `j`/`k` move through the thread
 * list (focus on the row's link, so Enter or `o` opens it; from the thread open in the reading
 * pane when no row has focus), `e` archives and `#` trashes the
 * open thread, `r`/`a`/`f` reply, reply all and forward to its last message, `c` composes,
 * `/` goes to the search box, `?` shows this list. A key typed in a field is the field's.
 * Each shortcut presses a control the page already shows (by its name), so a shortcut does
 * nothing a click could not, and nothing when that control is not there.
 */
import { render } from "preact"

export const SHORTCUTS: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
  [["j", "k"], "Next / previous thread in the list"], [["o", "Enter"], "Open the thread"], [["e"], "Archive the open thread"],
  [["#"], "Move the open thread to the Trash"], [["r"], "Reply"], [["a"], "Reply all"], [["f"], "Forward"], [["c"], "Compose"],
  [["/"], "Search"], [["?"], "Show these shortcuts"]
]

const typing = (target: EventTarget | null) =>
  target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))

const byText = (selector: string, text: string) =>
  [...document.querySelectorAll<HTMLElement>(selector)].filter((el) => el.textContent?.trim() === text)

/** Clicks the last control of `selector` whose text is `text`: true when there was one. */
const press = (selector: string, text: string) => {
  const el = byText(selector, text).at(-1)
  el?.click()
  return el !== undefined
}

const rowLinks = () => [...document.querySelectorAll<HTMLAnchorElement>("#threads tbody a[href^='#/thread/']")]

const move = (by: number) => {
  const links = rowLinks()
  if (links.length === 0) return false
  const focused = links.indexOf(document.activeElement as HTMLAnchorElement)
  // From the thread open in the reading pane when no row has focus: j is the one after it.
  const at = focused >= 0 ? focused : links.findIndex((a) => a.closest("tr")?.getAttribute("aria-current") === "true")
  const next = links[Math.min(links.length - 1, Math.max(0, at < 0 ? 0 : at + by))]
  next?.focus()
  next?.closest("tr")?.scrollIntoView({ block: "nearest" })
  return true
}

const Help = ({ close }: { readonly close: () => void }) => (
  <div class="shortcuts" role="dialog" aria-modal="true" aria-labelledby="shortcuts-title">
    <h2 id="shortcuts-title">Keyboard shortcuts</h2>
    <dl>{SHORTCUTS.map(([keys, what]) => [
      <dt key={`k${what}`}>{keys.map((k, i) => [i ? " or " : "", <kbd key={k}>{k}</kbd>])}</dt>,
      <dd key={`d${what}`}>{what}</dd>
    ])}</dl>
    <button type="button" onClick={close} ref={(b) => b?.focus()}>Close</button>
  </div>
)

const helpRoot = () => {
  let root = document.getElementById("shortcuts")
  if (!root) {
    root = document.createElement("div")
    root.id = "shortcuts"
    document.body.append(root)
  }
  return root
}
const closeHelp = () => render(null, helpRoot())
const toggleHelp = () => {
  const root = helpRoot()
  if (root.childElementCount) closeHelp()
  else render(<Help close={closeHelp} />, root)
}

const ACTIONS: Readonly<Record<string, () => boolean>> = {
  j: () => move(1),
  k: () => move(-1),
  o: () => { const el = document.activeElement; if (el instanceof HTMLAnchorElement && rowLinks().includes(el)) { el.click(); return true } return false },
  e: () => press("[aria-label='Thread actions'] button", "Archive"),
  "#": () => press("[aria-label='Thread actions'] button", "Move to Trash"),
  r: () => press("article.message a", "Reply"),
  a: () => press("article.message a", "Reply all"),
  f: () => press("article.message a", "Forward"),
  c: () => press("main nav a, #nav a", "Compose"),
  "/": () => { const box = document.querySelector<HTMLInputElement>("input[name=q]"); box?.focus(); return box !== null },
  "?": () => { toggleHelp(); return true }
}

export const startShortcuts = () => {
  addEventListener("keydown", (e) => {
    if (e.key === "Escape") return closeHelp()
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return
    const action = ACTIONS[e.key]
    if (action?.()) e.preventDefault()
  })
  // A new page closes the list.
  addEventListener("hashchange", closeHelp)
}
