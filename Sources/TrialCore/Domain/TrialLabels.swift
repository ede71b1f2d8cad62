/// What an application attaches to a trial for the programs that act on its events: a
/// customer id, an e-mail address, a tier. Keys are `[a-z][a-z0-9_]{0,31}`; values are text
/// without control characters, at most 512 bytes; at most 32 pairs and 4 KiB (keys and values
/// in UTF-8) in all. Kept in key order.
public struct TrialLabels: Hashable, Sendable, Sequence, CustomStringConvertible {
  public static let maximumCount = 32
  public static let maximumKeyBytes = 32
  public static let maximumValueBytes = 512
  public static let maximumTotalBytes = 4096

  public static let none = TrialLabels(sorted: [])

  /// Why a set of labels is refused, naming the label.
  public struct Invalid: Error, Equatable, CustomStringConvertible {
    /// The key of the label at fault; nil when the fault is the set's (too many, too large).
    public var key: String?
    public var problem: String

    public init(key: String?, problem: String) {
      self.key = key
      self.problem = problem
    }

    public var description: String {
      key.map { "label \"\($0)\" \(problem)" } ?? "labels \(problem)"
    }
  }

  /// The pairs, by key.
  public let pairs: [(key: String, value: String)]

  private init(sorted pairs: [(key: String, value: String)]) {
    self.pairs = pairs
  }

  /// Checks every pair, in key order (of several invalid labels, the same one is always named),
  /// and the limits of the whole.
  public init(_ labels: [String: String]) throws(Invalid) {
    try self.init(ascending: labels.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) })
  }

  /// Labels given in strictly ascending key order (as a store keeps them), each checked, and the
  /// limits of the whole: no dictionary is built and nothing sorted.
  public init(ascending pairs: [(key: String, value: String)]) throws(Invalid) {
    for (index, (key, value)) in pairs.enumerated() {
      if let problem = Self.validateKey(key) { throw Invalid(key: key, problem: problem) }
      if let problem = Self.validateValue(value) { throw Invalid(key: key, problem: problem) }
      if index > 0, pairs[index - 1].key >= key {
        throw Invalid(key: key, problem: "is out of order or repeated")
      }
    }
    try Self.checkWhole(pairs)
    self.init(sorted: pairs)
  }

  /// These labels with `changes` made: a value sets or replaces a label, nil removes it.
  public func applying(_ changes: [String: String?]) throws(Invalid) -> TrialLabels {
    guard !changes.isEmpty else { return self }
    var merged = dictionary
    for (key, value) in changes.sorted(by: { $0.key < $1.key }) {
      if let problem = Self.validateKey(key) { throw Invalid(key: key, problem: problem) }
      if let value {
        if let problem = Self.validateValue(value) { throw Invalid(key: key, problem: problem) }
        merged[key] = value
      } else {
        merged[key] = nil
      }
    }
    return try TrialLabels(merged)
  }

  public var dictionary: [String: String] {
    Dictionary(uniqueKeysWithValues: pairs.lazy.map { ($0.key, $0.value) })
  }

  public subscript(key: String) -> String? {
    pairs.first { $0.key == key }?.value
  }

  public var isEmpty: Bool { pairs.isEmpty }
  public var count: Int { pairs.count }

  public func makeIterator() -> some IteratorProtocol<(key: String, value: String)> {
    pairs.makeIterator()
  }

  /// `key=value` pairs, comma-separated.
  public var description: String {
    pairs.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
  }

  public static func == (lhs: TrialLabels, rhs: TrialLabels) -> Bool {
    lhs.pairs.elementsEqual(rhs.pairs) { $0.key == $1.key && $0.value == $1.value }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(pairs.count)
    for pair in pairs {
      hasher.combine(pair.key)
      hasher.combine(pair.value)
    }
  }

  // MARK: Rules

  /// Why `key` cannot be a label's key, or nil.
  public static func validateKey(_ key: String) -> String? {
    let bytes = Array(key.utf8)
    guard let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
      return "must start with a lower-case letter a-z"
    }
    guard bytes.count <= maximumKeyBytes else { return "is longer than \(maximumKeyBytes) characters" }
    let allowed = bytes.allSatisfy {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        || $0 == UInt8(ascii: "_")
    }
    return allowed ? nil : "may only contain a-z, 0-9 and _"
  }

  /// Why `value` cannot be a label's value, or nil.
  public static func validateValue(_ value: String) -> String? {
    if value.utf8.count > maximumValueBytes { return "has a value longer than \(maximumValueBytes) bytes" }
    if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return nil }
    if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
      return "has a value with a control character"
    }
    return nil
  }

  private static func checkWhole(_ pairs: [(key: String, value: String)]) throws(Invalid) {
    guard pairs.count <= maximumCount else {
      throw Invalid(key: nil, problem: "are \(pairs.count), more than \(maximumCount)")
    }
    let total = pairs.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    guard total <= maximumTotalBytes else {
      throw Invalid(key: nil, problem: "take \(total) bytes, more than \(maximumTotalBytes)")
    }
  }
}
