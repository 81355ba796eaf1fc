/**
 * Light or dark: the system's preference (prefers-color-scheme, in app.css) until the reader
 * picks one with the header's toggle; the pick is kept in localStorage and set as
 * `<html data-theme>`, which app.css reads.
 */
import { render } from "preact"
import { useState } from "preact/hooks"

type Theme = "light" | "dark"
const KEY = "inbox-theme"

const stored = (): Theme | null => {
  const value = localStorage.getItem(KEY)
  return value === "light" || value === "dark" ? value : null
}
const systemDark = () => matchMedia("(prefers-color-scheme: dark)").matches

const apply = (theme: Theme | null) => {
  if (theme) document.documentElement.dataset["theme"] = theme
  else delete document.documentElement.dataset["theme"]
}

const Toggle = () => {
  const [dark, setDark] = useState(() => (stored() ?? (systemDark() ? "dark" : "light")) === "dark")
  const flip = () => {
    const next: Theme = dark ? "light" : "dark"
    localStorage.setItem(KEY, next)
    apply(next)
    setDark(next === "dark")
  }
  // "Dark" on screen (the header's row is full), "Dark theme" as its name.
  return <button type="button" class="theme" aria-label="Dark theme" aria-pressed={dark} onClick={flip}>Dark</button>
}

/** Applies the stored pick and draws the toggle into `container`. */
export const startTheme = (container: Element | null) => {
  apply(stored())
  if (container) render(<Toggle />, container)
}
