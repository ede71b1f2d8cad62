import FoundationEssentials
import Systemd
import TrialCore

/// The journal entry of each taken event (fired or skipped) and of a detected clock step.
/// Pure mapping: the dates printed are the ones given, no clock is read.
///
/// Every event entry carries `MESSAGE`, `MESSAGE_ID`, `PRIORITY`, `TRIAL_ID`,
/// `TRIAL_SUBJECT`, a `TRIAL_LABEL_<KEY>` field for each label of the trial (its key
/// upper-cased), `TRIAL_REVISION`, `TRIAL_END`, `EVENT_KIND`, `EVENT_ID`,
/// `DUE_REALTIME_USEC`, `LATENESS_USEC`, then `REMINDER_OFFSET_SEC` for reminders,
/// `TIME_LEFT_SEC` for pauses and resumes, `RESUME_REALTIME_USEC` for a pause that runs out,
/// `TRIAL_GRACE_END` (when its grace ends and it expires) for the events of a trial with a
/// grace, and `SKIP_REASON` for skipped events; `TRIAL_OUTCOME=cancelled` (an attribute of the
/// trial) on the expiry of a trial cancelled at its end. `systemd/trialwatch.catalog` explains
/// each `MESSAGE_ID`.
public enum EventJournalEntry {
  /// The fixed `MESSAGE_ID` of each kind of entry (128-bit ids, as `journalctl
  /// --new-id128` makes them).
  public enum MessageID: String, CaseIterable, Sendable {
    /// A reminder fired on time.
    case reminder = "e0431c29206b4f89b9db88d7e38907bc"
    /// A trial's expiry fired on time.
    case expired = "a16bdf9f2f29487d962a88689b1d20c8"
    /// The expiry of a trial cancelled at its end fired (on time or late): it is cancelled.
    case cancelledAtEnd = "52c47d0571004a5391abb44446eb0737"
    /// A reminder, the start of a grace or an expiry fired late: after downtime, suspend or a
    /// forward clock step.
    case firedLate = "194e6e2d7bac4fb7847f8c84893df546"
    /// An event that did not fire, by the catch-up policy or because it was already due.
    case skipped = "1f372a37269d4fa6a822448c5499a6bd"
    /// The wall clock jumped.
    case clockStep = "a5c14270596d41a0993951071697858f"
    /// A trial was paused.
    case paused = "a0b5b86a00fe43d790a37a03a2f947f8"
    /// A paused trial resumed: asked to, or its pause ran out.
    case resumed = "ac0a8c5469ff4fbea738cf5cfb2f368f"
    /// A trial reached its end and entered its plan's grace (`Grace=`), on time.
    case graceStarted = "80e9a228f2d94604aa96d487fac1ded2"
    /// A follow-up of a trial fired after its expiry (`FollowUps=`), on time or late.
    case followUp = "3b7d5c0e9a4f4e1b8c26d1f0a7e93c54"
    /// A milestone of a trial fired after its start (`Milestones=`), on time or late.
    case milestone = "5e2a9f7c1d6b4c8a9e03b7f4d2c61a8e"
    /// A webhook endpoint was disabled (logged by the engine: `WebhookDuty.disabledMessageID`).
    case webhookDisabled = "f75962a2895d4649bb6ea076b97e58b1"
    /// The store failed to write or sync, and the daemon stops (logged by the daemon:
    /// `StoreFailureEntry`).
    case storeFailed = "289e4c99d17648dc906fb204f9e7b610"
  }

  /// syslog priorities used by the entries.
  enum Priority: Int {
    case warning = 4
    case notice = 5
    case info = 6
  }

  /// The `MESSAGE_ID` of an event entry, of a trial whose attribute `outcome` is `outcome`.
  public static func messageID(for entry: LedgerEntry, outcome: String? = nil) -> MessageID {
    switch (entry.outcome, entry.event.kind) {
    case (.skipped, _): .skipped
    case (.fired, .expiry) where outcome == TrialState.cancelled.rawValue: .cancelledAtEnd
    case (.fired, .paused): .paused
    case (.fired, .resumed): .resumed
    case (.fired, .followUp): .followUp
    case (.fired, .milestone): .milestone
    case (.fired, _) where entry.isLate: .firedLate
    case (.fired, .expiry): .expired
    case (.fired, .graceStarted): .graceStarted
    case (.fired, _): .reminder
    }
  }

  /// The fields of the entry for one taken event, in the order they are sent: `attributes` as
  /// the event log holds them (its trial's when it was taken); `trial` as it is now, for the
  /// end and the pause of the event's revision when it is still the current one (nil: removed).
  public static func fields(for entry: LedgerEntry, attributes: TrialAttributes, trial: Trial?)
    -> [JournalField]
  {
    let event = entry.event
    // The trial as it is now speaks for the event only while the revision is the event's.
    // Read field by field: a copy of the trial costs more than the fields an entry takes.
    let isCurrent = trial?.id == event.trialID && trial?.revision == event.revision
    let end = (isCurrent ? trial?.period.endDate : nil) ?? event.trialEnd
    let resumes = isCurrent ? trial?.pause?.until : nil
    let graceEnd = isCurrent && trial?.entersGrace == true ? trial?.expiresAt : nil
    var fields = [
      JournalField(
        name: "MESSAGE",
        value: message(
          for: entry, subject: attributes.subject, resumes: resumes, end: end,
          outcome: attributes.outcome, graceEnd: graceEnd)),
      JournalField(name: "MESSAGE_ID", value: messageID(for: entry, outcome: attributes.outcome).rawValue),
      JournalField(name: "PRIORITY", value: String(priority(for: entry).rawValue)),
      JournalField(name: "TRIAL_ID", value: event.trialID.description),
    ]
    // TRIAL_SUBJECT, then each label as TRIAL_LABEL_<KEY> (the names: TrialAttributes).
    fields += attributes.variables.map { JournalField(name: $0.name, value: $0.value) }
    fields += [
      JournalField(name: "TRIAL_REVISION", value: String(event.revision)),
      JournalField(name: "TRIAL_END", value: RFC3339.format(end)),
      JournalField(name: "EVENT_KIND", value: event.kind.name),
      JournalField(name: "EVENT_ID", value: event.id.description),
      JournalField(name: "DUE_REALTIME_USEC", value: String(JournalTime.realtimeMicroseconds(event.due))),
      JournalField(name: "LATENESS_USEC", value: String(JournalTime.microseconds(entry.lateness))),
    ]
    if let offset = event.kind.reminderOffset {
      fields.append(
        JournalField(name: "REMINDER_OFFSET_SEC", value: JournalTime.seconds(offset)))
    }
    if let left = event.kind.timeLeft {
      fields.append(JournalField(name: "TIME_LEFT_SEC", value: JournalTime.seconds(left)))
    }
    if let graceEnd {
      fields.append(JournalField(name: "TRIAL_GRACE_END", value: RFC3339.format(graceEnd)))
    }
    if case .paused = event.kind, let until = resumes {
      fields.append(
        JournalField(name: "RESUME_REALTIME_USEC", value: String(JournalTime.realtimeMicroseconds(until))))
    }
    if case .skipped(let reason) = entry.outcome {
      fields.append(JournalField(name: "SKIP_REASON", value: reason.code))
    }
    return fields
  }

  /// The entry logged when the wall clock jumped from `from` (where it was expected to be)
  /// to `to` (where it is now). Forward steps are notices: what became due fires late.
  /// Backward steps are warnings: nothing fires again, and events wait for their due time.
  public static func clockStep(from: Date, to: Date) -> [JournalField] {
    let step = to.duration(since: from)
    let forward = step >= .zero
    let magnitude = forward ? step : .zero - step
    let size = TimeSpan.format(magnitude, style: .brief)
    let span = "from \(CivilTime(from).readable) to \(CivilTime(to).readable)"
    let message =
      forward
      ? "Wall clock stepped forward by \(size), \(span); events that became due fire now, late"
      : "Wall clock stepped back by \(size), \(span); events already fired do not fire again"
    return [
      JournalField(name: "MESSAGE", value: message),
      JournalField(name: "MESSAGE_ID", value: MessageID.clockStep.rawValue),
      JournalField(name: "PRIORITY", value: String((forward ? Priority.notice : .warning).rawValue)),
      JournalField(name: "CLOCK_STEP_DIRECTION", value: forward ? "forward" : "backward"),
      JournalField(name: "CLOCK_STEP_USEC", value: String(JournalTime.microseconds(magnitude))),
      JournalField(name: "CLOCK_FROM_REALTIME_USEC", value: String(JournalTime.realtimeMicroseconds(from))),
      JournalField(name: "CLOCK_TO_REALTIME_USEC", value: String(JournalTime.realtimeMicroseconds(to))),
    ]
  }

  // MARK: Parts

  static func priority(for entry: LedgerEntry) -> Priority {
    switch entry.outcome {
    case .skipped(.beyondGrace): .warning
    case .skipped: .notice
    case .fired: entry.event.kind.reminderOffset != nil ? .info : .notice
    }
  }

  private static func message(
    for entry: LedgerEntry, subject: String, resumes: Date?, end: Date, outcome: String?, graceEnd: Date?
  ) -> String {
    let event = entry.event
    let who = "Trial \(subject) (id \(event.trialID))"
    let endText = CivilTime(end).readable
    let late = entry.isLate ? ", fired \(TimeSpan.format(entry.lateness, style: .brief)) late" : ""
    switch (entry.outcome, event.kind) {
    case (.fired, .expiry) where outcome == TrialState.cancelled.rawValue:
      return "\(who) was cancelled at its end at \(endText)\(late)"
    case (.fired, .expiry):
      // A trial with a grace expires at its end plus the grace: when its expiry fell due.
      return "\(who) expired at \(graceEnd == nil ? endText : CivilTime(event.due).readable)\(late)"
    case (.fired, .graceStarted):
      let until = graceEnd.map { ", in grace until \(CivilTime($0).readable)" } ?? ", in grace"
      return "\(who) ended at \(endText)\(until)\(late)"
    case (.skipped(let reason), .graceStarted):
      return "\(who): start of grace skipped, \(reason); ends \(endText)"
    case (.fired, .reminder(let offset)):
      let remaining = end.duration(since: entry.takenAt)
      if remaining > .zero {
        return "\(who): \(TimeSpan.format(remaining, style: .timeLeft)) left, ends \(endText)\(late)"
      }
      return "\(who): reminder \(TimeSpan.format(offset)) before the end, "
        + "the trial already ended at \(endText)\(late)"
    case (.skipped(let reason), .expiry):
      return "\(who): expiry skipped, \(reason); ends \(endText)"
    case (.skipped(let reason), .reminder(let offset)):
      return "\(who): reminder \(TimeSpan.format(offset)) before the end skipped, \(reason); ends \(endText)"
    case (.fired, .followUp(let after)):
      return "\(who): follow-up \(TimeSpan.format(after)) after its end\(late)"
    case (.skipped(let reason), .followUp(let after)):
      return "\(who): follow-up \(TimeSpan.format(after)) after its end skipped, \(reason)"
    case (.fired, .milestone(let after)):
      return "\(who): milestone \(TimeSpan.format(after)) after its start\(late)"
    case (.skipped(let reason), .milestone(let after)):
      return "\(who): milestone \(TimeSpan.format(after)) after its start skipped, \(reason)"
    case (_, .paused(let left)):
      let itself = resumes.map { ", resumes by itself at \(CivilTime($0).readable)" } ?? ""
      return "\(who) paused with \(TimeSpan.format(left, style: .timeLeft)) left\(itself)"
    case (_, .resumed(let left)):
      let late =
        entry.isLate ? ", \(TimeSpan.format(entry.lateness, style: .brief)) after its pause ran out" : ""
      return "\(who) resumed with \(TimeSpan.format(left, style: .timeLeft)) left, ends \(endText)\(late)"
    }
  }
}
