import TrialCore

/// A trial's named attributes beside its subject (`TrialAttributes.besideSubject`) as a trial or
/// an event carries them on the wire: each present one under its own name, in the object of
/// the trial or event itself, absent when the trial has none. The Codable path and the fast
/// path both go through the table, so that a row added to it is on the wire with no code of
/// its own.
public struct NamedAttributes: Hashable, Sendable {
  /// By place in `TrialAttributes.named` (the subject's unused: the object keeps it); empty
  /// when none is present, so that a trial without any costs no allocation.
  private var values: [String?] = []

  public init() {}

  /// Those of `attributes`.
  public init(_ attributes: TrialAttributes) {
    for row in TrialAttributes.besideSubject {
      if let value = attributes[row] { self[row] = value }
    }
  }

  /// Whether none is present.
  public var isEmpty: Bool { values.isEmpty }

  /// The value of `row`, a row of `TrialAttributes.named` but the subject's; nil when absent.
  public subscript(row: TrialAttributes.Named) -> String? {
    get { row.index < values.count ? values[row.index] : nil }
    set {
      precondition(row.index != 0, "the subject is a field of the object itself")
      if values.isEmpty {
        guard newValue != nil else { return }
        values = Array(repeating: nil, count: TrialAttributes.named.count)
      }
      values[row.index] = newValue
      if newValue == nil, values.allSatisfy({ $0 == nil }) { values = [] }
    }
  }

  /// The value of the row of `TrialAttributes.named` called `name` (`plan`); a name of no
  /// row, or the subject's, is a programming error.
  public subscript(name: String) -> String? {
    get { self[Self.row(name)] }
    set { self[Self.row(name)] = newValue }
  }

  private static func row(_ name: String) -> TrialAttributes.Named {
    guard let row = TrialAttributes.row(name), row.index != 0 else {
      preconditionFailure("\(name) is no row of TrialAttributes.named beside the subject")
    }
    return row
  }

  /// Each present one under its name, in the object `encoder` encodes (its other fields
  /// encoded beside them).
  func encode(to encoder: any Encoder) throws {
    guard !values.isEmpty else { return }
    var container = encoder.container(keyedBy: AnyKey.self)
    for row in TrialAttributes.besideSubject {
      try container.encodeIfPresent(values[row.index], forKey: AnyKey(stringValue: row.name))
    }
  }

  /// Those in the object `decoder` decodes, beside its other fields.
  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for row in TrialAttributes.besideSubject {
      self[row] = try container.decodeIfPresent(String.self, forKey: AnyKey(stringValue: row.name))
    }
  }
}
