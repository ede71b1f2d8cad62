import FoundationEssentials
import TrialCore

/// How Varlink messages are coded: Foundation's `JSONEncoder` and `JSONDecoder`, with times
/// as RFC 3339 strings, spans in systemd's syntax and trial ids as 16 hexadecimal digits.
/// Keys are written sorted, so that a reply reads the same in every run.
public enum WireCoding {
  public static func makeEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .custom { date, encoder in
      var container = encoder.singleValueContainer()
      try container.encode(RFC3339.format(date))
    }
    return encoder
  }

  public static func makeDecoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .custom { decoder in try decoder.decodeText { try RFC3339.parse($0) } }
    return decoder
  }

  /// The JSON text of `value`.
  public static func text(_ value: some Encodable) -> String {
    (try? makeEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }
}

extension Decoder {
  /// A value written as a string, read with `parse`; what `parse` throws becomes a decoding
  /// error at this value's path, in its own words.
  func decodeText<T>(_ parse: (String) throws -> T) throws -> T {
    let container = try singleValueContainer()
    let text = try container.decode(String.self)
    do {
      return try parse(text)
    } catch let problem as WireProblem {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: problem.problem)
    } catch {
      throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
    }
  }
}

extension KeyedDecodingContainer {
  /// An object of named values (labels, attributes), read name by name in byte order, or nil
  /// when absent or null. The decoder lists an object's names in no fixed order, so reading a
  /// `Dictionary` would name one of several wrong values at random; read this way, the same
  /// message is always refused naming the same one.
  func decodeObjectIfPresent<Value: Decodable>(of _: Value.Type, forKey key: Key) throws -> [String: Value]? {
    guard contains(key), try !decodeNil(forKey: key) else { return nil }
    let object = try nestedContainer(keyedBy: AnyKey.self, forKey: key)
    var values: [String: Value] = [:]
    for name in object.allKeys.sorted(by: {
      $0.stringValue.utf8.lexicographicallyPrecedes($1.stringValue.utf8)
    }) {
      values[name.stringValue] = try object.decode(Value.self, forKey: name)
    }
    return values
  }
}

/// A span on the wire, in systemd's syntax: `5d`, `1d 12h`, `90s`.
public struct Span: Codable, Hashable, Sendable, CustomStringConvertible {
  public var duration: Duration

  public init(_ duration: Duration) {
    self.duration = duration
  }

  public var timeInterval: TimeInterval { duration.timeInterval }
  /// Exact to the microsecond, as `TimeSpan.parse` reads it (`TimeSpan.Style.precise`).
  public var description: String { TimeSpan.format(duration, style: .precise) }

  public init(from decoder: any Decoder) throws {
    duration = try decoder.decodeText { try TimeSpan.parse($0) }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}

/// A value carried as its text form (`description`), read back with `init?(_:)`.
public protocol WireText: Codable, CustomStringConvertible {
  init?(_ text: String)
  /// What the value is, for errors: "a trial id (1 to 16 hexadecimal digits)".
  static var wireName: String { get }
}

extension WireText {
  public init(from decoder: any Decoder) throws {
    self = try decoder.decodeText { text in
      guard let value = Self(text) else {
        throw WireProblem(path: [], problem: "\"\(text)\" is not \(Self.wireName)")
      }
      return value
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}

extension TrialID: WireText {
  public static let wireName = "a trial id (1 to 16 hexadecimal digits)"
}

extension EventID: WireText {
  public static let wireName = "an event id"
}

/// An enum carried as one of its raw values; an unknown value is an error listing the others.
public protocol WireChoice: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {}

extension WireChoice {
  public init(from decoder: any Decoder) throws {
    self = try decoder.decodeText { text in
      guard let value = Self(rawValue: text) else {
        let allowed = Self.allCases.map(\.rawValue).joined(separator: ", ")
        throw WireProblem(path: [], problem: "\"\(text)\" is not one of: \(allowed)")
      }
      return value
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(rawValue)
  }
}

extension TrialState: WireChoice {}
extension TrialOutcome: WireChoice {}

/// What is wrong with a message or one of its values, with the path to it (`reminders[1]`).
public struct WireProblem: Error, Hashable, Sendable, CustomStringConvertible {
  /// Keys and array indices from the top of the message down.
  public var path: [String]
  public var problem: String

  public init(path: [String], problem: String) {
    self.path = path
    self.problem = problem
  }

  /// A problem of one parameter, found after decoding (a value out of range, a missing choice).
  public static func parameter(_ name: String, _ problem: String) -> WireProblem {
    WireProblem(path: [name], problem: problem)
  }

  /// The path as text: `reminders[1]`, `trial.endsAt`.
  public var pathText: String {
    var text = ""
    for component in path {
      if let index = Int(component), !text.isEmpty {
        text += "[\(index)]"
      } else {
        text += text.isEmpty ? component : ".\(component)"
      }
    }
    return text
  }

  public var description: String { path.isEmpty ? problem : "\(pathText): \(problem)" }

  /// A decoding failure in words, relative to `base` (the coding path of the value decoded).
  public init(_ error: DecodingError, dropping base: Int = 0) {
    func components(_ path: [any CodingKey]) -> [String] {
      path.dropFirst(base).map { $0.intValue.map(String.init) ?? $0.stringValue }
    }
    switch error {
    case .typeMismatch(let type, let context):
      let found = context.debugDescription.firstRange(of: "found ").map {
        context.debugDescription[$0.upperBound...].replacing(" instead.", with: "")
      }
      let got = found.map { text in
        let word = text.hasPrefix("a ") || text.hasPrefix("an ") ? text : "a \(text)"
        return ", got \(word)"
      }
      self.init(
        path: components(context.codingPath), problem: "expected \(Self.name(of: type))\(got ?? "")")
    case .valueNotFound(let type, let context):
      self.init(path: components(context.codingPath), problem: "expected \(Self.name(of: type)), got null")
    case .keyNotFound(let key, let context):
      self.init(path: components(context.codingPath) + [key.stringValue], problem: "is required")
    case .dataCorrupted(let context):
      self.init(path: components(context.codingPath), problem: context.debugDescription)
    @unknown default:
      self.init(path: [], problem: "\(error)")
    }
  }

  private static func name(of type: Any.Type) -> String {
    switch type {
    case is String.Type: "a string"
    case is Bool.Type: "a boolean"
    case is Int.Type, is Int64.Type, is UInt32.Type: "an integer"
    case is Double.Type: "a number"
    default:
      "\(type)".hasPrefix("Array") ? "an array" : "an object"
    }
  }
}
