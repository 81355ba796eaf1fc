/**
 * Line markers of quoted history, shared by the text and HTML paths of reply extraction:
 * attribution lines ("On <date>, <name> wrote:" and its translations), separator lines
 * ("-----Original Message-----", "---------- Forwarded message ---------", "Begin forwarded
 * message:") and the header blocks ("From: / Sent: / To: / Subject:") that Outlook and the
 * forwarding clients write above the old message.
 *
 * Every test here runs on one logical line that the caller has already normalised
 * (`normaliseLine`), and the pattern tests refuse lines longer than a few hundred
 * characters up front: real markers are short, so a 2 MB line costs one length check and
 * the regexes never see input long enough to backtrack badly.
 */

/** Whether a UTF-16 code unit is whitespace as the regex class `\s` defines it (which
 * covers NBSP, U+202F and U+2007 too). A comparison chain, as the callers test every
 * character of a body and a regex test per character costs several times more. */
export const isSpaceCode = (c: number): boolean =>
  c === 32 || (c >= 9 && c <= 13) ||
  (c >= 0xa0 && (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
    c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff))

/** Zero-width marks that are dropped without leaving a space: besides the zero-width space
 * and the BOM, the bidirectional marks and embeddings Gmail wraps around every name and
 * address of a Hebrew or Arabic attribution (U+200E/F, U+202A-E, U+2066-9). */
const isInvisibleCode = (c: number): boolean =>
  c === 0x200b || c === 0x200e || c === 0x200f || c === 0xfeff || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)

/** Neither whitespace nor a zero-width mark; printable ASCII is decided by the first test. */
const isKeptCode = (c: number): boolean =>
  c > 32 ? c < 0xa0 || (!isSpaceCode(c) && !isInvisibleCode(c)) : c < 9 || (c > 13 && c < 32)

/** A stretch already in normal form: kept characters with single spaces between them.
 * The repeat is bounded so that the matcher's backtracking state stays small on a 2 MB
 * line; normaliseLine resumes where a match stops. */
const normalStretch = /[^\s\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]+(?: [^\s\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069]+){0,64}/y

/** Collapses the whitespace variants clients put into markers (NBSP before French colons,
 * tabs in Thunderbird's header tables, the BOM iOS puts in front of a quote): zero-width
 * marks go, each run of whitespace becomes one space, the ends are trimmed.
 *
 * Every logical line of every body passes through here. The stretches that need no change
 * are found by one sticky regex (native code, not a test per character in JS) and copied
 * as slices; a line that is already normal comes back as the same string. Two regex
 * replaces and a trim did the same in three passes and rebuilt the string at every space. */
export const normaliseLine = (line: string): string => {
  let out = ""
  // whitespace seen since the last stretch and not yet written
  let gap = false
  const n = line.length
  let i = 0
  while (i < n) {
    const c = line.charCodeAt(i)
    if (!isKeptCode(c)) {
      // whitespace (a gap to write as one space) or a zero-width mark (nothing)
      if (!isInvisibleCode(c)) gap = true
      i++
      continue
    }
    normalStretch.lastIndex = i
    // It matches, as it starts at a kept character; should `\s` and isSpaceCode ever
    // disagree, the character is still kept and the loop still advances.
    const end = normalStretch.test(line) ? normalStretch.lastIndex : i + 1
    if (i === 0 && end === n) return line
    const stretch = line.slice(i, end)
    out = out === "" ? stretch : gap ? `${out} ${stretch}` : out + stretch
    gap = false
    i = end
  }
  return out
}

/** No real attribution is longer, wrapped lines joined; the cap bounds every regex run. */
const MAX_MARKER_LENGTH = 400

/** Led: starts with the language's lead word ("On", "Am", "Le", ...) and ends with its
 * verb. Strong: ends with a verb distinctive enough that the line may end the reply even
 * when no `>` quote follows. Weak: only trusted right above a quote. */
export type AttributionStrength = "led" | "strong" | "weak"

const ledAttributions: ReadonlyArray<RegExp> = [
  /^on\s.+\swrote\s?:$/i,
  /^am\s.+\sschrieb(\s.+)?:$/i,
  /^le\s.+\sa\sécrit\s?:$/i,
  /^el\s.+\sescribió\s?:$/i,
  /^em\s.+\sescreveu\s?:$/i,
  /^il\s.+\sha\sscritto\s?:$/i,
  /^op\s.+\s(schreef(\s.+)?|het volgende geschreven)\s?:$/i,
  /^w dniu\s.+\s(pisze|napisał|napisała|napisał\(a\))\s?:$/i,
  /^den\s.+\sskrev(\s.+)?\s?:$/i,
  /^dne\s.+\snapsal(a|\(a\))?\s?:$/i,
  /^בתאריך\s.+\s(מאת\s.+|כתב(\/ה|ה)?\s?):$/,
  /^في\s.+\s(بواسطة|كتب)\s.+:$/
]

const strongAttributions: ReadonlyArray<RegExp> = [
  /^.+\s(napisał|napisała|napisał\(a\))\s?:$/i,
  /^.+\s(пишет|написал|написала|написал\(а\))\s?:$/i,
  /^.+\snapsal(a|\(a\))?\s?:$/i,
  /^.+\s(şunu yazdı|şunları yazdı|yazdı)\s?:$/i,
  /^.+(님이 작성|\s작성|쓴 글)\s?:$/,
  /^.+\sכתב(\/ה|ה)?\s?:$/,
  // Lotus Notes' internet-style history: "<name> <address> wrote on <date>:"
  /^.+\s(wrote on|schrieb am|a écrit le)\s.+:$/i,
  // mutt's default: "* <name> <address> [<date>]:"
  /^\*\s.+\s\[[^\]]+\]\s?:$/,
  /(のメッセージ|のメール|は書きました|が書きました)\s?[:：]$/,
  /(写道|寫道)\s?[:：]$/
]

const weakAttribution = /\s(wrote|writes|schrieb|écrit|escribió|escreveu|scritto|schreef|skrev|pisze|пишет|napsal|napsala|yazdı|כתב|כתב\/ה|كتب)\s?:$/i

/** Gmail in several locales (ru, ja, ...) writes only "<date>, <name> <address>:". */
const endsWithAddressColon = (s: string): boolean => {
  let t = s
  if (!t.endsWith(":") && !t.endsWith("：")) return false
  t = t.slice(0, -1).trimEnd()
  if (t.endsWith(")")) t = t.slice(0, -1)
  if (!t.endsWith(">")) return false
  const open = t.lastIndexOf("<")
  return open >= 0 && t.slice(open).includes("@")
}

export const attributionStrength = (line: string): AttributionStrength | undefined => {
  if (line.length < 6 || line.length > MAX_MARKER_LENGTH) return undefined
  const last = line[line.length - 1]
  if (last !== ":" && last !== "：") return undefined
  // A line trusted without a quote under it must name a date or an address, as every
  // client's attribution does: "The auditor wrote:" is prose.
  const anchored = /\d|@/.test(line)
  if (anchored && ledAttributions.some((re) => re.test(line))) return "led"
  if (anchored && strongAttributions.some((re) => re.test(line))) return "strong"
  if (weakAttribution.test(line)) return "weak"
  if (/\d/.test(line) && endsWithAddressColon(line)) return "weak"
  return undefined
}

/** Outlook's header keys, per language. "sent" is Outlook's own word for the date (a
 * memo typed into a body says "Date:"), which makes a block without addresses credible. */
export type HeaderKind = "from" | "sent" | "date" | "to" | "cc" | "subject"

const headerKeys: ReadonlyMap<string, HeaderKind> = new Map<string, HeaderKind>([
  ...["from", "von", "de", "da", "van", "от", "od", "från", "fra", "差出人", "发件人", "寄件者", "發件人",
    "보낸 사람", "kimden", "מאת", "من"].map(
    (k) => [k, "from"] as const
  ),
  ...[
    "sent", "gesendet", "envoyé", "enviado", "enviada", "enviado el", "enviada el", "enviado em", "enviada em",
    "inviato", "verzonden", "отправлено", "wysłano", "wysłane", "skickat", "sendt", "送信日時", "发送时间", "寄件日期",
    "傳送時間", "보낸 날짜", "odesláno", "gönderildi", "gönderilme tarihi", "נשלח", "تم الإرسال"
  ].map((k) => [k, "sent"] as const),
  ...["date", "datum", "fecha", "data", "дата", "日付", "日期", "날짜", "tarih", "תאריך", "التاريخ"].map((k) => [k, "date"] as const),
  ...["to", "an", "à", "a", "para", "aan", "кому", "do", "till", "til", "宛先", "收件人", "收件者",
    "받는 사람", "komu", "kime", "אל", "إلى"].map(
    (k) => [k, "to"] as const
  ),
  ...["cc", "kopie", "copie", "copia", "копия", "dw", "kopia", "kopi", "抄送", "副本", "참조", "bilgi", "עותק", "نسخة"].map((k) => [k, "cc"] as const),
  ...[
    "subject", "betreff", "objet", "asunto", "assunto", "oggetto", "onderwerp", "тема", "temat", "ämne", "emne", "件名",
    "主题", "主旨", "제목", "předmět", "konu", "נושא", "الموضوع"
  ].map((k) => [k, "subject"] as const)
])

export const headerKind = (line: string): HeaderKind | undefined => {
  // Keys sit in the first few characters; scanning further would only find prose colons.
  // most lines have no colon that early: two native searches say so
  if (line.lastIndexOf(":", 31) < 0 && line.lastIndexOf("：", 31) < 0) return undefined
  const limit = Math.min(line.length, 32)
  let colon = -1
  for (let i = 0; i < limit; i++) {
    const c = line.charCodeAt(i)
    if (c === 0x3a /* : */ || c === 0xff1a /* ： */) {
      colon = i
      break
    }
  }
  if (colon <= 0) return undefined
  const key = line.slice(0, colon).replace(/\*/g, "").trim().toLowerCase()
  return headerKeys.get(key)
}

const originalPhrases: ReadonlyArray<string> = [
  "original message", "ursprüngliche nachricht", "originalnachricht", "message d'origine", "message d’origine",
  "message original", "mensaje original", "mensagem original", "messaggio originale", "oorspronkelijk bericht",
  "исходное сообщение", "оригинальное сообщение", "wiadomość oryginalna", "oryginalna wiadomość",
  "ursprungligt meddelande", "originalmeddelande", "元のメッセージ", "原始邮件", "原始郵件", "原始信件",
  "원본 메시지", "원본 이메일", "původní zpráva", "orijinal ileti", "özgün ileti", "הודעה מקורית", "الرسالة الأصلية"
]

const forwardPhrases: ReadonlyArray<string> = [
  "forwarded message", "weitergeleitete nachricht", "message transféré", "mensaje reenviado", "mensagem encaminhada",
  "messaggio inoltrato", "doorgestuurd bericht", "пересылаемое сообщение", "пересланное сообщение",
  "przekazana wiadomość", "wiadomość przekazana", "vidarebefordrat meddelande", "転送されたメッセージ", "转发的邮件",
  "轉寄的郵件", "전달된 메일", "přeposlaná zpráva", "yönlendirilmiş ileti", "yönlendirilen ileti", "הודעה שהועברה",
  "الرسالة المُعاد توجيهها", "الرسالة المعاد توجيهها"
]

/** Apple Mail's forward opener, which has no dashes. */
const forwardOpeners: ReadonlyArray<string> = [
  "begin forwarded message", "anfang der weitergeleiteten nachricht", "début du message réexpédié",
  "début du message transféré", "inicio del mensaje reenviado", "início da mensagem reencaminhada",
  "início da mensagem encaminhada", "inizio messaggio inoltrato", "begin doorgestuurd bericht",
  "начало переадресованного сообщения", "początek przekazywanej wiadomości", "vidarebefordrat mejl",
  "vidarebefordrat brev", "転送されたメッセージ", "转发的邮件", "以下为转发的邮件", "轉寄的郵件", "전달된 메일",
  "začátek přeposílané zprávy", "yönlendirilmiş ileti başlangıcı", "תחילת הודעה שהועברה", "بداية الرسالة المُعاد توجيهها"
]

/** The phrase between the dashes of "-----Original Message-----"-style lines, if any. */
export const dashedPhrase = (line: string): string | undefined => {
  if (line.length > 120) return undefined
  let start = 0
  while (start < line.length && line[start] === "-") start++
  let end = line.length
  while (end > start && line[end - 1] === "-") end--
  if (start < 2 || line.length - end < 2) return undefined
  const phrase = line.slice(start, end).trim()
  return phrase.length > 0 ? phrase.toLowerCase() : undefined
}

/** Ticketing systems (Zendesk, Jira, Freshservice, ...) head their notifications with a
 * line asking for the answer above it: below it is their message, whatever the client
 * made of it. Matched on the words, with the decoration (`##-`, dashes) stripped. */
const replyAbovePhrases: ReadonlyArray<string> = [
  "please type your reply above this line", "type your reply above this line", "please reply above this line",
  "reply above this line", "please write your reply above this line", "write your reply above this line"
]

const isReplyAboveLine = (line: string): boolean => {
  const lower = line.toLowerCase()
  if (!lower.includes("above this line")) return false
  const words = lower.replace(/^[\s#*=_.\-–—]+|[\s#*=_.\-–—]+$/g, "")
  return replyAbovePhrases.includes(words)
}

/** A line that on its own says "everything below is an earlier message". */
export const isSeparator = (line: string): boolean => {
  if (line.length > 120) return false
  if (isReplyAboveLine(line)) return true
  const phrase = dashedPhrase(line)
  if (phrase !== undefined) {
    return originalPhrases.some((p) => phrase.includes(p)) || forwardPhrases.some((p) => phrase.includes(p))
  }
  const last = line[line.length - 1]
  if (last !== ":" && last !== "：") return false
  const opener = line.slice(0, -1).trim().toLowerCase()
  return forwardOpeners.includes(opener)
}

/** A horizontal rule drawn in text (Outlook's 32 underscores) or a dashed line with an
 * unknown phrase: separators only when a header block follows. */
export const isRuleLike = (line: string): boolean => {
  if (line.length > 120) return false
  if (isRule(line)) return true
  return line.startsWith("---") && line.endsWith("---") && dashedPhrase(line) !== undefined
}

/** A line of five or more of `-_=*` and the dashes (–, —), and nothing else: a rule drawn
 * in text (Jira draws "—-—-—-—"). */
export const isRule = (line: string): boolean => {
  // most lines fail at the first character, without a regex call
  const c = line.charCodeAt(0)
  return (c === 0x2d || c === 0x5f || c === 0x3d || c === 0x2a || c === 0x2013 || c === 0x2014) && /^[-_=*–—]{5,}$/.test(line)
}
