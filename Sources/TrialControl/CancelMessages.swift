import TrialCore

/// CancelTrial: a trial by id, or by subject (its active or paused trial), cancelled now or at
/// its end. UncancelTrial takes `TrialTargetParameters`.
public struct CancelTrialParameters: VarlinkParameters, Hashable {
  /// Exactly one of `id` and `subject` is set.
  public var id: TrialID?
  public var subject: String?
  /// True: at its end (it stays open until then); false: now.
  public var atEnd: Bool
  /// Labels to set or change as it is cancelled; a null value removes the label.
  public var labels: [String: String?]?

  public init(_ target: TrialTarget, atEnd: Bool, labels: [String: String?]? = nil) {
    let named = TrialTargetParameters(target)
    id = named.id
    subject = named.subject
    self.atEnd = atEnd
    self.labels = labels
  }

  private enum CodingKeys: String, CodingKey {
    case id, subject, atEnd, labels
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decodeIfPresent(TrialID.self, forKey: .id)
    subject = try container.decodeIfPresent(String.self, forKey: .subject)
    atEnd = try container.decode(Bool.self, forKey: .atEnd)
    labels = try container.decodeObjectIfPresent(of: String?.self, forKey: .labels)
  }

  public func validate() throws(WireProblem) {
    try TrialTargetParameters(id: id, subject: subject).validate()
  }

  /// The cancel asked for, its values checked.
  public func command() throws(TrialError) -> TrialCommand {
    try .cancel(
      TrialTargetParameters(id: id, subject: subject).target, atEnd: atEnd, labels: labels ?? [:])
  }
}

extension TrialTargetParameters {
  /// By id or subject as given (`validate` checks that exactly one is).
  init(id: TrialID?, subject: String?) {
    self.init(id.map(TrialTarget.id) ?? .subject(subject ?? ""))
    self.id = id
    self.subject = subject
  }
}
