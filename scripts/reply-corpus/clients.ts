/**
 * Client shapes of the reply corpus: one function per client, writing a reply in one
 * language the way that client lays it out (MIME tree, transfer encoding, quote markup,
 * attribution and its wrapping), together with what the sender typed, which is the
 * expected `extracted_text` / `extracted_html`. The expected values are written from the
 * template, never read back from the engine.
 */
import { Buffer } from "node:buffer"
import type { Language, Person } from "./languages.ts"
import { CRLF, escapeHtml, mailbox, message, multipart, type Part, textPart, word } from "./mime.ts"

export interface Case {
  readonly name: string
  readonly client: string
  readonly language: string
  /** a string is written as UTF-8; bytes as they are (an 8-bit body in another charset) */
  readonly eml: string | Buffer
  readonly text: string
  readonly html?: string
}

const DATE = "Mon, 4 Mar 2024 11:02:37 +0100"

export const paragraphs = (l: Language): ReadonlyArray<ReadonlyArray<string>> => [...l.reply, l.signOff]
export const replyText = (l: Language): string => paragraphs(l).map((p) => p.join("\n")).join("\n\n")
export const quotedText = (l: Language): string => l.quoted.map((p) => p.join("\n")).join("\n\n")
const quoteLines = (text: string, marker = "> "): string =>
  text.split("\n").map((line) => (line === "" ? marker.trimEnd() : marker + line)).join("\n")

/** Gmail's plain text wraps lines at 78 characters, preferring a space. */
const wrap = (line: string, width = 76): Array<string> => {
  const out: Array<string> = []
  let rest = line
  while ([...rest].length > width) {
    const chars = [...rest]
    const head = chars.slice(0, width).join("")
    const space = head.lastIndexOf(" ")
    const at = space > 0 ? space : head.length
    out.push(rest.slice(0, at))
    rest = rest.slice(at).trimStart()
  }
  out.push(rest)
  return out
}

const headers = (
  l: Language,
  extra: { from?: Person; to?: Person; subject?: string; messageId: string; mailer?: string; more?: ReadonlyArray<string> }
): Array<string> => [
  `From: ${mailbox(extra.from ?? l.sender)}`,
  `To: ${mailbox(extra.to ?? l.recipient)}`,
  `Subject: ${word(extra.subject ?? `Re: ${l.subject}`)}`,
  `Date: ${DATE}`,
  `Message-ID: <${extra.messageId}>`,
  `In-Reply-To: <orig-${l.code}-4471@example.net>`,
  `References: <orig-${l.code}-4471@example.net>`,
  ...(extra.mailer === undefined ? [] : [`X-Mailer: ${extra.mailer}`]),
  ...(extra.more ?? [])
]

const dirAttr = (l: Language): string => (l.dir === "rtl" ? "rtl" : "ltr")
const linkedAttribution = (line: string, p: Person): string =>
  escapeHtml(line).replace(escapeHtml(p.address), `<a href="mailto:${p.address}">${p.address}</a>`)

// --- Gmail -----------------------------------------------------------------------------

const gmailBody = (l: Language): string =>
  paragraphs(l).map((p) => p.map((line) => `<div>${escapeHtml(line)}</div>`).join("")).join("<div><br></div>")

/** Gmail's plain text breaks a long attribution inside the angle brackets, before the
 * address ("... Иван Петров <" over "ivan.petrov@example.ru>:"); forced here whatever the
 * line's length, so that every language has the break. */
const breakBeforeAddress = (line: string, address: string): Array<string> => {
  const at = line.indexOf(address)
  if (at < 0) throw new Error(`no ${address} in ${line}`)
  return [line.slice(0, at).trimEnd(), line.slice(at)]
}

export const gmail = (l: Language, variant: "web" | "android" | "ios" = "web", attribution: "one line" | "wrapped at the address" = "one line"): Case => {
  const boundary = variant === "web" ? "000000000000a7c3f1061299be2c" : "0000000000003b9e5a0612a0c1d4"
  const attr = attribution === "one line" ? wrap(l.gmail) : breakBeforeAddress(l.gmail, l.recipient.address)
  const text = [replyText(l), "", ...attr, "", quoteLines(quotedText(l)), ">", ""].join("\n")
  const body = variant === "web" ? `<div dir="${dirAttr(l)}">${gmailBody(l)}</div>` : `<div dir="auto">${gmailBody(l)}</div>`
  const html = `${body}<br>${gmailQuote(l)}`
  const wrapped = attribution === "one line" ? "" : "-wrapped-address"
  return {
    name: `gmail-${variant}${wrapped}-${l.name.toLowerCase()}`,
    client: variant === "web" ? "Gmail" : `Gmail ${variant === "ios" ? "iOS" : "Android"}`,
    language: l.name,
    eml: message(headers(l, { messageId: `CAKw3Jr0${l.code}${variant}${wrapped}Yp8Tq@mail.gmail.com` }), multipart("alternative", boundary, [textPart(text), textPart(html, { subtype: "html" })])),
    text: replyText(l),
    html: body
  }
}

const gmailQuote = (l: Language): string =>
  `<div class="gmail_quote"><div dir="${dirAttr(l)}" class="gmail_attr">${linkedAttribution(l.gmail, l.recipient)}<br></div><blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex"><div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map((x) => `<div>${escapeHtml(x)}</div>`).join("")).join("<div><br></div>")}</div>
</blockquote></div>`

/** A reply typed as a greeting and a bulleted list (the answers of l.inline), and the
 * sender's signature (name and address). */
const greeting = (l: Language): ReadonlyArray<string> => l.reply[0] ?? []
const bullets = (l: Language): ReadonlyArray<string> => l.inline.map(([, answer]) => answer)
const signature = (l: Language): ReadonlyArray<string> => [l.sender.name, l.sender.address]

/** Gmail's default with a signature: the signature goes below the quoted text, after
 * Gmail's "-- " line; the list is a `<ul>` in HTML and "   - " lines in text. */
export const gmailSignatureBelow = (l: Language): Case => {
  const typed = [...greeting(l), "", ...bullets(l).map((b) => `   - ${b}`)].join("\n")
  const text = [typed, "", ...wrap(l.gmail), "", quoteLines(quotedText(l)), ">", "", "-- ", ...signature(l), ""].join("\n")
  const [name, address] = signature(l)
  const body = `<div dir="${dirAttr(l)}">${greeting(l).map((x) => `<div>${escapeHtml(x)}</div>`).join("")}<div><br></div><ul>${bullets(l).map((b) => `<li>${escapeHtml(b)}</li>`).join("")}</ul></div>`
  const sig = `<span class="gmail_signature_prefix">-- </span><br><div dir="${dirAttr(l)}" class="gmail_signature" data-smartmail="gmail_signature"><div dir="${dirAttr(l)}">${escapeHtml(name ?? "")}<div>${escapeHtml(address ?? "")}</div></div></div>`
  const html = `${body}<br>${gmailQuote(l)}<br clear="all"><div><br></div>${sig}
`
  return {
    name: `gmail-bullets-signature-below-${l.name.toLowerCase()}`,
    client: "Gmail",
    language: l.name,
    eml: message(headers(l, { messageId: `CAKw3Jr0${l.code}sigbelowYp8Tq@mail.gmail.com` }), multipart("alternative", "000000000000c4d1e2061299be3d", [textPart(text), textPart(html, { subtype: "html" })])),
    text: `${typed}\n\n-- \n${signature(l).join("\n")}`,
    html: `${body}<br>${sig}`
  }
}

// --- Apple Mail (macOS) and iOS Mail -----------------------------------------------------

export const appleMail = (l: Language): Case => {
  const text = [replyText(l), "", quoteLines([l.apple, "", quotedText(l)].join("\n")), ""].join("\n")
  const head = `<html aria-label="message body"><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head><body style="overflow-wrap: break-word; -webkit-nbsp-mode: space; line-break: after-white-space;">`
  const body = paragraphs(l).map((p) => p.map((line) => `<div>${escapeHtml(line)}</div>`).join("")).join("<div><br></div>")
  const html = `${head}${body}<div><br><blockquote type="cite"><div>${escapeHtml(l.apple)}</div><br class="Apple-interchange-newline"><div>${l.quoted.map((p) => p.map((x) => `<div>${escapeHtml(x)}</div>`).join("")).join("<div><br></div>")}</div></blockquote></div><br></body></html>`
  return {
    name: `apple-mail-macos-${l.name.toLowerCase()}`,
    client: "Apple Mail",
    language: l.name,
    eml: message(
      headers(l, { messageId: `8E2F4C1A-${l.code.toUpperCase()}7B-4E9F-A2C5-1D6E8F0B3A7C@example.net`, mailer: "Apple Mail (2.3774.400.31)" }),
      multipart("alternative", `Apple-Mail=_5C1D3E2A-8F4B-4C7A-9D1E-${l.code}3F4A5C6D7E`, [
        textPart(text),
        textPart(html, { subtype: "html" })
      ]),
      "Mime-Version: 1.0 (Mac OS X Mail 16.0 \\(3774.400.31\\))"
    ),
    text: replyText(l),
    html: `${head}${body}</body></html>`
  }
}

/** Apple Mail with "Place signature above quoted text" turned off: the signature goes
 * below the quote, with no "-- " line (Apple Mail writes none); the list is a
 * `<ul class="MailOutline">` in HTML and tab-bullet-tab lines in text. */
export const appleMailSignatureBelow = (l: Language): Case => {
  const typed = [...greeting(l), "", ...bullets(l).map((b) => `\t•\t${b}`)].join("\n")
  const text = [typed, "", quoteLines([l.apple, "", quotedText(l)].join("\n")), "", ...signature(l), ""].join("\n")
  const head = `<html aria-label="message body"><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head><body style="overflow-wrap: break-word; -webkit-nbsp-mode: space; line-break: after-white-space;">`
  const body = `${greeting(l).map((x) => `<div>${escapeHtml(x)}</div>`).join("")}<div><br></div><ul class="MailOutline">${bullets(l).map((b) => `<li>${escapeHtml(b)}</li>`).join("")}</ul>`
  const sig = `<div>${signature(l).map((x) => `<div>${escapeHtml(x)}</div>`).join("")}</div>`
  const html = `${head}${body}<div><br><blockquote type="cite"><div>${escapeHtml(l.apple)}</div><br class="Apple-interchange-newline"><div>${l.quoted.map((p) => p.map((x) => `<div>${escapeHtml(x)}</div>`).join("")).join("<div><br></div>")}</div></blockquote></div><br>${sig}<br></body></html>`
  return {
    name: `apple-mail-bullets-signature-below-${l.name.toLowerCase()}`,
    client: "Apple Mail",
    language: l.name,
    eml: message(
      headers(l, { messageId: `5D3F6A2B-${l.code.toUpperCase()}1C-4B8E-9F0A-2C4D6E8F1A3B@example.net`, mailer: "Apple Mail (2.3774.400.31)" }),
      multipart("alternative", `Apple-Mail=_7E2F4A6C-1B3D-4E5F-8A9B-${l.code}0C1D2E3F4A`, [textPart(text), textPart(html, { subtype: "html" })]),
      "Mime-Version: 1.0 (Mac OS X Mail 16.0 \\(3774.400.31\\))"
    ),
    text: `${typed}\n\n${signature(l).join("\n")}`,
    html: `${head}${body}<div><br></div>${sig}</body></html>`
  }
}

export const iosMail = (l: Language): Case => {
  const typed = `${replyText(l)}\n\n${l.iphone}`
  const text = [typed, "", quoteLines([l.apple, "", quotedText(l)].join("\n")), ""].join("\n")
  const head = `<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head><body dir="auto">`
  const body = `<div dir="${dirAttr(l)}">${paragraphs(l).map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div><div dir="${dirAttr(l)}"><br></div><div dir="${dirAttr(l)}">${escapeHtml(l.iphone)}</div>`
  const html = `${head}${body}<div dir="${dirAttr(l)}"><br><blockquote type="cite">${escapeHtml(l.apple)}<br><br></blockquote></div><blockquote type="cite"><div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div></blockquote></body></html>`
  return {
    name: `iphone-mail-${l.name.toLowerCase()}`,
    client: "iOS Mail",
    language: l.name,
    eml: message(
      headers(l, { messageId: `A1B2C3D4-${l.code.toUpperCase()}E5-4F60-8A9B-0C1D2E3F4A5B@example.net`, mailer: "iPhone Mail (21D61)" }),
      multipart("alternative", `Apple-Mail-${l.code}9A8B7C6D-5E4F-3A2B-1C0D-9E8F7A6B5C4D`, [
        textPart(text, { encoding: "quoted-printable" }),
        textPart(html, { subtype: "html" })
      ]),
      "Mime-Version: 1.0 (1.0)"
    ),
    text: typed,
    html: `${head}${body}</body></html>`
  }
}

// --- Outlook ---------------------------------------------------------------------------

const outlookHeaderText = (l: Language, separator: string): string => {
  const [from, sent, to, subject] = l.outlook
  return [
    ...(separator === "" ? [] : [separator]),
    `${from}: ${l.recipient.name} <${l.recipient.address}> `,
    `${sent}: ${l.outlookDate}`,
    `${to}: ${l.sender.name} <${l.sender.address}>`,
    `${subject}: ${l.subject}`
  ].join("\n")
}

const outlookHeaderHtml = (l: Language, sep = "<br>\n"): string => {
  const [from, sent, to, subject] = l.outlook
  return [
    `<b>${from}:</b> ${escapeHtml(`${l.recipient.name} <${l.recipient.address}>`)} `,
    `<b>${sent}:</b> ${escapeHtml(l.outlookDate)}`,
    `<b>${to}:</b> ${escapeHtml(`${l.sender.name} <${l.sender.address}>`)}`,
    `<b>${subject}:</b> ${escapeHtml(l.subject)}`
  ].join(sep)
}

const OUTLOOK_HEAD = `<html xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" xmlns:w="urn:schemas-microsoft-com:office:word" xmlns:m="http://schemas.microsoft.com/office/2004/12/omml" xmlns="http://www.w3.org/TR/REC-html40">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<meta name="Generator" content="Microsoft Word 15 (filtered medium)">
<style><!--
p.MsoNormal, li.MsoNormal, div.MsoNormal
	{margin:0cm;
	font-size:11.0pt;
	font-family:"Calibri",sans-serif;}
span.EmailStyle18
	{mso-style-type:personal-reply;
	font-family:"Calibri",sans-serif;
	color:windowtext;}
@page WordSection1
	{size:612.0pt 792.0pt;
	margin:70.85pt 70.85pt 2.0cm 70.85pt;}
div.WordSection1
	{page:WordSection1;}
--></style>
</head>`

const outlookIds = (l: Language) => {
  const id = `DM6PR11MB4657${l.code.toUpperCase()}1E0F2A3B4C5D6E7F8A9`
  return {
    messageId: `${id}@DM6PR11MB4657.namprd11.prod.outlook.com`,
    boundary: `_000_${id}DM6PR11_`,
    more: ["Thread-Topic: " + word(l.subject), "Thread-Index: AQHabn6PR11MKc2vW9nQ0XHk9OLE8n1AwAAB3xA=", `Content-Language: ${l.code}`, "X-MS-Has-Attach:", "X-MS-TNEF-Correlator:"]
  }
}

const msoParagraphs = (l: Language): string =>
  paragraphs(l).map((p) => p.map((line) => `<p class="MsoNormal">${escapeHtml(line)}<o:p></o:p></p>`).join("\n")).join(`\n<p class="MsoNormal"><o:p>&nbsp;</o:p></p>\n`)

export const outlookDesktop = (l: Language): Case => {
  const ids = outlookIds(l)
  const dir = l.dir === "rtl" ? ` dir="rtl"` : ""
  const text = [replyText(l), "", outlookHeaderText(l, ""), "", quotedText(l), "", ""].join("\n")
  const kept = `${OUTLOOK_HEAD}
<body lang="${l.code.toUpperCase()}" link="#0563C1" vlink="#954F72" style="word-wrap:break-word"${dir}>
<div class="WordSection1">
${msoParagraphs(l)}`
  const html = `${kept}
<p class="MsoNormal"><o:p>&nbsp;</o:p></p>
<div>
<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">
<p class="MsoNormal">${outlookHeaderHtml(l)}<o:p></o:p></p>
</div>
</div>
<p class="MsoNormal"><o:p>&nbsp;</o:p></p>
${l.quoted.map((p) => p.map((x) => `<p class="MsoNormal">${escapeHtml(x)}<o:p></o:p></p>`).join("\n")).join(`\n<p class="MsoNormal"><o:p>&nbsp;</o:p></p>\n`)}
</div>
</body>
</html>
`
  return {
    name: `outlook-windows-${l.name.toLowerCase()}`,
    client: "Outlook desktop",
    language: l.name,
    eml: message(
      headers(l, { subject: `${l.re} ${l.subject}`, messageId: ids.messageId, more: ids.more }),
      multipart("alternative", ids.boundary, [textPart(text, { charset: "utf-8" }), textPart(html, { subtype: "html", charset: "utf-8" })])
    ),
    text: replyText(l),
    html: `${kept}\n</div>\n</body>\n</html>`
  }
}

const owaBody = (l: Language): string =>
  paragraphs(l).map((p) => p.map((line) => `<div class="elementToProof" style="font-family: Aptos, Aptos_EmbeddedFont, Aptos_MSFontService, Calibri, Helvetica, sans-serif; font-size: 12pt; color: rgb(0, 0, 0);">${escapeHtml(line)}</div>`).join("\n")).join(`\n<div class="elementToProof" style="font-family: Aptos, Aptos_EmbeddedFont, Aptos_MSFontService, Calibri, Helvetica, sans-serif; font-size: 12pt; color: rgb(0, 0, 0);"><br></div>\n`)

/** `html-only`: Outlook on the web sending HTML alone, as it does for some accounts; the
 * text is then derived from the HTML, where the `<hr>` divider above the From/Sent/To/Subject
 * block becomes a rule. */
export const outlookWeb = (l: Language, form: "alternative" | "html-only" = "alternative"): Case => {
  const ids = outlookIds(l)
  const text = [replyText(l), "", outlookHeaderText(l, "________________________________"), "", quotedText(l), ""].join("\n")
  const head = `<html>
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<style type="text/css" style="display:none;"> P {margin-top:0;margin-bottom:0;} </style>
</head>
<body dir="${dirAttr(l)}">
${owaBody(l)}`
  const html = `${head}
<div id="appendonsend"></div>
<hr style="display:inline-block;width:98%" tabindex="-1">
<div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt" color="#000000">${outlookHeaderHtml(l, "<br>")}</font>
<div>&nbsp;</div>
</div>
<div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div>
</body>
</html>
`
  const htmlPart = textPart(html, { subtype: "html", charset: "utf-8" })
  return {
    name: `outlook-web-${form === "alternative" ? "reply" : "html-only"}-${l.name.toLowerCase()}`,
    client: "Outlook web",
    language: l.name,
    eml: message(
      headers(l, { subject: `${l.re} ${l.subject}`, messageId: ids.messageId.replace("DM6", form === "alternative" ? "PA4" : "PA7"), more: ids.more }),
      form === "alternative"
        ? multipart("alternative", ids.boundary.replace("DM6", "PA4"), [textPart(text, { charset: "utf-8" }), htmlPart])
        : htmlPart
    ),
    text: replyText(l),
    html: `${head}\n</body>\n</html>`
  }
}

export const outlookMobile = (l: Language, os: "iOS" | "Android"): Case => {
  const ids = outlookIds(l)
  const footer = `Get Outlook for ${os}<https://aka.ms/${os === "iOS" ? "o0ukef" : "AAb9ysg"}>`
  const typed = `${replyText(l)}\n\n${footer}`
  const text = [typed, outlookHeaderText(l, "________________________________"), "", quotedText(l), ""].join("\n")
  const head = `<html><head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8"></head><body>`
  const body = `<div dir="auto">${paragraphs(l).map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div><div id="ms-outlook-mobile-signature" dir="auto"><div dir="auto"><br></div>Get <a href="https://aka.ms/${os === "iOS" ? "o0ukef" : "AAb9ysg"}">Outlook for ${os}</a></div>`
  const html = `${head}${body}<div id="mail-editor-reference-message-container" dir="auto"><div dir="auto"><br></div><hr style="display:inline-block;width:98%" tabindex="-1"><div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt" color="#000000">${outlookHeaderHtml(l, "<br>")}</font><div>&nbsp;</div></div><div><p>${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("</p><p>")}</p></div></div></body></html>`
  return {
    name: `outlook-${os.toLowerCase()}-${l.name.toLowerCase()}`,
    client: "Outlook mobile",
    language: l.name,
    eml: message(
      headers(l, { messageId: ids.messageId.replace("DM6", "SA1"), more: ids.more }),
      multipart("alternative", ids.boundary.replace("DM6", "SA1"), [textPart(text, { charset: "utf-8" }), textPart(html, { subtype: "html", charset: "utf-8" })])
    ),
    text: typed,
    html: `${head}${body}</body></html>`
  }
}

// --- Thunderbird -----------------------------------------------------------------------

/** A paragraph in format=flowed: each line but the last ends in a space (soft break). */
const flowed = (p: ReadonlyArray<string>): string => p.map((line, i) => (i < p.length - 1 ? `${line} ` : line)).join("\n")

export const thunderbird = (l: Language, position: "bottom" | "top" = "bottom"): Case => {
  const reply = paragraphs(l).map(flowed).join("\n\n")
  const quote = [l.thunderbird, quoteLines(quotedText(l))].join("\n")
  const text = position === "bottom" ? `${quote}\n\n${reply}\n` : `${reply}\n\n${quote}\n`
  return {
    name: `thunderbird-${position}-${l.name.toLowerCase()}`,
    client: "Thunderbird",
    language: l.name,
    eml: message(
      [
        ...headers(l, { messageId: `b7e1c2d4-${l.code}-4f3a-9e8d-7c6b5a4f3e2d@example.net` }),
        "User-Agent: Mozilla Thunderbird",
        `Content-Language: ${l.code}`
      ],
      textPart(text, { encoding: "8bit", flowed: true })
    ),
    // flowed lines join into one line per paragraph
    text: paragraphs(l).map((p) => p.join(" ")).join("\n\n")
  }
}

/** Thunderbird's "place my signature below the quote": the signature after the quote,
 * behind Thunderbird's "-- " line; the list typed as "- " lines. */
export const thunderbirdSignatureBelow = (l: Language): Case => {
  const typed = [...greeting(l), "", ...bullets(l).map((b) => `- ${b}`)].join("\n")
  const text = [typed, "", l.thunderbird, quoteLines(quotedText(l)), "", "-- ", ...signature(l), ""].join("\n")
  return {
    name: `thunderbird-bullets-signature-below-${l.name.toLowerCase()}`,
    client: "Thunderbird",
    language: l.name,
    eml: message(
      [...headers(l, { messageId: `d9a3e4f6-${l.code}-4c5d-8e9f-5c4b3a2f1e0d@example.net` }), "User-Agent: Mozilla Thunderbird", `Content-Language: ${l.code}`],
      textPart(text, { encoding: "8bit", flowed: true })
    ),
    text: `${typed}\n\n-- \n${signature(l).join("\n")}`
  }
}

/** Inline answers under each question; the greeting and the closing quote are history. */
export const thunderbirdInline = (l: Language): Case => {
  const [[q1, a1], [q2, a2]] = l.inline as [[string, string], [string, string]]
  const text = [l.thunderbird, `> ${q1}`, "", a1, "", `> ${q2}`, "", a2, "", `> ${l.recipient.name}`, ""].join("\n")
  return {
    name: `thunderbird-inline-${l.name.toLowerCase()}`,
    client: "Thunderbird",
    language: l.name,
    eml: message(
      [...headers(l, { messageId: `c8f2d3e5-${l.code}-4a4b-8f9e-6d5c4b3a2f1e@example.net` }), "User-Agent: Mozilla Thunderbird"],
      textPart(text, { encoding: "8bit", flowed: true })
    ),
    text: [`> ${q1}`, "", a1, "", `> ${q2}`, "", a2].join("\n")
  }
}

// --- other clients ---------------------------------------------------------------------

/** Hotmail's document head, up to its body. */
export const hotmailHead = `<html>
<head>
<style><!--
.hmmessage P
{
margin:0px;
padding:0px
}
body.hmmessage
{
font-size: 12pt;
font-family:Calibri
}
--></style></head>`

/** Hotmail and the old Outlook.com: the reply in `hmmessage` markup, the history under
 * `<hr id="stopSpelling">` and a header block in Hotmail's order (Date, Subject, From, To;
 * bare addresses), in the locale's labels. The text alternative quotes the block and the
 * message with ">"; `html-only` sends the HTML alone, whose text is then derived from it
 * (the rule above a block that starts with Date). */
export const hotmail = (l: Language, form: "alternative" | "html-only"): Case => {
  const [from, , to, subject] = l.outlook
  const block = [`${l.dateLabel}: Mon, 4 Mar 2024 10:15:00 +0100`, `${subject}: ${l.subject}`, `${from}: ${l.recipient.address}`, `${to}: ${l.sender.address}`]
  const text = `${replyText(l)}\n\n${quoteLines([...block, "", quotedText(l)].join("\n"))}\n`
  const head = `${hotmailHead}
<body class='hmmessage'><div dir='${dirAttr(l)}'>`
  const body = paragraphs(l).map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")
  const tail = ` \t\t \t   \t\t  </body>
</html>`
  const html = `${head}${body}<br><br><div><hr id="stopSpelling">${block.map(escapeHtml).join("<br>")}<br><br><div dir='${dirAttr(l)}'>${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div></div></div>${tail}`
  const htmlPart = textPart(html, { subtype: "html" })
  return {
    name: `hotmail-${form === "alternative" ? "reply" : "html-only"}-${l.name.toLowerCase()}`,
    client: "Hotmail",
    language: l.name,
    eml: message(
      headers(l, { subject: `RE: ${l.subject}`, messageId: `BLU168-W${l.code.toUpperCase()}21A1B2C3D4E5F6${form === "alternative" ? "" : "7"}@phx.gbl`, more: ["Importance: Normal"] }),
      form === "alternative" ? multipart("alternative", `_7a1b2c3d-4e5f-6a7b-8c9d-${l.code}0e1f2a3b4c_`, [textPart(text), htmlPart]) : htmlPart
    ),
    text: replyText(l),
    html: `${head}${body}</div>${tail}`
  }
}

export const yahoo = (l: Language): Case => {
  const attr = l.gmail.replace(/^.*$/, `On Monday, March 4, 2024 at 10:15:00 AM GMT+1, ${l.recipient.name} <${l.recipient.address}> wrote:`)
  const text = `${replyText(l)}\n\n    ${attr}  \n \n ${quotedText(l).split("\n").join("\n")}\n  `
  const kept = `<html><head></head><body><div class="ydp6f1c2d3eyahoo-style-wrap" style="font-family:Helvetica Neue, Helvetica, Arial, sans-serif;font-size:13px;"><div></div>
        ${paragraphs(l).map((p) => p.map((x) => `<div dir="${dirAttr(l)}" data-setdir="false">${escapeHtml(x)}</div>`).join("")).join(`<div dir="${dirAttr(l)}" data-setdir="false"><br></div>`)}`
  const html = `${kept}<div><br></div>
        
        </div><div id="ydp3b2a1c0eyahoo_quoted_${l.code}1234567890" class="ydp3b2a1c0eyahoo_quoted">
            <div style="font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;font-size:13px;color:#26282a;">
                <div>
                    ${escapeHtml(attr)}
                </div>
                <div><br></div>
                <div><br></div>
                <div><div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div></div>
            </div>
        </div></body></html>`
  return {
    name: `yahoo-web-${l.name.toLowerCase()}`,
    client: "Yahoo",
    language: l.name,
    eml: message(
      headers(l, { messageId: `1234567890.${l.code}1234567.1709565611123@mail.yahoo.com`, mailer: "WebService/1.1.22077 YMailNorrin" }),
      multipart("alternative", `----=_Part_1234567_${l.code}987654321.1709565611122`, [
        textPart(text, { encoding: "8bit" }),
        textPart(html, { subtype: "html", encoding: "8bit" })
      ])
    ),
    text: replyText(l),
    html: `${kept}</div></body></html>`
  }
}

export const proton = (l: Language): Case => {
  const footer = "Sent with Proton Mail secure email."
  const attr = `On Monday, March 4th, 2024 at 10:15, ${l.recipient.name} <${l.recipient.address}> wrote:`
  const typed = `${replyText(l)}\n\n${footer}`
  const text = `${typed}\n\n${attr}\n\n${quoteLines(quotedText(l))}\n`
  const body = `<div style="font-family: Arial, sans-serif; font-size: 14px;">${paragraphs(l).map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div><div style="font-family: Arial, sans-serif; font-size: 14px;"><br></div>
<div class="protonmail_signature_block" style="font-family: Arial, sans-serif; font-size: 14px;">
    <div class="protonmail_signature_block-proton">
        Sent with <a href="https://proton.me/mail/home" target="_blank">Proton Mail</a> secure email.
    </div>
</div>`
  const html = `${body}
<div class="protonmail_quote">
        ${escapeHtml(attr)}<br><br>
        <blockquote class="protonmail_quote" type="cite">
            <div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div>
        </blockquote><br>
    </div>`
  return {
    name: `protonmail-${l.name.toLowerCase()}`,
    client: "Proton Mail",
    language: l.name,
    eml: message(
      headers(l, { messageId: `Xq9${l.code}T2vLkY8wZp1RmN4sHcJ6dE0fGaB3uI7oK5@proton.me` }),
      multipart("alternative", `b1_Xq9${l.code}T2vLkY8wZp1RmN4sHcJ6dE0fGaB3uI`, [
        textPart(text, { charset: "utf-8", encoding: "base64" }),
        textPart(html, { subtype: "html", charset: "utf-8", encoding: "base64" })
      ])
    ),
    text: typed,
    html: body
  }
}

export const fastmail = (l: Language): Case => {
  const attr = `On Mon, 4 Mar 2024, at 10:15, ${l.recipient.name} wrote:`
  const text = `${replyText(l)}\n\n${attr}\n${quoteLines(quotedText(l))}\n`
  const head = `<!DOCTYPE html><html><head><title></title><style type="text/css">p.MsoNormal,p.MsoNoSpacing{margin:0}</style></head><body>`
  const body = paragraphs(l).map((p) => p.map((x) => `<div>${escapeHtml(x)}</div>`).join("")).join("<div><br></div>")
  const html = `${head}${body}<div><br></div><div>${escapeHtml(attr)}</div><blockquote type="cite" id="qt" style=""><div dir="${dirAttr(l)}">${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div></blockquote><div><br></div></body></html>`
  return {
    name: `fastmail-${l.name.toLowerCase()}`,
    client: "Fastmail",
    language: l.name,
    eml: message(
      [...headers(l, { messageId: `f3a1b2c4-${l.code}-4d5e-9f60-718293a4b5c6@app.fastmail.com` }), "User-Agent: Cyrus-JMAP/3.11.0-alpha0-1234-g5678abcd"],
      multipart("alternative", `70f3c2a1e9d84b5c8a6f${l.code}1e2d3c4b5a6`, [textPart(text), textPart(html, { subtype: "html" })])
    ),
    text: replyText(l),
    html: `${head}${body}</body></html>`
  }
}

export const zimbra = (l: Language, original: string, labels: readonly [string, string, string, string, string]): Case => {
  const [from, to, sent, subject, _] = labels
  const headerLines = [`${from}: "${l.recipient.name}" <${l.recipient.address}>`, `${to}: "${l.sender.name}" <${l.sender.address}>`, `${sent}: Monday, 4 March, 2024 10:15:00`, `${subject}: ${l.subject}`]
  const text = `${replyText(l)}\n\n${original}\n${headerLines.join("\n")}\n\n${quotedText(l)}\n`
  const head = `<html><body><div style="font-family: arial, helvetica, sans-serif; font-size: 12pt; color: #000000">`
  const body = paragraphs(l).map((p) => p.map((x) => `<div>${escapeHtml(x)}</div>`).join("")).join("<div><br data-mce-bogus=\"1\"></div>")
  const html = `${head}${body}<div><br></div><hr id="zwchr" data-marker="__DIVIDER__"><div data-marker="__HEADERS__"><b>${from}: </b>"${escapeHtml(l.recipient.name)}" &lt;${l.recipient.address}&gt;<br><b>${to}: </b>"${escapeHtml(l.sender.name)}" &lt;${l.sender.address}&gt;<br><b>${sent}: </b>Monday, 4 March, 2024 10:15:00<br><b>${subject}: </b>${escapeHtml(l.subject)}<br></div><div data-marker="__QUOTED_TEXT__"><div>${l.quoted.map((p) => p.map(escapeHtml).join("<br>")).join("<br><br>")}</div></div></div></body></html>`
  return {
    name: `zimbra-${l.name.toLowerCase()}`,
    client: "Zimbra",
    language: l.name,
    eml: message(
      [...headers(l, { messageId: `${l.code}1234567.89012.1709545437123.JavaMail.zimbra@example.net`, mailer: "Zimbra 9.0.0_GA_4583 (ZimbraWebClient - FF123 (Linux)/9.0.0_GA_4583)" })],
      multipart("alternative", `=_${l.code}a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d`, [textPart(text), textPart(html, { subtype: "html" })])
    ),
    text: replyText(l),
    html: `${head}${body}</div></body></html>`
  }
}

/** A plain text part on its own, for the clients that send nothing else. */
export const plain = (
  name: string,
  client: string,
  l: Language,
  body: string,
  expected: string,
  options: { mailer?: string; charset?: string; encoding?: "quoted-printable" | "base64" | "8bit" | "7bit"; flowed?: boolean; delsp?: boolean; more?: ReadonlyArray<string>; subject?: string } = {}
): Case => ({
  name,
  client,
  language: l.name,
  eml: message(
    headers(l, { messageId: `${name}.${l.code}@example.net`, ...(options.mailer === undefined ? {} : { mailer: options.mailer }), ...(options.more === undefined ? {} : { more: options.more }), ...(options.subject === undefined ? {} : { subject: options.subject }) }),
    textPart(body, { ...(options.charset === undefined ? {} : { charset: options.charset }), encoding: options.encoding ?? "quoted-printable", ...(options.flowed === undefined ? {} : { flowed: options.flowed }), ...(options.delsp === undefined ? {} : { delsp: options.delsp }) })
  ),
  text: expected
})

export const htmlOnly = (name: string, client: string, l: Language, html: string, expectedText: string, expectedHtml: string, mailer?: string): Case => ({
  name,
  client,
  language: l.name,
  eml: message(headers(l, { messageId: `${name}.${l.code}@example.net`, ...(mailer === undefined ? {} : { mailer }) }), textPart(html, { subtype: "html" })),
  text: expectedText,
  html: expectedHtml
})

export const raw = (name: string, client: string, language: string, eml: string | Buffer, text: string, html?: string): Case => ({
  name,
  client,
  language,
  eml: typeof eml === "string" ? eml.replace(/\r?\n/g, CRLF) : Buffer.from(eml.toString("latin1").replace(/\r?\n/g, CRLF), "latin1"),
  text,
  ...(html === undefined ? {} : { html })
})

export type { Part }
