import Foundation
import TrialCore

/// A JSON value of the wrong shape: a missing field, a wrong type or an invalid value, with
/// the path to it (`reminders[1]`).
public struct JSONShapeError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Keys and array indices from the top-level object down, e.g. `["reminders", "1"]`.
  public var path: [String]
  public var problem: String

  public init(path: [String], problem: String) {
    self.path = path
    self.problem = problem
  }

  /// The top-level field the problem is in: the Varlink parameter to name.
  public var field: String { path.first ?? "" }

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

  public var description: String {
    path.isEmpty ? problem : "\(pathText): \(problem)"
  }
}

/// Typed reading of a JSON object's fields, each failure naming the field. `null` counts as
/// absent, as Varlink clients send optional fields either way.
public struct JSONFields: Sendable {
  public let object: JSONObject
  public let path: [String]

  public init(_ object: JSONObject, path: [String] = []) {
    self.object = object
    self.path = path
  }

  public func error(_ key: String, _ problem: String) -> JSONShapeError {
    JSONShapeError(path: path + [key], problem: problem)
  }

  /// The field's value, nil when absent or null.
  public func value(_ key: String) -> JSONValue? {
    guard let value = object[key], !value.isNull else { return nil }
    return value
  }

  public func required(_ key: String) throws(JSONShapeError) -> JSONValue {
    guard let value = value(key) else { throw error(key, "is required") }
    return value
  }

  /// Fails on any field not in `allowed`, so that a misspelt parameter is not silently ignored.
  public func rejectUnknown(_ allowed: Set<String>) throws(JSONShapeError) {
    for key in object.keys where !allowed.contains(key) {
      if allowed.isEmpty { throw error(key, "is not a parameter: the method takes none") }
      throw error(
        key, "is not a parameter of this method (it takes \(allowed.sorted().joined(separator: ", ")))")
    }
  }

  public func string(_ key: String) throws(JSONShapeError) -> String {
    try Self.string(try required(key), path: path + [key])
  }

  public func optionalString(_ key: String) throws(JSONShapeError) -> String? {
    guard let value = value(key) else { return nil }
    return try Self.string(value, path: path + [key])
  }

  static func string(_ value: JSONValue, path: [String]) throws(JSONShapeError) -> String {
    guard case .string(let text) = value else {
      throw JSONShapeError(path: path, problem: "expected a string, got \(value.typeName)")
    }
    return text
  }

  public func int(_ key: String) throws(JSONShapeError) -> Int {
    try Self.int(try required(key), path: path + [key])
  }

  public func optionalInt(_ key: String) throws(JSONShapeError) -> Int? {
    guard let value = value(key) else { return nil }
    return try Self.int(value, path: path + [key])
  }

  static func int(_ value: JSONValue, path: [String]) throws(JSONShapeError) -> Int {
    switch value {
    case .int(let number): return Int(number)
    case .double(let number) where number == number.rounded() && abs(number) < 9e15: return Int(number)
    case .double(let number):
      throw JSONShapeError(path: path, problem: "expected an integer, got \(number)")
    default:
      throw JSONShapeError(path: path, problem: "expected an integer, got \(value.typeName)")
    }
  }

  public func double(_ key: String) throws(JSONShapeError) -> Double {
    let value = try required(key)
    switch value {
    case .int(let number): return Double(number)
    case .double(let number): return number
    default: throw error(key, "expected a number, got \(value.typeName)")
    }
  }

  public func optionalDouble(_ key: String) throws(JSONShapeError) -> Double? {
    guard value(key) != nil else { return nil }
    return try double(key)
  }

  public func bool(_ key: String) throws(JSONShapeError) -> Bool {
    let value = try required(key)
    guard case .bool(let flag) = value else { throw error(key, "expected a boolean, got \(value.typeName)") }
    return flag
  }

  public func optionalBool(_ key: String) throws(JSONShapeError) -> Bool? {
    guard value(key) != nil else { return nil }
    return try bool(key)
  }

  public func array(_ key: String) throws(JSONShapeError) -> [JSONValue] {
    let value = try required(key)
    guard case .array(let elements) = value else {
      throw error(key, "expected an array, got \(value.typeName)")
    }
    return elements
  }

  public func optionalArray(_ key: String) throws(JSONShapeError) -> [JSONValue]? {
    guard value(key) != nil else { return nil }
    return try array(key)
  }

  public func fields(_ key: String) throws(JSONShapeError) -> JSONFields {
    let value = try required(key)
    guard case .object(let nested) = value else {
      throw error(key, "expected an object, got \(value.typeName)")
    }
    return JSONFields(nested, path: path + [key])
  }

  public func optionalFields(_ key: String) throws(JSONShapeError) -> JSONFields? {
    guard value(key) != nil else { return nil }
    return try fields(key)
  }

  /// A nested object read as `T`; errors inside it carry the full path.
  public func object<T: JSONRepresentable>(_ key: String, as type: T.Type) throws(JSONShapeError) -> T {
    let nested = try fields(key)
    return try Self.within(nested.path) { () throws(JSONShapeError) in try T(json: nested.object) }
  }

  public func optionalObject<T: JSONRepresentable>(_ key: String, as type: T.Type) throws(JSONShapeError)
    -> T?
  {
    guard value(key) != nil else { return nil }
    return try object(key, as: T.self)
  }

  /// An array of objects read as `T`.
  public func objects<T: JSONRepresentable>(_ key: String, as type: T.Type) throws(JSONShapeError) -> [T] {
    try objects(key) { nested throws(JSONShapeError) in
      try Self.within(nested.path) { () throws(JSONShapeError) in try T(json: nested.object) }
    }
  }

  /// Runs `body`, prefixing the path of any error it throws with `path`.
  static func within<T>(_ path: [String], _ body: () throws(JSONShapeError) -> T) throws(JSONShapeError) -> T
  {
    do {
      return try body()
    } catch {
      throw JSONShapeError(path: path + error.path, problem: error.problem)
    }
  }

  /// An array of objects, each read by `body`.
  public func objects<T>(_ key: String, _ body: (JSONFields) throws(JSONShapeError) -> T)
    throws(JSONShapeError)
    -> [T]
  {
    var result: [T] = []
    for (index, element) in try array(key).enumerated() {
      guard case .object(let nested) = element else {
        throw JSONShapeError(
          path: path + [key, String(index)], problem: "expected an object, got \(element.typeName)")
      }
      result.append(try body(JSONFields(nested, path: path + [key, String(index)])))
    }
    return result
  }

  // MARK: Domain values

  public func date(_ key: String) throws(JSONShapeError) -> Date {
    try parseDate(try string(key), key: key)
  }

  public func optionalDate(_ key: String) throws(JSONShapeError) -> Date? {
    guard let text = try optionalString(key) else { return nil }
    return try parseDate(text, key: key)
  }

  private func parseDate(_ text: String, key: String) throws(JSONShapeError) -> Date {
    do {
      return try RFC3339.parse(text)
    } catch {
      throw self.error(key, error.description)
    }
  }

  public func span(_ key: String) throws(JSONShapeError) -> Duration {
    try parseSpan(try string(key), path: path + [key])
  }

  public func optionalSpan(_ key: String) throws(JSONShapeError) -> Duration? {
    guard let text = try optionalString(key) else { return nil }
    return try parseSpan(text, path: path + [key])
  }

  func parseSpan(_ text: String, path: [String]) throws(JSONShapeError) -> Duration {
    do {
      return try TimeSpan.parse(text)
    } catch {
      throw JSONShapeError(path: path, problem: error.description)
    }
  }

  public func optionalSpans(_ key: String) throws(JSONShapeError) -> [Duration]? {
    guard let elements = try optionalArray(key) else { return nil }
    var spans: [Duration] = []
    for (index, element) in elements.enumerated() {
      let elementPath = path + [key, String(index)]
      spans.append(try parseSpan(try Self.string(element, path: elementPath), path: elementPath))
    }
    return spans
  }

  public func trialID(_ key: String) throws(JSONShapeError) -> TrialID {
    try parseTrialID(try string(key), key: key)
  }

  public func optionalTrialID(_ key: String) throws(JSONShapeError) -> TrialID? {
    guard let text = try optionalString(key) else { return nil }
    return try parseTrialID(text, key: key)
  }

  private func parseTrialID(_ text: String, key: String) throws(JSONShapeError) -> TrialID {
    guard let id = TrialID(text) else {
      throw error(key, "\"\(text)\" is not a trial id (1 to 16 hexadecimal digits)")
    }
    return id
  }

  /// A string that must be one of an enum's raw values.
  public func choice<T: RawRepresentable & CaseIterable>(_ key: String, as type: T.Type)
    throws(JSONShapeError) -> T
  where T.RawValue == String {
    try parseChoice(try string(key), key: key)
  }

  public func optionalChoice<T: RawRepresentable & CaseIterable>(_ key: String, as type: T.Type)
    throws(JSONShapeError) -> T? where T.RawValue == String
  {
    guard let text = try optionalString(key) else { return nil }
    return try parseChoice(text, key: key)
  }

  private func parseChoice<T: RawRepresentable & CaseIterable>(_ text: String, key: String)
    throws(JSONShapeError)
    -> T where T.RawValue == String
  {
    guard let value = T(rawValue: text) else {
      let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
      throw error(key, "\"\(text)\" is not one of: \(allowed)")
    }
    return value
  }
}

/// A value carried in Varlink messages: converted to and from a JSON object in one place, and
/// Codable through that conversion, so that JSONEncoder/JSONDecoder give the same wire form.
public protocol JSONRepresentable: Codable, Sendable {
  init(json: JSONObject) throws(JSONShapeError)
  var json: JSONObject { get }
}

extension JSONRepresentable {
  public init(from decoder: any Decoder) throws {
    let value = try JSONValue(from: decoder)
    guard case .object(let object) = value else {
      throw DecodingError.typeMismatch(
        Self.self,
        .init(codingPath: decoder.codingPath, debugDescription: "expected an object, got \(value.typeName)"))
    }
    do {
      try self.init(json: object)
    } catch {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: error.description))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    try JSONValue.object(json).encode(to: encoder)
  }
}

extension Date {
  /// The RFC 3339 form used on the wire.
  public var rfc3339: JSONValue { .string(RFC3339.format(self)) }
}

extension Days {
  /// The systemd time-span form used on the wire.
  public var span: JSONValue { duration.span }
}

extension Duration {
  /// The systemd time-span form used on the wire.
  public var span: JSONValue { .string(TimeSpan.format(self)) }
}
