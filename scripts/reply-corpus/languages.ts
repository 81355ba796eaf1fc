/**
 * The languages of the reply corpus: for each, two people, a short exchange in the
 * language, and the words each client writes around a quote in that locale (attribution
 * lines, Outlook's header labels, separators, the mobile footer). The strings are the
 * clients' own, as their localised builds print them; where a client prints no lead word
 * ("<date> <name> <address>:"), so does the entry.
 */

export interface Person {
  readonly name: string
  readonly address: string
}

export interface Language {
  readonly code: string
  readonly name: string
  readonly dir?: "rtl"
  readonly sender: Person
  readonly recipient: Person
  readonly subject: string
  /** "Re:" / "AW:" / "RE:" ... as Outlook in this locale writes it */
  readonly re: string
  readonly fw: string
  /** the reply: paragraphs of lines */
  readonly reply: ReadonlyArray<ReadonlyArray<string>>
  readonly signOff: ReadonlyArray<string>
  /** the message being answered */
  readonly quoted: ReadonlyArray<ReadonlyArray<string>>
  /** a second answer, for inline replies: question (quoted) and answer pairs */
  readonly inline: ReadonlyArray<readonly [string, string]>
  readonly gmail: string
  readonly apple: string
  readonly thunderbird: string
  /** Outlook's header block labels: from, sent, to, subject */
  readonly outlook: readonly [string, string, string, string]
  readonly outlookDate: string
  /** the date's label in a mail header block (old Hotmail starts its block with it) */
  readonly dateLabel: string
  readonly original: string
  readonly forwarded: string
  readonly appleForward: string
  readonly iphone: string
  readonly android: string
}

const person = (name: string, address: string): Person => ({ name, address })

export const languages: ReadonlyArray<Language> = [
  {
    code: "en", name: "English",
    sender: person("Jane Doe", "jane.doe@example.com"), recipient: person("Tom Baker", "tom.baker@example.org"),
    subject: "Delivery date for order 4471", re: "RE:", fw: "FW:",
    reply: [["Hi Tom,"], ["Thursday works for us. Please deliver to the loading dock", "at the back of the building."]],
    signOff: ["Thanks,", "Jane"],
    quoted: [["Hi Jane,"], ["Can we deliver order 4471 on Thursday or Friday?"], ["Tom"]],
    inline: [["Can we deliver on Thursday?", "Yes, Thursday is fine."], ["Which entrance should the driver use?", "The loading dock at the back."]],
    gmail: "On Mon, Mar 4, 2024 at 10:15 AM Tom Baker <tom.baker@example.org> wrote:",
    apple: "On 4 Mar 2024, at 10:15, Tom Baker <tom.baker@example.org> wrote:",
    thunderbird: "On 04/03/2024 10:15, Tom Baker wrote:",
    outlook: ["From", "Sent", "To", "Subject"], outlookDate: "Monday, March 4, 2024 10:15 AM", dateLabel: "Date",
    original: "-----Original Message-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Begin forwarded message:", iphone: "Sent from my iPhone", android: "Sent from my Galaxy"
  },
  {
    code: "de", name: "German",
    sender: person("Jürgen Weiß", "juergen.weiss@example.de"), recipient: person("Klaus Müller", "klaus.mueller@example.de"),
    subject: "Lieferung nächste Woche", re: "AW:", fw: "WG:",
    reply: [["Hallo Klaus,"], ["Donnerstag passt uns gut. Bitte an die Rampe hinter dem", "Gebäude liefern."]],
    signOff: ["Viele Grüße", "Jürgen"],
    quoted: [["Hallo Jürgen,"], ["können wir die Ware am Donnerstag oder Freitag liefern?"], ["Gruß", "Klaus"]],
    inline: [["Geht Donnerstag?", "Ja, Donnerstag ist gut."], ["Welcher Eingang?", "Die Rampe hinten."]],
    gmail: "Am Mo., 4. März 2024 um 10:15 Uhr schrieb Klaus Müller <klaus.mueller@example.de>:",
    apple: "Am 04.03.2024 um 10:15 schrieb Klaus Müller <klaus.mueller@example.de>:",
    thunderbird: "Am 04.03.24 um 10:15 schrieb Klaus Müller:",
    outlook: ["Von", "Gesendet", "An", "Betreff"], outlookDate: "Montag, 4. März 2024 10:15", dateLabel: "Datum",
    original: "-----Ursprüngliche Nachricht-----", forwarded: "---------- Weitergeleitete Nachricht ---------",
    appleForward: "Anfang der weitergeleiteten Nachricht:", iphone: "Von meinem iPhone gesendet",
    android: "Von meinem Samsung Galaxy Smartphone gesendet."
  },
  {
    code: "fr", name: "French",
    sender: person("Élodie Martin", "elodie.martin@example.fr"), recipient: person("Jean Dupont", "jean.dupont@example.fr"),
    subject: "Réunion de lundi", re: "RE :", fw: "TR :",
    reply: [["Bonjour Jean,"], ["Lundi à 14 h me convient très bien. Je réserve la salle", "du deuxième étage."]],
    signOff: ["Bien cordialement,", "Élodie"],
    quoted: [["Bonjour Élodie,"], ["Êtes-vous disponible lundi pour faire le point sur le projet ?"], ["Jean"]],
    inline: [["Lundi vous convient ?", "Oui, lundi à 14 h."], ["Quelle salle ?", "Celle du deuxième étage."]],
    gmail: "Le lun. 4 mars 2024 à 10:15, Jean Dupont <jean.dupont@example.fr> a écrit :",
    apple: "Le 4 mars 2024 à 10:15, Jean Dupont <jean.dupont@example.fr> a écrit :",
    thunderbird: "Le 04/03/2024 à 10:15, Jean Dupont a écrit :",
    outlook: ["De", "Envoyé", "À", "Objet"], outlookDate: "lundi 4 mars 2024 10:15", dateLabel: "Date",
    original: "-----Message d'origine-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Début du message réexpédié :", iphone: "Envoyé de mon iPhone", android: "Envoyé depuis mon Galaxy"
  },
  {
    code: "es", name: "Spanish",
    sender: person("Lucía Fernández", "lucia.fernandez@example.es"), recipient: person("Juan Pérez", "juan.perez@example.es"),
    subject: "Presupuesto de la reforma", re: "RE:", fw: "RV:",
    reply: [["Hola Juan:"], ["El presupuesto nos parece bien. ¿Podéis empezar la obra", "el lunes 11?"]],
    signOff: ["Un saludo,", "Lucía"],
    quoted: [["Hola Lucía:"], ["Te envío el presupuesto de la reforma de la cocina."], ["Saludos,", "Juan"]],
    inline: [["¿Os parece bien el presupuesto?", "Sí, nos parece bien."], ["¿Cuándo empezamos?", "El lunes 11."]],
    gmail: "El lun, 4 mar 2024 a las 10:15, Juan Pérez (<juan.perez@example.es>) escribió:",
    apple: "El 4 mar 2024, a las 10:15, Juan Pérez <juan.perez@example.es> escribió:",
    thunderbird: "El 4/3/24 a las 10:15, Juan Pérez escribió:",
    outlook: ["De", "Enviado el", "Para", "Asunto"], outlookDate: "lunes, 4 de marzo de 2024 10:15", dateLabel: "Fecha",
    original: "-----Mensaje original-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Inicio del mensaje reenviado:", iphone: "Enviado desde mi iPhone", android: "Enviado desde mi smartphone Samsung Galaxy."
  },
  {
    code: "pt", name: "Portuguese",
    sender: person("Ana Souza", "ana.souza@example.com.br"), recipient: person("João Silva", "joao.silva@example.com.br"),
    subject: "Contrato de manutenção", re: "RE:", fw: "ENC:",
    reply: [["Oi João,"], ["Li o contrato e está tudo certo. Vou assinar e devolver", "até sexta-feira."]],
    signOff: ["Abraços,", "Ana"],
    quoted: [["Olá Ana,"], ["Segue o contrato de manutenção para sua revisão."], ["Att.,", "João"]],
    inline: [["Está tudo certo com o contrato?", "Sim, tudo certo."], ["Quando você devolve?", "Até sexta-feira."]],
    gmail: "Em seg., 4 de mar. de 2024 às 10:15, João Silva <joao.silva@example.com.br> escreveu:",
    apple: "Em 4 de mar. de 2024, à(s) 10:15, João Silva <joao.silva@example.com.br> escreveu:",
    thunderbird: "Em 04/03/2024 10:15, João Silva escreveu:",
    outlook: ["De", "Enviado", "Para", "Assunto"], outlookDate: "segunda-feira, 4 de março de 2024 10:15", dateLabel: "Data",
    original: "-----Mensagem original-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Início da mensagem encaminhada:", iphone: "Enviado do meu iPhone", android: "Enviado do meu Galaxy"
  },
  {
    code: "it", name: "Italian",
    sender: person("Giulia Bianchi", "giulia.bianchi@example.it"), recipient: person("Mario Rossi", "mario.rossi@example.it"),
    subject: "Ordine di cancelleria", re: "R:", fw: "I:",
    reply: [["Ciao Mario,"], ["va bene l'ordine così. Aggiungi solo due risme di carta A3."]],
    signOff: ["Grazie,", "Giulia"],
    quoted: [["Ciao Giulia,"], ["ti mando l'ordine di cancelleria del mese."], ["Mario"]],
    inline: [["Va bene l'ordine?", "Sì, va bene."], ["Serve altro?", "Due risme di carta A3."]],
    gmail: "Il giorno lun 4 mar 2024 alle ore 10:15 Mario Rossi <mario.rossi@example.it> ha scritto:",
    apple: "Il giorno 4 mar 2024, alle ore 10:15, Mario Rossi <mario.rossi@example.it> ha scritto:",
    thunderbird: "Il 04/03/24 10:15, Mario Rossi ha scritto:",
    outlook: ["Da", "Inviato", "A", "Oggetto"], outlookDate: "lunedì 4 marzo 2024 10:15", dateLabel: "Data",
    original: "-----Messaggio originale-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Inizio messaggio inoltrato:", iphone: "Inviato da iPhone", android: "Inviato dal mio Galaxy"
  },
  {
    code: "nl", name: "Dutch",
    sender: person("Sanne Jansen", "sanne.jansen@example.nl"), recipient: person("Jan de Vries", "jan.devries@example.nl"),
    subject: "Offerte schilderwerk", re: "RE:", fw: "FW:",
    reply: [["Hoi Jan,"], ["De offerte is akkoord. Kunnen jullie in april beginnen?"]],
    signOff: ["Groet,", "Sanne"],
    quoted: [["Beste Sanne,"], ["Hierbij de offerte voor het schilderwerk aan de voorgevel."], ["Met vriendelijke groet,", "Jan"]],
    inline: [["Is de offerte akkoord?", "Ja, akkoord."], ["Wanneer beginnen we?", "In april graag."]],
    gmail: "Op ma 4 mrt 2024 om 10:15 schreef Jan de Vries <jan.devries@example.nl>:",
    apple: "Op 4 mrt 2024 om 10:15 heeft Jan de Vries <jan.devries@example.nl> het volgende geschreven:",
    thunderbird: "Op 04-03-2024 om 10:15 schreef Jan de Vries:",
    outlook: ["Van", "Verzonden", "Aan", "Onderwerp"], outlookDate: "maandag 4 maart 2024 10:15", dateLabel: "Datum",
    original: "-----Oorspronkelijk bericht-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Begin doorgestuurd bericht:", iphone: "Verstuurd vanaf mijn iPhone", android: "Verzonden vanaf mijn Galaxy"
  },
  {
    code: "ru", name: "Russian",
    sender: person("Ольга Смирнова", "olga.smirnova@example.ru"), recipient: person("Иван Петров", "ivan.petrov@example.ru"),
    subject: "Счёт за февраль", re: "RE:", fw: "FW:",
    reply: [["Иван, добрый день!"], ["Счёт оплатили сегодня утром, платёжку пришлю после обеда."]],
    signOff: ["С уважением,", "Ольга"],
    quoted: [["Ольга, здравствуйте!"], ["Напоминаю про счёт за февраль, срок оплаты истекает в пятницу."], ["Иван"]],
    inline: [["Счёт оплачен?", "Да, сегодня утром."], ["Пришлёте платёжку?", "Пришлю после обеда."]],
    gmail: "пн, 4 мар. 2024 г. в 10:15, Иван Петров <ivan.petrov@example.ru>:",
    apple: "4 марта 2024 г., в 10:15, Иван Петров <ivan.petrov@example.ru> написал(а):",
    thunderbird: "04.03.2024 10:15, Иван Петров пишет:",
    outlook: ["От", "Отправлено", "Кому", "Тема"], outlookDate: "4 марта 2024 г. 10:15", dateLabel: "Дата",
    original: "-----Исходное сообщение-----", forwarded: "---------- Пересылаемое сообщение ---------",
    appleForward: "Начало переадресованного сообщения:", iphone: "Отправлено с iPhone", android: "Отправлено с Galaxy"
  },
  {
    code: "pl", name: "Polish",
    sender: person("Katarzyna Nowak", "katarzyna.nowak@example.pl"), recipient: person("Jan Kowalski", "jan.kowalski@example.pl"),
    subject: "Termin przeglądu", re: "RE:", fw: "PD:",
    reply: [["Cześć Janek,"], ["Środa o 9:00 mi pasuje. Samochód zostawię na parkingu", "przed warsztatem."]],
    signOff: ["Pozdrawiam,", "Kasia"],
    quoted: [["Dzień dobry,"], ["Proponujemy termin przeglądu w środę rano."], ["Jan Kowalski"]],
    inline: [["Czy środa pasuje?", "Tak, o 9:00."], ["Gdzie zostawi Pani samochód?", "Na parkingu przed warsztatem."]],
    gmail: "pon., 4 mar 2024 o 10:15 Jan Kowalski <jan.kowalski@example.pl> napisał(a):",
    apple: "Wiadomość napisana przez Jan Kowalski <jan.kowalski@example.pl> w dniu 4 mar 2024, o godz. 10:15:",
    thunderbird: "W dniu 4.03.2024 o 10:15, Jan Kowalski pisze:",
    outlook: ["Od", "Wysłano", "Do", "Temat"], outlookDate: "poniedziałek, 4 marca 2024 10:15", dateLabel: "Data",
    original: "-----Wiadomość oryginalna-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "Początek przekazywanej wiadomości:", iphone: "Wysłane z iPhone'a", android: "Wysłane z mojego Galaxy"
  },
  {
    code: "sv", name: "Swedish",
    sender: person("Anna Svensson", "anna.svensson@example.se"), recipient: person("Erik Lindqvist", "erik.lindqvist@example.se"),
    subject: "Inventering i lagret", re: "SV:", fw: "VB:",
    reply: [["Hej Erik!"], ["Vi kör inventeringen på fredag efter lunch. Jag tar med", "skannrarna."]],
    signOff: ["Mvh", "Anna"],
    quoted: [["Hej Anna,"], ["När kan vi göra inventeringen i lagret?"], ["Erik"]],
    inline: [["När gör vi inventeringen?", "På fredag efter lunch."], ["Vem tar med skannrarna?", "Jag gör det."]],
    gmail: "Den mån 4 mars 2024 kl 10:15 skrev Erik Lindqvist <erik.lindqvist@example.se>:",
    apple: "4 mars 2024 kl. 10:15 skrev Erik Lindqvist <erik.lindqvist@example.se>:",
    thunderbird: "Den 2024-03-04 kl. 10:15, skrev Erik Lindqvist:",
    outlook: ["Från", "Skickat", "Till", "Ämne"], outlookDate: "den 4 mars 2024 10:15", dateLabel: "Datum",
    original: "-----Ursprungligt meddelande-----", forwarded: "---------- Vidarebefordrat meddelande ---------",
    appleForward: "Vidarebefordrat mejl:", iphone: "Skickat från min iPhone", android: "Skickat från min Galaxy"
  },
  {
    code: "cs", name: "Czech",
    sender: person("Petra Dvořáková", "petra.dvorakova@example.cz"), recipient: person("Jan Novák", "jan.novak@example.cz"),
    subject: "Faktura za leden", re: "RE:", fw: "FW:",
    reply: [["Dobrý den, pane Nováku,"], ["fakturu jsme dnes uhradili. Potvrzení o platbě posílám", "v příloze zítra."]],
    signOff: ["S pozdravem", "Petra Dvořáková"],
    quoted: [["Dobrý den,"], ["dovoluji si připomenout fakturu za leden se splatností v pátek."], ["Jan Novák"]],
    inline: [["Je faktura uhrazena?", "Ano, dnes."], ["Pošlete potvrzení?", "Zítra v příloze."]],
    gmail: "po 4. 3. 2024 v 10:15 odesílatel Jan Novák <jan.novak@example.cz> napsal:",
    apple: "4. 3. 2024 v 10:15, Jan Novák <jan.novak@example.cz>:",
    thunderbird: "Dne 04. 03. 24 v 10:15 Jan Novák napsal(a):",
    outlook: ["Od", "Odesláno", "Komu", "Předmět"], outlookDate: "pondělí 4. března 2024 10:15", dateLabel: "Datum",
    original: "-----Původní zpráva-----", forwarded: "---------- Přeposlaná zpráva ---------",
    appleForward: "Začátek přeposílané zprávy:", iphone: "Odesláno z iPhonu", android: "Odesláno z mého Galaxy"
  },
  {
    code: "tr", name: "Turkish",
    sender: person("Elif Kaya", "elif.kaya@example.com.tr"), recipient: person("Ahmet Yılmaz", "ahmet.yilmaz@example.com.tr"),
    subject: "Toplantı saati", re: "YNT:", fw: "İLT:",
    reply: [["Merhaba Ahmet Bey,"], ["Salı saat 14:00 bizim için uygun. Toplantı odasını ayırdım."]],
    signOff: ["Saygılarımla,", "Elif"],
    quoted: [["Merhaba Elif Hanım,"], ["Proje toplantısı için salı günü uygun musunuz?"], ["Ahmet"]],
    inline: [["Salı uygun mu?", "Evet, saat 14:00."], ["Oda ayrıldı mı?", "Evet, ayırdım."]],
    gmail: "Ahmet Yılmaz <ahmet.yilmaz@example.com.tr>, 4 Mar 2024 Pzt, 10:15 tarihinde şunu yazdı:",
    apple: "4 Mar 2024 tarihinde 10:15 saatinde, Ahmet Yılmaz <ahmet.yilmaz@example.com.tr> şunları yazdı:",
    thunderbird: "4.03.2024 10:15 tarihinde Ahmet Yılmaz yazdı:",
    outlook: ["Kimden", "Gönderildi", "Kime", "Konu"], outlookDate: "4 Mart 2024 Pazartesi 10:15", dateLabel: "Tarih",
    original: "-----Orijinal İleti-----", forwarded: "---------- Yönlendirilmiş ileti ---------",
    appleForward: "Yönlendirilmiş ileti başlangıcı:", iphone: "iPhone'umdan gönderildi", android: "Galaxy cihazımdan gönderildi"
  },
  {
    code: "ja", name: "Japanese",
    sender: person("佐藤花子", "hanako.sato@example.jp"), recipient: person("山田太郎", "taro.yamada@example.jp"),
    subject: "見積書の件", re: "RE:", fw: "FW:",
    reply: [["山田様"], ["お世話になっております。", "見積書の内容で問題ございません。発注手続きを進めます。"]],
    signOff: ["よろしくお願いいたします。", "佐藤"],
    quoted: [["佐藤様"], ["お世話になっております。", "ご依頼の見積書をお送りします。"], ["山田"]],
    inline: [["内容に問題はございませんか。", "問題ございません。"], ["納期はいつがよろしいですか。", "月末でお願いします。"]],
    gmail: "2024年3月4日(月) 10:15 山田太郎 <taro.yamada@example.jp>:",
    apple: "2024/03/04 10:15、山田太郎 <taro.yamada@example.jp>のメール:",
    thunderbird: "2024/03/04 10:15 山田太郎 wrote:",
    outlook: ["差出人", "送信日時", "宛先", "件名"], outlookDate: "2024年3月4日 10:15", dateLabel: "日付",
    original: "-----元のメッセージ-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "転送されたメッセージ:", iphone: "iPhoneから送信", android: "Galaxyから送信"
  },
  {
    code: "zh", name: "Chinese",
    sender: person("李娜", "li.na@example.cn"), recipient: person("张伟", "zhang.wei@example.cn"),
    subject: "下周的培训安排", re: "答复:", fw: "转发:",
    reply: [["张经理："], ["培训安排没有问题，我们部门会派三个人参加。"]],
    signOff: ["谢谢！", "李娜"],
    quoted: [["李娜你好，"], ["下周三的培训请确认参加人数。"], ["张伟"]],
    inline: [["参加人数是多少？", "三个人。"], ["需要投影仪吗？", "需要。"]],
    gmail: "张伟 <zhang.wei@example.cn> 于2024年3月4日周一 10:15写道：",
    apple: "2024年3月4日 10:15，张伟 <zhang.wei@example.cn> 写道：",
    thunderbird: "在 2024/3/4 10:15, 张伟 写道:",
    outlook: ["发件人", "发送时间", "收件人", "主题"], outlookDate: "2024年3月4日 10:15", dateLabel: "日期",
    original: "-----原始邮件-----", forwarded: "---------- Forwarded message ---------",
    appleForward: "以下为转发的邮件:", iphone: "发自我的iPhone", android: "发自我的Galaxy"
  },
  {
    code: "ko", name: "Korean",
    sender: person("이서연", "seoyeon.lee@example.kr"), recipient: person("김민수", "minsu.kim@example.kr"),
    subject: "회의 일정 확인", re: "RE:", fw: "FW:",
    reply: [["민수 씨,"], ["목요일 오후 3시에 회의실 B에서 뵙겠습니다."]],
    signOff: ["감사합니다.", "이서연 드림"],
    quoted: [["서연 씨 안녕하세요,"], ["다음 주 회의 일정 확인 부탁드립니다."], ["김민수"]],
    inline: [["목요일 괜찮으세요?", "네, 오후 3시에 가능합니다."], ["장소는 어디로 할까요?", "회의실 B로 하죠."]],
    gmail: "2024년 3월 4일 (월) 오전 10:15, 김민수 <minsu.kim@example.kr>님이 작성:",
    apple: "2024. 3. 4. 오전 10:15, 김민수 <minsu.kim@example.kr> 작성:",
    thunderbird: "2024-03-04 오전 10:15에 김민수 이(가) 쓴 글:",
    outlook: ["보낸 사람", "보낸 날짜", "받는 사람", "제목"], outlookDate: "2024년 3월 4일 월요일 오전 10:15", dateLabel: "날짜",
    original: "-----원본 메시지-----", forwarded: "---------- 전달된 메일 ---------",
    appleForward: "전달된 메일:", iphone: "iPhone에서 보냄", android: "Galaxy에서 보냄"
  },
  {
    code: "he", name: "Hebrew", dir: "rtl",
    sender: person("נועה לוי", "noa.levi@example.co.il"), recipient: person("David Cohen", "david.cohen@example.co.il"),
    subject: "הזמנת ציוד", re: "השב:", fw: "העבר:",
    reply: [["היי דוד,"], ["ההזמנה מאושרת. אפשר לשלוח את הציוד ביום שלישי."]],
    signOff: ["תודה,", "נועה"],
    quoted: [["שלום נועה,"], ["מצורפת הצעת המחיר לציוד החדש."], ["דוד"]],
    inline: [["ההזמנה מאושרת?", "כן, מאושרת."], ["מתי לשלוח?", "ביום שלישי."]],
    gmail: "\u202bבתאריך יום ב׳, 4 במרץ 2024 ב-10:15 מאת \u202aDavid Cohen\u202c\u200f <\u202adavid.cohen@example.co.il\u202c\u200f>:\u202c",
    apple: "ב-4 במרץ 2024, בשעה 10:15, David Cohen <david.cohen@example.co.il> כתב/ה:",
    thunderbird: "בתאריך 04/03/2024 10:15, David Cohen כתב:",
    outlook: ["מאת", "נשלח", "אל", "נושא"], outlookDate: "יום שני 04 מרץ 2024 10:15", dateLabel: "תאריך",
    original: "-----הודעה מקורית-----", forwarded: "---------- הודעה שהועברה ---------",
    appleForward: "תחילת הודעה שהועברה:", iphone: "נשלח מה-iPhone שלי", android: "נשלח מה-Galaxy שלי"
  },
  {
    code: "ar", name: "Arabic", dir: "rtl",
    sender: person("سارة أحمد", "sara.ahmed@example.sa"), recipient: person("Ahmed Ali", "ahmed.ali@example.sa"),
    subject: "موعد التسليم", re: "رد:", fw: "إعادة توجيه:",
    reply: [["مرحباً أحمد،"], ["موعد التسليم يوم الخميس مناسب لنا. سننتظر الشحنة في المستودع."]],
    signOff: ["مع التحية،", "سارة"],
    quoted: [["مرحباً سارة،"], ["هل يناسبكم التسليم يوم الخميس؟"], ["أحمد"]],
    inline: [["هل يناسبكم الخميس؟", "نعم، يناسبنا."], ["أين نسلم الشحنة؟", "في المستودع."]],
    gmail: "\u202bفي الاثنين، 4 مارس 2024 في 10:15 ص تمت كتابة ما يلي بواسطة \u202aAhmed Ali\u202c\u200f <\u202aahmed.ali@example.sa\u202c\u200f>:\u202c",
    apple: "في 4 مارس 2024، الساعة 10:15، كتب Ahmed Ali <ahmed.ali@example.sa>:",
    thunderbird: "في 04/03/2024 10:15، كتب Ahmed Ali:",
    outlook: ["من", "تم الإرسال", "إلى", "الموضوع"], outlookDate: "الاثنين، 4 مارس، 2024 10:15 ص", dateLabel: "التاريخ",
    original: "-----الرسالة الأصلية-----", forwarded: "---------- الرسالة المُعاد توجيهها ---------",
    appleForward: "بداية الرسالة المُعاد توجيهها:", iphone: "أُرسلت من الـ iPhone", android: "مرسلة من Galaxy"
  }
]
