/**
 * The catalogue as the command line needs it, without loading core: for each operation with
 * a CLI face, its command, summary, who may call it, how it answers, its path parameters,
 * named headers and input fields (each field's kind read from its JSON Schema). inboxctl
 * builds its whole command tree from this, so `--help` and a usage error load commander and
 * this data only; the engine is loaded when a command runs here rather than in a server.
 *
 * The settings flags come the same way from core's settings registry: each sets the INBOX_*
 * variable of the same meaning.
 *
 * This file holds the types; the data is manifest.generated.ts, written from core's
 * catalogue and settings (catalogue-manifest.ts) by `pnpm --filter @inbox/cli generate` and
 * again by every build; a test fails when the file is stale.
 */
export type FieldKind = "string" | "number" | "boolean" | "list" | "map"

export interface ManifestField {
  readonly name: string
  readonly kind: FieldKind
  readonly required: boolean
  /** The field accepts null: `--no-<field>` clears it. */
  readonly nullable: boolean
  readonly choices?: ReadonlyArray<string>
}

export interface ManifestCommand {
  /** The operation's name in the catalogue (`inboxes.create`). */
  readonly operation: string
  readonly command: string
  readonly aliases: ReadonlyArray<string>
  readonly summary: string
  readonly access: "public" | "member" | "session" | "operator" | "local"
  readonly output: "json" | "list" | "empty" | "download" | "session"
  readonly params: ReadonlyArray<{ readonly name: string; readonly required: boolean }>
  readonly headers: ReadonlyArray<string>
  readonly fields: ReadonlyArray<ManifestField>
  /** Input fields given positionally, after the path parameters. */
  readonly arguments: ReadonlyArray<string>
}

/** A setting as a flag: of `serve`, of every storage command, or the client's own. */
export interface ManifestSetting {
  readonly env: string
  /** As commander spells it: `--port <port>`; a switch (no value) sets the variable to `1`. */
  readonly flag: string
  readonly scope: "serve" | "storage" | "client"
  /** The help line, with the default. */
  readonly help: string
}
