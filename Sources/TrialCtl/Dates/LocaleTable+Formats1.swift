// Generated from the ICU 76 data (CLDR) of the Foundation that formatted these dates before:
// for each locale, the pattern of its medium date and short time, the texts of its month field
// and of its day periods, and its digits when they are not 0 to 9, each checked against ICU's
// own output. See LocaleTable.swift; do not edit by hand.
extension LocaleTable {
  /// Locales af_ZA to fr_FR.
  static let formats1: [String: LocaleFormat] = [
    "af_ZA": LocaleFormat(
      "dd MMM y HH:mm",
      months: ["Jan.", "Feb.", "Mrt.", "Apr.", "Mei", "Jun.", "Jul.", "Aug.", "Sep.", "Okt.", "Nov.", "Des."]),
    "ak_GH": LocaleFormat(
      "MMM d, y, h:mm\u{202F}a",
      months: [
        "Ɔpɛpɔn", "Ɔgyefoɔ", "Ɔbɛnem", "Oforisuo", "Kɔtɔnimma", "Ayɛwohomumu", "Kutawonsa", "Ɔsanaa", "Ɛbɔ",
        "Ahinime", "Obubuo", "Ɔpɛnimma",
      ], dayPeriods: ["AN", "EW"]),
    "am_ET": LocaleFormat(
      "d MMM y h:mm a",
      months: ["ጃን", "ፌብ", "ማርች", "ኤፕሪ", "ሜይ", "ጁን", "ጁላይ", "ኦገስ", "ሴፕቴ", "ኦክቶ", "ኖቬም", "ዲሴም"],
      dayPeriods: ["ጥዋት", "ከሰዓት"]),
    "ar_AE": LocaleFormat("dd\u{200F}/MM\u{200F}/y، h:mm\u{A0}a", dayPeriods: ["ص", "م"]),
    "ar_BH": LocaleFormat(
      "dd\u{200F}/MM\u{200F}/y، h:mm\u{A0}a", dayPeriods: ["ص", "م"], digits: "٠١٢٣٤٥٦٧٨٩"),
    "ar_IN": LocaleFormat("d/M/yy، h:mm\u{A0}a", dayPeriods: ["ص", "م"]),
    "ar_MA": LocaleFormat("dd\u{200F}/MM\u{200F}/y HH:mm"),
    "as_IN": LocaleFormat("dd-MM-y, a h.mm", dayPeriods: ["AM", "PM"], digits: "০১২৩৪৫৬৭৮৯"),
    "ast_ES": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["xin", "feb", "mar", "abr", "may", "xun", "xnt", "ago", "set", "och", "pay", "avi"]),
    "az_AZ": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["yan", "fev", "mar", "apr", "may", "iyn", "iyl", "avq", "sen", "okt", "noy", "dek"]),
    "be_BY": LocaleFormat(
      "d MMM y\u{202F}'г'., HH:mm",
      months: ["сту", "лют", "сак", "кра", "мая", "чэр", "ліп", "жні", "вер", "кас", "ліс", "сне"]),
    "bem_ZM": LocaleFormat(
      "d MMM y h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mac", "Epr", "Mei", "Jun", "Jul", "Oga", "Sep", "Okt", "Nov", "Dis"],
      dayPeriods: ["uluchelo", "akasuba"]),
    "ber_DZ": LocaleFormat("dd/MM/y h:mm a", dayPeriods: ["AM", "PM"]),
    "ber_MA": LocaleFormat("dd/MM/y HH:mm"),
    "bg_BG": LocaleFormat("d.MM.y\u{202F}'г'., H:mm"),
    "bho_IN": LocaleFormat(
      "y MMM d h:mm a",
      months: ["जनवरी", "फरवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितम्बर", "अक्टूबर", "नवंबर", "दिसंबर"],
      dayPeriods: ["भोर", "सांझ"], digits: "०१२३४५६७८९"),
    "bho_NP": LocaleFormat(
      "y MMM d HH:mm",
      months: ["जनवरी", "फरवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितम्बर", "अक्टूबर", "नवंबर", "दिसंबर"],
      digits: "०१२३४५६७८९"),
    "bn_BD": LocaleFormat(
      "d MMM, y, h:mm a", months: ["জানু", "ফেব", "মার্চ", "এপ্রি", "মে", "জুন", "জুল", "আগ", "সেপ", "অক্টো", "নভে", "ডিসে"],
      dayPeriods: ["AM", "PM"]),
    "bn_IN": LocaleFormat(
      "d MMM, y, h:mm a", months: ["জানু", "ফেব", "মার্চ", "এপ্রি", "মে", "জুন", "জুল", "আগ", "সেপ্টেঃ", "অক্টোঃ", "নভেঃ", "ডিসেঃ"],
      dayPeriods: ["AM", "PM"]),
    "br_FR": LocaleFormat(
      "d MMM y, HH:mm",
      months: [
        "Gen.", "Cʼhwe.", "Meur.", "Ebr.", "Mae", "Mezh.", "Goue.", "Eost", "Gwen.", "Here", "Du", "Kzu.",
      ]),
    "brx_IN": LocaleFormat(
      "d MMM, y, a नि h:mm", months: ["जान", "फेब", "मार्च", "एप्रि", "मे", "जुन", "जुल", "आग", "सेप", "अक्ट’", "नवे", "डिसे"],
      dayPeriods: ["फुं", "बेलासे"]),
    "bs_BA": LocaleFormat(
      "d. MMM y. 'u' HH:mm",
      months: ["jan", "feb", "mar", "apr", "maj", "jun", "jul", "aug", "sep", "okt", "nov", "dec"]),
    "byn_ER": LocaleFormat(
      "dd-MMM-y h:mm a",
      months: ["ልደት", "ካብኽ", "ክብላ", "ፋጅኺ", "ክቢቅ", "ም/ት", "ኰር", "ማርያ", "ያኸኒ", "መተሉ", "ም/ም", "ተሕሳ"],
      dayPeriods: ["ፋዱስ ጃብ", "ፋዱስ ደምቢ"]),
    "ca_AD": LocaleFormat(
      "d MMM y, H:mm",
      months: [
        "gen.", "febr.", "març", "abr.", "maig", "juny", "jul.", "ag.", "set.", "oct.", "nov.", "des.",
      ]),
    "ce_RU": LocaleFormat(
      "y MMM d HH:mm",
      months: ["янв", "фев", "мар", "апр", "май", "июн", "июл", "авг", "сен", "окт", "ноя", "дек"]),
    "chr_US": LocaleFormat(
      "MMM d, y, h:mm a", months: ["ᎤᏃ", "ᎧᎦ", "ᎠᏅ", "ᎧᏬ", "ᎠᏂ", "ᏕᎭ", "ᎫᏰ", "ᎦᎶ", "ᏚᎵ", "ᏚᏂ", "ᏅᏓ", "ᎥᏍ"],
      dayPeriods: ["ᏌᎾᎴ", "ᏒᎯᏱᎢᏗᏢ"]),
    "ckb_IQ": LocaleFormat(
      "y MMM d h:mm a",
      months: [
        "کانوونی دووەم", "شوبات", "ئازار", "نیسان", "ئایار", "حوزەیران", "تەمووز", "ئاب", "ئەیلوول",
        "تشرینی یەکەم", "تشرینی دووەم", "کانونی یەکەم",
      ], dayPeriods: ["ب.ن", "د.ن"], digits: "٠١٢٣٤٥٦٧٨٩"),
    "cs_CZ": LocaleFormat("d.\u{202F}M.\u{202F}y H:mm"),
    "cv_RU": LocaleFormat(
      "d MMM y\u{202F}'ҫ'., HH:mm",
      months: ["кӑр.", "нар.", "пуш", "ака", "ҫу", "ҫӗр.", "утӑ", "ҫур.", "авӑн", "юпа", "чӳк", "раш."]),
    "cy_GB": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["Ion", "Chwef", "Maw", "Ebr", "Mai", "Meh", "Gorff", "Awst", "Medi", "Hyd", "Tach", "Rhag"]),
    "da_DK": LocaleFormat(
      "d. MMM y, HH.mm",
      months: ["jan.", "feb.", "mar.", "apr.", "maj", "jun.", "jul.", "aug.", "sep.", "okt.", "nov.", "dec."]),
    "de_DE": LocaleFormat("dd.MM.y, HH:mm"),
    "doi_IN": LocaleFormat(
      "d, MMM y, h:mm a",
      months: ["जन.", "फर.", "मार्च", "अप्रैल", "मेई", "जून", "जुलाई", "अग.", "सित.", "अक्तू.", "नव.", "दिस."],
      dayPeriods: ["सवेर", "दपैहर बाद"]),
    "dsb_DE": LocaleFormat("d.M.y H:mm"),
    "dv_MV": LocaleFormat("dd-MM-y HH:mm"),
    "dz_BT": LocaleFormat(
      "སྤྱི་ལོ་y ཟླ་MMM ཚེས་dd ཆུ་ཚོད་ h སྐར་མ་ mm a",
      months: ["༡", "༢", "༣", "༤", "༥", "༦", "༧", "༨", "༩", "༡༠", "༡༡", "12"], dayPeriods: ["སྔ་ཆ་", "ཕྱི་ཆ་"],
      digits: "༠༡༢༣༤༥༦༧༨༩"),
    "el_GR": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["Ιαν", "Φεβ", "Μαρ", "Απρ", "Μαΐ", "Ιουν", "Ιουλ", "Αυγ", "Σεπ", "Οκτ", "Νοε", "Δεκ"],
      dayPeriods: ["πμ", "μμ"]),
    "en_AU": LocaleFormat(
      "d MMM y 'at' h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
      dayPeriods: ["am", "pm"]),
    "en_BW": LocaleFormat(
      "dd MMM y 'at' HH:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    "en_DK": LocaleFormat(
      "d MMM y 'at' HH.mm",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    "en_GB": LocaleFormat(
      "d MMM y 'at' HH:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    "en_IL": LocaleFormat(
      "d MMM y 'at' H:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    "en_IN": LocaleFormat(
      "d MMM y 'at' h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
      dayPeriods: ["AM", "PM"]),
    "en_US_POSIX": LocaleFormat(
      "MMM d, y 'at' h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
      dayPeriods: ["AM", "PM"]),
    "en_ZW": LocaleFormat(
      "dd MMM,y 'at' HH:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    "eo": LocaleFormat(
      "y-MMM-dd HH:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "Maj", "Jun", "Jul", "Aŭg", "Sep", "Okt", "Nov", "Dec"]),
    "es_AR": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"],
      dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_BO": LocaleFormat(
      "d MMM 'de' y, h:mm\u{202F}a",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"],
      dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_CL": LocaleFormat("dd-MM-y, h:mm\u{202F}a", dayPeriods: ["a.m.", "p.m."]),
    "es_CO": LocaleFormat("d/MM/y, h:mm\u{202F}a", dayPeriods: ["a.m.", "p.m."]),
    "es_CU": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"],
      dayPeriods: ["a.m.", "p.m."]),
    "es_ES": LocaleFormat(
      "d MMM y, H:mm",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"]),
    "es_GT": LocaleFormat("d/MM/y, h:mm\u{202F}a", dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_MX": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sep", "oct", "nov", "dic"],
      dayPeriods: ["a.m.", "p.m."]),
    "es_PA": LocaleFormat("MM/dd/y, h:mm\u{202F}a", dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_PE": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: [
        "ene.", "feb.", "mar.", "abr.", "may.", "jun.", "jul.", "ago.", "set.", "oct.", "nov.", "dic.",
      ], dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_PY": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: [
        "ene.", "feb.", "mar.", "abr.", "may.", "jun.", "jul.", "ago.", "sept.", "oct.", "nov.", "dic.",
      ], dayPeriods: ["a.\u{A0}m.", "p.\u{A0}m."]),
    "es_US": LocaleFormat(
      "MMM d, y, h:mm\u{202F}a",
      months: ["ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic"],
      dayPeriods: ["a.m.", "p.m."]),
    "et_EE": LocaleFormat(
      "d. MMM y, HH:mm",
      months: ["jaan", "veebr", "märts", "apr", "mai", "juuni", "juuli", "aug", "sept", "okt", "nov", "dets"]),
    "eu_ES": LocaleFormat(
      "y('e')'ko' MMM d('a') (HH:mm)",
      months: [
        "urt.", "ots.", "mar.", "api.", "mai.", "eka.", "uzt.", "abu.", "ira.", "urr.", "aza.", "abe.",
      ]),
    "ff_SN": LocaleFormat(
      "d MMM, y HH:mm",
      months: ["sii", "col", "mbo", "see", "duu", "kor", "mor", "juk", "slt", "yar", "jol", "bow"]),
    "fi_FI": LocaleFormat("d.M.y 'klo' H.mm"),
    "fr_CA": LocaleFormat(
      "d MMM y 'à' HH:mm",
      months: [
        "janv.", "févr.", "mars", "avr.", "mai", "juin", "juill.", "août", "sept.", "oct.", "nov.", "déc.",
      ]),
    "fr_FR": LocaleFormat(
      "d MMM y 'à' HH:mm",
      months: [
        "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc.",
      ]),
  ]
}
