import FoundationEssentials
import TrialControl
import TrialCore

// MARK: View models: ready-to-print strings, nothing left to format

/// A table: column headings and rows of cells.
public struct TableViewModel: Hashable, Sendable {
  public var columns: [String]
  public var rows: [[String]]

  public init(columns: [String], rows: [[String]]) {
    self.columns = columns
    self.rows = rows
  }
}

/// One trial in detail.
public struct TrialViewModel: Hashable, Sendable {
  /// `acme-42: 3 days left (ends Jun 18, 2025 at 3:06 PM)`
  public var headline: String
  public var id: String
  public var subject: String
  public var state: String
  /// `3 days left`, `1 day left`, `ends today`, `expired 2 days ago`, `converted today`.
  public var timeLeft: String
  /// Label and value, in order: ID, State, Started, Ends, Ended, Reminders, Revision, Plan, Labels.
  public var details: [LabeledValue]

  public init(
    headline: String, id: String, subject: String, state: String, timeLeft: String, details: [LabeledValue]
  ) {
    self.headline = headline
    self.id = id
    self.subject = subject
    self.state = state
    self.timeLeft = timeLeft
    self.details = details
  }
}

public struct LabeledValue: Hashable, Sendable {
  public var label: String
  public var value: String

  public init(label: String, value: String) {
    self.label = label
    self.value = value
  }
}

/// A table and what goes with it: a title above it, the message shown instead when it has no
/// rows, how to get the next page. Trials, events, consumers, plans, cohorts, a fleet's nodes.
public struct ListViewModel: Hashable, Sendable {
  /// Above the table: `Events of trial 00000000000004d2:`.
  public var title: String?
  public var table: TableViewModel
  /// Shown instead of the table when it has no rows; nil: the headings alone.
  public var emptyMessage: String?
  /// How to get the next page, when there is one (on standard error).
  public var continuation: String?

  public init(
    title: String? = nil, table: TableViewModel, emptyMessage: String? = nil, continuation: String? = nil
  ) {
    self.title = title
    self.table = table
    self.emptyMessage = emptyMessage
    self.continuation = continuation
  }
}

/// One event as a watcher prints it.
public struct EventLineViewModel: Hashable, Sendable {
  public var line: String

  public init(line: String) {
    self.line = line
  }
}

/// A headline and labelled values: the daemon's status, the event log, one consumer.
public struct DetailsViewModel: Hashable, Sendable {
  public var headline: String
  public var details: [LabeledValue]

  public init(headline: String, details: [LabeledValue]) {
    self.headline = headline
    self.details = details
  }
}

/// Where the presenter sends its view models: the terminal view, or a spy in tests.
public protocol TrialPresenterOutput: AnyObject {
  func showTrial(_ viewModel: TrialViewModel)
  func showEventLine(_ viewModel: EventLineViewModel)
  /// The daemon's status, the event log, or one consumer: a headline and labelled values.
  func showDetails(_ viewModel: DetailsViewModel)
  /// Trials, events, consumers, plans, cohorts or a fleet's nodes: a table.
  func showList(_ viewModel: ListViewModel)
  /// A line of output that says what a command did, such as "Removed consumer mailer."
  func showMessage(_ text: String)
  /// A short notice for the reader (on standard error), such as "watching for events".
  func showNotice(_ text: String)
}

/// Turns trials, events and daemon status into view models: days left rounded up, dates in
/// the reader's time zone and locale, state words. The one place display formatting lives.
public final class TrialPresenter {
  let output: any TrialPresenterOutput
  let clock: any WallClock
  private let timeZone: ReaderTimeZone
  private let locale: ReaderLocale

  public init(
    output: any TrialPresenterOutput, clock: any WallClock, timeZone: ReaderTimeZone, locale: ReaderLocale
  ) {
    self.output = output
    self.clock = clock
    self.timeZone = timeZone
    self.locale = locale
  }

  // MARK: Presenting

  private static let variantRow = TrialAttributes.row("variant")!

  public func present(trial: TrialObject) {
    output.showTrial(viewModel(for: trial))
  }

  public func present(trials: [TrialObject], next: TrialID?) {
    // A column of the variant only when a trial listed has one (a plan with [Variant] sections).
    let variants = trials.contains { $0.named[Self.variantRow] != nil }
    let rows = trials.map { trial in
      [trial.id.description, trial.subject, stateText(trial), date(trial.endsAt), timeLeft(trial)]
        + (variants ? [trial.named[Self.variantRow] ?? "-"] : [])
    }
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["ID", "SUBJECT", "STATE", "ENDS", "LEFT"] + (variants ? ["VARIANT"] : []), rows: rows),
        emptyMessage: "No trials.",
        continuation: next.map { "More trials follow: trialwatchctl list --after \($0) (or --all)" }))
  }

  public func present(plan events: [EventObject], of id: TrialID) {
    let rows = events.map { event in
      [date(event.due), eventName(event), eventState(event), eventNote(event)]
    }
    output.showList(
      ListViewModel(
        title: "Events of trial \(id):",
        table: TableViewModel(columns: ["DUE", "EVENT", "STATE", "NOTE"], rows: rows),
        emptyMessage: "The trial has no events."))
  }

  public func present(simulation events: [EventObject], until end: Date) {
    let rows = events.map { event in
      [
        date(event.takenAt ?? event.due), event.subject ?? event.trialId.description, eventName(event),
        event.state == .skipped ? "would be skipped: \(reasonText(event))" : "would fire" + lateText(event),
      ]
    }
    let count = events.count == 1 ? "1 event" : "\(events.count) events"
    output.showList(
      ListViewModel(
        title: "Between now and \(date(end)): \(count).",
        table: TableViewModel(columns: ["WHEN", "SUBJECT", "EVENT", "OUTCOME"], rows: rows),
        emptyMessage: "Nothing would fire."))
  }

  /// One line per event; with its cursor first when it has one (events of the log do).
  public func present(watchedEvent event: EventObject) {
    let subject = event.subject ?? event.trialId.description
    var line = "\(date(event.takenAt ?? event.due))  \(subject)  \(eventName(event))  \(eventState(event))"
    if let cursor = event.cursor { line = "\(cursor)  " + line }
    if event.state == .skipped {
      line += " (\(reasonText(event)))"
    } else {
      line += lateText(event)
    }
    output.showEventLine(EventLineViewModel(line: line))
  }

  public func presentWatchStarted() {
    output.showNotice("Watching for events; press Ctrl-C to stop.")
  }

  /// The daemon's status; with `outlook`, the trials due within its spans (`Due`).
  public func present(status: GetStatusReply, outlook: [DueWithin]? = nil) {
    let now = clock.now()
    let counts = status.trials
    var details = [
      LabeledValue(label: "Version", value: status.version),
      LabeledValue(
        label: "Started",
        value: "\(date(status.startedAt)) (up \(brief(status.uptime.duration)))"),
      LabeledValue(
        label: "Trials",
        value: "\(counts.active) active, "
          + (counts.paused.map { $0 > 0 ? "\($0) paused, " : "" } ?? "")
          + (counts.grace.map { $0 > 0 ? "\($0) in grace, " : "" } ?? "")
          + "\(counts.expired) expired, \(counts.converted) converted, \(counts.cancelled) cancelled"),
      LabeledValue(label: "Pending events", value: "\(status.pendingEvents)"),
    ]
    if let next = status.nextEvent {
      let subject = next.subject ?? next.trialId.description
      details.append(
        LabeledValue(
          label: "Next event",
          value: "\(subject) \(eventName(next)) \(relative(next.due, now: now)) (\(date(next.due)))"))
    } else {
      details.append(LabeledValue(label: "Next event", value: "none"))
    }
    if let outlook, let first = outlook.first {
      let windows =
        ["\(first.trials) trial\(first.trials == 1 ? "" : "s") within \(first.within)"]
        + outlook.dropFirst().map { "\($0.trials) within \($0.within)" }
      details.append(LabeledValue(label: "Due", value: windows.joined(separator: ", ")))
    }
    if let bytes = status.storeBytes {
      details.append(LabeledValue(label: "Store", value: byteCount(bytes)))
    }
    details.append(LabeledValue(label: "Connections", value: "\(status.connections)"))
    details.append(LabeledValue(label: "Watchers", value: "\(status.watchers)"))
    if let held = status.held {
      details.append(
        LabeledValue(
          label: "Held back", value: "\(held.events) event\(held.events == 1 ? "" : "s") (\(held.reason))"))
    }
    if let fault = status.storeFault {
      let reason = StoreFaultReason(rawValue: fault.reason)?.summary ?? fault.reason
      details.append(
        LabeledValue(
          label: "Writes refused",
          value: "\(reason) since \(date(fault.since)) (\(fault.refusedWrites) refused): \(fault.message)"))
    }
    if let fleet = status.fleet { details += fleetDetails(fleet) }
    let trials = counts.active == 1 ? "1 active trial" : "\(counts.active) active trials"
    output.showDetails(
      DetailsViewModel(headline: "trialwatchd \(status.version): \(trials)", details: details))
  }

  // MARK: Building view models

  public func viewModel(for trial: TrialObject) -> TrialViewModel {
    let left = timeLeft(trial)
    let headline: String
    switch trial.state {
    case .active: headline = "\(trial.subject): \(left) (ends \(date(trial.endsAt)))"
    default: headline = "\(trial.subject): \(left)"
    }
    var details = [
      LabeledValue(label: "ID", value: trial.id.description),
      LabeledValue(label: "State", value: stateText(trial)),
      LabeledValue(label: "Started", value: date(trial.startedAt)),
      LabeledValue(label: "Ends", value: date(trial.endsAt)),
    ]
    if let endedAt = trial.endedAt {
      details.append(LabeledValue(label: "Ended", value: date(endedAt)))
    }
    if let pausedAt = trial.pausedAt {
      details.append(LabeledValue(label: "Paused", value: date(pausedAt)))
    }
    if let resumesAt = trial.resumesAt {
      details.append(LabeledValue(label: "Resumes", value: "\(date(resumesAt)) (MaxPause=)"))
    }
    if let cancelsAt = trial.cancelsAt, !trial.state.isEnded {
      let asked = trial.cancelAskedAt.map { " (asked \(date($0)))" } ?? ""
      details.append(LabeledValue(label: "Cancels at", value: "\(date(cancelsAt))\(asked)"))
    }
    if let grace = trial.grace, let graceEndsAt = trial.graceEndsAt {
      details.append(LabeledValue(label: "Grace", value: "\(grace), until \(date(graceEndsAt))"))
    }
    details.append(LabeledValue(label: "Reminders", value: reminders(trial.reminders.map(\.duration))))
    details.append(LabeledValue(label: "Revision", value: "\(trial.revision)"))
    if trial.extensions > 0 {
      // As wide as the widest label (Reminders), so that the others stay where they were.
      let times = trial.extensions == 1 ? "1 time" : "\(trial.extensions) times"
      details.append(LabeledValue(label: "Extended", value: times))
    }
    // Each named attribute beside the subject (`plan`, …), under its name capitalised.
    for row in TrialAttributes.besideSubject {
      guard let value = trial.named[row] else { continue }
      details.append(
        LabeledValue(label: row.name.prefix(1).uppercased() + row.name.dropFirst(), value: value))
    }
    if let labels = trial.labels, !labels.isEmpty {
      details.append(LabeledValue(label: "Labels", value: self.labels(labels)))
    }
    return TrialViewModel(
      headline: headline, id: trial.id.description, subject: trial.subject, state: stateText(trial),
      timeLeft: left, details: details)
  }

  /// The days left, rounded up; on the end's own calendar day, `ends today`; once ended, how many
  /// calendar days ago.
  public func timeLeft(_ trial: TrialObject) -> String {
    let now = clock.now()
    switch trial.state {
    case .active:
      let remaining = trial.endsAt.timeIntervalSince(now)
      if remaining <= 0 { return "expiring now" }
      if timeZone.dayNumber(trial.endsAt) == timeZone.dayNumber(now) { return "ends today" }
      let days = Days(timeInterval: remaining).userFacingAmount
      return days == 1 ? "1 day left" : "\(days) days left"
    case .paused:
      let days = Days(timeInterval: trial.timeLeft?.duration.timeInterval ?? 0).userFacingAmount
      return "paused, " + (days == 1 ? "1 day left" : "\(days) days left")
    case .grace:
      let until = trial.graceEndsAt ?? trial.endsAt
      if timeZone.dayNumber(until) == timeZone.dayNumber(now) { return "in grace, expires today" }
      let days = Days(timeInterval: max(0, until.timeIntervalSince(now))).userFacingAmount
      return "in grace, " + (days == 1 ? "1 day left" : "\(days) days left")
    case .expired:
      return "expired \(daysAgo(trial.graceEndsAt ?? trial.endsAt, now: now))"
    case .converted, .cancelled:
      return "\(stateWord(trial.state)) \(daysAgo(trial.endedAt ?? trial.endsAt, now: now))"
    }
  }

  /// Calendar days between the day of `date` and today, in the reader's zone.
  private func daysAgo(_ date: Date, now: Date) -> String {
    let days = timeZone.dayNumber(now) - timeZone.dayNumber(date)
    switch days {
    case ..<1: return "today"
    case 1: return "1 day ago"
    default: return "\(days) days ago"
    }
  }

  /// The state word, with `, cancels at end` for an open trial cancelled at its end.
  public func stateText(_ trial: TrialObject) -> String {
    trial.cancelsAt != nil && !trial.state.isEnded
      ? "\(stateWord(trial.state)), cancels at end" : stateWord(trial.state)
  }

  public func stateWord(_ state: TrialState) -> String {
    switch state {
    case .active: "active"
    case .paused: "paused"
    case .grace: "in grace"
    case .expired: "expired"
    case .converted: "converted"
    case .cancelled: "cancelled"
    }
  }

  /// `Jun 18, 2025 at 3:06 PM`: the medium date and short time in the reader's zone and locale.
  public func date(_ date: Date) -> String {
    locale.string(timeZone.localTime(date))
  }

  /// Uptime, lateness and time to go: `2h 13min` (`TimeSpan.Style.brief`).
  func brief(_ span: Duration) -> String {
    TimeSpan.format(span, style: .brief)
  }

  func relative(_ date: Date, now: Date) -> String {
    let span = date.duration(since: now)
    return span >= .zero ? "in \(brief(span))" : "overdue by \(brief(.zero - span))"
  }

  /// `key=value` pairs by key, separated by commas.
  func labels(_ labels: [String: String]) -> String {
    labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
  }

  func reminders(_ offsets: [Duration]) -> String {
    offsets.isEmpty ? "none" : offsets.map(TimeSpan.format).joined(separator: ", ") + " before the end"
  }

  private func eventName(_ event: EventObject) -> String {
    switch event.kind {
    case .expiry: "expiry"
    case .graceStarted: "grace starts"
    case .reminder: "reminder \(event.offset?.description ?? "?") before the end"
    case .paused: "paused with \(event.left?.description ?? "?") left"
    case .resumed: "resumes with \(event.left?.description ?? "?") left"
    case .followUp: "follow-up \(event.after?.description ?? "?") after the end"
    case .milestone: "milestone \(event.after?.description ?? "?") after the start"
    }
  }

  private func eventState(_ event: EventObject) -> String {
    switch event.state {
    case .pending: "pending"
    case .fired: "fired"
    case .delivered: "delivered"
    case .skipped: "skipped"
    }
  }

  private func eventNote(_ event: EventObject) -> String {
    switch event.state {
    case .pending: ""
    case .skipped: reasonText(event)
    case .fired, .delivered:
      event.lateness.map { "late by \(brief($0.duration))" } ?? ""
    }
  }

  private func lateText(_ event: EventObject) -> String {
    event.lateness.map { ", late by \(brief($0.duration))" } ?? ""
  }

  private func reasonText(_ event: EventObject) -> String {
    event.detail ?? event.reason ?? "no reason given"
  }

  func byteCount(_ bytes: Int) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return unit == 0 ? "\(bytes) bytes" : decimal(value, digits: 1) + " " + units[unit]
  }
}
