import Foundation
import TrialCore

/// The reference the model-based test (`LifecycleModelTests`) holds the engine to: a plain
/// statement, written apart from the engine, of what becomes of a trial under each operation and
/// as time passes. For each trial it keeps what the ledger must hold (every event fired or skipped
/// with its reason, and when it was taken), the state and end the trial must have, and the steps
/// from which an event must no longer fire (its call-offs); for the stores, the cohort figures.
///
/// Its rules, from docs/lifecycle.md: an event is taken at its due time while the engine runs; a
/// wake after downtime or a forward clock step takes everything due at once, where a late reminder
/// that is not its trial's last event in the wake is superseded (`LateReminders=latest`, late: more
/// than a second); a reminder of a trial marked to cancel at its end is skipped unless the mark
/// keeps reminders; the end enters grace (`grace-started`) unless the trial is marked, and the
/// expiry ends it (cancelled at its end when marked, else expired when taken).
///
/// Follow-ups (`FollowUps=`): each is an event of the trial's last revision, due its span after the
/// expiry as planned (the end, plus the grace when the trial enters one: of a trial ended early,
/// the end it had, its grace counted unless it was marked to cancel at its end), taken once the
/// trial ended (expired, cancelled or converted) and in due order after its expiry. As it is
/// taken it fires, or is skipped as `called-off-by-conversion` when the trial was converted, or
/// as `called-off-by-new-trial` when the subject has started a later trial by then. One planned
/// before the trial ended early is taken at the engine's next wake. The `.all` call-off of an end
/// leaves follow-ups out; a conversion and a new trial of the subject call them off (`.followUps`).
/// Milestones (`Milestones=`) are not part of this version.
struct ModelTrial {
  /// What the ledger must hold of one event.
  struct Expected: Hashable, CustomStringConvertible {
    var outcome: LedgerEntry.Outcome
    var takenAt: Date
    var description: String { "\(outcome) at \(takenAt.timeIntervalSince1970)" }
  }

  /// From `from` (a step of the run) until `to` (nil: for ever), no event of `kinds` may fire.
  struct CallOff: Hashable {
    enum Kinds: Hashable {
      /// Everything: the trial ended.
      case all
      /// Reminders: the trial is marked to cancel at its end with `RemindAfterCancel=no`.
      case reminders
      /// Reminders, the start of grace and the expiry: the trial is paused.
      case paused
      /// Follow-ups: the trial was converted, or its subject started a later trial.
      case followUps
    }
    var kinds: Kinds
    var from: Int
    var to: Int?

    func covers(_ kind: EventKind, at step: Int) -> Bool {
      // A call-off starts after the step that makes it: an end's own wake may fire the events due
      // with it (the start of grace, then the expiry), and a command's step fires nothing else.
      guard step > from, to.map({ step < $0 }) ?? true else { return false }
      switch kinds {
      case .all: return kind.followUpSpan == nil
      case .followUps: return kind.followUpSpan != nil
      case .reminders: return kind.reminderOffset != nil
      case .paused: return !kind.isPauseOrResume
      }
    }
  }

  /// Why the model expects a command refused.
  enum Refusal: Hashable {
    case notActive, notPaused, notCancelling, invalid
    case extensionRefused(ExtensionRefusal.Limit)
  }

  let id: TrialID
  let subject: String
  let plan: TrialPlan
  let startedAt: Date
  var end: Date
  var revision: UInt32 = 1
  var state = TrialState.active
  var endedAt: Date?
  var pausedSince: Date?
  var mark: TrialCancelMark?
  var extensions = 0
  var ledger: [EventID: Expected] = [:]
  var callOffs: [CallOff] = []
  /// The subject started a later trial: the follow-ups falling due from then are called off.
  var laterTrial = false

  static let lateThreshold: TimeInterval = 1

  /// A trial of `plan` started at `now` (step `step`): reminders already due are skipped.
  init(id: TrialID, subject: String, plan: TrialPlan, now: Date) {
    self.id = id
    self.subject = subject
    self.plan = plan
    startedAt = now
    end = now.addingTimeInterval(Self.seconds(plan.length))
    skipRemindersDue(by: now, reason: .alreadyDueAtStart)
  }

  static func seconds(_ span: Duration) -> TimeInterval {
    Double(span.components.seconds) + Double(span.components.attoseconds) * 1e-18
  }

  var isOpen: Bool { state == .active || state == .paused || state == .grace }
  var isRunning: Bool { state == .active || state == .grace }
  var entersGrace: Bool { plan.grace > .zero && mark == nil }
  var isEnded: Bool { !isOpen }

  private func event(_ kind: EventKind, due: Date) -> TrialEvent {
    TrialEvent(id: EventID(trialID: id, revision: revision, kind: kind), due: due)
  }

  /// The current revision's events, in due order: its reminders, the start of its grace when it
  /// enters grace, its expiry, its follow-ups.
  var events: [TrialEvent] {
    var events = plan.reminders.offsets.map {
      event(.reminder(before: $0), due: end.addingTimeInterval(-Self.seconds($0)))
    }
    if entersGrace {
      events.append(event(.graceStarted, due: end))
      events.append(event(.expiry, due: end.addingTimeInterval(Self.seconds(plan.grace))))
    } else {
      events.append(event(.expiry, due: end))
    }
    let expiry = events.last!.due
    events += plan.followUps.spans.map {
      event(.followUp(after: $0), due: expiry.addingTimeInterval(Self.seconds($0)))
    }
    return events
  }

  /// Events still to be taken: those of the current revision not in the ledger, while it runs;
  /// an ended trial's follow-ups not in the ledger.
  var pending: [TrialEvent] {
    isRunning
      ? events.filter { ledger[$0.id] == nil }
      : isEnded ? events.filter { $0.kind.followUpSpan != nil && ledger[$0.id] == nil } : []
  }

  /// The next event to fall due, if any.
  var nextDue: Date? { pending.first?.due }

  private mutating func skipRemindersDue(by date: Date, reason: SkipReason, takenAt now: Date? = nil) {
    for event in events where event.kind.reminderOffset != nil && event.due <= date {
      ledger[event.id] = Expected(outcome: .skipped(reason), takenAt: now ?? date)
    }
  }

  private mutating func endCallOffs(at step: Int) {
    for index in callOffs.indices
    where callOffs[index].to == nil && callOffs[index].kinds != .all && callOffs[index].kinds != .followUps {
      callOffs[index].to = step
    }
  }

  // MARK: Time

  /// One wake of the engine at `now` (step `step`): takes every pending event due by then, in due
  /// order, as the catch-up policy and the mark say.
  mutating func wake(at now: Date, step: Int) {
    let due = pending.filter { $0.due <= now }
    guard let last = due.last else { return }
    for event in due {
      let late = now.timeIntervalSince(event.due) > Self.lateThreshold
      let outcome: LedgerEntry.Outcome
      if event.kind.reminderOffset != nil, late, event.id != last.id {
        outcome = .skipped(
          last.kind.reminderOffset == nil ? .supersededByExpiry : .supersededByReminder(last.id))
      } else if event.kind.reminderOffset != nil, let mark, !mark.remindAfterCancel {
        outcome = .skipped(.cancelAtEnd)
      } else if event.kind.followUpSpan != nil, state == .converted {
        outcome = .skipped(.calledOffByConversion)
      } else if event.kind.followUpSpan != nil, laterTrial {
        outcome = .skipped(.calledOffByNewTrial)
      } else {
        outcome = .fired
      }
      ledger[event.id] = Expected(outcome: outcome, takenAt: now)
      switch event.kind {
      case .graceStarted: state = .grace
      case .expiry:
        (state, endedAt) = mark == nil ? (.expired, now) : (.cancelled, end)
        ended(at: step)
      default: break
      }
    }
  }

  /// Time runs from `now` to `target` with the engine up: each event is taken at its due time;
  /// one already due (a follow-up of a trial ended early) at the engine's first wake, `now`.
  mutating func advance(from now: Date, to target: Date, step: Int) {
    while let due = nextDue, due <= target { wake(at: max(due, now), step: step) }
  }

  private mutating func ended(at step: Int) {
    endCallOffs(at: step)
    callOffs.append(CallOff(kinds: .all, from: step))
    if state == .converted { callOffFollowUps(at: step) }
  }

  /// A conversion, or a later trial of the subject started at `step`: no follow-up fires after.
  mutating func callOffFollowUps(at step: Int) {
    guard !callOffs.contains(where: { $0.kinds == .followUps }) else { return }
    callOffs.append(CallOff(kinds: .followUps, from: step))
  }

  // MARK: Commands

  /// `ExtendTrial(by:)` at `now`.
  mutating func extend(by span: Duration, now: Date) -> Refusal? {
    extend(to: end.addingTimeInterval(Self.seconds(span)), now: now)
  }

  /// `ExtendTrial(to:)` at `now`: a move later counts as an extension, one earlier does not.
  mutating func extend(to newEnd: Date, now: Date) -> Refusal? {
    guard isRunning else { return .notActive }
    guard newEnd > now, newEnd > startedAt else { return .invalid }
    if newEnd > end, let max = plan.maxExtensions, extensions >= max {
      return .extensionRefused(.maxExtensions)
    }
    if newEnd > end { extensions += 1 }
    revision += 1
    end = newEnd
    state = .active
    skipRemindersDue(by: now, reason: .alreadyDueAtExtension)
    return nil
  }

  /// `EndTrial` (converted or cancelled) or `CancelTrial(atEnd: false)` at `now`.
  mutating func end(_ outcome: TrialOutcome, now: Date, step: Int) -> Refusal? {
    guard isOpen else { return .notActive }
    state = outcome.state
    endedAt = now
    mark = nil
    ended(at: step)
    return nil
  }

  mutating func pause(now: Date, step: Int) -> Refusal? {
    guard state == .active else { return .notActive }
    let left = Duration.milliseconds(Int64((end.timeIntervalSince(now) * 1000).rounded()))
    guard left >= .milliseconds(1) else { return .invalid }
    ledger[EventID(trialID: id, revision: revision, kind: .paused(left: left))] = Expected(
      outcome: .fired, takenAt: now)
    state = .paused
    pausedSince = now
    callOffs.append(CallOff(kinds: .paused, from: step))
    return nil
  }

  mutating func resume(now: Date, step: Int) -> Refusal? {
    guard state == .paused, let since = pausedSince else { return .notPaused }
    let left = Duration.milliseconds(Int64((end.timeIntervalSince(since) * 1000).rounded()))
    ledger[EventID(trialID: id, revision: revision, kind: .resumed(left: left))] = Expected(
      outcome: .fired, takenAt: now)
    state = .active
    pausedSince = nil
    revision += 1
    // With the wall clock stepped back before the pause, the trial resumes as of its pause.
    let at = max(now, since)
    end = at.addingTimeInterval(Self.seconds(left))
    for index in callOffs.indices where callOffs[index].kinds == .paused && callOffs[index].to == nil {
      callOffs[index].to = step
    }
    skipRemindersDue(by: at, reason: .alreadyDueAtResume, takenAt: now)
    return nil
  }

  mutating func cancelAtEnd(now: Date, step: Int) -> Refusal? {
    guard isOpen, state != .grace else { return .notActive }
    if mark == nil {
      mark = TrialCancelMark(askedAt: now, remindAfterCancel: plan.remindAfterCancel)
      if !plan.remindAfterCancel { callOffs.append(CallOff(kinds: .reminders, from: step)) }
    }
    return nil
  }

  mutating func uncancel(step: Int) -> Refusal? {
    guard isOpen else { return .notActive }
    guard mark != nil else { return .notCancelling }
    mark = nil
    for index in callOffs.indices where callOffs[index].kinds == .reminders && callOffs[index].to == nil {
      callOffs[index].to = step
    }
    return nil
  }

  // MARK: Checks

  /// What is wrong with `trial` as the engine or a store has it; nil when it is as the model says.
  func mismatch(_ trial: Trial) -> String? {
    var wrong: [String] = []
    if trial.state != state { wrong.append("state \(trial.state), expected \(state)") }
    if trial.revision != revision { wrong.append("revision \(trial.revision), expected \(revision)") }
    if trial.period.endDate != end { wrong.append("end \(trial.period.endDate), expected \(end)") }
    if trial.endedAt != endedAt {
      wrong.append("ended at \(String(describing: trial.endedAt)), expected \(String(describing: endedAt))")
    }
    if trial.extensions != extensions {
      wrong.append("extensions \(trial.extensions), expected \(extensions)")
    }
    if trial.cancelMark != mark {
      wrong.append("mark \(String(describing: trial.cancelMark)), expected \(String(describing: mark))")
    }
    return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
  }

  /// What is wrong with the trial's ledger entries, one line each.
  func ledgerMismatches(_ entries: [LedgerEntry]) -> [String] {
    var wrong: [String] = []
    var seen = Set<EventID>()
    for entry in entries {
      guard seen.insert(entry.id).inserted else {
        wrong.append("\(entry.id) in the ledger twice")
        continue
      }
      let actual = Expected(outcome: entry.outcome, takenAt: entry.takenAt)
      guard let expected = ledger[entry.id] else {
        wrong.append("\(entry.id): \(actual), expected none")
        continue
      }
      if actual != expected { wrong.append("\(entry.id): \(actual), expected \(expected)") }
    }
    for (id, expected) in ledger where !seen.contains(id) {
      wrong.append("\(id): none, expected \(expected)")
    }
    return wrong.sorted()
  }

  /// The call-off an event fired at `step` breaks, if any.
  func calledOff(_ kind: EventKind, firedAt step: Int) -> CallOff? {
    callOffs.first { $0.covers(kind, at: step) }
  }

  /// What the trial counts for in its cohort.
  var cohortCounts: CohortCounts {
    var counts = CohortCounts(started: 1)
    switch state {
    case .active, .grace: break
    case .paused: counts.paused = 1
    case .expired: counts.expired = 1
    case .cancelled: counts.cancelled = 1
    case .converted: counts.converted = 1
    }
    return counts
  }

  var cohort: CohortKey {
    CohortKey(day: Int32((startedAt.timeIntervalSince1970 / 86_400).rounded(.down)), plan: plan.name)
  }
}

/// The plans trials of the model-based test start with: plain, with reminders, with a grace, with
/// `RemindAfterCancel=yes`, with `MaxExtensions=`, a short one whose first reminder is due before it
/// starts, one with `FollowUps=2h, 30h` and one with a grace and `FollowUps=1h, 26h, 72h`. Spans are whole hours, so that lateness is either none or an hour and more.
enum ModelPlans {
  static func reminders(_ hours: [Int64]) -> ReminderSchedule {
    try! ReminderSchedule(hours.map { .seconds($0 * 3_600) })
  }

  static let all: [TrialPlan] = [
    TrialPlan(name: "plain", length: .days(7), reminders: .none),
    TrialPlan(name: "reminding", length: .days(10), reminders: reminders([96, 72, 48, 24, 6])),
    TrialPlan(name: "grace", length: .days(5), reminders: reminders([48]), grace: .days(3)),
    TrialPlan(name: "remindful", length: .days(6), reminders: reminders([96, 24]), remindAfterCancel: true),
    TrialPlan(name: "capped", length: .days(4), reminders: reminders([24]), maxExtensions: 2),
    TrialPlan(
      name: "short", length: .hours(20), reminders: reminders([24, 2]), maxExtensions: 1,
      remindAfterCancel: true, grace: .hours(12)),
    following(TrialPlan(name: "winback", length: .days(3), reminders: reminders([24])), [2, 30]),
    following(
      TrialPlan(
        name: "graceful", length: .days(2), reminders: reminders([6]), maxExtensions: 3, grace: .hours(18)),
      [1, 26, 72]),
  ]

  /// `plan` with `FollowUps=` of `hours`.
  static func following(_ plan: TrialPlan, _ hours: [Int64]) -> TrialPlan {
    var plan = plan
    plan.followUps = try! FollowUpSchedule(hours.map { .seconds($0 * 3_600) })
    return plan
  }

  static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
