import Foundation
import TrialCore

/// A trial as the wire carries it (`io.trialwatch.Trials.Trial`).
public struct TrialObject: JSONRepresentable, Hashable {
  public var id: TrialID
  public var subject: String
  public var state: TrialState
  public var startedAt: Date
  public var endsAt: Date
  /// When the trial left the active state.
  public var endedAt: Date?
  /// Spans before the end, in the order they fall due.
  public var reminders: [Duration]
  public var revision: UInt32
  /// Until the end as of the reply; negative once past.
  public var daysLeft: Days

  public init(
    id: TrialID, subject: String, state: TrialState, startedAt: Date, endsAt: Date, endedAt: Date? = nil,
    reminders: [Duration], revision: UInt32, daysLeft: Days
  ) {
    self.id = id
    self.subject = subject
    self.state = state
    self.startedAt = startedAt
    self.endsAt = endsAt
    self.endedAt = endedAt
    self.reminders = reminders
    self.revision = revision
    self.daysLeft = daysLeft
  }

  /// The trial as of `now`.
  public init(_ trial: Trial, now: Date) {
    self.init(
      id: trial.id, subject: trial.subject, state: trial.state, startedAt: trial.period.startDate,
      endsAt: trial.period.endDate, endedAt: trial.endedAt, reminders: trial.reminders.offsets,
      revision: trial.revision, daysLeft: trial.period.daysLeft(clock: FixedInstant(now)))
  }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    let revision = try fields.int("revision")
    guard let revision32 = UInt32(exactly: revision) else { throw fields.error("revision", "out of range") }
    self.init(
      id: try fields.trialID("id"), subject: try fields.string("subject"),
      state: try fields.choice("state", as: TrialState.self), startedAt: try fields.date("startedAt"),
      endsAt: try fields.date("endsAt"), endedAt: try fields.optionalDate("endedAt"),
      reminders: try fields.optionalSpans("reminders") ?? [], revision: revision32,
      daysLeft: Days(try fields.double("daysLeft")))
  }

  public var json: JSONObject {
    var object: JSONObject = [
      "id": .string(id.description), "subject": .string(subject), "state": .string(state.rawValue),
      "startedAt": startedAt.rfc3339, "endsAt": endsAt.rfc3339,
    ]
    object.set("endedAt", endedAt?.rfc3339)
    object["reminders"] = .array(reminders.map(\.span))
    object["revision"] = .int(Int64(revision))
    object["daysLeft"] = .double((daysLeft.amount * 1e6).rounded() / 1e6)
    return object
  }
}

/// A clock stopped at one instant, to evaluate domain questions "as of" a given time.
struct FixedInstant: WallClock {
  let date: Date
  init(_ date: Date) { self.date = date }
  func now() -> Date { date }
}

/// A reminder or expiry as the wire carries it (`io.trialwatch.Trials.Event`).
public struct EventObject: JSONRepresentable, Hashable {
  public enum Kind: String, CaseIterable, Sendable {
    case reminder
    case expiry
  }

  public enum State: String, CaseIterable, Sendable {
    /// Not yet taken.
    case pending
    /// Taken and fired, not yet delivered.
    case fired
    /// Fired and delivered.
    case delivered
    /// Taken without firing; `reason` says why.
    case skipped
  }

  public var id: EventID
  public var subject: String?
  public var state: State
  public var due: Date
  /// A code for why a skipped event did not fire (`already-due-at-start`).
  public var reason: String?
  /// The reason in words.
  public var detail: String?
  /// When it was fired or skipped.
  public var takenAt: Date?
  /// How late it was taken, when it was late.
  public var lateness: Duration?

  public init(
    id: EventID, subject: String? = nil, state: State, due: Date, reason: String? = nil,
    detail: String? = nil,
    takenAt: Date? = nil, lateness: Duration? = nil
  ) {
    self.id = id
    self.subject = subject
    self.state = state
    self.due = due
    self.reason = reason
    self.detail = detail
    self.takenAt = takenAt
    self.lateness = lateness
  }

  public var trialID: TrialID { id.trialID }
  public var revision: UInt32 { id.revision }
  public var kind: Kind { id.kind == .expiry ? .expiry : .reminder }
  /// For a reminder: the span before the end.
  public var offset: Duration? { id.kind.reminderOffset }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    let text = try fields.string("id")
    guard let id = EventID(text) else { throw fields.error("id", "\"\(text)\" is not an event id") }
    self.init(
      id: id, subject: try fields.optionalString("subject"),
      state: try fields.choice("state", as: State.self),
      due: try fields.date("due"), reason: try fields.optionalString("reason"),
      detail: try fields.optionalString("detail"), takenAt: try fields.optionalDate("takenAt"),
      lateness: try fields.optionalSpan("lateness"))
  }

  public var json: JSONObject {
    var object: JSONObject = ["id": .string(id.description), "trialId": .string(trialID.description)]
    object.set("subject", subject.map(JSONValue.string))
    object["revision"] = .int(Int64(revision))
    object["kind"] = .string(kind.rawValue)
    object.set("offset", offset?.span)
    object["due"] = due.rfc3339
    object["state"] = .string(state.rawValue)
    object.set("reason", reason.map(JSONValue.string))
    object.set("detail", detail.map(JSONValue.string))
    object.set("takenAt", takenAt?.rfc3339)
    object.set("lateness", lateness?.span)
    return object
  }

  // MARK: From the domain

  /// An event not yet taken.
  public init(pending event: TrialEvent, subject: String?) {
    self.init(id: event.id, subject: subject, state: .pending, due: event.due)
  }

  /// An event from the ledger: fired (delivered or not) or skipped.
  public init(_ entry: LedgerEntry, subject: String?) {
    let state: State
    var reason: SkipReason?
    switch entry.outcome {
    case .fired: state = entry.isDelivered ? .delivered : .fired
    case .skipped(let why):
      state = .skipped
      reason = why
    }
    self.init(
      id: entry.id, subject: subject, state: state, due: entry.event.due, reason: reason?.code,
      detail: reason?.description, takenAt: entry.takenAt,
      lateness: entry.isLate ? entry.lateness : nil)
  }

  /// An event as the planner takes it (for Watch and Simulate): fired or skipped.
  public init(_ due: DueEvent, subject: String?) {
    var reason: SkipReason?
    if case .skip(let why) = due.disposition { reason = why }
    self.init(
      id: due.event.id, subject: subject, state: reason == nil ? .fired : .skipped, due: due.event.due,
      reason: reason?.code, detail: reason?.description, takenAt: due.takenAt,
      lateness: due.isLate ? due.lateness : nil)
  }

  /// Every event of a trial, past and future, in due order: the ledger's entries over all
  /// revisions, then the current revision's events not in the ledger, pending while the
  /// trial is active and skipped (reason `trial-<state>`) once it has ended.
  public static func plan(of trial: Trial, ledger: [LedgerEntry]) -> [EventObject] {
    var events = ledger.map { EventObject($0, subject: trial.subject) }
    let taken = Set(ledger.map(\.id))
    for event in trial.events where !taken.contains(event.id) {
      if trial.isActive {
        events.append(EventObject(pending: event, subject: trial.subject))
      } else {
        events.append(
          EventObject(
            id: event.id, subject: trial.subject, state: .skipped, due: event.due,
            reason: "trial-\(trial.state.rawValue)",
            detail: "the trial was \(trial.state.rawValue) before it fell due",
            takenAt: trial.endedAt))
      }
    }
    return events.sorted { $0.due != $1.due ? $0.due < $1.due : $0.id < $1.id }
  }
}

/// Trials by state (`io.trialwatch.Trials.TrialCounts`).
public struct TrialCounts: JSONRepresentable, Hashable {
  public var active: Int
  public var expired: Int
  public var converted: Int
  public var cancelled: Int

  public init(active: Int = 0, expired: Int = 0, converted: Int = 0, cancelled: Int = 0) {
    self.active = active
    self.expired = expired
    self.converted = converted
    self.cancelled = cancelled
  }

  public subscript(state: TrialState) -> Int {
    get {
      switch state {
      case .active: active
      case .expired: expired
      case .converted: converted
      case .cancelled: cancelled
      }
    }
    set {
      switch state {
      case .active: active = newValue
      case .expired: expired = newValue
      case .converted: converted = newValue
      case .cancelled: cancelled = newValue
      }
    }
  }

  public var total: Int { active + expired + converted + cancelled }

  public init(json: JSONObject) throws(JSONShapeError) {
    let fields = JSONFields(json)
    self.init(
      active: try fields.int("active"), expired: try fields.int("expired"),
      converted: try fields.int("converted"),
      cancelled: try fields.int("cancelled"))
  }

  public var json: JSONObject {
    [
      "active": .int(Int64(active)), "expired": .int(Int64(expired)), "converted": .int(Int64(converted)),
      "cancelled": .int(Int64(cancelled)),
    ]
  }
}
