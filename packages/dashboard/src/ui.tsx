/**
 * The console pages' shared pieces as Preact components: a page mounted into <main>, forms
 * whose failures are written beside the field they are about in plain words (dom.js's
 * mapping of codes and field paths to sentences), labelled fields, tables, buttons that run
 * an API call, a secret shown once, a copy button, and the typed client's answers turned
 * into data or into the error banner. Text is always text: nothing here parses HTML.
 */
import { type ButtonHTMLAttributes, type ComponentChildren, createContext, type InputHTMLAttributes, render, type TargetedSubmitEvent, type TextareaHTMLAttributes, type VNode } from "preact"
import { useContext, useEffect, useId, useRef, useState } from "preact/hooks"
import "./console.css"
import { type ErrorBody, ok } from "./client.ts"
import { notice, plainWords, problemsByField, said, showError } from "./dom.js"

/** A failed call as the pages see it: the spec's error body and the HTTP status. */
export type Failure = Error & { readonly body?: Partial<ErrorBody>; readonly status?: number }

interface Answer<T> {
  readonly data?: T
  readonly error?: unknown
  readonly response: Response
}

/**
 * The data of a typed client's answer; a failure is shown in the banner (unless `quiet`)
 * and thrown, so a page's data is the success answer only. The banner is cleared first, as
 * dom.js's `api` does.
 */
export const answer = async <T,>(pending: Promise<Answer<T>>, { quiet = false } = {}): Promise<T> => {
  showError(null)
  const got = await pending
  if (!got.response.ok && !quiet) showError(got.error ?? { message: got.response.statusText })
  return ok(got)
}

/** An answer with no body (204): done, or the failure shown (unless `quiet`) and thrown. */
export const done = async (pending: Promise<Answer<unknown>>, { quiet = false } = {}): Promise<void> => {
  showError(null)
  const got = await pending
  if (got.response.ok) return
  if (!quiet) showError(got.error ?? { message: got.response.statusText })
  ok(got)
}

/** What a failure says, in the spec's words (message, issues, fix). */
export const saidOf = (err: Failure) => said(err.body ?? { message: err.message })

// The page drawn into <main>: unmounted before the next, so its effects end with it.
let root: HTMLElement | null = null
export const mount = (node: VNode) => {
  const main = document.getElementById("main")
  if (main === null) return
  if (root !== null) render(null, root)
  root = document.createElement("div")
  main.replaceChildren(root)
  render(node, root)
}

/** A page: its heading, which is also the document's title. */
export const Page = ({ title, children }: { readonly title: string; readonly children?: ComponentChildren }) => {
  document.title = `${title} · Inbox`
  return (
    <>
      <h1>{title}</h1>
      {children}
    </>
  )
}

/** Shown while a page's data is on its way. */
export const Loading = ({ what = "Loading…" }: { readonly what?: string }) => <p class="muted" role="status" aria-busy="true">{what}</p>

export const Muted = ({ children, testid }: { readonly children?: ComponentChildren; readonly testid?: string }) => <p class="muted" data-testid={testid}>{children}</p>

/** A failure shown in the page too (the banner clears on the next call): the spec's message and fix. */
export const Problem = ({ err }: { readonly err: Failure }) => <p class="problem" data-code={err.body?.code ?? ""}>{saidOf(err)}</p>

export const when = (t: string | null | undefined) => t ? new Date(t).toLocaleString() : "—"

// ---------- forms ----------

interface Note {
  readonly text: string
  readonly code: string
}
interface Problems {
  readonly fields: Readonly<Record<string, Note>>
  readonly general?: Note
}
const NONE: Problems = { fields: {} }
const FormState = createContext<{ readonly problems: Problems; readonly busy: boolean }>({ problems: NONE, busy: false })

export type Values = Readonly<Record<string, string>>
const valuesOf = (form: HTMLFormElement): Values => Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, typeof v === "string" ? v : v.name]))

/**
 * Where a failed submit is explained (dom.js's mapping): each field issue beside its control,
 * a code that is about one field beside that field, anything else above the submit button.
 */
const placed = (form: HTMLFormElement, err: Failure): Problems => {
  const body = err.body ?? { message: err.message }
  const code = body.code ?? ""
  const names = [...form.elements].map((e) => (e as HTMLInputElement).name).filter(Boolean)
  const { fields, other } = problemsByField(body, names) as { fields: Record<string, string>; other: string | null }
  return {
    fields: Object.fromEntries(Object.entries(fields).map(([name, text]) => [name, { text, code }])),
    ...(other ? { general: { text: other, code } } : {})
  }
}

/**
 * A form whose submit runs `action(values, form)`. While it runs the submit button is
 * disabled and says `busy` (`aria-busy` on the form), so a double click acts once; a failure
 * is explained in the form (and the banner has the API's words); a success empties the form
 * unless `keep`.
 */
export const Form = ({ label, submit, busy = "Working…", action, keep = false, class: cls, children }: {
  readonly label: string
  readonly submit: string
  readonly busy?: string
  readonly action: (values: Values, form: HTMLFormElement) => unknown
  readonly keep?: boolean
  readonly class?: string
  readonly children?: ComponentChildren
}) => {
  const [state, setState] = useState<{ problems: Problems; busy: boolean }>({ problems: NONE, busy: false })
  const running = useRef(false)
  const onSubmit = async (e: TargetedSubmitEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    if (running.current) return
    running.current = true
    setState({ problems: NONE, busy: true })
    let problems = NONE
    try {
      await action(valuesOf(form), form)
      if (!keep && form.isConnected) form.reset()
    } catch (error) {
      const err = error as Failure
      if (!err.body) showError({ message: err.message })
      problems = placed(form, err)
    } finally {
      running.current = false
      setState({ problems, busy: false })
    }
  }
  const general = state.problems.general
  return (
    <form aria-label={label} aria-busy={state.busy ? "true" : undefined} class={cls} onSubmit={onSubmit}>
      <FormState.Provider value={state}>{children}</FormState.Provider>
      {general ? <p class="field-error" role="alert" data-code={general.code}>{general.text}</p> : null}
      <button type="submit" class="primary" disabled={state.busy}>{state.busy ? busy : submit}</button>
    </form>
  )
}

/** The problem a form's failed submit left on the control named `name`, with the attributes that tie them. */
const useProblem = (name: string, id: string) => {
  const note = useContext(FormState).problems.fields[name]
  const noteId = `${id}-problem`
  return {
    attributes: note ? { "aria-invalid": "true" as const, "aria-describedby": noteId } : {},
    note: note ? <p id={noteId} class="field-error" role="alert" data-code={note.code}>{note.text}</p> : null
  }
}

/** The attributes the console's inputs use. */
interface InputProps {
  readonly type?: "text" | "email" | "password" | "url" | "datetime-local" | "number"
  readonly required?: boolean
  readonly placeholder?: string
  readonly autocomplete?: string
  readonly value?: string
  readonly minLength?: number
  readonly rows?: number
  readonly class?: string
}
/** A labelled input (or `multiline`, a textarea) with its problem beside it. */
export const Field = ({ label, name, multiline = false, type = "text", value, ...rest }: { readonly label: string; readonly name: string; readonly multiline?: boolean } & InputProps) => {
  const id = useId()
  const { attributes, note } = useProblem(name, id)
  return (
    <>
      <label for={id}>{label}</label>
      {multiline
        ? <textarea id={id} name={name} defaultValue={value} {...attributes} {...rest} />
        // Preact types each input `type` apart; the props here suit every type used.
        : <input {...({ id, type, name, defaultValue: value, ...attributes, ...rest } as unknown as InputHTMLAttributes<HTMLInputElement>)} />}
      {note}
    </>
  )
}

/** A labelled select of `[value, text]` options. */
export const Select = ({ label, name, options, value, id: given }: {
  readonly label: string
  readonly name: string
  readonly options: ReadonlyArray<readonly [string, string]>
  readonly value?: string
  readonly id?: string
}) => {
  const made = useId()
  const id = given ?? made
  const { attributes, note } = useProblem(name, id)
  return (
    <>
      <label for={id}>{label}</label>
      <select id={id} name={name} {...attributes}>
        {options.map(([v, text]) => <option key={v} value={v} selected={v === value}>{text}</option>)}
      </select>
      {note}
    </>
  )
}

/** A checkbox with its label around it. */
export const Check = ({ name, value, checked, children }: { readonly name: string; readonly value?: string; readonly checked?: boolean; readonly children?: ComponentChildren }) => (
  <label class="check"><input type="checkbox" name={name} value={value} defaultChecked={checked} />{children}</label>
)

/** The values of a form's ticked checkboxes named `name`. */
export const ticked = (form: HTMLFormElement, name: string) => [...form.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((c) => c.value)

// ---------- buttons, tables, secrets ----------

/**
 * A button whose click runs `action` once at a time (a second click while it runs does
 * nothing); a failure is in the banner (an API failure is there already).
 */
export const Action = ({ action, children, ...rest }: { readonly action: () => unknown } & Omit<ButtonHTMLAttributes<HTMLButtonElement>, "action">) => {
  const running = useRef(false)
  const onClick = async () => {
    if (running.current) return
    running.current = true
    try {
      await action()
    } catch (error) {
      const err = error as Failure
      if (!err.body) showError({ message: err.message })
    } finally {
      running.current = false
    }
  }
  return <button type="button" {...rest} onClick={onClick}>{children}</button>
}

/**
 * A control outside a form that runs an API call (a row's select or button): one call at a
 * time (`busy`), and its failure kept for `Beside`, next to the control, not in the banner.
 */
export const useAttempt = () => {
  const [err, setErr] = useState<Failure | null>(null)
  const [busy, setBusy] = useState(false)
  const running = useRef(false)
  const id = useId()
  const run = async (work: () => Promise<unknown>) => {
    if (running.current) return
    running.current = true
    setErr(null)
    setBusy(true)
    try {
      await work()
    } catch (error) {
      setErr(error as Failure)
    } finally {
      running.current = false
      setBusy(false)
    }
  }
  const noteId = `${id}-problem`
  return { err, busy, run, noteId, attributes: err ? { "aria-invalid": "true" as const, "aria-describedby": noteId } : {} }
}

/** The failure of a `useAttempt` control, in plain words, placed beside it. */
export const Beside = ({ attempt }: { readonly attempt: ReturnType<typeof useAttempt> }) =>
  attempt.err
    ? <p id={attempt.noteId} class="field-error" role="alert" data-code={attempt.err.body?.code ?? ""}>{plainWords(attempt.err.body ?? { message: attempt.err.message })}</p>
    : null

/** A small button that puts `value` on the clipboard; `name` says which value (its text is "Copy"). */
export const Copy = ({ value, name, class: cls = "copy" }: { readonly value: string; readonly name: string; readonly class?: string }) => (
  <Action class={cls} aria-label={name} action={async () => { await navigator.clipboard.writeText(value); notice("Copied.") }}>Copy</Action>
)

/** A table named `name`: header cells, and rows each with a key and its cells. */
export const Table = ({ name, heads, rows }: {
  readonly name: string
  readonly heads: ReadonlyArray<string>
  readonly rows: ReadonlyArray<readonly [string, ReadonlyArray<ComponentChildren>]>
}) => (
  <table aria-label={name}>
    <thead><tr>{heads.map((head) => <th key={head}>{head}</th>)}</tr></thead>
    <tbody>{rows.map(([key, cells]) => <tr key={key}>{cells.map((cell, i) => <td key={i}>{cell}</td>)}</tr>)}</tbody>
  </table>
)

/** A secret the API answers once: shown with a copy button and a warning that it will not be shown again. */
export const SecretOnce = ({ what, secret }: { readonly what: string; readonly secret: string }) => (
  <div class="secret" role="status">
    <p>{what}: copy it now, it will not be shown again.</p>
    <code data-testid="secret">{secret}</code>
    <Copy value={secret} name={`Copy the ${what.toLowerCase()}`} class="" />
  </div>
)

/** Page links ("First page", "Next page") of a list read page by page, the token in the address. */
export const Pages = ({ first, next }: { readonly first?: string | undefined; readonly next?: string | undefined }) => (
  <nav aria-label="Pages" class="tabs">
    {first ? <a href={first}>First page</a> : null}
    {next ? <a href={next}>Next page</a> : null}
  </nav>
)

/** Runs `effect` once the component is on the page (focus, a first read). */
export const useMounted = (effect: () => void) => useEffect(effect, [])
