import TrialCore

/// The `attributes` column of `trial` and `event_log` (schema version 5): a trial's stored
/// fields (`TrialAttributes.storedFields`) as a JSON object of text values, `{}` for a trial
/// with nothing but a subject. Written compact and read back as PostgreSQL prints `jsonb`
/// (keys by length then bytes, a space after `:` and `,`); the reader takes any JSON object
/// of strings, so that a row written by hand in `psql` reads too.
enum AttributeJSON {
  /// Why a column's text is not such an object, with the byte where reading stopped.
  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  // MARK: Writing

  /// `fields` as a JSON object, in their order; strings as `JSONText` writes them.
  static func object(_ fields: [(name: String, value: String)]) -> String {
    guard !fields.isEmpty else { return "{}" }
    var bytes: [UInt8] = [UInt8(ascii: "{")]
    for (index, field) in fields.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      JSONText.appendString(field.name, to: &bytes)
      bytes.append(UInt8(ascii: ":"))
      JSONText.appendString(field.value, to: &bytes)
    }
    bytes.append(UInt8(ascii: "}"))
    return String(decoding: bytes, as: UTF8.self)
  }

  // MARK: Reading

  /// The fields of a JSON object whose values are all strings, in the object's order.
  /// - Throws: `Problem` for anything else: other JSON, a value that is not a string, a name
  ///   that is empty or given twice, text after the object.
  static func fields(_ text: String) throws(Problem) -> [(name: String, value: String)] {
    // What nearly every row holds: no attribute but the subject.
    if text == "{}" { return [] }
    var reader = Reader(bytes: Array(text.utf8))
    var fields: [(name: String, value: String)] = []
    var names = Set<String>()
    try reader.expect(UInt8(ascii: "{"))
    if try reader.peekAfterSpace() == UInt8(ascii: "}") {
      reader.position += 1
    } else {
      while true {
        let name = try reader.string(what: "an attribute name")
        guard !name.isEmpty else { throw reader.problem("an attribute name is empty") }
        guard names.insert(name).inserted else {
          throw reader.problem("the attribute \(name) is given twice")
        }
        try reader.expect(UInt8(ascii: ":"))
        guard try reader.peekAfterSpace() == UInt8(ascii: "\"") else {
          throw reader.problem("the value of \(name) is not text")
        }
        fields.append((name, try reader.string(what: "the value of \(name)")))
        let next = try reader.peekAfterSpace()
        reader.position += 1
        if next == UInt8(ascii: "}") { break }
        guard next == UInt8(ascii: ",") else {
          throw reader.problem("expected , or } after \(name)", back: 1)
        }
      }
    }
    reader.skipSpace()
    guard reader.position == reader.bytes.count else { throw reader.problem("text after the object") }
    return fields
  }

  /// A reader of JSON text, a byte at a time.
  private struct Reader {
    let bytes: [UInt8]
    var position = 0

    func problem(_ what: String, back: Int = 0) -> Problem {
      Problem(description: "\(what) (at byte \(position - back))")
    }

    mutating func skipSpace() {
      while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    /// The next byte that is not white space, left unread.
    mutating func peekAfterSpace() throws(Problem) -> UInt8 {
      skipSpace()
      guard position < bytes.count else { throw problem("the text ends early") }
      return bytes[position]
    }

    mutating func expect(_ byte: UInt8) throws(Problem) {
      guard try peekAfterSpace() == byte else {
        throw problem("expected \(Character(Unicode.Scalar(byte)))")
      }
      position += 1
    }

    /// A JSON string, its escapes undone.
    mutating func string(what: String) throws(Problem) -> String {
      guard try peekAfterSpace() == UInt8(ascii: "\"") else { throw problem("\(what) is not a string") }
      position += 1
      var value: [UInt8] = []
      while true {
        guard position < bytes.count else { throw problem("\(what) ends early") }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""):
          // The text came from a String and escapes add whole scalars: always valid UTF-8.
          return String(decoding: value, as: UTF8.self)
        case UInt8(ascii: "\\"):
          try escape(into: &value, what: what)
        case 0x00..<0x20:
          throw problem("\(what) holds an unescaped control character", back: 1)
        default:
          value.append(byte)
        }
      }
    }

    /// The escape after a backslash, appended to `value` as UTF-8.
    private mutating func escape(into value: inout [UInt8], what: String) throws(Problem) {
      guard position < bytes.count else { throw problem("\(what) ends early") }
      let letter = bytes[position]
      position += 1
      let simple: [UInt8: UInt8] = [
        UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
        UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
      ]
      if let byte = simple[letter] {
        value.append(byte)
        return
      }
      guard letter == UInt8(ascii: "u") else { throw problem("\(what) has an unknown escape", back: 2) }
      var code = try hex4(what: what)
      // A character beyond the Basic Multilingual Plane comes as a surrogate pair.
      if (0xD800..<0xDC00).contains(code) {
        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
          bytes[position + 1] == UInt8(ascii: "u")
        else { throw problem("\(what) has a lone surrogate") }
        position += 2
        let low = try hex4(what: what)
        guard (0xDC00..<0xE000).contains(low) else { throw problem("\(what) has a lone surrogate") }
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
      }
      guard let scalar = Unicode.Scalar(code), let encoded = UTF8.encode(scalar) else {
        throw problem("\(what) has a lone surrogate")
      }
      value.append(contentsOf: encoded)
    }

    private mutating func hex4(what: String) throws(Problem) -> UInt32 {
      guard position + 4 <= bytes.count else { throw problem("\(what) ends early") }
      var code: UInt32 = 0
      for _ in 0..<4 {
        guard let digit = Character(Unicode.Scalar(bytes[position])).hexDigitValue else {
          throw problem("\(what) has a bad \\u escape")
        }
        code = code << 4 | UInt32(digit)
        position += 1
      }
      return code
    }
  }
}
