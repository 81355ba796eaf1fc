/**
 * Writes the generated part of the reply corpus (packages/testkit/fixtures/mail/replies):
 * every client shape of clients.ts in every language of languages.ts where that client
 * ships the locale, plus the single specimens of specimens.ts. Each case is an `.eml` and
 * a `.json` holding the client, the language and what the sender typed.
 *
 *   node --import tsx scripts/reply-corpus/main.ts
 *
 * Hand-written cases in the same folder (no generator entry) are left alone; a generated
 * name that already exists is overwritten, so the script is the source of those files.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import {
  appleMail,
  appleMailSignatureBelow,
  type Case,
  gmail,
  gmailSignatureBelow,
  hotmail,
  iosMail,
  outlookDesktop,
  outlookMobile,
  outlookWeb,
  thunderbird,
  thunderbirdInline,
  thunderbirdSignatureBelow
} from "./clients.ts"
import { languages } from "./languages.ts"
import { specimens } from "./specimens.ts"

const dir = fileURLToPath(new URL("../../packages/testkit/fixtures/mail/replies/", import.meta.url))

const lang = (code: string) => {
  const found = languages.find((l) => l.code === code)
  if (found === undefined) throw new Error(`no language ${code}`)
  return found
}

export const cases = (): Array<Case> => [
  ...languages.map((l) => gmail(l)),
  ...languages.map(appleMail),
  ...languages.map(iosMail),
  ...languages.map(outlookDesktop),
  ...languages.map((l) => thunderbird(l)),
  ...["en", "de", "fr", "es", "ja", "ko", "he", "ar", "cs", "tr", "zh"].map((c) => outlookWeb(lang(c))),
  ...["ko", "tr", "cs", "pt"].map((c) => gmail(lang(c), "android")),
  ...["sv", "ar"].map((c) => gmail(lang(c), "ios")),
  ...["de", "fr", "es"].map((c) => outlookMobile(lang(c), "iOS")),
  ...["pl", "ja"].map((c) => outlookMobile(lang(c), "Android")),
  ...["de", "fr", "ru", "ja", "pl", "ko"].map((c) => thunderbirdInline(lang(c))),
  ...["en", "ru", "zh"].map((c) => thunderbird(lang(c), "top")),
  // Shapes met on real clients' mail (issue 26), each in every language: Gmail's plain text
  // breaking the attribution inside the sender's address; Hotmail's divider and header
  // block, and Outlook on the web's, sent as HTML alone; a bulleted reply whose signature
  // sits below the quote, as Gmail, Thunderbird and Apple Mail place it.
  ...languages.map((l) => gmail(l, "web", "wrapped at the address")),
  ...languages.map((l) => hotmail(l, "alternative")),
  ...languages.map((l) => hotmail(l, "html-only")),
  ...languages.map((l) => outlookWeb(l, "html-only")),
  ...languages.map(gmailSignatureBelow),
  ...languages.map(thunderbirdSignatureBelow),
  ...languages.map(appleMailSignatureBelow),
  ...specimens()
]

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split("/").pop() ?? "")) {
  const all = cases()
  const names = new Set<string>()
  for (const c of all) {
    if (names.has(c.name)) throw new Error(`duplicate case ${c.name}`)
    names.add(c.name)
    writeFileSync(`${dir}${c.name}.eml`, c.eml)
    const expected = { client: c.client, language: c.language, extracted_text: c.text, ...(c.html === undefined ? {} : { extracted_html: c.html }) }
    writeFileSync(`${dir}${c.name}.json`, `${JSON.stringify(expected, null, 2)}\n`)
  }
  console.log(`${all.length} cases written`)
}
