/**
 * Inbox usernames: the local part of an inbox address.
 *
 * Lowercase letters, digits, `.`, `_`, `-`; 1-64 characters; starting and ending with a
 * letter or digit. Reserved names (RFC 2142 infrastructure mailboxes and the usual system
 * names) are refused with 422 reserved_username so nobody can receive the mail meant for
 * them; business roles such as support or sales stay available.
 */
export const RESERVED_USERNAMES: ReadonlySet<string> = new Set([
  // RFC 2142 infrastructure mailboxes
  "abuse", "hostmaster", "noc", "postmaster", "security", "webmaster",
  // system and administrative names
  "admin", "administrator", "mailer-daemon", "nobody", "root", "system", "uucp", "usenet"
])

const USERNAME_PATTERN = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/

/** A reason the username is malformed, or undefined when it is well-formed. */
export const usernameProblem = (username: string): string | undefined =>
  !USERNAME_PATTERN.test(username)
    ? "Usernames are 1-64 characters: lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit"
    : username.includes("..")
    ? "Usernames cannot contain consecutive dots"
    : undefined
