import FoundationEssentials

/// What a plan allows of extending its trials (`MaxExtensions=`, `MaxLength=`): at most so many
/// extensions, and an end at most so long after the trial's start. They limit the operator's
/// own action, so they are read from the plan as loaded when the extension is asked for (a
/// changed limit applies to the trials open at once), never stored with a trial.
///
/// An extension is an `ExtendTrial` that moves the end later: it counts one, and is refused
/// when either limit would be passed. One that moves the end earlier (or keeps it) neither
/// counts nor is refused. `MaxLength=` is the whole length from the start to the end, the time
/// spent paused included: a resume moves the end later by the pause's length and is never
/// refused (it is not an extension), but a later extension must end within the length.
public struct ExtensionLimits: Hashable, Sendable {
  /// How many extensions a trial may have; nil: as many as asked.
  public var maxExtensions: Int?
  /// The longest a trial may run from its start to its end; nil: no limit.
  public var maxLength: Duration?

  public static let none = ExtensionLimits()

  public init(maxExtensions: Int? = nil, maxLength: Duration? = nil) {
    self.maxExtensions = maxExtensions
    self.maxLength = maxLength
  }

  public var isNone: Bool { maxExtensions == nil && maxLength == nil }

  /// The most `MaxExtensions=` takes.
  public static let maximumCount = 1_000_000

  /// The latest end these limits allow a trial started at `start`; nil without `MaxLength=`.
  public func latestEnd(startedAt start: Date) -> Date? {
    maxLength.map { start.adding($0) }
  }

  /// Why moving `trial`'s end to `end` is refused under these limits of plan `plan`; nil when
  /// it is not (it moves the end no later, or within both limits).
  public func refusal(of trial: Trial, to end: Date, plan: String) -> ExtensionRefusal? {
    guard end > trial.period.endDate, !isNone else { return nil }
    func refused(_ limit: ExtensionRefusal.Limit) -> ExtensionRefusal {
      ExtensionRefusal(
        limit: limit, trial: trial.id, plan: plan, extensions: trial.extensions, maxExtensions: maxExtensions,
        maxLength: maxLength, latestEnd: latestEnd(startedAt: trial.period.startDate), requestedEnd: end)
    }
    if let maxExtensions, trial.extensions >= maxExtensions { return refused(.maxExtensions) }
    if let latest = latestEnd(startedAt: trial.period.startDate), end > latest { return refused(.maxLength) }
    return nil
  }
}

/// An extension its trial's plan refuses (`ExtensionLimits.refusal`): nothing was changed.
public struct ExtensionRefusal: Hashable, Sendable, CustomStringConvertible {
  /// The limit it would pass.
  public enum Limit: String, Hashable, Sendable, CaseIterable {
    /// `MaxExtensions=`: the trial has had as many extensions as its plan allows.
    case maxExtensions = "max-extensions"
    /// `MaxLength=`: the new end lies beyond the trial's start plus the plan's length in all.
    case maxLength = "max-length"
  }

  public var limit: Limit
  public var trial: TrialID
  public var plan: String
  /// The trial's extensions so far.
  public var extensions: Int
  /// The plan's limits (both, where it sets them).
  public var maxExtensions: Int?
  public var maxLength: Duration?
  /// The latest end `maxLength` allows the trial.
  public var latestEnd: Date?
  /// The end the extension asked for.
  public var requestedEnd: Date

  public init(
    limit: Limit, trial: TrialID, plan: String, extensions: Int, maxExtensions: Int?, maxLength: Duration?,
    latestEnd: Date?, requestedEnd: Date
  ) {
    self.limit = limit
    self.trial = trial
    self.plan = plan
    self.extensions = extensions
    self.maxExtensions = maxExtensions
    self.maxLength = maxLength
    self.latestEnd = latestEnd
    self.requestedEnd = requestedEnd
  }

  public var description: String {
    switch limit {
    case .maxExtensions:
      "trial \(trial) had \(extensions) extension\(extensions == 1 ? "" : "s"), as many as plan \"\(plan)\" "
        + "allows (MaxExtensions=\(maxExtensions ?? 0))"
    case .maxLength:
      "the new end \(RFC3339.format(requestedEnd)) of trial \(trial) lies beyond the latest its plan \"\(plan)\" "
        + "allows, \(latestEnd.map(RFC3339.format) ?? "?") (MaxLength=\(maxLength.map(TimeSpan.format) ?? "?") "
        + "from its start)"
    }
  }
}

extension TrialPlan {
  /// The plan's limits on extending its trials.
  public var extensionLimits: ExtensionLimits {
    ExtensionLimits(maxExtensions: maxExtensions, maxLength: maxLength)
  }
}
