/**
 * Single specimens of the reply corpus: clients and situations with one shape each
 * (old Hotmail, Lotus Notes, BlackBerry, Samsung Email, Zimbra, Yahoo, Proton, Fastmail,
 * digests, ticketing systems, signatures after a quote, forwards inside replies,
 * attributions wrapped over three lines, HTML-only bodies, broken charsets), written out.
 */
import { Buffer } from "node:buffer"
import { type Case, fastmail, hotmailHead, htmlOnly, plain, proton, raw, replyText, quotedText, yahoo, zimbra } from "./clients.ts"
import { type Language, languages } from "./languages.ts"
import { base64, escapeHtml, mailbox, message, multipart, textPart, word } from "./mime.ts"

const lang = (code: string): Language => {
  const found = languages.find((l) => l.code === code)
  if (found === undefined) throw new Error(`no language ${code}`)
  return found
}

const samsung = (l: Language, separator: string, labels: readonly [string, string, string, string]): Case => {
  const [from, date, to, subject] = labels
  const typed = `${replyText(l)}\n\n\n\n${l.android}`
  const text = `${typed}\n\n\n${separator}\n${from}: ${l.recipient.name} <${l.recipient.address}> \n${date}: 04.03.24  10:15  (GMT+01:00) \n${to}: ${l.sender.name} <${l.sender.address}> \n${subject}: ${l.subject} \n\n${quotedText(l)}\n`
  const head = `<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8"></head><body dir="auto">`
  const body = `<div dir="auto">${replyText(l).split("\n").map(escapeHtml).join("<br>")}</div><div dir="auto"><br></div><div dir="auto"><br></div><div dir="auto"><br></div><div id="composer_signature" dir="auto"><div style="font-size:12px;color:#575757" dir="auto">${escapeHtml(l.android)}</div></div>`
  const html = `${head}${body}<div dir="auto"><br></div><div><br></div><div align="left" dir="auto" style="font-size:100%;color:#000000"><div>${escapeHtml(separator)}</div><div>${from}: ${escapeHtml(`${l.recipient.name} <${l.recipient.address}>`)} </div><div>${date}: 04.03.24  10:15  (GMT+01:00) </div><div>${to}: ${escapeHtml(`${l.sender.name} <${l.sender.address}>`)} </div><div>${subject}: ${escapeHtml(l.subject)} </div><div><br></div></div>${quotedText(l).split("\n").map(escapeHtml).join("<br>")}</body></html>`
  return {
    name: `samsung-email-${l.name.toLowerCase()}`,
    client: "Samsung Email",
    language: l.name,
    eml: message(
      [`Message-ID: <${l.code}0123456789abcdef.samsung@email.android.com>`, `Date: Mon, 04 Mar 2024 10:28:45 +0100`, `Subject: ${word(`${l.re} ${l.subject}`)}`, `From: ${mailbox(l.sender)}`, `To: ${mailbox(l.recipient)}`],
      multipart("alternative", `--_com.samsung.android.email_${l.code}1709566123456789`, [
        textPart(text, { charset: "utf-8", encoding: "base64" }),
        textPart(html, { subtype: "html", charset: "utf-8", encoding: "base64" })
      ])
    ),
    text: typed,
    html: `${head}${body}</body></html>`
  }
}

const digestBody = `Send Users mailing list submissions to
	users@lists.example.org

Today's Topics:

   1. Re: Build fails on ARM (Tom Baker)


----------------------------------------------------------------------

Message: 1
Date: Mon, 4 Mar 2024 09:00:00 +0000
From: Tom Baker <tom.baker@example.org>
To: users@lists.example.org
Subject: Re: Build fails on ARM

Try a clean build.

On Sun, Mar 3, 2024 at 8:00 PM Ann Lee <ann@example.net> wrote:
> It fails on ARM.


------------------------------

End of Users Digest, Vol 112, Issue 5
*************************************
`

const en = lang("en")
const de = lang("de")

export const specimens = (): Array<Case> => [
  ...["fr", "de", "es"].map((c) => yahoo(lang(c))),
  ...["de", "fr"].map((c) => proton(lang(c))),
  ...["en", "de"].map((c) => fastmail(lang(c))),
  zimbra(en, "----- Original Message -----", ["From", "To", "Sent", "Subject", ""]),
  zimbra(lang("fr"), "----- Mail original -----", ["De", "À", "Envoyé", "Objet", ""]),
  samsung(de, "-------- Ursprüngliche Nachricht --------", ["Von", "Datum", "An", "Betreff"]),
  samsung(lang("ko"), "-------- 원본 이메일 --------", ["발신", "날짜", "수신", "제목"]),
  samsung(lang("es"), "-------- Mensaje original --------", ["De", "Fecha", "Para", "Asunto"]),

  // Hotmail and the old Outlook.com: the history under <hr id="stopSpelling">, its header
  // block starting with Date, and the text part quoting it with ">".
  raw("hotmail-stopspelling", "Hotmail", "English", `From: Jane Doe <jane_doe77@hotmail.com>
To: Tom Baker <tom.baker@example.org>
Subject: RE: Delivery date for order 4471
Date: Mon, 4 Mar 2013 11:02:37 +0100
Message-ID: <BLU168-W21A1B2C3D4E5F6@phx.gbl>
In-Reply-To: <orig-4471@example.org>
Importance: Normal
MIME-Version: 1.0
Content-Type: multipart/alternative;
	boundary="_7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d_"

--_7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d_
Content-Type: text/plain; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

Thursday is fine=2C please use the loading dock.
Jane

> Date: Mon=2C 4 Mar 2013 10:15:00 +0000
> From: tom.baker@example.org
> To: jane_doe77@hotmail.com
> Subject: Delivery date for order 4471
>=20
> Can we deliver order 4471 on Thursday or Friday?
>=20
> Tom
 		 	   		 =20
--_7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d_
Content-Type: text/html; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

<html>
<head>
<style><!--
.hmmessage P
{
margin:0px=3B
padding:0px
}
body.hmmessage
{
font-size: 12pt=3B
font-family:Calibri
}
--></style></head>
<body class=3D'hmmessage'><div dir=3D'ltr'>Thursday is fine=2C please use t=
he loading dock.<br>Jane<br><br><div><hr id=3D"stopSpelling">Date: Mon=2C 4=
 Mar 2013 10:15:00 +0000<br>From: tom.baker@example.org<br>To: jane_doe77@h=
otmail.com<br>Subject: Delivery date for order 4471<br><br>Can we deliver o=
rder 4471 on Thursday or Friday?<br><br>Tom<br> 		 	   		  </div></div> 		=
 	   		  </body>
</html>=

--_7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d_--
`, "Thursday is fine, please use the loading dock.\nJane", `${hotmailHead}
<body class='hmmessage'><div dir='ltr'>Thursday is fine, please use the loading dock.<br>Jane</div> 		 	   		  </body>
</html>`),
  raw("hotmail-stopspelling-french", "Hotmail", "French", `From: =?iso-8859-1?Q?=C9lodie_Martin?= <elodie.martin@hotmail.fr>
To: Jean Dupont <jean.dupont@example.fr>
Subject: RE: =?iso-8859-1?Q?R=E9union_de_lundi?=
Date: Mon, 4 Mar 2013 11:02:37 +0100
Message-ID: <DUB109-W33C1D2E3F4A5B6@phx.gbl>
MIME-Version: 1.0
Content-Type: text/html; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

<html>
<head>
<style><!--
.hmmessage P
{
margin:0px=3B
padding:0px
}
--></style></head>
<body class=3D'hmmessage'><div dir=3D'ltr'>Lundi =E0 14 h me convient.<br>=
=C9lodie<br><br><div><hr id=3D"stopSpelling">Date&nbsp;: Mon=2C 4 Mar 2013 =
10:15:00 +0100<br>De&nbsp;: jean.dupont@example.fr<br>=C0&nbsp;: elodie.mar=
tin@hotmail.fr<br>Objet&nbsp;: R=E9union de lundi<br><br>Êtes-vous disponible lundi ?<br></div></div></body>
</html>
`.replace("Êtes", "=CAtes"), "Lundi à 14 h me convient.\nÉlodie", `<html>
<head>
<style><!--
.hmmessage P
{
margin:0px;
padding:0px
}
--></style></head>
<body class='hmmessage'><div dir='ltr'>Lundi à 14 h me convient.<br>Élodie</div></body>
</html>`),

  // Lotus Notes: the internet-style history with "wrote on <date>:", and the Notes 9 memo
  // header with tab-separated keys.
  plain("lotus-notes-wrote-on", "Lotus Notes", en, `Approved, go ahead with the order.

Regards
Jane Doe

"Tom Baker" <tom.baker@example.org> wrote on 04/03/2024 10:15:42:

> From: "Tom Baker" <tom.baker@example.org>
> To: "Jane Doe" <jane.doe@example.com>
> Date: 04/03/2024 10:15
> Subject: Delivery date for order 4471
>
> Can we deliver order 4471 on Thursday or Friday?
`, "Approved, go ahead with the order.\n\nRegards\nJane Doe", { charset: "US-ASCII", encoding: "7bit", mailer: "Lotus Notes Release 8.5.3FP6 November 21, 2013" }),
  plain("lotus-notes-german-memo", "Lotus Notes", de, `Hallo Klaus,

passt so, bitte bestellen.

Gruß
Jürgen



Von:\t"Klaus Müller" <klaus.mueller@example.de>
An:\t"Jürgen Weiß" <juergen.weiss@example.de>
Datum:\t04.03.2024 10:15
Betreff:\tLieferung nächste Woche



Hallo Jürgen,

können wir die Ware am Donnerstag liefern?

Klaus
`, "Hallo Klaus,\n\npasst so, bitte bestellen.\n\nGruß\nJürgen", { charset: "ISO-8859-1", mailer: "IBM Notes Release 9.0.1FP10 SHF147 | March 2, 2018" }),

  // BlackBerry: BB10's header without dashes, and the classic one with the footer above.
  plain("blackberry-10", "BlackBerry", en, `Yes, Thursday.

Sent from my BlackBerry 10 smartphone.
From: Tom Baker
Sent: Monday, 4 March 2024 10:15
To: Jane Doe
Subject: Delivery date for order 4471

Can we deliver order 4471 on Thursday or Friday?
`, "Yes, Thursday.\n\nSent from my BlackBerry 10 smartphone.", { charset: "utf-8", encoding: "base64" }),
  plain("blackberry-classic", "BlackBerry", en, `Thursday, loading dock at the back.
Sent from my BlackBerry® wireless device

-----Original Message-----
From: "Tom Baker" <tom.baker@example.org>
Date: Mon, 4 Mar 2024 10:15:00 
To: Jane Doe<jane.doe@example.com>
Subject: Delivery date for order 4471

Can we deliver order 4471 on Thursday or Friday?
`, "Thursday, loading dock at the back.\nSent from my BlackBerry® wireless device", { charset: "Windows-1252" }),

  // Mailing-list digests are new messages whose body holds whole messages: nothing in
  // them is quoted history of this message.
  raw("mailman-digest-mime", "Mailing-list digest", "English", `From: users-request@lists.example.org
Subject: Users Digest, Vol 112, Issue 4
To: users@lists.example.org
Reply-To: users@lists.example.org
Date: Mon, 04 Mar 2024 12:00:02 +0000
Message-ID: <mailman.1234.1709553602.4321.users@lists.example.org>
X-Mailman-Version: 2.1.39
List-Id: <users.lists.example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="===============1234567890=="

--===============1234567890==
Content-Type: text/plain; charset="us-ascii"
Content-Transfer-Encoding: 7bit
Content-Description: Users Digest, Vol 112, Issue 4

Send Users mailing list submissions to
	users@lists.example.org

Today's Topics:

   1. Re: Build fails on ARM (Tom Baker)
   2. Release 4.2 (Jane Doe)

--===============1234567890==
Content-Type: multipart/digest; boundary="===============0987654321=="

--===============0987654321==
Content-Type: message/rfc822
MIME-Version: 1.0

From: Tom Baker <tom.baker@example.org>
To: users@lists.example.org
Subject: Re: Build fails on ARM
Date: Mon, 4 Mar 2024 09:00:00 +0000
Content-Type: text/plain; charset="us-ascii"

Try a clean build.

On Sun, Mar 3, 2024 at 8:00 PM Ann Lee <ann@example.net> wrote:
> It fails on ARM.

--===============0987654321==
Content-Type: message/rfc822
MIME-Version: 1.0

From: Jane Doe <jane.doe@example.com>
To: users@lists.example.org
Subject: Release 4.2
Date: Mon, 4 Mar 2024 10:00:00 +0000
Content-Type: text/plain; charset="us-ascii"

Release 4.2 is out.

--===============0987654321==--

--===============1234567890==--
`, "Send Users mailing list submissions to\n\tusers@lists.example.org\n\nToday's Topics:\n\n   1. Re: Build fails on ARM (Tom Baker)\n   2. Release 4.2 (Jane Doe)"),
  raw("mailman-digest-plain", "Mailing-list digest", "English", `From: users-request@lists.example.org
Subject: Users Digest, Vol 112, Issue 5
To: users@lists.example.org
Date: Tue, 05 Mar 2024 12:00:02 +0000
Message-ID: <mailman.1235.1709640002.4321.users@lists.example.org>
X-Mailman-Version: 2.1.39
MIME-Version: 1.0
Content-Type: text/plain; charset="us-ascii"
Content-Transfer-Encoding: 7bit

${digestBody}`, digestBody.trimEnd()),
  // Ticketing systems: the "reply above this line" marker, a Freshdesk agent's reply.
  plain("zendesk-reply-above-line", "Ticketing (Zendesk)", en, `Thanks, the new download link works.

Jane

##- Please type your reply above this line -##

Your request (4471) has been updated. To add additional comments, reply to this email.

Sam (Acme Support)

Mar 4, 2024, 10:15 GMT+1

Hi Jane, here is a new download link.
`, "Thanks, the new download link works.\n\nJane", { charset: "utf-8" }),
  plain("jira-reply-above-line", "Ticketing (Jira)", en, `The fix works on staging too, please close the ticket.

—-—-—-—
Reply above this line.

Sam Lee commented:

Deployed the fix to staging.

View request · Turn off this request's notifications
`, "The fix works on staging too, please close the ticket.", { charset: "utf-8" }),
  raw("freshdesk-agent-reply", "Ticketing (Freshdesk)", "English", `From: Acme Support <support@acme.freshdesk.com>
To: Jane Doe <jane.doe@example.com>
Subject: Re: [#4471] Refund for order 4471
Date: Mon, 4 Mar 2024 11:02:37 +0000
Message-ID: <4471.ticket.abc123@acme.freshdesk.com>
In-Reply-To: <jane-4471@example.com>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="--==_mimepart_65e5a0fd1_2a3b"

----==_mimepart_65e5a0fd1_2a3b
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 7bit

Hi Jane,

Your refund was issued today.

Regards,
Sam
Acme Support

On Mon, 4 Mar at 10:15 AM , Jane Doe <jane.doe@example.com> wrote:
Where is my refund for order 4471?

----==_mimepart_65e5a0fd1_2a3b
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: 7bit

<div><div>Hi Jane,</div><div><br></div><div>Your refund was issued today.</div><div><br></div><div>Regards,<br>Sam<br>Acme Support</div></div><div class="freshdesk_quote"><blockquote class="freshdesk_quote">On Mon, 4 Mar at 10:15 AM , Jane Doe &lt;jane.doe@example.com&gt; wrote:<br><div>Where is my refund for order 4471?</div></blockquote></div>

----==_mimepart_65e5a0fd1_2a3b--
`, "Hi Jane,\n\nYour refund was issued today.\n\nRegards,\nSam\nAcme Support", `<div><div>Hi Jane,</div><div><br></div><div>Your refund was issued today.</div><div><br></div><div>Regards,<br>Sam<br>Acme Support</div></div>`),

  // A signature typed below the quote (Thunderbird's "signature below the quote", mutt):
  // the sender's, kept; the quote between reply and signature is history.
  plain("thunderbird-signature-below-quote", "Thunderbird", en, `Thursday works, loading dock at the back.

On 04/03/2024 10:15, Tom Baker wrote:
> Hi Jane,
>
> Can we deliver order 4471 on Thursday or Friday?
>
> Tom

-- 
Jane Doe
Facilities, Example Corp
`, "Thursday works, loading dock at the back.\n\n-- \nJane Doe\nFacilities, Example Corp", { charset: "UTF-8", encoding: "8bit", flowed: true }),
  plain("mutt-signature-after-bottom-post", "Mutt", en, `* Tom Baker <tom.baker@example.org> [2024-03-04 10:15]:
> Can we deliver order 4471 on Thursday or Friday?

Thursday, please.

-- 
Jane
`, "Thursday, please.\n\n-- \nJane", { charset: "us-ascii", encoding: "7bit", more: ["User-Agent: Mutt/2.2.12 (2023-09-09)"] }),

  // Attributions wrapped over three lines by a narrow client, with and without a lead word.
  plain("k9-attribution-three-lines", "K-9 Mail", en, `Thursday works.

On Monday, March 4, 2024 10:15:42 AM CET, Maximilian Alexander
von Hohenberg-Schillingsfürst
<maximilian.hohenberg@example.org> wrote:
> Can we deliver order 4471 on Thursday or Friday?
`, "Thursday works.", { charset: "utf-8", encoding: "quoted-printable" }),
  plain("fairemail-german-attribution-three-lines", "FairEmail", de, `Donnerstag passt.

Am 4. März 2024 10:15:42 MEZ schrieb Maximilian Alexander von
Hohenberg-Schillingsfürst
<maximilian.hohenberg@example.de>:
>Können wir am Donnerstag liefern?
`, "Donnerstag passt.", { charset: "utf-8", encoding: "quoted-printable" }),
  plain("plain-undated-wrote-above-quote", "Plain text", en, `Tom Baker wrote:
> Can we deliver order 4471 on Thursday or Friday?

Thursday.
`, "Thursday.", { charset: "us-ascii", encoding: "7bit" }),

  // Forwards inside replies: a reply whose history holds a forward, a forward whose note
  // sits above a thread.
  plain("gmail-reply-to-forward", "Gmail", en, `I'll call the carrier this afternoon.

On Mon, Mar 4, 2024 at 10:15 AM Tom Baker <tom.baker@example.org> wrote:

> FYI, see below.
>
> ---------- Forwarded message ---------
> From: Carrier <noreply@carrier.example>
> Date: Mon, Mar 4, 2024 at 9:00 AM
> Subject: Delay
> To: <tom.baker@example.org>
>
> Your shipment is delayed.
`, "I'll call the carrier this afternoon.", { charset: "UTF-8" }),
  plain("outlook-forward-thread-with-note", "Outlook desktop", en, `Ann, can you take this one? The customer answered below.

Jane

From: Tom Baker <tom.baker@example.org> 
Sent: Monday, March 4, 2024 10:15 AM
To: Jane Doe <jane.doe@example.com>
Subject: RE: Delivery date for order 4471

Thursday then.

From: Jane Doe <jane.doe@example.com> 
Sent: Monday, March 4, 2024 9:00 AM
To: Tom Baker <tom.baker@example.org>
Subject: Delivery date for order 4471

Which day suits you?
`, "Ann, can you take this one? The customer answered below.\n\nJane", { charset: "us-ascii", subject: "FW: Delivery date for order 4471" }),

  // HTML-only bodies: the text is derived from the HTML, then extracted.
  htmlOnly("icloud-web-html-only", "iCloud Mail", en, `<html><body><div>Thursday works for us.</div><div><br></div><div>Jane</div><div><br></div><div><br>On Mar 4, 2024, at 10:15 AM, Tom Baker &lt;tom.baker@example.org&gt; wrote:<br><br></div><blockquote type="cite"><div>Can we deliver order 4471 on Thursday or Friday?</div></blockquote></body></html>`,
    "Thursday works for us.\n\nJane",
    `<html><body><div>Thursday works for us.</div><div><br></div><div>Jane</div></body></html>`),
  htmlOnly("gmail-html-only-korean", "Gmail", lang("ko"), `<div dir="ltr">목요일 오후 3시에 뵙겠습니다.<div><br></div><div>이서연 드림</div></div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">2024년 3월 4일 (월) 오전 10:15, 김민수 &lt;<a href="mailto:minsu.kim@example.kr">minsu.kim@example.kr</a>&gt;님이 작성:<br></div><blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex"><div dir="ltr">다음 주 회의 일정 확인 부탁드립니다.</div></blockquote></div>`,
    "목요일 오후 3시에 뵙겠습니다.\n\n이서연 드림",
    `<div dir="ltr">목요일 오후 3시에 뵙겠습니다.<div><br></div><div>이서연 드림</div></div>`),
  htmlOnly("yahoo-html-only-spanish", "Yahoo", lang("es"), `<html><head></head><body><div class="ydp1a2b3c4dyahoo-style-wrap" style="font-family:Helvetica Neue, Helvetica, Arial, sans-serif;font-size:13px;"><div dir="ltr" data-setdir="false">Perfecto, empezamos el lunes.</div><div dir="ltr" data-setdir="false">Lucía</div></div><div id="ydp5e6f7a8byahoo_quoted_9876543210" class="ydp5e6f7a8byahoo_quoted"><div style="font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;font-size:13px;color:#26282a;"><div>El lunes, 4 de marzo de 2024, 10:15:00 CET, Juan Pérez &lt;juan.perez@example.es&gt; escribió:</div><div><br></div><div><div dir="ltr">¿Empezamos el lunes?</div></div></div></div></body></html>`,
    "Perfecto, empezamos el lunes.\nLucía",
    `<html><head></head><body><div class="ydp1a2b3c4dyahoo-style-wrap" style="font-family:Helvetica Neue, Helvetica, Arial, sans-serif;font-size:13px;"><div dir="ltr" data-setdir="false">Perfecto, empezamos el lunes.</div><div dir="ltr" data-setdir="false">Lucía</div></div></body></html>`),

  // format=flowed (RFC 3676) where mailparser's own decoder went wrong: a soft break at the
  // end of a quote ran the reply under it into the quote; delsp=yes as Apple Mail sends it.
  plain("thunderbird-flowed-soft-quote-above-reply", "Thunderbird", en, `On 04/03/2024 10:15, Tom Baker wrote:
> Can we deliver order 4471 on Thursday 
> or Friday? 
Thursday, please. The loading dock is at the 
back of the building.
`, "Thursday, please. The loading dock is at the back of the building.", { charset: "UTF-8", encoding: "8bit", flowed: true }),
  plain("apple-mail-flowed-delsp-japanese", "Apple Mail", lang("ja"), `お世話になっております。見積書の内容で問題ござ 
いません。発注手続きを進めます。

佐藤

> 2024/03/04 10:15、山田太郎 <taro.yamada@example.jp>のメール:
> 
> ご依頼の見積書をお送りしま 
> す。
`, "お世話になっております。見積書の内容で問題ございません。発注手続きを進めます。\n\n佐藤", { charset: "utf-8", encoding: "quoted-printable", flowed: true, delsp: true }),

  // A nested multipart/alternative that lost its boundary parameter (a broken gateway):
  // both alternatives still read, with an attachment beside them.
  raw("nested-alternative-missing-boundary", "Gmail", "English", `From: Jane Doe <jane.doe@example.com>
To: Tom Baker <tom.baker@example.org>
Subject: Re: Delivery date for order 4471
Date: Mon, 4 Mar 2024 11:02:37 +0100
Message-ID: <nested-no-boundary-4471@example.com>
In-Reply-To: <orig-4471@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="000000000000outer"

--000000000000outer
Content-Type: multipart/alternative

--000000000000inner
Content-Type: text/plain; charset="UTF-8"

Thursday works, the signed form is attached.

On Mon, Mar 4, 2024 at 10:15 AM Tom Baker <tom.baker@example.org> wrote:

> Can we deliver on Thursday?

--000000000000inner
Content-Type: text/html; charset="UTF-8"

<div dir="ltr">Thursday works, the signed form is attached.</div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Mon, Mar 4, 2024 at 10:15 AM Tom Baker &lt;tom.baker@example.org&gt; wrote:<br></div><blockquote class="gmail_quote">Can we deliver on Thursday?</blockquote></div>

--000000000000inner--

--000000000000outer
Content-Type: application/pdf; name="form.pdf"
Content-Disposition: attachment; filename="form.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoK

--000000000000outer--
`, "Thursday works, the signed form is attached.", `<div dir="ltr">Thursday works, the signed form is attached.</div>`),

  // Charsets as senders mis-declare them.
  raw("charset-latin1-holding-windows-1252", "Outlook desktop", "English", `From: Jane Doe <jane.doe@example.com>
To: Tom Baker <tom.baker@example.org>
Subject: RE: Price
Date: Mon, 4 Mar 2024 11:02:37 +0100
Message-ID: <cp1252-4471@example.com>
MIME-Version: 1.0
Content-Type: text/plain; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

The price is =8020 per unit =96 that=92s the =93final=94 offer.

Jane

-----Original Message-----
From: Tom Baker <tom.baker@example.org>=20
Sent: Monday, March 4, 2024 10:15 AM
To: Jane Doe <jane.doe@example.com>
Subject: Price

What is the price?
`, "The price is €20 per unit – that’s the “final” offer.\n\nJane"),
  raw("charset-us-ascii-holding-utf8", "Plain text", "German", Buffer.from(`From: Jürgen <juergen@example.de>
To: Klaus <klaus@example.de>
Subject: Re: Lieferung
Date: Mon, 4 Mar 2024 11:02:37 +0100
Message-ID: <ascii-utf8-4471@example.de>
MIME-Version: 1.0
Content-Type: text/plain; charset=us-ascii
Content-Transfer-Encoding: 8bit

Grüße aus München, Donnerstag passt.

Am 04.03.2024 um 10:15 schrieb Klaus:
> Geht Donnerstag?
`, "utf8"), "Grüße aus München, Donnerstag passt."),
  raw("rfc2047-split-multibyte-subject", "Plain text", "Japanese", `From: =?UTF-8?B?5L2Q6Jek6Iqx?= =?UTF-8?B?5a2Q?= <hanako.sato@example.jp>
To: taro.yamada@example.jp
Subject: =?UTF-8?B?UmU6IOimi+epjQ==?= =?UTF-8?B?5pu444Gu5Lu2?=
Date: Mon, 4 Mar 2024 11:02:37 +0900
Message-ID: <split-2047@example.jp>
MIME-Version: 1.0
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: base64

${base64("問題ございません。\n\n2024年3月4日(月) 10:15 山田太郎 <taro.yamada@example.jp>:\n> 見積書をお送りします。\n")}
`, "問題ございません。")
]
