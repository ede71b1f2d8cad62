/// Text for HTML and SVG, as trialwatchctl's chart and the gateway's pages write it.
public enum MarkupText {
  /// `text` with `&`, `<`, `>`, `"` and `'` written as references, safe in an element's text and
  /// in a quoted attribute.
  public static func escaped(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for character in text {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default: out.append(character)
      }
    }
    return out
  }

  /// The smallest of 1, 2, 2.5 or 5 times a power of ten at or above `value`, so that the five
  /// steps of a chart's scale are round numbers.
  public static func niceCeiling(_ value: Double) -> Double {
    var power = 1.0
    while power * 10 < value { power *= 10 }
    for factor in [1.0, 2.0, 2.5, 5.0, 10.0] where factor * power >= value { return factor * power }
    return value
  }

  /// A count on a chart's scale: whole when it is, else to a tenth.
  public static func count(_ value: Double) -> String {
    value.rounded() == value ? String(Int64(value)) : decimal(value, digits: 1)
  }
}
