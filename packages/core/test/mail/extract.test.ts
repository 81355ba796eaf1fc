/**
 * Reply extraction at its edges: empty and absent bodies, messages with nothing quoted or
 * nothing new, the attribution line of every supported language, well-formed HTML after a
 * cut, and liveness on hostile bodies (one 2 MB line, deep nesting, tag soup). The golden
 * corpus (extract.golden.test.ts) covers what real clients send.
 */
import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { extractReply, extractText, planText } from "../../src/mail/extract.ts"

const text = (body: string): string | undefined => extractReply({ text: body }).text
const html = (body: string): string | undefined => extractReply({ html: body }).html

/** Start and end tags of the output, paired; void elements excluded. */
const balanced = (markup: string): boolean => {
  const voids = new Set(["br", "hr", "img", "meta", "link", "input", "wbr", "col", "area", "base", "source"])
  const stack: Array<string> = []
  for (const m of markup.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)[^>]*?(\/?)>/g)) {
    const [, close, rawName, selfClose] = m
    const name = (rawName ?? "").toLowerCase()
    if (voids.has(name) || selfClose === "/") continue
    if (close === "/") {
      if (stack.pop() !== name) return false
    } else {
      stack.push(name)
    }
  }
  return stack.length === 0
}

describe("extractReply: presence and empty bodies", () => {
  it("returns no field for a body that is absent", () => {
    expect(extractReply({})).toEqual({})
    expect(extractReply({ text: "Hi" })).toEqual({ text: "Hi" })
    expect(extractReply({ html: "<p>Hi</p>" })).toEqual({ html: "<p>Hi</p>" })
  })

  it("returns empty strings for empty and blank bodies", () => {
    expect(extractReply({ text: "", html: "" })).toEqual({ text: "", html: "" })
    expect(text("\n\n   \n")).toBe("")
  })
})

describe("extractReply: messages without quoted history", () => {
  it("keeps a message without a quote whole, trimming only blank lines at its edges", () => {
    expect(text("\n\nHello,\n\nsee you at 5.\n\n-- \nAnn\n\n")).toBe("Hello,\n\nsee you at 5.\n\n-- \nAnn")
  })

  it("returns HTML without a quote unchanged, byte for byte", () => {
    const body = "<html><body><p>Hi</p>\n<div><br></div></body></html>\n"
    expect(html(body)).toBe(body)
  })

  it("keeps a signature that has no quote under it", () => {
    expect(text("Thanks!\n-- \nJane Doe\nAcme Corp")).toBe("Thanks!\n-- \nJane Doe\nAcme Corp")
  })
})

describe("extractReply: quote-only and forward-only messages extract to an empty string", () => {
  it("a text body of nothing but `>` lines", () => {
    expect(text("> first\n> second\n>\n> third\n")).toBe("")
  })

  it("a text body of an attribution and its quote", () => {
    expect(text("On Mon, Mar 4, 2024 at 10:15 AM Jane <jane@example.com> wrote:\n> Hi\n")).toBe("")
  })

  it("a forward without a note", () => {
    expect(text("---------- Forwarded message ---------\nFrom: A <a@example.com>\nDate: Mon\nSubject: x\nTo: b@example.com\n\nbody")).toBe("")
  })

  it("an HTML body that is only a quote container", () => {
    expect(html('<div class="gmail_quote"><blockquote class="gmail_quote">old</blockquote></div>')).toBe("")
    expect(html('<html><body><blockquote type="cite">old</blockquote></body></html>')).toBe("")
  })
})

describe("extractReply: attribution lines of each language end the reply", () => {
  const attributions: ReadonlyArray<readonly [string, string]> = [
    ["English (Gmail)", "On Mon, Mar 4, 2024 at 10:15 AM Jane Doe <jane@example.com> wrote:"],
    ["English (Thunderbird)", "On 3/4/24 10:15, Jane Doe wrote:"],
    ["German", "Am Mo., 4. März 2024 um 10:15 Uhr schrieb Klaus Müller <klaus@example.de>:"],
    ["German (Thunderbird)", "Am 04.03.24 um 10:15 schrieb Klaus Müller:"],
    ["French", "Le lun. 4 mars 2024 à 10:15, Marie Dupont <marie@example.fr> a écrit :"],
    ["Spanish", "El lun, 4 mar 2024 a las 10:15, Lucía García (<lucia@example.es>) escribió:"],
    ["Portuguese", "Em seg., 4 de mar. de 2024 às 10:15, João Silva <joao@example.com.br> escreveu:"],
    ["Italian", "Il giorno lun 4 mar 2024 alle ore 10:15 Giulia Rossi <giulia@example.it> ha scritto:"],
    ["Dutch", "Op ma 4 mrt 2024 om 10:15 schreef Pieter de Vries <pieter@example.nl>:"],
    ["Dutch (Apple)", "Op 4 mrt. 2024 om 10:15 heeft Pieter de Vries <pieter@example.nl> het volgende geschreven:"],
    ["Russian (Thunderbird)", "04.03.2024 10:15, Иван Петров пишет:"],
    ["Russian (mail.ru)", "Понедельник, 4 марта 2024, 10:15 +03:00 от Иван Петров написал:"],
    ["Russian (Gmail)", "пн, 4 мар. 2024 г. в 10:15, Иван Петров <ivan@example.ru>:"],
    ["Polish", "W dniu 4.03.2024 o 10:15, Anna Kowalska pisze:"],
    ["Polish (Gmail)", "pon., 4 mar 2024 o 10:15 Anna Kowalska <anna@example.pl> napisał(a):"],
    ["Swedish", "Den mån 4 mars 2024 kl 10:15 skrev Erik Lindqvist <erik@example.se>:"],
    ["Swedish (Thunderbird)", "Den 2024-03-04 kl. 10:15, skrev Erik Lindqvist:"],
    ["Japanese (のメッセージ)", "2024/03/04 10:15、山田太郎 <taro@example.jp> のメッセージ:"],
    ["Japanese (は書きました)", "2024/03/04 10:15 に 山田太郎 は書きました:"],
    ["Japanese (Gmail)", "2024年3月4日(月) 10:15 山田太郎 <taro@example.jp>:"],
    ["Chinese (写道)", "王伟 <wang@example.cn> 于2024年3月4日周一 10:15写道："],
    ["Chinese (於 ... 寫道)", "於 2024年3月4日 上午10:15，陳美玲 <meiling@example.tw> 寫道："],
    ["Czech (Gmail)", "po 4. 3. 2024 v 10:15 odesílatel Jan Novák <jan@example.cz> napsal:"],
    ["Turkish (Gmail)", "Ahmet Yılmaz <ahmet@example.com.tr>, 4 Mar 2024 Pzt, 10:15 tarihinde şunu yazdı:"],
    ["Korean (Gmail)", "2024년 3월 4일 (월) 오전 10:15, 김민수 <minsu@example.kr>님이 작성:"]
  ]
  for (const [language, line] of attributions) {
    it(`${language}, above a quote`, () => {
      expect(text(`New text.\n\n${line}\n> old\n> older\n`)).toBe("New text.")
    })
  }

  // Gmail's plain text breaks a long attribution inside the angle brackets, the address
  // starting the next line; the rest of the line alone must not count as the attribution
  for (const [language, line] of attributions.filter(([, l]) => l.includes("@"))) {
    it(`${language}, broken inside the sender's address, above a quote`, () => {
      const at = line.indexOf("<") + 1
      expect(text(`New text.\n\n${line.slice(0, at)}\n${line.slice(at)}\n\n> old\n> older\n`)).toBe("New text.")
    })
  }

  it("an attribution wrapped over two lines, as Gmail wraps it", () => {
    expect(text("Yes.\n\nOn Mon, Mar 4, 2024 at 10:15 AM Jane Doe <jane.doe@northwind.example>\nwrote:\n\n> Hi\n")).toBe("Yes.")
    expect(text("Oui.\n\nLe lun. 4 mars 2024 à 10:15, Marie <marie@example.fr> a\nécrit :\n> Salut\n")).toBe("Oui.")
  })

  it("keeps the line above an attribution that has no lead word", () => {
    expect(text("Thanks!\nJane Doe <jane@example.com> 于2024年3月4日周一 10:15写道：\n> hi\n")).toBe("Thanks!")
  })

  it("ends the reply at an attribution with a date even when the quote is not prefixed (Yahoo)", () => {
    expect(text("Fine by me.\n\n    On Monday, March 4, 2024 at 10:15:00 AM EST, Jane <jane@example.com> wrote:\n\nold text\n")).toBe("Fine by me.")
  })

  it("does not take prose ending in \"wrote:\" for an attribution", () => {
    const body = "The auditor wrote:\n\n  All good.\n\nThanks"
    expect(text(body)).toBe(body)
  })
})

describe("extractReply: Outlook header blocks and separators", () => {
  it("cuts at a localized From/Sent/To/Subject block", () => {
    expect(text("Danke!\n\nVon: Klaus <k@example.de>\nGesendet: Montag, 4. März 2024 10:15\nAn: Jürgen\nBetreff: Test\n\nalt")).toBe("Danke!")
    expect(text("Merci\n\nDe\u00a0: Marie\nEnvoyé\u00a0: lundi 4 mars 2024\nÀ\u00a0: Luc\nObjet\u00a0: Test\n\nancien")).toBe("Merci")
  })

  it("cuts at the rule above the block", () => {
    expect(text("Ok\n________________________________\nFrom: A\nSent: Monday\nTo: B\nSubject: C\n\nold")).toBe("Ok")
  })

  it("cuts at -----Original Message----- and its translations", () => {
    expect(text("Ok\n\n-----Original Message-----\nold")).toBe("Ok")
    expect(text("Ok\n\n-----Ursprüngliche Nachricht-----\nalt")).toBe("Ok")
    expect(text("Ok\n\n------------------ 原始邮件 ------------------\n发件人: a")).toBe("Ok")
  })

  it("cuts at a header block in Hotmail's order (Date, Subject, From, To) under the rule that stands for its divider", () => {
    expect(text("Fine.\n\n----------------------------------------\n\nDate: Mon, 4 Mar 2024 10:15:00 +0100\nSubject: Order 4471\nFrom: tom@example.org\nTo: jane@example.com\n\nold"))
      .toBe("Fine.")
    expect(text("Gut.\n\nDatum: Mon, 4 Mar 2024 10:15:00 +0100\nBetreff: Lieferung\nVon: klaus@example.de\nAn: juergen@example.de\n\nalt"))
      .toBe("Gut.")
    expect(html("<div>Fine.</div><hr><div>Date: Mon, 4 Mar 2024<br>Subject: Order 4471<br>From: tom@example.org<br>To: jane@example.com<br><br>old</div>"))
      .toBe("<div>Fine.</div>")
  })

  it("does not cut at From/To lines that are not a mail header block", () => {
    const body = "Route:\nFrom: Berlin\nTo: Paris\n\nBye"
    expect(text(body)).toBe(body)
  })

  it("does not cut at a memo typed into the body (no address, no Outlook \"Sent:\")", () => {
    const body = "MEMO\n\nFrom: HR\nTo: All staff\nDate: March 4\nSubject: Holidays\n\nThe office closes on the 29th."
    expect(text(body)).toBe(body)
    const dateFirst = "MEMO\n\nDate: March 4\nSubject: Holidays\nFrom: HR\nTo: All staff\n\nThe office closes on the 29th."
    expect(text(dateFirst)).toBe(dateFirst)
  })

  it("keeps a signature that draws Outlook's top border but is no reply header", () => {
    const body = '<p>Hi</p><div style="border:none;border-top:solid #4472C4 1.0pt;padding:3.0pt 0in 0in 0in"><p>Jane Doe | Contoso</p></div>'
    expect(html(body)).toBe(body)
  })
})

describe("extractReply: bottom-posting and inline replies", () => {
  it("keeps the text under a leading quote (bottom-posting)", () => {
    expect(text("On Mon, Jane Doe <j@example.com> wrote:\n> question?\n\nanswer\n")).toBe("answer")
  })

  const signedBelow = (signature: string): string =>
    `Hi Tom,\n\n- Thursday works\n- The loading dock\n\nOn 04/03/2024 10:15, Tom Baker wrote:\n> Can we deliver?\n> Which entrance?\n\n${signature}\n`

  it("keeps a signature below the quote that names the sender, with no \"-- \" line, and drops the quote above it", () => {
    const reply = "Hi Tom,\n\n- Thursday works\n- The loading dock"
    expect(extractReply({ text: signedBelow("Jane Doe\nFacilities, Example Corp"), sender: "Jane Doe" }).text)
      .toBe(`${reply}\n\nJane Doe\nFacilities, Example Corp`)
    expect(extractReply({ text: signedBelow("Thanks,\nJane"), sender: "Jane Doe" }).text).toBe(`${reply}\n\nThanks,\nJane`)
    expect(extractReply({ text: signedBelow("よろしくお願いいたします。\n佐藤"), sender: "佐藤花子" }).text)
      .toBe(`${reply}\n\nよろしくお願いいたします。\n佐藤`)
    expect(extractReply({ text: signedBelow("이서연 드림"), sender: "이서연" }).text).toBe(`${reply}\n\n이서연 드림`)
    const quoteFirst = '<div>Hi Tom,</div><ul><li>Thursday works</li></ul><div><br><blockquote type="cite"><div>On 4 Mar 2024, at 10:15, Tom Baker &lt;tom@example.org&gt; wrote:</div><div>Can we deliver?</div></blockquote></div><br><div><div>Jane Doe</div></div>'
    expect(extractReply({ html: quoteFirst, sender: "Jane Doe" }).html)
      .toBe("<div>Hi Tom,</div><ul><li>Thursday works</li></ul><div><br></div><div><div>Jane Doe</div></div>")
  })

  it("keeps the quote above text below it that does not name the sender: an answer to it", () => {
    const body = signedBelow("Yes, Thursday.")
    expect(extractReply({ text: body, sender: "Jane Doe" }).text).toBe(text(body))
    expect(text(body)).toContain("> Can we deliver?")
    expect(extractReply({ text: signedBelow("Jane Doe"), sender: "Tom Baker" }).text).toContain("> Can we deliver?")
  })

  it("keeps the questions of an inline reply whose last answer is signed with the sender's name", () => {
    expect(extractReply({ text: "Answers below.\n\nOn Mon, 4 Mar 2024, Tom <t@example.org> wrote:\n> q1?\n\na1\n\n> q2?\n\nJane", sender: "Jane Doe" }).text)
      .toBe("Answers below.\n\n> q1?\n\na1\n\n> q2?\n\nJane")
  })

  it("keeps the questions between answers and drops the attribution and the quoted tail", () => {
    expect(text("On Mon, 4 Mar 2024, Jane <j@example.com> wrote:\n> q1?\n\na1\n\n> q2?\n\na2\n\n> bye\n> Jane\n"))
      .toBe("> q1?\n\na1\n\n> q2?\n\na2")
  })
})

describe("extractReply: HTML", () => {
  it("removes a quote container and closes what the cut leaves open", () => {
    const out = html('<html><body><div><p>New</p><div class="x"><blockquote type="cite"><div>old</div></blockquote><p><br></p></div></div></body></html>')
    expect(out).toBe('<html><body><div><p>New</p></div></body></html>')
    expect(balanced(out ?? "")).toBe(true)
  })

  it("drops everything after an Outlook divider, wherever it is nested", () => {
    const out = html('<body><table><tr><td><p>Reply</p><div id="divRplyFwdMsg"><b>From:</b> x</div><p>old</p></td></tr></table><p>old too</p></body>')
    expect(out).toBe('<body><table><tr><td><p>Reply</p></td></tr></table></body>')
  })

  it("drops the blank wrapper left between a removed quote and a signature below it (Gmail's <div><br></div>)", () => {
    const out = html('<div dir="ltr">Yes.</div><br><div class="gmail_quote"><div class="gmail_attr">On Mon, Mar 4, 2024 at 10:15 AM Tom &lt;tom@example.org&gt; wrote:<br></div><blockquote class="gmail_quote">q</blockquote></div><br clear="all"><div><br></div><span class="gmail_signature_prefix">-- </span><br><div class="gmail_signature">Jane</div>')
    expect(out).toBe('<div dir="ltr">Yes.</div><br><span class="gmail_signature_prefix">-- </span><br><div class="gmail_signature">Jane</div>')
  })

  it("keeps markup whose end tags the source left implied as it was", () => {
    const out = html('<ul><li>one<li>two</ul><p>Reply<p>More<blockquote type="cite">old</blockquote>')
    expect(out).toBe("<ul><li>one<li>two</ul><p>Reply<p>More")
  })

  it("keeps comments, styles and conditional comments of the kept part", () => {
    const body = '<html><head><style><!-- p { margin: 0 } --></style></head><body><!--[if mso]><p>x</p><![endif]--><p>Hi</p><blockquote type="cite">old</blockquote></body></html>'
    expect(html(body)).toBe('<html><head><style><!-- p { margin: 0 } --></style></head><body><!--[if mso]><p>x</p><![endif]--><p>Hi</p></body></html>')
  })

  it("does not mistake a '>' inside an attribute or script for a tag end", () => {
    const body = '<div title="a > b">Hi</div><script>if (a<b) {}</script><blockquote type="cite">old</blockquote>'
    expect(html(body)).toBe('<div title="a > b">Hi</div><script>if (a<b) {}</script>')
  })
})

describe("extractReply: liveness on hostile bodies", () => {
  const within = (ms: number, run: () => unknown): void => {
    const start = performance.now()
    run()
    expect(performance.now() - start).toBeLessThan(ms)
  }

  it("a 2 MB single-line body, text and HTML, finishes in well under 2 s", () => {
    const line = "word ".repeat(400_000)
    within(2000, () => {
      expect(text(line)).toBe(line.trimEnd())
      expect(html(`<div>${line}</div>`)).toBe(`<div>${line}</div>`)
    })
  })

  it("a 2 MB single line shaped like a marker finishes quickly", () => {
    within(2000, () => {
      text(`On ${"x ".repeat(1_000_000)}wrote:`)
      text(`From: ${"a".repeat(2_000_000)}`)
      text(`----${" -".repeat(1_000_000)}----`)
      html(`<div>On ${"x ".repeat(1_000_000)} wrote:</div><blockquote>q</blockquote>`)
    })
  })

  const hostile: ReadonlyArray<readonly [string, () => unknown]> = [
    ["a million stray '<'", () => html("<".repeat(1_000_000))],
    ["half a million unterminated end tags", () => html("</a".repeat(500_000))],
    ["200,000 nested divs", () => html(`${"<div>".repeat(200_000)}x`)],
    ["an attribute of half a million quotes", () => html(`<p class="${"'".repeat(500_000)}`)],
    ["100,000 <br> then 20,000 plain blockquotes", () => html(`${"<br>".repeat(100_000)}${"<blockquote>x</blockquote>".repeat(20_000)}`)],
    ["200,000 '>' lines inside <pre>", () => html(`<pre>${"&gt; a\n".repeat(200_000)}</pre>`)],
    ["300,000 '>' lines", () => text("> a\n".repeat(300_000))],
    ["50,000 attribution lines", () => text("On Mon, 4 Mar 2024, A <a@example.com> wrote:\n".repeat(50_000))],
    ["200,000 header-like lines", () => text("From: a\nSent: b\n".repeat(100_000))],
    ["200,000 header keys in Hotmail's order", () => text("Date: a\nSubject: b\nTo: c\nCc: d\n".repeat(50_000))],
    ["100,000 blank lines in one wrapper between a quote and a signature below it", () =>
      html(`<div>Reply</div><blockquote type="cite">q</blockquote><div>${"<br>".repeat(100_000)}</div>-- <br>Jane`)]
  ]
  for (const [shape, run] of hostile) {
    it(`${shape} finishes quickly`, () => within(2000, run))
  }
})

describe("extractReply: the shortcut for text bodies that can hold no history", () => {
  // lines built from every text marker whole, respelled (a zero-width mark between its
  // dashes or inside "above", other cases) and in pieces: a quote mark, both colons,
  // dashes, words, and the whitespace normaliseLine collapses
  const piece = fc.constantFrom(
    "On 4 Mar 2024, Jane wrote:", "On Mon, 4 Mar 2024 Jane <jane@example.com> wrote", "wrote", ":", "：", ">", "-", "--",
    "-----Original Message-----", "-\u200b-Forwarded message-\u200b-", "-\u2066-Original Message-\u2066-", "Original Message",
    "Begin forwarded message:", "王伟 于2024年3月4日写道：", "From: jane@example.com", "Sent: Monday", "To: bob@example.com", "Subject: hi",
    "Please type your reply above this line", "PLEASE TYPE YOUR REPLY ABOVE THIS LINE", "type your reply ab\u200bove this line",
    "above", "this line", "\u200b", "\ufeff", "\u00a0", " ", "  ", "\t", "thanks", "x@example.com", "__________", "—", "Today's Topics"
  )
  const line = fc.array(piece, { maxLength: 4 }).map((pieces) => pieces.join(""))
  it("gives what reading every line gives", () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), fc.constantFrom("\n", "\r\n", "\r"), fc.boolean(), (lines, end, reply) => {
        const body = lines.join(end)
        expect(extractText(body, reply)).toEqual(planText(body, reply))
      }),
      { numRuns: 30_000, seed: 12 }
    )
  })
})
