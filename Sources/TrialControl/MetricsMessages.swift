import TrialCore

/// `io.systemd.Metrics`: the daemon's counts for collectors (systemd-report) and for
/// `trialwatchctl metrics`, served on the control socket and on the report socket.
public enum SystemdMetrics {
  public static let interface = "io.systemd.Metrics"
  public static let list = VarlinkMethod<MetricsParameters, MetricReply>(interface, "List", .replies)
  public static let describe = VarlinkMethod<MetricsParameters, MetricFamilyReply>(
    interface, "Describe", .replies)
  /// The prefix of every family trialwatchd serves.
  public static let prefix = "io.trialwatch."
  /// The default path of the report socket (`trialwatch-report.socket`).
  public static let reportSocketPath = "/run/systemd/report/io.trialwatch"
}

extension ControlError.Name {
  public static let noSuchMetric = "io.systemd.Metrics.NoSuchMetric"
}

extension ControlError {
  /// A family named in a filter does not exist (`name`), or nothing was there to list (nil).
  public static func noSuchMetric(_ name: String?) -> Self {
    Self(name: Name.noSuchMetric, parameters: Parameters(name: name))
  }
}

/// The parameters of List and Describe: the families wanted, or every one.
public struct MetricsParameters: VarlinkParameters, Hashable {
  public var names: [String]?

  public init(names: [String]? = nil) {
    self.names = names
  }
}

/// How a family's values behave.
public enum MetricType: String, Codable, Hashable, Sendable, CaseIterable {
  case counter
  case gauge
  case string
}

/// A metric's value: a whole number, a real number or, for a `string` family, a text.
public enum MetricValue: Hashable, Sendable, Codable, CustomStringConvertible {
  case integer(Int64)
  case number(Double)
  case text(String)

  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let integer = try? container.decode(Int64.self) {
      self = .integer(integer)
    } else if let number = try? container.decode(Double.self) {
      self = .number(number)
    } else {
      self = .text(try container.decode(String.self))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .integer(let value): try container.encode(value)
    case .number(let value): try container.encode(value)
    case .text(let value): try container.encode(value)
    }
  }

  /// As JSON writes it (a real number without exponent where it can).
  public var description: String {
    switch self {
    case .integer(let value): String(value)
    case .number(let value): Self.format(value)
    case .text(let value): value
    }
  }

  /// The number as a value of JSON: finite only (the daemon counts nothing infinite).
  static func format(_ value: Double) -> String {
    guard value.isFinite else { return "0" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
  }
}

/// A value that writes itself as a JSON object, without Codable: the replies of
/// `io.systemd.Metrics` are written this way, about sixty to a call.
public protocol WireObject: Encodable, Sendable {
  func appendJSON(to out: inout [UInt8])
}

/// One metric of a family: `io.trialwatch.trials {"state": "active"} 12`.
public struct MetricReply: Codable, Hashable, Sendable, WireObject {
  public var name: String
  public var value: MetricValue
  public var object: String?
  public var fields: [String: String]?

  public init(name: String, value: MetricValue, object: String? = nil, fields: [String: String]? = nil) {
    self.name = name
    self.value = value
    self.object = object
    self.fields = fields
  }

  public func appendJSON(to out: inout [UInt8]) {
    out += #"{"name":"#.utf8
    JSONText.appendString(name, to: &out)
    out += #","value":"#.utf8
    switch value {
    case .text(let text): JSONText.appendString(text, to: &out)
    default: out += value.description.utf8
    }
    if let object {
      out += #","object":"#.utf8
      JSONText.appendString(object, to: &out)
    }
    if let fields {
      out += #","fields":"#.utf8
      JSONText.appendObject(fields, to: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}

/// A family: its name, what it counts and its type.
public struct MetricFamilyReply: Codable, Hashable, Sendable, WireObject {
  public var name: String
  public var description: String
  public var type: MetricType

  public init(name: String, description: String, type: MetricType) {
    self.name = name
    self.description = description
    self.type = type
  }

  public func appendJSON(to out: inout [UInt8]) {
    out += #"{"description":"#.utf8
    JSONText.appendString(description, to: &out)
    out += #","name":"#.utf8
    JSONText.appendString(name, to: &out)
    out += #","type":""#.utf8
    out += type.rawValue.utf8
    out += #""}"#.utf8
  }
}

extension WireObject {
  /// Replies as sent: each a message with its NUL, every one but the last marked `continues`.
  public static func messages(_ replies: [Self]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(replies.count * 120)
    for (index, reply) in replies.enumerated() {
      out += #"{"#.utf8
      if index < replies.count - 1 { out += #""continues":true,"#.utf8 }
      out += #""parameters":"#.utf8
      reply.appendJSON(to: &out)
      out += "}\0".utf8
    }
    return out
  }
}
