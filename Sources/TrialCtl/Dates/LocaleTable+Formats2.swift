// Generated from the ICU 76 data (CLDR) of the Foundation that formatted these dates before:
// for each locale, the pattern of its medium date and short time, the texts of its month field
// and of its day periods, and its digits when they are not 0 to 9, each checked against ICU's
// own output. See LocaleTable.swift; do not edit by hand.
extension LocaleTable {
  /// Locales fy_DE to or_IN.
  static let formats2: [String: LocaleFormat] = [
    "fy_DE": LocaleFormat("dd.MM.y HH:mm"),
    "fy_NL": LocaleFormat(
      "d MMM y HH:mm",
      months: ["Jan", "Feb", "Mrt", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Des"]),
    "ga_IE": LocaleFormat(
      "d MMM y, HH:mm",
      months: [
        "Ean", "Feabh", "Márta", "Aib", "Beal", "Meith", "Iúil", "Lún", "MFómh", "DFómh", "Samh", "Noll",
      ]),
    "gd_GB": LocaleFormat(
      "d'mh' MMM y, HH:mm",
      months: [
        "Faoi", "Gearr", "Màrt", "Gibl", "Cèit", "Ògmh", "Iuch", "Lùna", "Sult", "Dàmh", "Samh", "Dùbh",
      ]),
    "gez_ER": LocaleFormat(
      "dd-MMM-y h:mm a",
      months: ["ጠሐረ", "ከተተ", "መገበ", "አኀዘ", "ግንባት", "ሠንየ", "ሐመለ", "ነሐሰ", "ከረመ", "ጠቀመ", "ኀደረ", "ኀሠሠ"],
      dayPeriods: ["ጽባሕ", "ምሴት"]),
    "gl_ES": LocaleFormat(
      "d 'de' MMM 'de' y, HH:mm",
      months: [
        "xan.", "feb.", "mar.", "abr.", "maio", "xuño", "xul.", "ago.", "set.", "out.", "nov.", "dec.",
      ]),
    "gu_IN": LocaleFormat(
      "d MMM, y hh:mm a",
      months: ["જાન૰", "ફેબ૰", "માર્ચ", "એપ્રિલ", "મે", "જૂન", "જુલાઈ", "ઑગ૰", "સપ્ટ૰", "ઑક્ટ૰", "નવ૰", "ડિસ૰"],
      dayPeriods: ["AM", "PM"]),
    "gv_GB": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "J-guer", "T-arree", "Mayrnt", "Avrril", "Boaldyn", "M-souree", "J-souree", "Luanistyn", "M-fouyir",
        "J-fouyir", "M-Houney", "M-Nollick",
      ]),
    "ha_NG": LocaleFormat(
      "d MMM, y, HH:mm",
      months: ["Jan", "Fab", "Mar", "Afi", "May", "Yun", "Yul", "Agu", "Sat", "Okt", "Nuw", "Dis"]),
    "he_IL": LocaleFormat(
      "d בMMM y, H:mm",
      months: ["ינו׳", "פבר׳", "מרץ", "אפר׳", "מאי", "יוני", "יולי", "אוג׳", "ספט׳", "אוק׳", "נוב׳", "דצמ׳"]),
    "hi_IN": LocaleFormat(
      "d MMM y, a h:mm",
      months: ["जन॰", "फ़र॰", "मार्च", "अप्रैल", "मई", "जून", "जुल॰", "अग॰", "सित॰", "अक्तू॰", "नव॰", "दिस॰"],
      dayPeriods: ["पू", "अ"]),
    "hr_HR": LocaleFormat("dd.MM.y. HH:mm"),
    "hsb_DE": LocaleFormat("d.M.y H:mm 'hodź'."),
    "hu_HU": LocaleFormat(
      "y. MMM d. H:mm",
      months: [
        "jan.", "febr.", "márc.", "ápr.", "máj.", "jún.", "júl.", "aug.", "szept.", "okt.", "nov.", "dec.",
      ]),
    "hy_AM": LocaleFormat(
      "dd MMM, y թ., HH:mm",
      months: ["հնվ", "փտվ", "մրտ", "ապր", "մյս", "հնս", "հլս", "օգս", "սեպ", "հոկ", "նոյ", "դեկ"]),
    "ia_FR": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["jan", "feb", "mar", "apr", "mai", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]),
    "id_ID": LocaleFormat(
      "d MMM y, HH.mm",
      months: ["Jan", "Feb", "Mar", "Apr", "Mei", "Jun", "Jul", "Agu", "Sep", "Okt", "Nov", "Des"]),
    "ig_NG": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["Jen", "Feb", "Maa", "Epr", "Mee", "Juu", "Jul", "Ọgọ", "Sep", "Ọkt", "Nov", "Dis"]),
    "is_IS": LocaleFormat(
      "d. MMM y, HH:mm",
      months: ["jan.", "feb.", "mar.", "apr.", "maí", "jún.", "júl.", "ágú.", "sep.", "okt.", "nóv.", "des."]),
    "it_IT": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["gen", "feb", "mar", "apr", "mag", "giu", "lug", "ago", "set", "ott", "nov", "dic"]),
    "iu_CA": LocaleFormat(
      "MMM d, y h:mm a",
      months: [
        "ᔭᓐᓄᐊᓕ", "ᕕᕝᕗᐊᓕ", "ᒫᑦᓯ", "ᐊᐃᑉᐳᓗ", "ᒪᐃ", "ᔫᓂ", "ᔪᓚᐃ", "ᐊᐅᒡᒍᓯ", "ᓯᑎᐱᕆ", "ᐆᑦᑑᕝᕙ", "ᓄᕕᐱᕆ", "ᑎᓯᐱᕆ",
      ], dayPeriods: ["am", "pm"]),
    "ja_JP": LocaleFormat("y/MM/dd H:mm"),
    "ka_GE": LocaleFormat(
      "d MMM. y, HH:mm",
      months: ["იან", "თებ", "მარ", "აპრ", "მაი", "ივნ", "ივლ", "აგვ", "სექ", "ოქტ", "ნოე", "დეკ"]),
    "kab_DZ": LocaleFormat(
      "d MMM, y h:mm\u{202F}a",
      months: ["Yen", "Fur", "Meɣ", "Yeb", "May", "Yun", "Yul", "Ɣuc", "Cte", "Tub", "Nun", "Duǧ"],
      dayPeriods: ["n tufat", "n tmeddit"]),
    "kk_KZ": LocaleFormat(
      "y\u{202F}'ж'. dd MMM, HH:mm",
      months: [
        "қаң.", "ақп.", "нау.", "сәу.", "мам.", "мау.", "шіл.", "там.", "қыр.", "қаз.", "қар.", "жел.",
      ]),
    "kl_GL": LocaleFormat(
      "y MMM d HH.mm",
      months: ["jan", "febr", "mar", "apr", "maj", "jun", "jul", "aug", "sept", "okt", "nov", "dec"]),
    "km_KH": LocaleFormat(
      "d MMM y, h:mm a",
      months: ["មករា", "កុម្ភៈ", "មីនា", "មេសា", "ឧសភា", "មិថុនា", "កក្កដា", "សីហា", "កញ្ញា", "តុលា", "វិច្ឆិកា", "ធ្នូ"],
      dayPeriods: ["AM", "PM"]),
    "kn_IN": LocaleFormat(
      "MMM d, y, hh:mm a",
      months: ["ಜನ", "ಫೆಬ್ರ", "ಮಾರ್ಚ್", "ಏಪ್ರಿ", "ಮೇ", "ಜೂನ್", "ಜುಲೈ", "ಆಗ", "ಸೆಪ್ಟೆಂ", "ಅಕ್ಟೋ", "ನವೆಂ", "ಡಿಸೆಂ"],
      dayPeriods: ["AM", "PM"]),
    "ko_KR": LocaleFormat("y. M. d. a h:mm", dayPeriods: ["오전", "오후"]),
    "kok_IN": LocaleFormat(
      "d-MMM-y, h:mm a",
      months: ["जानेवारी", "फेब्रुवारी", "मार्च", "एप्रील", "मे", "जून", "जुलय", "ऑगस्ट", "सप्टेंबर", "ऑक्टोबर", "नोव्हेंबर", "डिसेंबर"],
      dayPeriods: ["सकाळीं", "सांजे"]),
    "ks_IN": LocaleFormat(
      "MMM d, y, h:mm a",
      months: [
        "جنؤری", "فرؤری", "مارٕچ", "اپریل", "مئی", "جوٗن", "جُلَے", "اگست", "ستمبر", "اکتوٗبر", "نومبر", "دسمبر",
      ], dayPeriods: ["اے ایم", "پی ایم"], digits: "۰۱۲۳۴۵۶۷۸۹"),
    "ku_TR": LocaleFormat(
      "d'ê' MMM'a' y'an' HH:mm",
      months: ["rbn", "sbt", "adr", "nsn", "gln", "hzr", "trm", "tbx", "îln", "cot", "mjd", "brf"]),
    "kw_GB": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Gen", "Hwe", "Meu", "Ebr", "Me", "Met", "Gor", "Est", "Gwn", "Hed", "Du", "Kev"]),
    "ky_KG": LocaleFormat(
      "y-'ж'., d-MMM HH:mm",
      months: ["янв.", "фев.", "мар.", "апр.", "май", "июн.", "июл.", "авг.", "сен.", "окт.", "ноя.", "дек."]),
    "lb_LU": LocaleFormat(
      "d. MMM y HH:mm",
      months: ["Jan.", "Feb.", "Mäe.", "Abr.", "Mee", "Juni", "Juli", "Aug.", "Sep.", "Okt.", "Nov.", "Dez."]),
    "lg_UG": LocaleFormat(
      "d MMM y HH:mm",
      months: ["Jan", "Feb", "Mar", "Apu", "Maa", "Juu", "Jul", "Agu", "Seb", "Oki", "Nov", "Des"]),
    "lij_IT": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "de zenâ", "de frevâ", "de marso", "d’arvî", "de mazzo", "de zugno", "de luggio", "d’agosto",
        "de settembre", "d’ottobre", "de novembre", "de dexembre",
      ]),
    "ln_CD": LocaleFormat(
      "d MMM y HH:mm",
      months: ["yan", "fbl", "msi", "apl", "mai", "yun", "yul", "agt", "stb", "ɔtb", "nvb", "dsb"]),
    "lo_LA": LocaleFormat(
      "d MMM y, H:mm",
      months: [
        "ມ.ກ.", "ກ.ພ.", "ມ.ນ.", "ມ.ສ.", "ພ.ພ.", "ມິ.ຖ.", "ກ.ລ.", "ສ.ຫ.", "ກ.ຍ.", "ຕ.ລ.", "ພ.ຈ.", "ທ.ວ.",
      ]),
    "lt_LT": LocaleFormat("y-MM-dd HH:mm"),
    "lv_LV": LocaleFormat(
      "y. 'gada' d. MMM HH:mm",
      months: [
        "janv.", "febr.", "marts", "apr.", "maijs", "jūn.", "jūl.", "aug.", "sept.", "okt.", "nov.", "dec.",
      ]),
    "mai_IN": LocaleFormat(
      "d MMM y, h:mm a",
      months: ["जन॰", "फ़र॰", "मार्च", "अप्रैल", "मई", "जून", "जुल॰", "अग॰", "सित॰", "अक्तू॰", "नव॰", "दिस॰"],
      dayPeriods: ["भोर", "सांझ"]),
    "mai_NP": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["जन॰", "फ़र॰", "मार्च", "अप्रैल", "मई", "जून", "जुल॰", "अग॰", "सित॰", "अक्तू॰", "नव॰", "दिस॰"]),
    "mfe_MU": LocaleFormat(
      "d MMM, y HH:mm",
      months: ["zan", "fev", "mar", "avr", "me", "zin", "zil", "out", "sep", "okt", "nov", "des"]),
    "mg_MG": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Jan", "Feb", "Mar", "Apr", "Mey", "Jon", "Jol", "Aog", "Sep", "Okt", "Nov", "Des"]),
    "mi_NZ": LocaleFormat(
      "d MMM y h:mm\u{202F}a",
      months: ["Hān", "Pēp", "Māe", "Āpe", "Mei", "Hun", "Hūr", "Āku", "Hep", "Oke", "Noe", "Tīh"],
      dayPeriods: ["AM", "PM"]),
    "mk_MK": LocaleFormat("d.M.y\u{202F}'г'., 'во' HH:mm"),
    "ml_IN": LocaleFormat(
      "y, MMM d h:mm a", months: ["ജനു", "ഫെബ്രു", "മാർ", "ഏപ്രി", "മേയ്", "ജൂൺ", "ജൂലൈ", "ഓഗ", "സെപ്റ്റം", "ഒക്ടോ", "നവം", "ഡിസം"],
      dayPeriods: ["AM", "PM"]),
    "mn_MN": LocaleFormat(
      "y\u{202F}'оны' MMM'ын' d HH:mm",
      months: [
        "1-р сар", "2-р сар", "3-р сар", "4-р сар", "5-р сар", "6-р сар", "7-р сар", "8-р сар", "9-р сар",
        "10-р сар", "11-р сар", "12-р сар",
      ]),
    "mni_IN": LocaleFormat(
      "MMM d, y, h:mm a",
      months: ["জন", "ফেব্রুৱারি", "মার্চ", "এপ্রিল", "মে", "জুন", "জুলাই", "ওগ", "সেপ্টেম্বর", "ওক্টোবর", "নভেম্বর", "ডিসেম্বর"],
      dayPeriods: ["এ এম", "পি এম"], digits: "০১২৩৪৫৬৭৮৯"),
    "mr_IN": LocaleFormat(
      "d MMM, y, h:mm a", months: ["जाने", "फेब्रु", "मार्च", "एप्रि", "मे", "जून", "जुलै", "ऑग", "सप्टें", "ऑक्टो", "नोव्हें", "डिसें"],
      dayPeriods: ["AM", "PM"]),
    "ms_MY": LocaleFormat(
      "d MMM y, h:mm\u{202F}a",
      months: ["Jan", "Feb", "Mac", "Apr", "Mei", "Jun", "Jul", "Ogo", "Sep", "Okt", "Nov", "Dis"],
      dayPeriods: ["PG", "PTG"]),
    "mt_MT": LocaleFormat(
      "dd MMM y HH:mm",
      months: ["Jan", "Fra", "Mar", "Apr", "Mej", "Ġun", "Lul", "Aww", "Set", "Ott", "Nov", "Diċ"]),
    "my_MM": LocaleFormat(
      "y MMM d H:mm", months: ["ဇန်", "ဖေ", "မတ်", "ဧ", "မေ", "ဇွန်", "ဇူ", "ဩ", "စက်", "အောက်", "နို", "ဒီ"],
      digits: "၀၁၂၃၄၅၆၇၈၉"),
    "nb_NO": LocaleFormat(
      "d. MMM y, HH:mm",
      months: ["jan.", "feb.", "mars", "apr.", "mai", "juni", "juli", "aug.", "sep.", "okt.", "nov.", "des."]),
    "nds_DE": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "Januaar", "Februaar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktover",
        "November", "Dezember",
      ]),
    "ne_NP": LocaleFormat(
      "y MMM d, HH:mm",
      months: ["जनवरी", "फेब्रुअरी", "मार्च", "अप्रिल", "मे", "जुन", "जुलाई", "अगस्ट", "सेप्टेम्बर", "अक्टोबर", "नोभेम्बर", "डिसेम्बर"],
      digits: "०१२३४५६७८९"),
    "nl_NL": LocaleFormat(
      "d MMM y, HH:mm",
      months: ["jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"]),
    "nr_ZA": LocaleFormat(
      "y MMM d HH:mm",
      months: ["Jan", "Feb", "Mat", "Apr", "Mey", "Jun", "Jul", "Arh", "Sep", "Okt", "Usi", "Dis"]),
    "nso_ZA": LocaleFormat(
      "y MMM d, HH:mm",
      months: [
        "Phere", "Dibo", "Hlak", "Mora", "Mei", "June", "Mose", "Agosetose", "Lewe", "Dipha", "Diba", "Manth",
      ]),
    "oc_FR": LocaleFormat(
      "y MMM d HH:mm",
      months: [
        "de genièr", "de febrièr", "de març", "d’abril", "de mai", "de junh", "de julhet", "d’agost",
        "de setembre", "d’octòbre", "de novembre", "de decembre",
      ]),
    "om_ET": LocaleFormat(
      "MMM d, y, h:mm\u{202F}a",
      months: [
        "Ama", "Gur", "Bitootessa", "Elb", "Cam", "Wax", "Ado", "Hag", "Ful", "Onk", "Sadaasa", "Mud",
      ], dayPeriods: ["WD", "WB"]),
    "om_KE": LocaleFormat(
      "MMM d, y, HH:mm",
      months: ["Ama", "Gur", "Bitootessa", "Elb", "Cam", "Wax", "Ado", "Hag", "Ful", "Onk", "Sadaasa", "Mud"]),
    "or_IN": LocaleFormat(
      "MMM d, y, h:mm a",
      months: ["ଜାନୁଆରୀ", "ଫେବୃଆରୀ", "ମାର୍ଚ୍ଚ", "ଅପ୍ରେଲ", "ମଇ", "ଜୁନ", "ଜୁଲାଇ", "ଅଗଷ୍ଟ", "ସେପ୍ଟେମ୍ବର", "ଅକ୍ଟୋବର", "ନଭେମ୍ବର", "ଡିସେମ୍ବର"],
      dayPeriods: ["AM", "PM"]),
  ]
}
