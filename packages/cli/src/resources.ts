/**
 * The commands of catalogue operations, built from the manifest (manifest.ts) without
 * loading core: every operation with a CLI face becomes `inboxctl <group> <action>` (its
 * `cli.command`, plus its former spellings as hidden aliases), which runs the operation on
 * the engine of the server it reaches, or on its own (invoke.ts).
 *
 * One rule for arguments (docs/cli.md): the resource's own identity is positional (its id,
 * named after the group: `pods get <pod_id>`; other path parameters such as a list's
 * direction and type; and the input fields the operation names as `cli.arguments`); the
 * containers are flags with one name each, `--pod`, `--inbox` and `--org`, whether the route
 * makes them required or optional, and whether they are path parameters or input fields.
 * Every other input field and named header is a flag named after it (`display_name` is
 * `--display-name`), typed from its JSON Schema: numbers, comma-separated lists, repeatable
 * `key=value` maps, and `--no-<field>` to clear a field that accepts null. `--api-key` and
 * `--json` are global options (program.ts).
 */
import { type Command, InvalidArgumentError, Option } from "commander"
import type { FieldKind, ManifestCommand } from "./manifest.ts"

/** The command groups: what each holds (presentation only) and the id that names one of its resources. */
export const GROUPS: Readonly<Record<string, { readonly about: string; readonly own?: string }>> = {
  org: { about: "Organizations (operator, no key): create one with its first key, issue a recovery key, assign a plan", own: "organization_id" },
  outbox: { about: "The local outbox (operator, no key): mail kept when INBOX_SMTP_URL is unset, as verification codes in development" },
  pods: { about: "Pods: isolated groups of inboxes", own: "pod_id" },
  inboxes: { about: "Inboxes: email addresses that receive and send mail", own: "inbox_id" },
  "api-keys": { about: "API keys of the organization", own: "api_key_id" },
  agent: { about: "Agent accounts: attach and verify the human owner" },
  messages: { about: "Messages of an inbox (--inbox): list, read, send, reply, forward, search", own: "message_id" },
  threads: { about: "Threads of the organization, a pod (--pod) or an inbox (--inbox)", own: "thread_id" },
  drafts: { about: "Drafts of an inbox (--inbox), scheduled or sent on demand", own: "draft_id" },
  lists: { about: "Allow and block lists of the organization, a pod (--pod) or an inbox (--inbox)" },
  suppressions: { about: "Suppressed addresses: sends to them are refused" },
  events: { about: "Events: what happened, newest first (of one inbox with --inbox)" },
  webhooks: { about: "Webhooks: signed deliveries of events to your URLs (a pod's with --pod, an inbox's with --inbox)", own: "webhook_id" },
  domains: { about: "Custom domains: add, publish the DNS records (zone-file), verify", own: "domain_id" },
  metrics: { about: "Usage, event counts and delivery rates over time" },
  billing: { about: "The organization's plan and subscription" },
  plans: { about: "The plans this server offers" }
}

/** Containers: one flag name each, for a path parameter and an input field alike. */
export const CONTAINER_FLAGS: Readonly<Record<string, string>> = { pod_id: "pod", inbox_id: "inbox", organization_id: "org" }

/** Former flag names of the containers' input fields (`api-keys create --inbox-id`), hidden. */
const FORMER_FLAGS: Readonly<Record<string, string>> = { pod_id: "pod-id", inbox_id: "inbox-id", organization_id: "organization-id" }

/** Seconds between two checks of `domains verify --wait` (DNS hosts publish within seconds to minutes). */
export const WAIT_INTERVAL_SECONDS = 5
export const DEFAULT_WAIT_TIMEOUT_SECONDS = 300

const seconds = (value: string): number => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("Expected a whole number of seconds.")
  return n
}

/** Options some commands add to their operation's, and run with after it (invoke.ts). */
const EXTRA_OPTIONS: Readonly<Record<string, () => ReadonlyArray<Option>>> = {
  "domains.verify": () => [
    new Option("--wait", `keep checking every ${WAIT_INTERVAL_SECONDS} s, showing each record's status, until the domain is VERIFIED`),
    new Option("--timeout <seconds>", `with --wait: give up after this long (default ${DEFAULT_WAIT_TIMEOUT_SECONDS})`).argParser(seconds)
  ]
}

/** What a catalogue command was asked, as plain data: the engine's side runs it (invoke.ts). */
export interface Invocation {
  readonly operation: string
  readonly params: Readonly<Record<string, string>>
  readonly input: Readonly<Record<string, unknown>>
  readonly headers: Readonly<Record<string, string>>
  /** The positional values, for a `Done: <command> <ids>.` line. */
  readonly ids: ReadonlyArray<string>
  readonly apiKey: string | undefined
  readonly json: boolean
  /** The options the command's extra options set (EXTRA_OPTIONS). */
  readonly extra: Readonly<Record<string, unknown>>
}

const flagOf = (field: string) => field.replaceAll("_", "-")

const collectPair = (value: string, previous: Record<string, string> | undefined): Record<string, string> => {
  const at = value.indexOf("=")
  if (at <= 0) throw new InvalidArgumentError("Expected key=value.")
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) }
}

const convert = (kind: FieldKind, value: unknown): unknown => {
  if (value === false) return null // --no-<field>
  if (typeof value !== "string") return value
  switch (kind) {
    case "number":
      return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value
    case "list":
      return value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
    default:
      return value
  }
}

/** A value's source on the command line: the n-th positional argument, or an option. */
type Source = { readonly at: number } | { readonly option: Option; readonly former?: Option }

const isContainer = (entry: ManifestCommand, name: string) =>
  CONTAINER_FLAGS[name] !== undefined && GROUPS[entry.command.split(" ")[0] ?? ""]?.own !== name

/** The commander command of one catalogue entry, its action handed the invocation. */
const addCommand = (
  parent: Command,
  action: string,
  entry: ManifestCommand,
  run: (invocation: Invocation) => Promise<void>,
  options: { readonly hidden?: boolean; readonly isDefault?: boolean } = {}
) => {
  // Made by the parent, so it inherits the program's settings (exit override, output, help).
  const command = parent.command(action, {
    ...(options.hidden === true ? { hidden: true } : {}),
    ...(options.isDefault === true ? { isDefault: true } : {})
  }).description(entry.summary)
  const positional: Array<string> = []
  const params: Array<readonly [string, Source]> = []
  for (const p of entry.params) {
    if (isContainer(entry, p.name)) {
      const flag = CONTAINER_FLAGS[p.name] ?? ""
      const option = new Option(`--${flag} <${p.name}>`, `the ${flag}`)
      if (p.required) option.makeOptionMandatory()
      command.addOption(option)
      params.push([p.name, { option }])
    } else {
      command.argument(p.required ? `<${p.name}>` : `[${p.name}]`, p.name.replaceAll("_", " "))
      params.push([p.name, { at: positional.length }])
      positional.push(p.name)
    }
  }
  const fields: Array<readonly [ManifestCommand["fields"][number], Source]> = []
  for (const field of entry.fields.filter((f) => entry.arguments.includes(f.name))) {
    command.argument(field.required ? `<${field.name}>` : `[${field.name}]`, field.name.replaceAll("_", " ") + (field.choices === undefined ? "" : ` (${field.choices.join(", ")})`))
    fields.push([field, { at: positional.length }])
    positional.push(field.name)
  }
  const headers: Array<readonly [string, Option]> = entry.headers.map((name) => [name, new Option(`--${name} <value>`, `${name} header`)])
  for (const [, option] of headers) command.addOption(option)
  for (const field of entry.fields.filter((f) => !entry.arguments.includes(f.name))) {
    const container = CONTAINER_FLAGS[field.name]
    const label = field.name.replaceAll("_", " ")
    const flag = container ?? flagOf(field.name)
    const option = field.kind === "boolean"
      ? new Option(`--${flag}`, label)
      : field.kind === "map"
      ? new Option(`--${flag} <key=value>`, `${label} entry (repeatable)`).argParser(collectPair)
      : field.kind === "list"
      ? new Option(`--${flag} <a,b,...>`, `${label} (comma-separated)`)
      : new Option(`--${flag} <${container === undefined ? (field.kind === "number" ? "n" : "value") : field.name}>`, container === undefined ? label : `the ${container}${field.required ? " (required)" : ""}`)
    if (field.choices !== undefined) option.choices(field.choices)
    if (field.required && container === undefined) option.makeOptionMandatory()
    command.addOption(option)
    const former = container === undefined ? undefined : new Option(`--${FORMER_FLAGS[field.name]} <${field.name}>`).hideHelp()
    if (former !== undefined) command.addOption(former)
    if (field.nullable) command.addOption(new Option(`--no-${flag}`, `clear ${label}`))
    fields.push([field, former === undefined ? { option } : { option, former }])
  }
  const extra = EXTRA_OPTIONS[entry.operation]?.() ?? []
  for (const option of extra) command.addOption(option)

  command.action((...args: ReadonlyArray<unknown>) => {
    const values = args.slice(0, positional.length)
    const opts = command.optsWithGlobals<Record<string, unknown>>()
    const read = (source: Source): unknown =>
      "at" in source
        ? values[source.at]
        : opts[source.option.attributeName()] ?? (source.former === undefined ? undefined : opts[source.former.attributeName()])
    const routeParams: Record<string, string> = {}
    for (const [name, source] of params) {
      const value = read(source)
      if (typeof value === "string") routeParams[name] = value
    }
    const input: Record<string, unknown> = {}
    for (const [field, source] of fields) {
      const value = read(source)
      if (value !== undefined) input[field.name] = convert(field.kind, value)
      // A container flag has a former spelling beside it, so commander cannot require it itself.
      else if (field.required && "option" in source) command.error(`error: required option '${source.option.flags}' not specified`, { exitCode: 2 })
    }
    const headerValues: Record<string, string> = {}
    for (const [name, option] of headers) {
      const value = opts[option.attributeName()]
      if (typeof value === "string") headerValues[name] = value
    }
    return run({
      operation: entry.operation,
      params: routeParams,
      input,
      headers: headerValues,
      ids: values.filter((v): v is string => typeof v === "string"),
      apiKey: typeof opts["apiKey"] === "string" ? opts["apiKey"] : undefined,
      json: opts["json"] === true,
      extra: Object.fromEntries(extra.map((o) => [o.attributeName(), opts[o.attributeName()]]))
    })
  })
}

/**
 * Adds every catalogue command of the manifest, grouped by its first word; a former
 * spelling is a hidden command (a one-word spelling that names the group, `outbox`, runs
 * the command when the group is given alone).
 */
export const addCatalogueCommands = (
  program: Command,
  manifest: ReadonlyArray<ManifestCommand>,
  run: (invocation: Invocation) => Promise<void>
) => {
  const groups = new Map<string, Command>()
  const groupOf = (name: string, hidden: boolean) => {
    let group = groups.get(name)
    if (group === undefined) {
      group = program.command(name, hidden ? { hidden: true } : {}).description(GROUPS[name]?.about ?? name)
      groups.set(name, group)
    }
    return group
  }
  const spellings = manifest.flatMap((entry) => [
    { entry, words: entry.command.split(" "), hidden: false },
    ...entry.aliases.map((alias) => ({ entry, words: alias.split(" "), hidden: true }))
  ])
  // Visible groups first, so a group that also has hidden spellings stays visible.
  for (const { entry, words, hidden } of [...spellings.filter((s) => !s.hidden), ...spellings.filter((s) => s.hidden)]) {
    const [first = "", ...rest] = words
    if (rest.length > 0) {
      addCommand(groupOf(first, hidden), rest.join(" "), entry, run, { hidden })
    } else if (groups.has(first)) {
      // The group's own name: its default action.
      addCommand(groups.get(first)!, `${first}-default`, entry, run, { hidden: true, isDefault: true })
    } else {
      addCommand(program, first, entry, run, { hidden })
    }
  }
}
