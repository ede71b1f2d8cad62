import FoundationEssentials

/// A signing secret of Standard Webhooks 1.0: `whsec_` and the base64 of 24 to 64 random bytes,
/// the key of the HMAC-SHA256 that signs each message. The text is what an endpoint's
/// `SecretFile=` holds (one a line) and what the receiving application is given.
public struct WebhookSecret: Hashable, Sendable, CustomStringConvertible {
  public static let prefix = "whsec_"
  /// How many bytes a key has: the specification's range.
  public static let keyBytes = 24...64
  /// The bytes of a new secret: 32, as the specification's examples have.
  public static let newKeyBytes = 32

  /// The HMAC key.
  public let key: [UInt8]

  /// A secret of `key`, which must have `keyBytes` bytes.
  public init(key: [UInt8]) throws(WebhookSecretError) {
    guard Self.keyBytes.contains(key.count) else { throw .length(key.count) }
    self.key = key
  }

  /// Reads a secret as written: `whsec_` and base64 (standard alphabet, with its padding).
  public init(_ text: some StringProtocol) throws(WebhookSecretError) {
    guard text.hasPrefix(Self.prefix) else { throw .prefix }
    let encoded = text.dropFirst(Self.prefix.count)
    guard let data = Data(base64Encoded: String(encoded)) else { throw .base64 }
    try self.init(key: Array(data))
  }

  /// The secret as written.
  public var text: String { Self.prefix + Data(key).base64EncodedString() }

  /// Never the key itself: a secret ends up in logs only by mistake.
  public var description: String { "whsec_… (\(key.count) bytes)" }
}

/// Why a text is not a secret of Standard Webhooks.
public enum WebhookSecretError: Error, Hashable, Sendable, CustomStringConvertible {
  case prefix
  case base64
  case length(Int)

  public var description: String {
    switch self {
    case .prefix: "a secret starts with \(WebhookSecret.prefix)"
    case .base64: "a secret is \(WebhookSecret.prefix) followed by base64 (A-Z, a-z, 0-9, + and /, = padding)"
    case .length(let count):
      "a secret's key has \(WebhookSecret.keyBytes.lowerBound) to \(WebhookSecret.keyBytes.upperBound) bytes, "
        + "not \(count)"
    }
  }
}

/// Standard Webhooks 1.0's signature, apart from the MAC itself (the caller's HMAC-SHA256): what
/// is signed, and the `webhook-signature` header the MACs make.
public enum WebhookSignature {
  /// The bytes each MAC covers: the message's id, its timestamp (Unix seconds) and its body,
  /// joined by dots.
  public static func signedContent(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
    Array("\(id).\(timestamp).".utf8) + body
  }

  /// The header's value: `v1,` and the base64 of each MAC (one per secret while a secret is
  /// rotated), separated by spaces.
  public static func header(macs: [[UInt8]]) -> String {
    macs.map { "v1," + Data($0).base64EncodedString() }.joined(separator: " ")
  }
}
