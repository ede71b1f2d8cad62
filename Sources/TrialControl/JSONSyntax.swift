/// Where a text that is not JSON goes wrong, in words: the decoder only says that it is not.
/// A strict reader of RFC 8259's grammar that builds nothing; used only once a message has been
/// refused, to name the byte at which it stops being JSON.
public enum JSONSyntax {
  /// What is wrong with `bytes` and where, or nil when they are one JSON value.
  public static func problem(in bytes: some Collection<UInt8>) -> String? {
    var reader = Reader(bytes: Array(bytes))
    do throws(Problem) {
      reader.skipSpace()
      try reader.value(depth: 0)
      reader.skipSpace()
      if reader.offset < reader.bytes.count { throw reader.unexpected("after the value") }
      return nil
    } catch {
      return error.text
    }
  }

  /// The members of the JSON object `bytes` holds, by name as written (escapes not undone), each
  /// with the range of its value's bytes; nil when `bytes` is not one JSON object. For passing a
  /// member's value on as it is (the gateway's replies), without decoding it.
  public static func members(of bytes: [UInt8]) -> [String: Range<Int>]? {
    var reader = Reader(bytes: bytes)
    var found: [String: Range<Int>] = [:]
    do throws(Problem) {
      reader.skipSpace()
      guard reader.current == UInt8(ascii: "{") else { return nil }
      try reader.sequence(closedBy: UInt8(ascii: "}"), "expected ',' or '}' in an object") {
        reader throws(Problem) in
        guard reader.current == UInt8(ascii: "\"") else {
          throw reader.unexpected("expected a member name in quotes")
        }
        let nameStart = reader.offset + 1
        try reader.string()
        let name = String(decoding: bytes[nameStart..<(reader.offset - 1)], as: UTF8.self)
        reader.skipSpace()
        try reader.expect(UInt8(ascii: ":"), "expected ':' after a member name")
        reader.skipSpace()
        let start = reader.offset
        try reader.value(depth: 1)
        found[name] = start..<reader.offset
      }
      reader.skipSpace()
      return reader.offset == bytes.count ? found : nil
    } catch {
      return nil
    }
  }

  /// What a JSON text may not hold as it is, and where, or nil: a control character but the
  /// whitespace JSON allows (Foundation's parser lets some through), or bytes that are not
  /// UTF-8, which RFC 8259 requires (the decoder would report them only once it reached the
  /// string holding them, in no fixed order, and without a place). One pass, before decoding.
  static func encodingProblem(in bytes: some Collection<UInt8>) -> String? {
    var index = bytes.startIndex
    var offset = 0
    while index != bytes.endIndex {
      let byte = bytes[index]
      if byte < 0x80 {
        if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
          return "control character 0x\(String(byte, radix: 16)) at byte \(offset)"
        }
        bytes.formIndex(after: &index)
        offset += 1
        continue
      }
      let length = utf8Length(bytes, at: index)
      guard length > 0 else { return "invalid UTF-8 at byte \(offset)" }
      bytes.formIndex(&index, offsetBy: length)
      offset += length
    }
    return nil
  }

  /// The length of the UTF-8 sequence whose lead byte (0x80 or more) is at `index`, or 0 when
  /// the bytes there are not one: RFC 3629's forms, so no overlong form, no surrogate and
  /// nothing beyond U+10FFFF.
  static func utf8Length<Bytes: Collection<UInt8>>(_ bytes: Bytes, at index: Bytes.Index) -> Int {
    let length: Int
    // The range of the second byte; the others are 0x80...0xBF.
    var second: ClosedRange<UInt8> = 0x80...0xBF
    switch bytes[index] {
    case 0xC2...0xDF: length = 2
    case 0xE0: (length, second) = (3, 0xA0...0xBF)
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED: (length, second) = (3, 0x80...0x9F)
    case 0xF0: (length, second) = (4, 0x90...0xBF)
    case 0xF1...0xF3: length = 4
    case 0xF4: (length, second) = (4, 0x80...0x8F)
    default: return 0
    }
    var position = index
    for place in 1..<length {
      bytes.formIndex(after: &position)
      guard position != bytes.endIndex, (place == 1 ? second : 0x80...0xBF).contains(bytes[position]) else {
        return 0
      }
    }
    return length
  }

  /// Nesting deeper than this is refused, as the decoder refuses it.
  static let maximumDepth = 512

  private struct Problem: Error {
    var text: String
  }

  private struct Reader {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func skipSpace() {
      while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
    }

    func unexpected(_ context: String) -> Problem {
      guard let byte = current else { return Problem(text: "unexpected end of input, \(context)") }
      let shown =
        byte >= 0x20 && byte < 0x7F
        ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
      return Problem(text: "unexpected \(shown) at byte \(offset), \(context)")
    }

    mutating func expect(_ byte: UInt8, _ context: String) throws(Problem) {
      guard current == byte else { throw unexpected(context) }
      offset += 1
    }

    mutating func value(depth: Int) throws(Problem) {
      guard depth < JSONSyntax.maximumDepth else {
        throw Problem(text: "nested deeper than \(JSONSyntax.maximumDepth) levels at byte \(offset)")
      }
      guard let byte = current else { throw unexpected("expected a value") }
      switch byte {
      case UInt8(ascii: "{"): try object(depth: depth)
      case UInt8(ascii: "["): try array(depth: depth)
      case UInt8(ascii: "\""): try string()
      case UInt8(ascii: "t"): try literal("true")
      case UInt8(ascii: "f"): try literal("false")
      case UInt8(ascii: "n"): try literal("null")
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
      default: throw unexpected("expected a value")
      }
    }

    mutating func object(depth: Int) throws(Problem) {
      try sequence(closedBy: UInt8(ascii: "}"), "expected ',' or '}' in an object") {
        reader throws(Problem) in
        guard reader.current == UInt8(ascii: "\"") else {
          throw reader.unexpected("expected a member name in quotes")
        }
        try reader.string()
        reader.skipSpace()
        try reader.expect(UInt8(ascii: ":"), "expected ':' after a member name")
        reader.skipSpace()
        try reader.value(depth: depth + 1)
      }
    }

    mutating func array(depth: Int) throws(Problem) {
      try sequence(closedBy: UInt8(ascii: "]"), "expected ',' or ']' in an array") { reader throws(Problem) in
        try reader.value(depth: depth + 1)
      }
    }

    /// After an opening bracket: nothing, or items that `item` reads, separated by commas, then
    /// `close`; `context` is what a wrong byte between items is told.
    mutating func sequence(
      closedBy close: UInt8, _ context: String, item: (inout Reader) throws(Problem) -> Void
    ) throws(Problem) {
      offset += 1
      skipSpace()
      if current == close {
        offset += 1
        return
      }
      while true {
        try item(&self)
        skipSpace()
        if current == close {
          offset += 1
          return
        }
        try expect(UInt8(ascii: ","), context)
        skipSpace()
      }
    }

    mutating func literal(_ word: StaticString) throws(Problem) {
      let start = offset
      for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
        guard current == expected else {
          throw unexpected("in '\(word)', which starts at byte \(start)")
        }
        offset += 1
      }
    }

    mutating func string() throws(Problem) {
      let start = offset
      offset += 1
      while let byte = current {
        switch byte {
        case UInt8(ascii: "\""):
          offset += 1
          return
        case UInt8(ascii: "\\"):
          offset += 1
          try escape()
        case ..<0x20:
          throw unexpected("control characters must be escaped in a string")
        case ..<0x80:
          offset += 1
        default:
          let length = JSONSyntax.utf8Length(bytes, at: offset)
          guard length > 0 else { throw Problem(text: "invalid UTF-8 at byte \(offset)") }
          offset += length
        }
      }
      throw Problem(text: "unexpected end of input in the string that starts at byte \(start)")
    }

    mutating func escape() throws(Problem) {
      switch current {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
        offset += 1
      case UInt8(ascii: "u"):
        offset += 1
        for _ in 0..<4 {
          guard let byte = current, byte.isHexDigit else {
            throw unexpected("expected four hex digits after \\u")
          }
          offset += 1
        }
      default:
        throw unexpected("not an escape in a string")
      }
    }

    mutating func number() throws(Problem) {
      if current == UInt8(ascii: "-") { offset += 1 }
      if current == UInt8(ascii: "0") {
        offset += 1
        if let next = current, next.isDigit { throw unexpected("a number may not start with 0") }
      } else {
        try digits("expected a digit")
      }
      if current == UInt8(ascii: ".") {
        offset += 1
        try digits("expected a digit after the decimal point")
      }
      if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
        offset += 1
        if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
        try digits("expected a digit in the exponent")
      }
    }

    mutating func digits(_ context: String) throws(Problem) {
      guard let first = current, first.isDigit else { throw unexpected(context) }
      while let byte = current, byte.isDigit { offset += 1 }
    }
  }
}

extension UInt8 {
  fileprivate var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
  fileprivate var isHexDigit: Bool {
    isDigit || (self | 0x20 >= UInt8(ascii: "a") && self | 0x20 <= UInt8(ascii: "f"))
  }
}
