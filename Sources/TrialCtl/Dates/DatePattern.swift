import TrialCore

/// A date pattern in Unicode's date field syntax (UTS #35), rendered as ICU renders it in the
/// Gregorian calendar: the fields a medium date and a short time use.
///
/// Letters name fields (`y` year, `M` or `L` month, `d` day, `h` `H` `K` `k` hour, `m`
/// minute, `a` AM or PM, `B` a period of the day such as "in the morning"), repeated for
/// width; text between single quotes is literal (`''` is a quote); anything else is literal as
/// it stands. The texts come from the locale's table (`LocaleFormat`): those of the one month
/// field and the day periods the locale's pattern uses, and its digits.
struct DatePattern: Hashable, Sendable {
  enum Piece: Hashable, Sendable {
    case text(String)
    case field(Character, Int)
  }

  /// The field letters this renderer knows.
  static let letters: Set<Character> = ["y", "M", "L", "d", "h", "H", "K", "k", "m", "a", "B"]

  let pieces: [Piece]

  /// The pattern's pieces; nil when it uses a field this renderer does not know or leaves a
  /// quote open.
  init?(_ pattern: String) {
    var pieces: [Piece] = []
    var text = ""
    var quoted = false
    var characters = Array(pattern)[...]
    while let character = characters.popFirst() {
      if character == "'" {
        if characters.first == "'" {
          characters.removeFirst()
          text.append("'")
        } else {
          quoted.toggle()
        }
      } else if quoted || !(character.isASCII && character.isLetter) {
        text.append(character)
      } else {
        guard Self.letters.contains(character) else { return nil }
        var count = 1
        while characters.first == character {
          characters.removeFirst()
          count += 1
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        text = ""
        pieces.append(.field(character, count))
      }
    }
    guard !quoted else { return nil }
    if !text.isEmpty { pieces.append(.text(text)) }
    self.pieces = pieces
  }

  /// The text of `time`. `months` are the twelve texts of the month field. `dayPeriods` are
  /// AM and PM for `a`; for `B`, the period of each hour from 0 to 23 and then the text of
  /// noon, used at 12:00 exactly (empty: none). `digits` are the locale's ten digits, empty
  /// for 0 to 9. Each is unused when the pattern has no such field.
  func render(_ time: CivilTime, months: [String], dayPeriods: [String], digits: [Character]) -> String {
    func number(_ value: Int, _ width: Int) -> String {
      let text = Self.digits(value, width)
      return digits.isEmpty ? text : String(text.map { digits[Int($0.asciiValue! - 48)] })
    }
    var result = ""
    for piece in pieces {
      switch piece {
      case .text(let text):
        result += text
      case .field(let letter, let count):
        switch letter {
        case "y":
          // The year of the era: 1 BC is year 1 as well as 1 AD.
          let year = time.year > 0 ? time.year : 1 - time.year
          result += count == 2 ? number(year % 100, 2) : number(year, count)
        case "M", "L":
          result += count >= 3 ? months[time.month - 1] : number(time.month, count)
        case "d": result += number(time.day, count)
        case "h": result += number(time.hour % 12 == 0 ? 12 : time.hour % 12, count)
        case "H": result += number(time.hour, count)
        case "K": result += number(time.hour % 12, count)
        case "k": result += number(time.hour == 0 ? 24 : time.hour, count)
        case "m": result += number(time.minute, count)
        case "a": result += dayPeriods[time.hour < 12 ? 0 : 1]
        default:
          // ICU names noon only at 12:00 exactly, and never names midnight.
          let noon = time.hour == 12 && time.minute == 0 && !dayPeriods[24].isEmpty
          result += noon ? dayPeriods[24] : dayPeriods[time.hour]
        }
      }
    }
    return result
  }

  /// `value` in decimal, zero-padded to `width` digits.
  static func digits(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
  }
}
