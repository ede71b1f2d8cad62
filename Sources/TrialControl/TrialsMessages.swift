import FoundationEssentials
import TrialCore

// The parameters and replies of io.trialwatch.Trials, as Codable types (org.varlink.service's
// are in ServiceMessages.swift). Parameters are read strictly: an unknown parameter, a wrong
// type or an invalid value is an error naming the parameter. Replies are read leniently: fields
// a newer daemon adds are ignored.

public struct StartTrialParameters: VarlinkParameters, Hashable {
  public var subject: String
  /// The trial's length; with neither this nor `endsAt`, the configured default.
  public var duration: Span?
  public var endsAt: Date?
  /// Spans before the end. Nil: the configured reminders; empty: none.
  public var reminders: [Span]?
  /// The trial's labels.
  public var labels: [String: String]?
  /// The plan whose length, reminders and labels the trial takes where the others leave them open.
  public var plan: String?
  /// The variant of the plan; nil: the one the subject gets.
  public var variant: String?

  public init(
    subject: String, duration: Duration? = nil, endsAt: Date? = nil, reminders: ReminderSchedule? = nil,
    labels: [String: String]? = nil, plan: String? = nil, variant: String? = nil
  ) {
    self.subject = subject
    self.plan = plan
    self.variant = variant
    self.duration = duration.map(Span.init)
    self.endsAt = endsAt
    self.reminders = reminders.map { $0.offsets.map(Span.init) }
    self.labels = labels
  }

  private enum CodingKeys: String, CodingKey {
    case subject, duration, endsAt, reminders, labels, plan, variant
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    subject = try container.decode(String.self, forKey: .subject)
    variant = try container.decodeIfPresent(String.self, forKey: .variant)
    duration = try container.decodeIfPresent(Span.self, forKey: .duration)
    endsAt = try container.decodeIfPresent(Date.self, forKey: .endsAt)
    reminders = try container.decodeIfPresent([Span].self, forKey: .reminders)
    labels = try container.decodeObjectIfPresent(of: String.self, forKey: .labels)
    plan = try container.decodeIfPresent(String.self, forKey: .plan)
  }

  /// What only the wire can get wrong; the values are checked once, by `command()`.
  public func validate() throws(WireProblem) {
    if duration != nil && endsAt != nil {
      throw .parameter("endsAt", "give either duration or endsAt, not both")
    }
  }

  /// The start asked for, its values checked.
  public func command() throws(TrialError) -> TrialCommand {
    let end: TrialStart.End =
      if let endsAt { .at(endsAt) } else if let duration { .after(duration.duration) } else { .defaultLength }
    return try .start(
      subject: subject, plan: plan, labels: labels ?? [:], end: end, reminders: reminders?.map(\.duration),
      variant: variant)
  }
}

/// The reply of StartTrial, GetTrial, ExtendTrial and EndTrial.
public struct TrialReply: Codable, Hashable, Sendable {
  public var trial: TrialObject

  public init(trial: TrialObject) {
    self.trial = trial
  }
}

public struct GetTrialParameters: VarlinkParameters, Hashable {
  /// Exactly one of `id` and `subject` is set.
  public var id: TrialID?
  /// The subject's active trial, else its most recent one.
  public var subject: String?

  public init(id: TrialID) {
    self.id = id
  }

  public init(subject: String) {
    self.subject = subject
  }

  public func validate() throws(WireProblem) {
    if id != nil && subject != nil { throw .parameter("subject", "give either id or subject, not both") }
    if id == nil && subject == nil { throw .parameter("id", "give id or subject") }
  }
}

public struct ListTrialsParameters: PagedParameters, Hashable {
  public static let defaultLimit = 100
  public static let maximumLimit = 1000

  public var state: TrialState?
  /// Only active trials ending within this span from now.
  public var expiringWithin: Span?
  public var limit: Int?
  /// The cursor: the `next` of the previous page.
  public var after: TrialID?
  /// Only trials with this label: `key=value`.
  public var label: String?
  /// Only trials started with this plan.
  public var plan: String?

  public init(
    state: TrialState? = nil, expiringWithin: Duration? = nil, limit: Int? = nil, after: TrialID? = nil,
    label: String? = nil, plan: String? = nil
  ) {
    self.plan = plan
    self.state = state
    self.expiringWithin = expiringWithin.map(Span.init)
    self.limit = limit
    self.after = after
    self.label = label
  }

  private enum CodingKeys: String, CodingKey {
    case state, expiringWithin, limit, after, label, plan
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    state = try container.decodeIfPresent(TrialState.self, forKey: .state)
    expiringWithin = try container.decodeIfPresent(Span.self, forKey: .expiringWithin)
    after = try container.decodeIfPresent(TrialID.self, forKey: .after)
    limit = try container.decodeWholeNumber(forKey: .limit)
    label = try container.decodeIfPresent(String.self, forKey: .label)
    plan = try container.decodeIfPresent(String.self, forKey: .plan)
  }

  public func validate() throws(WireProblem) {
    try validateLimit()
    _ = try labelFilter
    if let plan, let problem = TrialPlan.validateName(plan) { throw .parameter("plan", problem) }
  }

  /// The label asked for, split at its first `=`.
  public var labelFilter: (key: String, value: String)? {
    get throws(WireProblem) {
      guard let label else { return nil }
      guard let equals = label.firstIndex(of: "=") else {
        throw .parameter("label", "give the label as key=value")
      }
      let key = String(label[..<equals])
      if let problem = TrialLabels.validateKey(key) {
        throw .parameter("label", TrialLabels.Invalid(key: key, problem: problem).description)
      }
      return (key, String(label[label.index(after: equals)...]))
    }
  }

}

/// PauseTrial and ResumeTrial: a trial by id, or by subject (its active or paused trial).
public struct TrialTargetParameters: VarlinkParameters, Hashable {
  /// Exactly one of `id` and `subject` is set.
  public var id: TrialID?
  public var subject: String?

  public init(_ target: TrialTarget) {
    switch target {
    case .id(let id): self.id = id
    case .subject(let subject): self.subject = subject
    }
  }

  public func validate() throws(WireProblem) {
    if id != nil && subject != nil { throw .parameter("subject", "give either id or subject, not both") }
    if id == nil && subject == nil { throw .parameter("id", "give id or subject") }
  }

  /// The trial named.
  public var target: TrialTarget { id.map(TrialTarget.id) ?? .subject(subject ?? "") }
}

public struct ListTrialsReply: Codable, Hashable, Sendable {
  public var trials: [TrialObject]
  /// The cursor for the next page; nil on the last page.
  public var next: TrialID?

  public init(trials: [TrialObject], next: TrialID? = nil) {
    self.trials = trials
    self.next = next
  }
}

public struct ExtendTrialParameters: VarlinkParameters, Hashable {
  public var id: TrialID
  /// Exactly one of `by` and `endsAt` is set.
  public var by: Span?
  public var endsAt: Date?
  /// Labels to set or change; a null value removes the label. Checked where they are applied
  /// (`TrialBook`), with the limits of the whole.
  public var labels: [String: String?]?

  public init(id: TrialID, change: TrialEndChange, labels: [String: String?]? = nil) {
    self.id = id
    self.labels = labels
    switch change {
    case .by(let span): by = Span(span)
    case .to(let date): endsAt = date
    }
  }

  private enum CodingKeys: String, CodingKey {
    case id, by, endsAt, labels
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(TrialID.self, forKey: .id)
    by = try container.decodeIfPresent(Span.self, forKey: .by)
    endsAt = try container.decodeIfPresent(Date.self, forKey: .endsAt)
    labels = try container.decodeObjectIfPresent(of: String?.self, forKey: .labels)
  }

  public func validate() throws(WireProblem) {
    switch (by, endsAt) {
    case (_?, nil), (nil, _?): break
    case (nil, nil): throw .parameter("by", "give by or endsAt")
    case (_?, _?): throw .parameter("endsAt", "give either by or endsAt, not both")
    }
  }

  /// The extension asked for, its values checked.
  public func command() throws(TrialError) -> TrialCommand {
    try .extend(id, endsAt.map(TrialEndChange.to) ?? .by(by?.duration ?? .zero), labels: labels ?? [:])
  }
}

public struct EndTrialParameters: VarlinkParameters, Hashable {
  public var id: TrialID
  public var outcome: TrialOutcome
  /// Labels to set or change as the trial ends; a null value removes the label.
  public var labels: [String: String?]?

  public init(id: TrialID, outcome: TrialOutcome, labels: [String: String?]? = nil) {
    self.id = id
    self.outcome = outcome
    self.labels = labels
  }

  private enum CodingKeys: String, CodingKey {
    case id, outcome, labels
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(TrialID.self, forKey: .id)
    outcome = try container.decode(TrialOutcome.self, forKey: .outcome)
    labels = try container.decodeObjectIfPresent(of: String?.self, forKey: .labels)
  }
}

public struct GetPlanParameters: VarlinkParameters, Hashable {
  public var id: TrialID

  public init(id: TrialID) {
    self.id = id
  }
}

/// The reply of GetPlan and Simulate.
public struct EventsReply: Codable, Hashable, Sendable {
  public var events: [EventObject]

  public init(events: [EventObject]) {
    self.events = events
  }
}

public struct SimulateParameters: VarlinkParameters, Hashable {
  /// An RFC 3339 time, or `+SPAN` from the daemon's now.
  public enum Target: Codable, Hashable, Sendable {
    case date(Date)
    case fromNow(Duration)

    public func resolve(now: Date) -> Date {
      switch self {
      case .date(let date): date
      case .fromNow(let span): now.adding(span)
      }
    }

    /// Reads `+SPAN` or an RFC 3339 time.
    public init(parsing text: String) throws(WireProblem) {
      do {
        self =
          text.hasPrefix("+")
          ? .fromNow(try TimeSpan.parse(String(text.dropFirst()))) : .date(try RFC3339.parse(text))
      } catch let error as TimeSpan.ParseError {
        throw WireProblem(path: [], problem: error.description)
      } catch {
        throw WireProblem(path: [], problem: "\(error), or +span")
      }
    }

    public var text: String {
      switch self {
      case .date(let date): RFC3339.format(date)
      case .fromNow(let span): "+" + TimeSpan.format(span, style: .precise)
      }
    }

    public init(from decoder: any Decoder) throws {
      self = try decoder.decodeText { try Target(parsing: $0) }
    }

    public func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      try container.encode(text)
    }
  }

  public var at: Target

  public init(at: Target) {
    self.at = at
  }
}

/// `io.trialwatch.Trials.HeldEvents`.
public struct HeldEvents: Codable, Hashable, Sendable {
  public var events: Int
  /// Why, in words: `at most 9000 entries per 30s to the journal`.
  public var reason: String

  public init(events: Int, reason: String) {
    self.events = events
    self.reason = reason
  }
}

/// Writes the store refuses now, for a fault of the storage.
public struct StoreFaultObject: Codable, Hashable, Sendable {
  /// A `StoreFaultReason`: `disk-full`, `io-error`, `database-unreachable`, `database-read-only`.
  public var reason: String
  /// The last refusal's error, in words.
  public var message: String
  /// When the first write was refused.
  public var since: Date
  public var refusedWrites: Int

  public init(reason: String, message: String, since: Date, refusedWrites: Int) {
    self.reason = reason
    self.message = message
    self.since = since
    self.refusedWrites = refusedWrites
  }
}

public struct GetStatusReply: Codable, Hashable, Sendable {
  public var version: String
  public var startedAt: Date
  /// Time since the daemon started, in whole seconds.
  public var uptime: Span
  public var trials: TrialCounts
  /// Events not yet taken, over all active trials.
  public var pendingEvents: Int
  public var nextEvent: EventObject?
  /// The size of the store file in bytes, where there is one.
  public var storeBytes: Int?
  /// Open control connections, this one included.
  public var connections: Int
  /// Connections with a running Watch.
  public var watchers: Int
  /// The fleet the daemon is a node of; nil when it stores its trials on its own host.
  public var fleet: FleetObject?
  /// Events taken but held back from the journal (its rate limit, a failing sink); nil when
  /// none are.
  public var held: HeldEvents?
  /// Writes the store refuses now (a full disk, an unreachable database); nil while it takes them.
  public var storeFault: StoreFaultObject?

  public init(
    version: String, startedAt: Date, uptime: Duration, trials: TrialCounts, pendingEvents: Int,
    nextEvent: EventObject? = nil, storeBytes: Int? = nil, connections: Int, watchers: Int,
    fleet: FleetObject? = nil, held: HeldEvents? = nil, storeFault: StoreFaultObject? = nil
  ) {
    self.held = held
    self.storeFault = storeFault
    self.version = version
    self.startedAt = startedAt
    self.uptime = Span(.seconds(max(0, uptime.components.seconds)))
    self.trials = trials
    self.pendingEvents = pendingEvents
    self.nextEvent = nextEvent
    self.storeBytes = storeBytes
    self.connections = connections
    self.watchers = watchers
    self.fleet = fleet
  }
}

/// A reply of Watch: the first has no event (the watch is in place), each later one an event.
public struct WatchReply: Codable, Hashable, Sendable {
  public var event: EventObject?

  public init(event: EventObject?) {
    self.event = event
  }
}

extension KeyedDecodingContainer {
  /// An optional whole number, read as a number first: Foundation reports a fraction for an
  /// integer without its path.
  func decodeWholeNumber(forKey key: Key) throws -> Int? {
    guard let number = try decodeIfPresent(Double.self, forKey: key) else { return nil }
    guard number == number.rounded(), abs(number) < 1e15 else {
      throw DecodingError.dataCorruptedError(
        forKey: key, in: self, debugDescription: "expected an integer, got \(number)")
    }
    return Int(number)
  }
}

/// The parameters of a paged read: `limit` items at most, between 1 and `maximumLimit`,
/// `defaultLimit` when absent.
public protocol PagedParameters: VarlinkParameters {
  static var defaultLimit: Int { get }
  static var maximumLimit: Int { get }
  var limit: Int? { get }
}

extension PagedParameters {
  /// The page size to use.
  public var pageSize: Int { limit ?? Self.defaultLimit }

  public func validate() throws(WireProblem) {
    try validateLimit()
  }

  public func validateLimit() throws(WireProblem) {
    if let limit, !(1...Self.maximumLimit).contains(limit) {
      throw .parameter("limit", "must be between 1 and \(Self.maximumLimit), got \(limit)")
    }
  }
}
