/// A message that is not a valid Varlink call or reply (beyond its parameters).
public struct VarlinkMessageError: Error, Hashable, Sendable, CustomStringConvertible {
  public var problem: String

  public init(_ problem: String) {
    self.problem = problem
  }

  public var description: String { problem }
}

/// A method call: `{"method":"iface.Method","parameters":{...},"oneway":true,"more":true}`.
public struct VarlinkCall: Hashable, Sendable {
  /// The fully qualified method name, `interface.Method`.
  public var method: String
  public var parameters: JSONObject
  /// No reply is wanted.
  public var oneway: Bool
  /// The caller accepts several replies (`continues`).
  public var more: Bool
  /// The caller wants the connection for another protocol after the reply.
  public var upgrade: Bool

  public init(
    method: String, parameters: JSONObject = [:], oneway: Bool = false, more: Bool = false,
    upgrade: Bool = false
  ) {
    self.method = method
    self.parameters = parameters
    self.oneway = oneway
    self.more = more
    self.upgrade = upgrade
  }

  /// The interface part of `method` (before the last dot).
  public var interface: String {
    guard let dot = method.lastIndex(of: ".") else { return "" }
    return String(method[..<dot])
  }

  /// The member part of `method` (after the last dot).
  public var memberName: String {
    guard let dot = method.lastIndex(of: ".") else { return method }
    return String(method[method.index(after: dot)...])
  }

  /// The message as sent: JSON text and its NUL.
  public func encoded() -> [UInt8] {
    var object: JSONObject = ["method": .string(method)]
    if !parameters.isEmpty { object["parameters"] = .object(parameters) }
    if oneway { object["oneway"] = true }
    if more { object["more"] = true }
    if upgrade { object["upgrade"] = true }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(128)
    object.write(to: &bytes)
    bytes.append(0)
    return bytes
  }

  /// Reads one message (without its NUL).
  public static func decode(_ bytes: some Collection<UInt8>) throws(VarlinkMessageError) -> VarlinkCall {
    let value: JSONValue
    do {
      value = try JSONValue.parse(bytes)
    } catch {
      throw VarlinkMessageError(error.description)
    }
    guard case .object(let object) = value else {
      throw VarlinkMessageError("a call must be a JSON object, got \(value.typeName)")
    }
    let fields = JSONFields(object)
    do {
      let method = try fields.string("method")
      guard let dot = method.lastIndex(of: "."), dot != method.startIndex,
        method.index(after: dot) != method.endIndex
      else {
        throw VarlinkMessageError("method \"\(method)\" is not of the form interface.Method")
      }
      var parameters = JSONObject()
      if let nested = try fields.optionalFields("parameters") { parameters = nested.object }
      return VarlinkCall(
        method: method, parameters: parameters, oneway: try fields.optionalBool("oneway") ?? false,
        more: try fields.optionalBool("more") ?? false, upgrade: try fields.optionalBool("upgrade") ?? false)
    } catch let error as JSONShapeError {
      throw VarlinkMessageError("call field \(error.description)")
    } catch let error as VarlinkMessageError {
      throw error
    } catch {
      throw VarlinkMessageError("\(error)")
    }
  }
}

/// A reply: `{"parameters":{...},"continues":true}` or `{"error":"iface.Error","parameters":{...}}`.
public struct VarlinkReply: Hashable, Sendable {
  public var parameters: JSONObject
  /// More replies to the same call follow.
  public var continues: Bool
  /// The qualified error name, for an error reply.
  public var error: String?

  public init(parameters: JSONObject = [:], continues: Bool = false, error: String? = nil) {
    self.parameters = parameters
    self.continues = continues
    self.error = error
  }

  public init(error: ControlError) {
    self.init(parameters: error.parameters, error: error.name)
  }

  public var isError: Bool { error != nil }

  /// The message as sent: JSON text and its NUL.
  public func encoded() -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(256)
    encode(into: &bytes)
    return bytes
  }

  /// Appends the message and its NUL to `bytes`.
  public func encode(into bytes: inout [UInt8]) {
    var object = JSONObject()
    if let error { object["error"] = .string(error) }
    object["parameters"] = .object(parameters)
    if continues { object["continues"] = true }
    object.write(to: &bytes)
    bytes.append(0)
  }

  /// Reads one message (without its NUL).
  public static func decode(_ bytes: some Collection<UInt8>) throws(VarlinkMessageError) -> VarlinkReply {
    let value: JSONValue
    do {
      value = try JSONValue.parse(bytes)
    } catch {
      throw VarlinkMessageError(error.description)
    }
    guard case .object(let object) = value else {
      throw VarlinkMessageError("a reply must be a JSON object, got \(value.typeName)")
    }
    let fields = JSONFields(object)
    do {
      return VarlinkReply(
        parameters: try fields.optionalFields("parameters")?.object ?? [:],
        continues: try fields.optionalBool("continues") ?? false, error: try fields.optionalString("error"))
    } catch {
      throw VarlinkMessageError("reply field \(error.description)")
    }
  }
}
