/// A JSON value, as Varlink messages carry them. Objects keep their keys in order, so a reply
/// prints in the order the server wrote it.
public enum JSONValue: Hashable, Sendable {
  case null
  case bool(Bool)
  /// A number written without fraction or exponent that fits 64 bits.
  case int(Int64)
  case double(Double)
  case string(String)
  case array([JSONValue])
  case object(JSONObject)

  public var isNull: Bool { self == .null }

  /// A short name of the value's type, for error messages.
  public var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "a boolean"
    case .int, .double: "a number"
    case .string: "a string"
    case .array: "an array"
    case .object: "an object"
    }
  }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
  ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral
{
  public init(stringLiteral value: String) { self = .string(value) }
  public init(integerLiteral value: Int64) { self = .int(value) }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(floatLiteral value: Double) { self = .double(value) }
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  public init(nilLiteral: ()) { self = .null }
}

/// A JSON object with its keys in order. Lookups are linear: Varlink objects are small.
public struct JSONObject: Hashable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
  public struct Field: Hashable, Sendable {
    public var key: String
    public var value: JSONValue
  }

  public private(set) var fields: [Field]

  public init() {
    fields = []
  }

  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    fields = []
    for (key, value) in elements { self[key] = value }
  }

  public var keys: [String] { fields.map(\.key) }
  public var count: Int { fields.count }
  public var isEmpty: Bool { fields.isEmpty }

  /// Reading a missing key gives nil; assigning nil removes the key.
  public subscript(key: String) -> JSONValue? {
    get { fields.first { $0.key == key }?.value }
    set {
      if let index = fields.firstIndex(where: { $0.key == key }) {
        if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
      } else if let newValue {
        fields.append(Field(key: key, value: newValue))
      }
    }
  }

  /// Sets `key` unless `value` is nil: optional fields are left out rather than sent as null.
  public mutating func set(_ key: String, _ value: JSONValue?) {
    if let value { self[key] = value }
  }

  public func makeIterator() -> IndexingIterator<[Field]> {
    fields.makeIterator()
  }

  /// Appends without looking for an existing key; for the parser, which keeps the first.
  fileprivate mutating func appendParsed(_ key: String, _ value: JSONValue) {
    fields.append(Field(key: key, value: value))
  }
}

// MARK: Parsing

/// Why a text is not the JSON expected, with the byte offset where it went wrong.
public struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
  public var offset: Int
  public var problem: String

  public var description: String { "malformed JSON at byte \(offset): \(problem)" }
}

extension JSONValue {
  /// The deepest nesting of arrays and objects accepted, so that a hostile message cannot
  /// exhaust the stack.
  public static let maximumDepth = 64

  /// Parses one JSON text (RFC 8259), with nothing but whitespace around it.
  public static func parse(_ bytes: some Collection<UInt8>) throws(JSONSyntaxError) -> JSONValue {
    let result: Result<JSONValue, JSONSyntaxError>? = bytes.withContiguousStorageIfAvailable { buffer in
      Result { () throws(JSONSyntaxError) -> JSONValue in try parseBuffer(buffer) }
    }
    if let result { return try result.get() }
    let copy = Array(bytes)
    return try copy.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in try parseBuffer(buffer) }
  }

  public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
    try parse(Array(text.utf8))
  }

  private static func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
    var parser = JSONParser(bytes: buffer)
    parser.skipWhitespace()
    let value = try parser.parseValue(depth: 0)
    parser.skipWhitespace()
    guard parser.index == buffer.count else {
      throw parser.error("unexpected text after the end of the JSON value")
    }
    return value
  }
}

private struct JSONParser {
  let bytes: UnsafeBufferPointer<UInt8>
  var index = 0

  init(bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
  }

  func error(_ problem: String) -> JSONSyntaxError {
    JSONSyntaxError(offset: index, problem: problem)
  }

  var atEnd: Bool { index >= bytes.count }

  mutating func skipWhitespace() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
    guard !atEnd else { throw error("unexpected end of input, expected a value") }
    switch bytes[index] {
    case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
    case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"):
      try expectLiteral("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try expectLiteral("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try expectLiteral("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return try parseNumber()
    default:
      throw error("unexpected character \(describe(bytes[index])), expected a value")
    }
  }

  func describe(_ byte: UInt8) -> String {
    if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
    return "0x" + String(byte, radix: 16)
  }

  mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
    let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
    guard bytes.count - index >= expected.count,
      expected.indices.allSatisfy({ bytes[index + $0] == expected[$0] })
    else { throw error("invalid literal, expected \(literal)") }
    index += expected.count
  }

  mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
    guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
    index += 1
    var object = JSONObject()
    skipWhitespace()
    if !atEnd && bytes[index] == UInt8(ascii: "}") {
      index += 1
      return .object(object)
    }
    while true {
      skipWhitespace()
      guard !atEnd, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
      let key = try parseString()
      skipWhitespace()
      guard !atEnd, bytes[index] == UInt8(ascii: ":") else {
        throw error("expected ':' after key \"\(key)\"")
      }
      index += 1
      skipWhitespace()
      let value = try parseValue(depth: depth)
      if object[key] == nil { object.appendParsed(key, value) }
      skipWhitespace()
      guard !atEnd else { throw error("unexpected end of input inside an object") }
      switch bytes[index] {
      case UInt8(ascii: ","): index += 1
      case UInt8(ascii: "}"):
        index += 1
        return .object(object)
      default: throw error("expected ',' or '}' in an object")
      }
    }
  }

  mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
    guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
    index += 1
    var elements: [JSONValue] = []
    skipWhitespace()
    if !atEnd && bytes[index] == UInt8(ascii: "]") {
      index += 1
      return .array(elements)
    }
    while true {
      skipWhitespace()
      elements.append(try parseValue(depth: depth))
      skipWhitespace()
      guard !atEnd else { throw error("unexpected end of input inside an array") }
      switch bytes[index] {
      case UInt8(ascii: ","): index += 1
      case UInt8(ascii: "]"):
        index += 1
        return .array(elements)
      default: throw error("expected ',' or ']' in an array")
      }
    }
  }

  mutating func parseString() throws(JSONSyntaxError) -> String {
    let start = index
    index += 1
    // Fast path: no escapes.
    var scan = index
    while scan < bytes.count {
      let byte = bytes[scan]
      if byte == UInt8(ascii: "\"") {
        let slice = UnsafeBufferPointer(rebasing: bytes[index..<scan])
        guard let text = String(validating: slice, as: UTF8.self) else {
          throw JSONSyntaxError(offset: start, problem: "string is not valid UTF-8")
        }
        index = scan + 1
        return text
      }
      if byte == UInt8(ascii: "\\") { break }
      if byte < 0x20 {
        index = scan
        throw error("control character \(describe(byte)) inside a string")
      }
      scan += 1
    }
    var utf8: [UInt8] = Array(bytes[index..<scan])
    index = scan
    while true {
      guard !atEnd else {
        index = start
        throw error("string is not terminated")
      }
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        index += 1
        guard let text = String(validating: utf8, as: UTF8.self) else {
          throw JSONSyntaxError(offset: start, problem: "string is not valid UTF-8")
        }
        return text
      case UInt8(ascii: "\\"):
        index += 1
        guard !atEnd else { throw error("string is not terminated") }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""): utf8.append(0x22)
        case UInt8(ascii: "\\"): utf8.append(0x5C)
        case UInt8(ascii: "/"): utf8.append(0x2F)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try parseHex4()
          if (0xD800..<0xDC00).contains(scalar) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
              bytes[index + 1] == UInt8(ascii: "u")
            else { throw error("unpaired surrogate in \\u escape") }
            index += 2
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          } else if (0xDC00..<0xE000).contains(scalar) {
            throw error("unpaired surrogate in \\u escape")
          }
          utf8.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        default:
          index -= 1
          throw error("invalid escape \\\(Character(Unicode.Scalar(escape)))")
        }
      default:
        if byte < 0x20 { throw error("control character \(describe(byte)) inside a string") }
        utf8.append(byte)
        index += 1
      }
    }
  }

  mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
    guard bytes.count - index >= 4 else { throw error("\\u escape needs four hex digits") }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt32
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
      default: throw error("\\u escape needs four hex digits")
      }
      value = value << 4 | digit
      index += 1
    }
    return value
  }

  mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
    let start = index
    if bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard !atEnd, isDigit(bytes[index]) else { throw error("expected a digit") }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
      if !atEnd, isDigit(bytes[index]) { throw error("numbers must not have leading zeros") }
    } else {
      while !atEnd, isDigit(bytes[index]) { index += 1 }
    }
    var integral = true
    if !atEnd, bytes[index] == UInt8(ascii: ".") {
      integral = false
      index += 1
      guard !atEnd, isDigit(bytes[index]) else { throw error("expected a digit after '.'") }
      while !atEnd, isDigit(bytes[index]) { index += 1 }
    }
    if !atEnd, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      integral = false
      index += 1
      if !atEnd, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard !atEnd, isDigit(bytes[index]) else { throw error("expected a digit in the exponent") }
      while !atEnd, isDigit(bytes[index]) { index += 1 }
    }
    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    if integral, let value = Int64(text) { return .int(value) }
    guard let value = Double(text), value.isFinite else {
      return .double(text.hasPrefix("-") ? -.greatestFiniteMagnitude : .greatestFiniteMagnitude)
    }
    return .double(value)
  }

  func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
  }
}

// MARK: Writing

extension JSONValue {
  /// The compact JSON text of the value, keys in their order.
  public var jsonText: String {
    var bytes: [UInt8] = []
    write(to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  public func write(to out: inout [UInt8]) {
    switch self {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
    case .int(let value): out.append(contentsOf: String(value).utf8)
    case .double(let value):
      if !value.isFinite {
        out.append(contentsOf: "null".utf8)
      } else if value == value.rounded(), abs(value) < 1e15 {
        out.append(contentsOf: String(Int64(value)).utf8)
      } else {
        out.append(contentsOf: String(value).utf8)
      }
    case .string(let value): JSONValue.writeString(value, to: &out)
    case .array(let elements):
      out.append(UInt8(ascii: "["))
      for (index, element) in elements.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        element.write(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let object):
      object.write(to: &out)
    }
  }

  static func writeString(_ string: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in string.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
      case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
      case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
      case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
      case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
      case 0..<0x20, 0x7F:
        let hex = Array("0123456789abcdef".utf8)
        out.append(contentsOf: [
          0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
        ])
      default: out.append(byte)
      }
    }
    out.append(UInt8(ascii: "\""))
  }
}

extension JSONObject {
  public var jsonText: String { JSONValue.object(self).jsonText }

  public func write(to out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    for (index, field) in fields.enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      JSONValue.writeString(field.key, to: &out)
      out.append(UInt8(ascii: ":"))
      field.value.write(to: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}

// MARK: Codable

extension JSONValue: Codable {
  public init(from decoder: any Decoder) throws {
    if var array = try? decoder.unkeyedContainer() {
      var elements: [JSONValue] = []
      while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
      self = .array(elements)
      return
    }
    if let keyed = try? decoder.container(keyedBy: AnyCodingKey.self) {
      var object = JSONObject()
      for key in keyed.allKeys { object[key.stringValue] = try keyed.decode(JSONValue.self, forKey: key) }
      self = .object(object)
      return
    }
    let single = try decoder.singleValueContainer()
    if single.decodeNil() {
      self = .null
    } else if let value = try? single.decode(Bool.self) {
      self = .bool(value)
    } else if let value = try? single.decode(Int64.self) {
      self = .int(value)
    } else if let value = try? single.decode(Double.self) {
      self = .double(value)
    } else {
      self = .string(try single.decode(String.self))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    switch self {
    case .null:
      var single = encoder.singleValueContainer()
      try single.encodeNil()
    case .bool(let value):
      var single = encoder.singleValueContainer()
      try single.encode(value)
    case .int(let value):
      var single = encoder.singleValueContainer()
      try single.encode(value)
    case .double(let value):
      var single = encoder.singleValueContainer()
      try single.encode(value)
    case .string(let value):
      var single = encoder.singleValueContainer()
      try single.encode(value)
    case .array(let elements):
      var array = encoder.unkeyedContainer()
      for element in elements { try array.encode(element) }
    case .object(let object):
      var keyed = encoder.container(keyedBy: AnyCodingKey.self)
      for field in object { try keyed.encode(field.value, forKey: AnyCodingKey(field.key)) }
    }
  }
}

struct AnyCodingKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }

  init(_ string: String) {
    stringValue = string
  }

  init?(stringValue: String) {
    self.stringValue = stringValue
  }

  init?(intValue: Int) {
    return nil
  }
}
