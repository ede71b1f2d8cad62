import Foundation
import TrialCore

// The parameters and replies of io.trialwatch.Trials and org.varlink.service. Parameters are
// read strictly: an unknown parameter, a wrong type or an invalid value is an error naming
// the parameter. Replies are read leniently: fields a newer daemon adds are ignored.

// MARK: StartTrial

public struct StartTrialParameters: JSONRepresentable, Hashable {
  public var subject: String
  /// The trial's length; with neither this nor `endsAt`, the configured default.
  public var duration: Days?
  public var endsAt: Date?
  /// Nil: the configured reminders; empty: none.
  public var reminders: ReminderSchedule?

  public init(subject: String, duration: Days? = nil, endsAt: Date? = nil, reminders: ReminderSchedule? = nil)
  {
    self.subject = subject
    self.duration = duration
    self.endsAt = endsAt
    self.reminders = reminders
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["subject", "duration", "endsAt", "reminders"])
    subject = try fields.string("subject")
    if let problem = Trial.validateSubject(subject) { throw fields.error("subject", problem) }
    duration = try fields.optionalSpan("duration").map(Days.init)
    endsAt = try fields.optionalDate("endsAt")
    if let duration, duration.timeInterval <= 0 { throw fields.error("duration", "must be a positive span") }
    if duration != nil && endsAt != nil {
      throw fields.error("endsAt", "give either duration or endsAt, not both")
    }
    if let offsets = try fields.optionalSpans("reminders") {
      do {
        reminders = try ReminderSchedule(offsets)
      } catch {
        throw fields.error("reminders", error.description)
      }
    }
  }

  public var json: JSONObject {
    var object: JSONObject = ["subject": .string(subject)]
    object.set("duration", duration?.span)
    object.set("endsAt", endsAt?.rfc3339)
    object.set("reminders", reminders.map { .array($0.offsets.map(\.span)) })
    return object
  }
}

/// The reply of StartTrial, GetTrial, ExtendTrial and EndTrial: `(trial)`.
public struct TrialReply: JSONRepresentable, Hashable {
  public var trial: TrialObject

  public init(trial: TrialObject) {
    self.trial = trial
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    trial = try JSONFields(json).object("trial", as: TrialObject.self)
  }

  public var json: JSONObject { ["trial": .object(trial.json)] }
}

// MARK: GetTrial

public struct GetTrialParameters: JSONRepresentable, Hashable {
  /// Exactly one of `id` and `subject` is set.
  public var id: TrialID?
  /// The subject's active trial.
  public var subject: String?

  public init(id: TrialID) {
    self.id = id
  }

  public init(subject: String) {
    self.subject = subject
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["id", "subject"])
    id = try fields.optionalTrialID("id")
    subject = try fields.optionalString("subject")
    if id != nil && subject != nil { throw fields.error("subject", "give either id or subject, not both") }
    if id == nil && subject == nil { throw fields.error("id", "give id or subject") }
  }

  public var json: JSONObject {
    var object = JSONObject()
    object.set("id", id.map { .string($0.description) })
    object.set("subject", subject.map(JSONValue.string))
    return object
  }
}

// MARK: ListTrials

public struct ListTrialsParameters: JSONRepresentable, Hashable {
  public static let defaultLimit = 100
  public static let maximumLimit = 1000

  public var state: TrialState?
  /// Only active trials ending within this span from now.
  public var expiringWithin: Days?
  public var limit: Int?
  /// The cursor: the `next` of the previous page.
  public var after: TrialID?

  public init(state: TrialState? = nil, expiringWithin: Days? = nil, limit: Int? = nil, after: TrialID? = nil)
  {
    self.state = state
    self.expiringWithin = expiringWithin
    self.limit = limit
    self.after = after
  }

  /// The page size to use.
  public var pageSize: Int { limit ?? Self.defaultLimit }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["state", "expiringWithin", "limit", "after"])
    state = try fields.optionalChoice("state", as: TrialState.self)
    expiringWithin = try fields.optionalSpan("expiringWithin").map(Days.init)
    limit = try fields.optionalInt("limit")
    if let limit, !(1...Self.maximumLimit).contains(limit) {
      throw fields.error("limit", "must be between 1 and \(Self.maximumLimit), got \(limit)")
    }
    after = try fields.optionalTrialID("after")
  }

  public var json: JSONObject {
    var object = JSONObject()
    object.set("state", state.map { .string($0.rawValue) })
    object.set("expiringWithin", expiringWithin?.span)
    object.set("limit", limit.map { .int(Int64($0)) })
    object.set("after", after.map { .string($0.description) })
    return object
  }

  /// Whether a trial passes the filters, as of `now`.
  public func matches(_ trial: Trial, now: Date) -> Bool {
    if let state, trial.state != state { return false }
    if let expiringWithin {
      guard trial.isActive, trial.period.endDate <= now.addingTimeInterval(expiringWithin.timeInterval) else {
        return false
      }
    }
    return true
  }
}

public struct ListTrialsReply: JSONRepresentable, Hashable {
  public var trials: [TrialObject]
  /// The cursor for the next page; nil on the last page.
  public var next: TrialID?

  public init(trials: [TrialObject], next: TrialID? = nil) {
    self.trials = trials
    self.next = next
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    trials = try fields.objects("trials", as: TrialObject.self)
    next = try fields.optionalTrialID("next")
  }

  public var json: JSONObject {
    var object: JSONObject = ["trials": .array(trials.map { .object($0.json) })]
    object.set("next", next.map { .string($0.description) })
    return object
  }
}

// MARK: ExtendTrial

public struct ExtendTrialParameters: JSONRepresentable, Hashable {
  public enum Change: Hashable, Sendable {
    /// Later by a span.
    case by(Days)
    /// To a new end.
    case to(Date)

    /// The new end of a trial ending at `end`.
    public func newEnd(from end: Date) -> Date {
      switch self {
      case .by(let span): end.addingTimeInterval(span.timeInterval)
      case .to(let date): date
      }
    }
  }

  public var id: TrialID
  public var change: Change

  public init(id: TrialID, change: Change) {
    self.id = id
    self.change = change
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["id", "by", "endsAt"])
    id = try fields.trialID("id")
    let by = try fields.optionalSpan("by")
    let endsAt = try fields.optionalDate("endsAt")
    switch (by, endsAt) {
    case (let span?, nil):
      guard span.timeInterval > 0 else { throw fields.error("by", "must be a positive span") }
      change = .by(Days(span))
    case (nil, let date?): change = .to(date)
    case (nil, nil): throw fields.error("by", "give by or endsAt")
    case (_?, _?): throw fields.error("endsAt", "give either by or endsAt, not both")
    }
  }

  public var json: JSONObject {
    var object: JSONObject = ["id": .string(id.description)]
    switch change {
    case .by(let span): object["by"] = span.span
    case .to(let date): object["endsAt"] = date.rfc3339
    }
    return object
  }
}

// MARK: EndTrial

public struct EndTrialParameters: JSONRepresentable, Hashable {
  public var id: TrialID
  public var outcome: TrialOutcome

  public init(id: TrialID, outcome: TrialOutcome) {
    self.id = id
    self.outcome = outcome
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["id", "outcome"])
    id = try fields.trialID("id")
    outcome = try fields.choice("outcome", as: TrialOutcome.self)
  }

  public var json: JSONObject { ["id": .string(id.description), "outcome": .string(outcome.rawValue)] }
}

// MARK: GetPlan

public struct GetPlanParameters: JSONRepresentable, Hashable {
  public var id: TrialID

  public init(id: TrialID) {
    self.id = id
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["id"])
    id = try fields.trialID("id")
  }

  public var json: JSONObject { ["id": .string(id.description)] }
}

/// The reply of GetPlan and Simulate: `(events)`.
public struct EventsReply: JSONRepresentable, Hashable {
  public var events: [EventObject]

  public init(events: [EventObject]) {
    self.events = events
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    events = try JSONFields(json).objects("events", as: EventObject.self)
  }

  public var json: JSONObject { ["events": .array(events.map { .object($0.json) })] }
}

// MARK: Simulate

public struct SimulateParameters: JSONRepresentable, Hashable {
  public enum Target: Hashable, Sendable {
    case date(Date)
    /// A span from the daemon's now: `+5d` on the wire.
    case fromNow(Days)

    public func resolve(now: Date) -> Date {
      switch self {
      case .date(let date): date
      case .fromNow(let span): now.addingTimeInterval(span.timeInterval)
      }
    }

    /// Reads `+SPAN` or an RFC 3339 time.
    public init(parsing text: String) throws(JSONShapeError) {
      if text.hasPrefix("+") {
        do {
          self = .fromNow(Days(try TimeSpan.parse(String(text.dropFirst()))))
        } catch {
          throw JSONShapeError(path: [], problem: error.description)
        }
      } else {
        do {
          self = .date(try RFC3339.parse(text))
        } catch {
          throw JSONShapeError(path: [], problem: "\(error.description), or +span")
        }
      }
    }

    public var text: String {
      switch self {
      case .date(let date): RFC3339.format(date)
      case .fromNow(let span): "+" + TimeSpan.format(span.duration)
      }
    }
  }

  public var at: Target

  public init(at: Target) {
    self.at = at
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["at"])
    do {
      at = try Target(parsing: try fields.string("at"))
    } catch {
      throw JSONShapeError(path: error.path.isEmpty ? ["at"] : error.path, problem: error.problem)
    }
  }

  public var json: JSONObject { ["at": .string(at.text)] }
}

// MARK: GetStatus

/// What the backend knows of the daemon's state; the server adds what it knows itself.
public struct DaemonStatus: Hashable, Sendable {
  public var startedAt: Date
  public var uptime: Duration
  public var trials: TrialCounts
  public var pendingEvents: Int
  public var nextEvent: EventObject?
  public var storeBytes: Int?

  public init(
    startedAt: Date, uptime: Duration, trials: TrialCounts, pendingEvents: Int, nextEvent: EventObject? = nil,
    storeBytes: Int? = nil
  ) {
    self.startedAt = startedAt
    self.uptime = uptime
    self.trials = trials
    self.pendingEvents = pendingEvents
    self.nextEvent = nextEvent
    self.storeBytes = storeBytes
  }
}

public struct GetStatusReply: JSONRepresentable, Hashable {
  public var version: String
  public var status: DaemonStatus
  /// Open control connections, this one included.
  public var connections: Int
  /// Connections with a running Watch.
  public var watchers: Int

  public init(version: String, status: DaemonStatus, connections: Int, watchers: Int) {
    self.version = version
    self.status = status
    self.connections = connections
    self.watchers = watchers
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    version = try fields.string("version")
    let nextEvent = try fields.optionalObject("nextEvent", as: EventObject.self)
    let trials = try fields.object("trials", as: TrialCounts.self)
    status = DaemonStatus(
      startedAt: try fields.date("startedAt"), uptime: try fields.span("uptime"), trials: trials,
      pendingEvents: try fields.int("pendingEvents"), nextEvent: nextEvent,
      storeBytes: try fields.optionalInt("storeBytes"))
    connections = try fields.int("connections")
    watchers = try fields.int("watchers")
  }

  public var json: JSONObject {
    var object: JSONObject = [
      "version": .string(version), "startedAt": status.startedAt.rfc3339,
      "uptime": .string(TimeSpan.format(.seconds(max(0, status.uptime.timeInterval.rounded())))),
      "trials": .object(status.trials.json), "pendingEvents": .int(Int64(status.pendingEvents)),
    ]
    object.set("nextEvent", status.nextEvent.map { .object($0.json) })
    object.set("storeBytes", status.storeBytes.map { .int(Int64($0)) })
    object["connections"] = .int(Int64(connections))
    object["watchers"] = .int(Int64(watchers))
    return object
  }
}

// MARK: Watch

/// A reply of Watch: the first has no event (the watch is in place), each later one an event.
public struct WatchReply: JSONRepresentable, Hashable {
  public var event: EventObject?

  public init(event: EventObject?) {
    self.event = event
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    event = try JSONFields(json).optionalObject("event", as: EventObject.self)
  }

  public var json: JSONObject {
    var object = JSONObject()
    object.set("event", event.map { .object($0.json) })
    return object
  }
}

/// The parameters of a method that takes none.
public struct NoParameters: JSONRepresentable, Hashable {
  public init() {}

  public init(json: JSONObject) throws(JSONShapeError) {
    try JSONFields(json).rejectUnknown([])
  }

  public var json: JSONObject { [:] }
}

// MARK: org.varlink.service

public struct GetInfoReply: JSONRepresentable, Hashable {
  public var vendor: String
  public var product: String
  public var version: String
  public var url: String
  public var interfaces: [String]

  public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
    self.vendor = vendor
    self.product = product
    self.version = version
    self.url = url
    self.interfaces = interfaces
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    vendor = try fields.string("vendor")
    product = try fields.string("product")
    version = try fields.string("version")
    url = try fields.string("url")
    var names: [String] = []
    for (index, value) in try fields.array("interfaces").enumerated() {
      names.append(try JSONFields.string(value, path: ["interfaces", String(index)]))
    }
    interfaces = names
  }

  public var json: JSONObject {
    [
      "vendor": .string(vendor), "product": .string(product), "version": .string(version),
      "url": .string(url),
      "interfaces": .array(interfaces.map(JSONValue.string)),
    ]
  }
}

public struct GetInterfaceDescriptionParameters: JSONRepresentable, Hashable {
  public var interface: String

  public init(interface: String) {
    self.interface = interface
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    try fields.rejectUnknown(["interface"])
    interface = try fields.string("interface")
  }

  public var json: JSONObject { ["interface": .string(interface)] }
}

public struct GetInterfaceDescriptionReply: JSONRepresentable, Hashable {
  public var description: String

  public init(description: String) {
    self.description = description
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    description = try JSONFields(json).string("description")
  }

  public var json: JSONObject { ["description": .string(description)] }
}
