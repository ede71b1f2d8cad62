// Generated from the ICU 76 data (CLDR) of the Foundation that formatted these dates before:
// for each locale, the pattern of its medium date and short time, the texts of its month field
// and of its day periods, and its digits when they are not 0 to 9, each checked against ICU's
// own output. See LocaleTable.swift; do not edit by hand.
extension LocaleTable {
  /// Locales os_RU to zu_ZA.
  static let formats3: [String: LocaleFormat] = [
    "os_RU": LocaleFormat(
      "dd MMM y\u{202F}'аз', HH:mm",
      months: [
        "янв.", "фев.", "мар.", "апр.", "майы", "июны", "июлы", "авг.", "сен.", "окт.", "ноя.", "дек.",
      ]),
    "pa_IN": LocaleFormat(
      "d MMM y, h:mm a", months: ["ਜਨ", "ਫ਼ਰ", "ਮਾਰਚ", "ਅਪ੍ਰੈ", "ਮਈ", "ਜੂਨ", "ਜੁਲਾ", "ਅਗ", "ਸਤੰ", "ਅਕਤੂ", "ਨਵੰ", "ਦਸੰ"],
      dayPeriods: ["AM", "PM"]),
    "pa_PK": LocaleFormat(
      "d MMM y h:mm a",
      months: [
        "جنوری", "فروری", "مارچ", "اپریل", "مئ", "جون", "جولائی", "اگست", "ستمبر", "اکتوبر", "نومبر", "دسمبر",
      ], dayPeriods: ["AM", "PM"], digits: "۰۱۲۳۴۵۶۷۸۹"),
    "pl_PL": LocaleFormat(
      "d MMM y 'o' HH:mm",
      months: ["sty", "lut", "mar", "kwi", "maj", "cze", "lip", "sie", "wrz", "paź", "lis", "gru"]),
    "pt_BR": LocaleFormat(
      "d 'de' MMM 'de' y, HH:mm",
      months: [
        "jan.", "fev.", "mar.", "abr.", "mai.", "jun.", "jul.", "ago.", "set.", "out.", "nov.", "dez.",
      ]),
    "pt_PT": LocaleFormat("dd/MM/y, HH:mm"),
    "raj_IN": LocaleFormat(
      "y MMM d h:mm a",
      months: ["जनवरी", "फरवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितम्बर", "अक्टूबर", "नवंबर", "दिसंबर"],
      dayPeriods: ["सबेरे", "सांम"], digits: "०१२३४५६७८९"),
    "ro_RO": LocaleFormat(
      "d MMM y, HH:mm",
      months: [
        "ian.", "feb.", "mar.", "apr.", "mai", "iun.", "iul.", "aug.", "sept.", "oct.", "nov.", "dec.",
      ]),
    "ru_RU": LocaleFormat(
      "d MMM y\u{202F}'г'., HH:mm",
      months: [
        "янв.", "февр.", "марта", "апр.", "мая", "июня", "июля", "авг.", "сент.", "окт.", "нояб.", "дек.",
      ]),
    "rw_RW": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "mut.", "gas.", "wer.", "mat.", "gic.", "kam.", "nya.", "kan.", "nze.", "ukw.", "ugu.", "uku.",
      ]),
    "sa_IN": LocaleFormat(
      "d MMM y, h:mm a",
      months: [
        "जनवरी:", "फरवरी:", "मार्च:", "अप्रैल:", "मई", "जून:", "जुलाई:", "अगस्त:", "सितंबर:", "अक्तूबर:", "नवंबर:", "दिसंबर:",
      ], dayPeriods: ["पूर्वाह्न", "अपराह्न"], digits: "०१२३४५६७८९"),
    "sah_RU": LocaleFormat(
      "y, MMM d HH:mm",
      months: ["Тохс", "Олун", "Клн", "Мсу", "Ыам", "Бэс", "Отй", "Атр", "Блҕ", "Алт", "Сэт", "Ахс"]),
    "sat_IN": LocaleFormat(
      "d MMM y h:mm a",
      months: ["ᱡᱟᱱ", "ᱯᱷᱟ", "ᱢᱟᱨ", "ᱟᱯᱨ", "ᱢᱮ", "ᱡᱩᱱ", "ᱡᱩᱞ", "ᱟᱜᱟ", "ᱥᱮᱯ", "ᱚᱠᱴ", "ᱱᱟᱣ", "ᱫᱤᱥ"],
      dayPeriods: ["ᱥᱮᱛᱟᱜ", "ᱧᱤᱫᱟᱹ"], digits: "᱐᱑᱒᱓᱔᱕᱖᱗᱘᱙"),
    "sc_IT": LocaleFormat(
      "d 'de' MMM y, HH:mm",
      months: ["ghe", "fre", "mar", "abr", "maj", "làm", "trì", "aus", "cab", "stG", "stA", "nad"]),
    "sd_IN": LocaleFormat(
      "MMM d, y h:mm a", months: ["जन", "फर", "मार्च", "अप्रै", "मई", "जून", "जु", "अग", "सप्टे", "ऑक्टो", "नवं", "डिसं"],
      dayPeriods: ["सुबुह जा", "शाम जा"]),
    "se_NO": LocaleFormat(
      "y MMM d HH:mm",
      months: ["ođđj", "guov", "njuk", "cuo", "mies", "geas", "suoi", "borg", "čakč", "golg", "skáb", "juov"]),
    "si_LK": LocaleFormat(
      "y MMM d, HH.mm",
      months: ["ජන", "පෙබ", "මාර්තු", "අප්\u{200D}රේල්", "මැයි", "ජූනි", "ජූලි", "අගෝ", "සැප්", "ඔක්", "නොවැ", "දෙසැ"]),
    "sk_SK": LocaleFormat("d.\u{202F}M.\u{202F}y, H:mm"),
    "sl_SI": LocaleFormat(
      "d. MMM y, HH:mm",
      months: ["jan.", "feb.", "mar.", "apr.", "maj", "jun.", "jul.", "avg.", "sep.", "okt.", "nov.", "dec."]),
    "sm_WS": LocaleFormat(
      "d MMM y h:mm a",
      months: ["M01", "M02", "M03", "M04", "M05", "M06", "M07", "M08", "M09", "M10", "M11", "M12"],
      dayPeriods: ["AM", "PM"]),
    "so_DJ": LocaleFormat(
      "dd-MMM-y 'ee' h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mar", "Abr", "May", "Jun", "Lul", "Ogs", "Seb", "Okt", "Nof", "Dis"],
      dayPeriods: ["GH", "GD"]),
    "so_KE": LocaleFormat(
      "dd-MMM-y 'ee' HH:mm",
      months: ["Jan", "Feb", "Mar", "Abr", "May", "Jun", "Lul", "Ogs", "Seb", "Okt", "Nof", "Dis"]),
    "sq_AL": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["jan", "shk", "mar", "pri", "maj", "qer", "korr", "gush", "sht", "tet", "nën", "dhj"],
      dayPeriods: ["e paradites", "e pasdites"]),
    "sq_MK": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["jan", "shk", "mar", "pri", "maj", "qer", "korr", "gush", "sht", "tet", "nën", "dhj"]),
    "sr_ME": LocaleFormat("d. M. y. HH:mm"),
    "ss_ZA": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Bhi", "Van", "Vol", "Mab", "Nkh", "Nhl", "Kho", "Ngc", "Nyo", "Mph", "Lwe", "Ngo"]),
    "st_ZA": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Phe", "Kol", "Ube", "Mme", "Mot", "Jan", "Upu", "Pha", "Leo", "Mph", "Pun", "Tsh"]),
    "sv_SE": LocaleFormat(
      "d MMM y HH:mm",
      months: ["jan.", "feb.", "mars", "apr.", "maj", "juni", "juli", "aug.", "sep.", "okt.", "nov.", "dec."]),
    "sw_KE": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["Jan", "Feb", "Mac", "Apr", "Mei", "Jun", "Jul", "Ago", "Sep", "Okt", "Nov", "Des"]),
    "syr": LocaleFormat(
      "d ܒMMM y، h:mm a",
      months: [
        "ܟܢܘܢ ܒ", "ܫܒܛ", "ܐܕܪ", "ܢܝܣܢ", "ܐܝܪ", "ܚܙܝܪܢ", "ܬܡܘܙ", "ܐܒ", "ܐܝܠܘܠ", "ܬܫܪܝܢ ܐ", "ܬܫܪܝܢ ܒ", "ܟܢܘܢ ܐ",
      ], dayPeriods: ["\u{70F}ܩܛ\u{200C}", "\u{70F}ܒܛ\u{200C}"]),
    "szl_PL": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "stycznia", "lutego", "marca", "kwietnia", "moja", "czyrwca", "lipca", "siyrpnia", "września",
        "października", "listopada", "grudnia",
      ]),
    "ta_IN": LocaleFormat(
      "d MMM, y, h:mm a",
      months: ["ஜன.", "பிப்.", "மார்.", "ஏப்.", "மே", "ஜூன்", "ஜூலை", "ஆக.", "செப்.", "அக்.", "நவ.", "டிச."],
      dayPeriods: ["AM", "PM"]),
    "ta_LK": LocaleFormat(
      "d MMM, y, HH:mm",
      months: ["ஜன.", "பிப்.", "மார்.", "ஏப்.", "மே", "ஜூன்", "ஜூலை", "ஆக.", "செப்.", "அக்.", "நவ.", "டிச."]),
    "te_IN": LocaleFormat(
      "d MMM, y h:mm a", months: ["జన", "ఫిబ్ర", "మార్చి", "ఏప్రి", "మే", "జూన్", "జులై", "ఆగ", "సెప్టెం", "అక్టో", "నవం", "డిసెం"],
      dayPeriods: ["AM", "PM"]),
    "tg_TJ": LocaleFormat(
      "dd MMM y, HH:mm",
      months: ["Янв", "Фев", "Мар", "Апр", "Май", "Июн", "Июл", "Авг", "Сен", "Окт", "Ноя", "Дек"]),
    "ti_ER": LocaleFormat(
      "MMM d, y h:mm a", months: ["ጥሪ", "ለካ", "መጋ", "ሚያ", "ግን", "ሰነ", "ሓም", "ነሓ", "መስ", "ጥቅ", "ሕዳ", "ታሕ"],
      dayPeriods: ["ቅ.ቀ.", "ድ.ቀ."]),
    "tig_ER": LocaleFormat(
      "dd-MMM-y h:mm a",
      months: ["ጃንዩ", "ፌብሩ", "ማርች", "ኤፕረ", "ሜይ", "ጁን", "ጁላይ", "ኦገስ", "ሴፕቴ", "ኦክተ", "ኖቬም", "ዲሴም"],
      dayPeriods: ["ቀደም ሰርምዕል", "ሓቆ ስርምዕል"]),
    "tk_TM": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["ýan", "few", "mart", "apr", "maý", "iýun", "iýul", "awg", "sen", "okt", "noý", "dek"]),
    "tl_PH": LocaleFormat(
      "MMM d, y, h:mm\u{202F}a",
      months: ["Ene", "Peb", "Mar", "Abr", "May", "Hun", "Hul", "Ago", "Set", "Okt", "Nob", "Dis"],
      dayPeriods: ["AM", "PM"]),
    "tn_ZA": LocaleFormat(
      "y MMM d, HH:mm",
      months: ["Fer", "Tlh", "Mop", "Mor", "Mot", "See", "Phu", "Pha", "Lwe", "Dip", "Ngw", "Sed"]),
    "to_TO": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["Sān", "Fēp", "Maʻa", "ʻEpe", "Mē", "Sun", "Siu", "ʻAok", "Sēp", "ʻOka", "Nōv", "Tīs"],
      dayPeriods: ["hengihengi", "efiafi"]),
    "tr_CY": LocaleFormat(
      "d MMM y h:mm\u{202F}a",
      months: ["Oca", "Şub", "Mar", "Nis", "May", "Haz", "Tem", "Ağu", "Eyl", "Eki", "Kas", "Ara"],
      dayPeriods: ["ÖÖ", "ÖS"]),
    "tr_TR": LocaleFormat(
      "d MMM y HH:mm",
      months: ["Oca", "Şub", "Mar", "Nis", "May", "Haz", "Tem", "Ağu", "Eyl", "Eki", "Kas", "Ara"]),
    "ts_ZA": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Sun", "Yan", "Kul", "Dzi", "Mud", "Kho", "Maw", "Mha", "Ndz", "Nhl", "Huk", "N’w"]),
    "tt_RU": LocaleFormat(
      "d MMM, y\u{202F}'ел', H:mm",
      months: [
        "гыйн.", "фев.", "мар.", "апр.", "май", "июнь", "июль", "авг.", "сент.", "окт.", "нояб.", "дек.",
      ]),
    "ug_CN": LocaleFormat(
      "d-MMM، y، HH:mm",
      months: [
        "يانۋار", "فېۋرال", "مارت", "ئاپرېل", "ماي", "ئىيۇن", "ئىيۇل", "ئاۋغۇست", "سېنتەبىر", "ئۆكتەبىر",
        "نويابىر", "دېكابىر",
      ]),
    "uk_UA": LocaleFormat(
      "d MMM y\u{202F}'р'., HH:mm",
      months: [
        "січ.", "лют.", "бер.", "квіт.", "трав.", "черв.", "лип.", "серп.", "вер.", "жовт.", "лист.", "груд.",
      ]),
    "ur_IN": LocaleFormat(
      "d MMM، y، \u{200E}h:mm a",
      months: ["جنو", "فرو", "مار", "اپر", "مئی", "جون", "جول", "اگس", "ستم", "اکت", "نوم", "دسم"],
      dayPeriods: ["AM", "PM"]),
    "uz_UZ": LocaleFormat(
      "d-MMM, y, HH:mm",
      months: ["yan", "fev", "mar", "apr", "may", "iyn", "iyl", "avg", "sen", "okt", "noy", "dek"]),
    "ve_ZA": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Pha", "Luh", "Ṱhf", "Lam", "Shu", "Lwi", "Lwa", "Ṱha", "Khu", "Tsh", "Ḽar", "Nye"]),
    "vi_VN": LocaleFormat(
      "HH:mm 'ngày' d MMM, y",
      months: [
        "thg 1", "thg 2", "thg 3", "thg 4", "thg 5", "thg 6", "thg 7", "thg 8", "thg 9", "thg 10", "thg 11",
        "thg 12",
      ]),
    "wa_BE": LocaleFormat(
      "y MMM d HH:mm",
      months: ["M01", "M02", "M03", "M04", "M05", "M06", "M07", "M08", "M09", "M10", "M11", "M12"]),
    "wae_CH": LocaleFormat(
      "d. MMM y HH:mm",
      months: ["Jen", "Hor", "Mär", "Abr", "Mei", "Brá", "Hei", "Öig", "Her", "Wím", "Win", "Chr"]),
    "wal_ET": LocaleFormat(
      "dd-MMM-y h:mm a",
      months: ["ጃንዩ", "ፌብሩ", "ማርች", "ኤፕረ", "ሜይ", "ጁን", "ጁላይ", "ኦገስ", "ሴፕቴ", "ኦክተ", "ኖቬም", "ዲሴም"],
      dayPeriods: ["ማለዶ", "ቃማ"]),
    "wo_SN": LocaleFormat(
      "d MMM, y - HH:mm",
      months: ["Sam", "Few", "Mar", "Awr", "Mee", "Suw", "Sul", "Ut", "Sàt", "Okt", "Now", "Des"]),
    "xh_ZA": LocaleFormat(
      "MMM d, y HH:mm",
      months: ["Jan", "Feb", "Mat", "Epr", "Mey", "Jun", "Jul", "Aga", "Sept", "Okt", "Nov", "Dis"]),
    "yi_US": LocaleFormat(
      "dטן MMM y, h:mm a",
      months: [
        "יאַנואַר", "פֿעברואַר", "מערץ", "אַפּריל", "מיי", "יוני", "יולי", "אויגוסט", "סעפּטעמבער", "אקטאבער",
        "נאוועמבער", "דעצעמבער",
      ], dayPeriods: ["פֿאַרמיטאָג", "נאָכמיטאָג"]),
    "yo_NG": LocaleFormat("d MM y, H:m"),
    "yue_HK": LocaleFormat("y年M月d日ah:mm", dayPeriods: ["上午", "下午"]),
    "zh_CN": LocaleFormat("y年M月d日 HH:mm"),
    "zh_HK": LocaleFormat("y年M月d日 ah:mm", dayPeriods: ["上午", "下午"]),
    "zh_TW": LocaleFormat(
      "y年M月d日 Bh:mm",
      dayPeriods: [
        "凌晨", "凌晨", "凌晨", "凌晨", "凌晨", "清晨", "清晨", "清晨", "上午", "上午", "上午", "上午", "中午", "下午", "下午", "下午", "下午",
        "下午", "下午", "晚上", "晚上", "晚上", "晚上", "晚上", "",
      ]),
    "zu_ZA": LocaleFormat(
      "MMM d, y HH:mm",
      months: ["Jan", "Feb", "Mas", "Eph", "Mey", "Jun", "Jul", "Aga", "Sep", "Okt", "Nov", "Dis"]),
  ]
}
