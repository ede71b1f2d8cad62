import FoundationEssentials

/// A call as the server reads it: the envelope, and the parameters decoded, in the same pass,
/// as the type its method declares. The decoder's `userInfo[.varlinkParameterTypes]` names
/// the parameter type of every method served.
public struct IncomingCall: Decodable, Sendable {
  /// The fully qualified method name, `interface.Method`.
  public var method: String
  /// No reply is wanted.
  public var oneway: Bool
  /// The caller accepts several replies.
  public var more: Bool
  /// The caller wants the connection for another protocol after the reply.
  public var upgrade: Bool
  /// The parameters, or what is wrong with them; nil when the method is not served.
  public var parameters: Result<any VarlinkParameters, WireProblem>?

  private enum Keys: String, CodingKey {
    case method, parameters, oneway, more, upgrade
  }

  /// The interface part of `method` (before the last dot).
  public var interface: String { method.lastIndex(of: ".").map { String(method[..<$0]) } ?? "" }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Keys.self)
    method = try container.decode(String.self, forKey: .method)
    guard let dot = method.lastIndex(of: "."), dot != method.startIndex,
      dot != method.index(before: method.endIndex)
    else {
      throw DecodingError.dataCorruptedError(
        forKey: .method, in: container,
        debugDescription: "method \"\(method)\" is not of the form interface.Method")
    }
    oneway = try container.decodeIfPresent(Bool.self, forKey: .oneway) ?? false
    more = try container.decodeIfPresent(Bool.self, forKey: .more) ?? false
    upgrade = try container.decodeIfPresent(Bool.self, forKey: .upgrade) ?? false
    guard let table = decoder.userInfo[.varlinkParameterTypes] as? ParameterTypes,
      let type = table.types[method]
    else { return }
    var keys: [AnyKey]?
    if container.contains(.parameters), try !container.decodeNil(forKey: .parameters) {
      // A value that is not an object is a malformed call, not a bad parameter.
      keys = try container.nestedContainer(keyedBy: AnyKey.self, forKey: .parameters).allKeys
    }
    parameters = Self.parameters(type, in: container, keys: keys, allowed: table.names[method] ?? [])
  }

  private static func parameters<P: VarlinkParameters>(
    _ type: P.Type, in container: KeyedDecodingContainer<Keys>, keys: [AnyKey]?, allowed: Set<String>
  ) -> Result<any VarlinkParameters, WireProblem> {
    let present = keys != nil
    let base = container.codingPath.count + 1
    do {
      // The decoder lists the keys in no fixed order: of several unknown ones, the first in
      // byte order is named, so that the same message always gets the same reply.
      if let key = keys?.map(\.stringValue).filter({ !allowed.contains($0) })
        .min(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
      {
        let takes = allowed.sorted().joined(separator: ", ")
        return .failure(
          .parameter(
            key,
            allowed.isEmpty
              ? "is not a parameter: the method takes none"
              : "is not a parameter of this method (it takes \(takes))"))
      }
      let value =
        present ? try container.decode(P.self, forKey: .parameters) : try WireCoding.decodeEmpty(P.self)
      try value.validate()
      return .success(value)
    } catch let error as DecodingError {
      return .failure(WireProblem(error, dropping: present ? base : 0))
    } catch let error as WireProblem {
      return .failure(error)
    } catch {
      return .failure(WireProblem(path: [], problem: "\(error)"))
    }
  }

  /// Reads one message (without its NUL), or says what is wrong with it.
  public static func decode(_ bytes: some Collection<UInt8>, with decoder: JSONDecoder) throws(WireProblem)
    -> IncomingCall
  {
    try WireCoding.checkEncoding(bytes)
    let data = Data(bytes)
    do {
      return try decoder.decode(IncomingCall.self, from: data)
    } catch let error as DecodingError {
      throw WireCoding.messageProblem(error, data: data, what: "a call")
    } catch {
      throw WireProblem(path: [], problem: "\(error)")
    }
  }
}

extension CodingUserInfoKey {
  /// `ParameterTypes`: the methods a server serves, for `IncomingCall`.
  public static let varlinkParameterTypes = CodingUserInfoKey(rawValue: "varlinkParameterTypes")!
}

/// The parameter type of each method served, and the parameter names its definition declares.
public final class ParameterTypes: Sendable {
  let types: [String: any VarlinkParameters.Type]
  let names: [String: Set<String>]

  public init(_ types: [String: any VarlinkParameters.Type]) {
    self.types = types
    names = VarlinkInterfaces.parameterNames.filter { types[$0.key] != nil }
  }
}

struct AnyKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }
  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
}

/// A call as a client sends it.
public struct OutgoingCall<Parameters: Encodable>: Encodable {
  public var method: String
  public var parameters: Parameters
  public var oneway: Bool?
  public var more: Bool?

  public init(method: String, parameters: Parameters, oneway: Bool = false, more: Bool = false) {
    self.method = method
    self.parameters = parameters
    self.oneway = oneway ? true : nil
    self.more = more ? true : nil
  }
}

/// A reply as the server sends it.
public struct OutgoingReply<Parameters: Encodable>: Encodable {
  public var parameters: Parameters
  public var continues: Bool?
  public var error: String?

  public init(parameters: Parameters, continues: Bool = false, error: String? = nil) {
    self.parameters = parameters
    self.continues = continues ? true : nil
    self.error = error
  }
}

extension OutgoingReply where Parameters == ControlError.Parameters {
  public init(error: ControlError) {
    self.init(parameters: error.parameters, error: error.name)
  }
}

extension JSONEncoder {
  /// A message as sent: JSON text and its NUL.
  public func message(_ value: some Encodable) -> [UInt8] {
    var bytes = [UInt8]((try? encode(value)) ?? Data("{}".utf8))
    bytes.append(0)
    return bytes
  }
}

/// A reply as a client receives it: whether it is an error and whether more follow, with its
/// parameters decoded on demand as the type the caller expects.
public struct VarlinkReply: Sendable {
  /// The message, without its NUL.
  public let bytes: [UInt8]
  /// The qualified error name, for an error reply.
  public let error: String?
  /// More replies to the same call follow.
  public let continues: Bool

  private struct Header: Decodable {
    var error: String?
    var continues: Bool?
  }

  private struct Body<P: Decodable>: Decodable {
    var parameters: P?
  }

  public init(_ bytes: [UInt8]) throws(WireProblem) {
    self.bytes = bytes
    do {
      let header = try WireCoding.makeDecoder().decode(Header.self, from: Data(bytes))
      error = header.error
      continues = header.continues ?? false
    } catch let error as DecodingError {
      throw WireCoding.messageProblem(error, data: Data(bytes), what: "a reply")
    } catch {
      throw WireProblem(path: [], problem: "\(error)")
    }
  }

  /// The parameters as `P`; absent parameters read as an empty object.
  public func parameters<P: Decodable>(as type: P.Type) throws(WireProblem) -> P {
    do {
      if let parameters = try WireCoding.makeDecoder().decode(Body<P>.self, from: Data(bytes)).parameters {
        return parameters
      }
      return try WireCoding.decodeEmpty(P.self)
    } catch let error as DecodingError {
      throw WireProblem(error, dropping: 1)
    } catch {
      throw WireProblem(path: [], problem: "\(error)")
    }
  }

  /// The error the reply carries, if it is one.
  public var controlError: ControlError? {
    guard let error else { return nil }
    return ControlError(
      name: error, parameters: (try? parameters(as: ControlError.Parameters.self)) ?? .init())
  }
}

/// A reply decoded, once, as a typed call needs it: its parameters as `R`, or the error it
/// carries, and whether more replies follow.
struct TypedReply<R: Decodable>: Decodable {
  var outcome: Result<R, ControlError>
  var continues: Bool

  private enum Keys: String, CodingKey {
    case parameters, error, continues
  }

  init(from decoder: any Decoder) throws {
    let message = try decoder.container(keyedBy: Keys.self)
    continues = try message.decodeIfPresent(Bool.self, forKey: .continues) ?? false
    if let error = try message.decodeIfPresent(String.self, forKey: .error) {
      let parameters = try? message.decodeIfPresent(ControlError.Parameters.self, forKey: .parameters)
      outcome = .failure(ControlError(name: error, parameters: parameters ?? .init()))
    } else {
      outcome = .success(
        try message.decodeIfPresent(R.self, forKey: .parameters) ?? WireCoding.decodeEmpty(R.self))
    }
  }

  /// The reply in `bytes` (without its NUL); a fault in its parameters is named by their path,
  /// any other as one of the message.
  static func decode(_ bytes: [UInt8]) throws(WireProblem) -> Self {
    let data = Data(bytes)
    do {
      return try WireCoding.makeDecoder().decode(Self.self, from: data)
    } catch let error as DecodingError {
      if error.codingPath.first?.stringValue == Keys.parameters.stringValue {
        let problem = WireProblem(error, dropping: 1)
        throw WireProblem(path: [], problem: "reply parameter \(problem.description)")
      }
      throw WireCoding.messageProblem(error, data: data, what: "a reply")
    } catch {
      throw WireProblem(path: [], problem: "\(error)")
    }
  }
}

extension DecodingError {
  /// Where in the message the fault lies.
  var codingPath: [any CodingKey] {
    switch self {
    case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
      .dataCorrupted(let context):
      context.codingPath
    @unknown default: []
    }
  }
}

extension WireCoding {
  /// Refuses, before decoding, bytes no JSON text may hold as they are: a control character or
  /// bytes that are not UTF-8 (`JSONSyntax.encodingProblem`).
  static func checkEncoding(_ bytes: some Collection<UInt8>) throws(WireProblem) {
    if let problem = JSONSyntax.encodingProblem(in: bytes) {
      throw WireProblem(path: [], problem: "malformed JSON: \(problem)")
    }
  }

  /// A failure to decode `data` because it is not JSON at all, in words naming the byte where it
  /// stops being JSON; nil for any other failure.
  static func syntaxProblem(_ error: DecodingError, data: Data) -> WireProblem? {
    guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty else { return nil }
    return WireProblem(
      path: [], problem: "malformed JSON: \(JSONSyntax.problem(in: data) ?? context.debugDescription)")
  }

  /// A value of a type whose fields are all optional, from an absent or empty object.
  static func decodeEmpty<P: Decodable>(_ type: P.Type) throws -> P {
    try makeDecoder().decode(P.self, from: Data("{}".utf8))
  }

  /// What is wrong with a whole message, in words: not JSON at all (what and at which byte),
  /// not an object, or a field of the envelope that is wrong.
  static func messageProblem(_ error: DecodingError, data: Data, what: String) -> WireProblem {
    if let malformed = syntaxProblem(error, data: data) { return malformed }
    let problem = WireProblem(error)
    if problem.path.isEmpty, case .typeMismatch = error {
      return WireProblem(
        path: [],
        problem:
          "\(what) must be a JSON object, \(problem.problem.replacing("expected an object, ", with: ""))"
      )
    }
    return WireProblem(path: [], problem: "\(what) field \(problem.description)")
  }
}
