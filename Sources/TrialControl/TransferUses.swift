import FoundationEssentials
import TrialCore

// The records of subjects granted a trial once, in an export: after the trials, one a line,
// {"use":{...}}, read by Export a page at a time in scope and key order.

/// A subject's use of a plan granted once, as Export carries it (`io.trialwatch.Trials.ExportUse`).
public struct ExportUse: Codable, Hashable, Sendable {
  /// `all`, or `plan:NAME`.
  public var scope: String
  /// The subject's key under its plan's `SubjectKey=`.
  public var key: String
  /// The subject as its first trial gave it.
  public var subject: String
  public var plan: String
  public var firstStartedAt: PreciseTime
  /// The first trial.
  public var id: TrialID
  /// The last trial in the scope and when it started, when a cooldown (`OnceFor=`) let the
  /// subject start again; nil: the first (and in files of versions before cooldowns).
  public var lastStartedAt: PreciseTime?
  public var lastId: TrialID?

  public init(_ use: SubjectUse) {
    scope = use.scope.description
    key = use.key
    subject = use.subject
    plan = use.plan
    firstStartedAt = PreciseTime(use.firstStartedAt)
    id = use.trial
    if use.hasLaterStart {
      lastStartedAt = PreciseTime(use.lastStartedAt)
      lastId = use.lastTrial
    }
  }

  public func use() throws(WireProblem) -> SubjectUse {
    guard let scope = SubjectUse.Scope(scope) else {
      throw WireProblem(path: ["use", "scope"], problem: "\"\(scope)\" is neither all nor plan:NAME")
    }
    guard !key.isEmpty, key.utf8.count <= SubjectUse.maximumKeyBytes else {
      throw WireProblem(path: ["use", "key"], problem: "must be 1 to \(SubjectUse.maximumKeyBytes) bytes")
    }
    if let problem = Trial.validateSubject(subject) {
      throw WireProblem(path: ["use", "subject"], problem: problem)
    }
    if let problem = TrialPlan.validateName(plan) {
      throw WireProblem(path: ["use", "plan"], problem: "the plan name \(problem)")
    }
    if let lastStartedAt, lastStartedAt.date < firstStartedAt.date {
      throw WireProblem(path: ["use", "lastStartedAt"], problem: "must not lie before firstStartedAt")
    }
    return SubjectUse(
      scope: scope, key: key, subject: subject, plan: plan, firstStartedAt: firstStartedAt.date, trial: id,
      lastStartedAt: lastStartedAt?.date, lastTrial: lastId)
  }
}

extension SubjectUse.Position: WireText {
  public static let wireName = "a position among uses (SCOPE KEY)"
}
