/// `application/x-www-form-urlencoded`: the body of a form a page posts, and the queries of the
/// links pages write (WHATWG URL, "application/x-www-form-urlencoded").
enum FormData {
  /// The fields of `body`; nil when it is not well formed (a `%` not followed by two hex digits,
  /// or text that is not UTF-8). A repeated field keeps its last value.
  static func decode(_ body: [UInt8]) -> [String: String]? {
    var fields: [String: String] = [:]
    for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
      let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
      guard let name = decodeComponent(pair[pair.startIndex..<equals]),
        let value = decodeComponent(equals == pair.endIndex ? [] : pair[(equals + 1)...])
      else { return nil }
      fields[name] = value
    }
    return fields
  }

  /// One name or value: `+` is a space, `%XX` a byte.
  static func decodeComponent(_ bytes: some Collection<UInt8>) -> String? {
    var out: [UInt8] = []
    var rest = bytes[...]
    while let byte = rest.popFirst() {
      switch byte {
      case UInt8(ascii: "+"): out.append(0x20)
      case UInt8(ascii: "%"):
        // Two hex digits: UInt8(_:radix:) alone would take a sign too.
        guard rest.count >= 2,
          rest.prefix(2).allSatisfy({ $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit }),
          let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
        else { return nil }
        out.append(value)
        rest = rest.dropFirst(2)
      default: out.append(byte)
      }
    }
    return String(validating: out, as: UTF8.self)
  }

  /// `text` for a query: letters, digits and `-._~` as they are, every other byte `%XX`.
  static func encode(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"):
        out.append(Character(Unicode.Scalar(byte)))
      default:
        let digits = Array("0123456789ABCDEF")
        out += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
      }
    }
    return out
  }
}
