import FoundationEssentials

/// The operations on trials, written once over any `TrialRepository`: `TrialBook` holds them, for
/// use inside a caller's transaction (the engine's are its commit lane's); the restore and the
/// outbox read a store whole. Each operation in a transaction of its own is for tests and
/// benchmarks (`TrialTesting`).
extension TrialRepository {
  /// Entries taken but never delivered (the process stopped in between), in id order.
  public func outbox() throws -> [LedgerEntry] {
    try read { txn in try collected { try txn.scanOutbox($0) } }
  }

  /// Rebuilds a planner from the store: every active trial's events from the first one not
  /// in the ledger on. `progress` is called every 100,000 trials read.
  @discardableResult
  public func restore(into planner: inout Planner, progress: (Int) -> Void = { _ in }) throws
    -> RestoreSummary
  {
    try restore(into: &planner, progressEvery: 100_000, progress: progress)
  }

  /// The default `restore(into:progressEvery:progress:)`: `restoreByScanning`.
  @discardableResult
  public func restore(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void) throws
    -> RestoreSummary
  {
    try restoreByScanning(into: &planner, progressEvery: progressEvery, progress: progress)
  }

  /// Restores through the transaction primitives alone: a scan of the trials and, for each
  /// active one, a read of its ledger entries.
  @discardableResult
  public func restoreByScanning(into planner: inout Planner, progressEvery: Int, progress: (Int) -> Void)
    throws -> RestoreSummary
  {
    try read { txn in
      var summary = RestoreSummary()
      try txn.scanTrials(after: nil) { trial in
        summary.trials += 1
        summary.byState[trial.state, default: 0] += 1
        if summary.trials % progressEvery == 0 { progress(summary.trials) }
        guard trial.isOpen || trial.hasFollowUps else { return true }
        planner.restore(trial, ledger: try txn.ledgerEntries(trial: trial.id))
        return true
      }
      return summary
    }
  }
}

/// What `restore(into:)` read from the store.
public struct RestoreSummary: Hashable, Sendable {
  public var trials = 0
  public var byState: [TrialState: Int] = [:]

  public init() {}
}

/// An event `TrialBook.take` recorded: as the event log holds it, and its trial as the
/// transaction left it (expired, for an expiry).
public struct TakenEvent: Hashable, Sendable {
  public var logged: LoggedEvent
  public var trial: Trial

  public init(logged: LoggedEvent, trial: Trial) {
    self.logged = logged
    self.trial = trial
  }
}

/// The operations themselves, each inside a transaction the caller provides.
public enum TrialBook {
  /// How many ids are tried before giving up; with random 64-bit ids a second try is
  /// already astronomically rare.
  public static let idAttempts = 64

  /// Starts a trial: validates, refuses a subject that already has an active trial, takes
  /// ids from `ids` until one is unused, and records reminders already due as skipped
  /// (`logged`: as the event log holds them).
  public static func startTrial(
    in txn: any TrialWriteTransaction, subject: String, labels: TrialLabels = .none, endDate: Date,
    reminders: ReminderSchedule, now: Date, ids: any TrialIDGenerator
  ) throws -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent]) {
    try startTrial(
      in: txn, attributes: TrialAttributes(subject: subject, labels: labels), endDate: endDate,
      reminders: reminders, now: now, ids: ids)
  }

  /// The same for a trial with these attributes. With `once` (its plan grants a subject the
  /// trial once), a subject recorded there already is refused, and the trial is recorded. With
  /// `onceFor` too (`OnceFor=`), a subject whose last trial there started that long ago or
  /// longer is let start again: the record keeps its first start and takes this one as its last.
  /// The trial keeps `grace` and `followUps` (its plan's) as it starts.
  public static func startTrial(
    in txn: any TrialWriteTransaction, attributes: TrialAttributes, endDate: Date,
    reminders: ReminderSchedule, grace: Duration = .zero, followUps: FollowUpSchedule = .none,
    milestones: MilestoneSchedule = .none, now: Date, ids: any TrialIDGenerator,
    once: (scope: SubjectUse.Scope, key: String)? = nil,
    onceFor: Duration? = nil
  ) throws -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent]) {
    let subject = attributes.subject
    if let problem = Trial.validateSubject(subject) { throw TrialError.invalid(.subject, problem) }
    guard endDate > now else {
      throw TrialError.invalid(.end, "the end must lie in the future")
    }
    if let existing = try txn.activeTrialID(subject: subject) {
      throw TrialError(.subjectAlreadyActive(subject: subject, existing: existing))
    }
    var renewed: SubjectUse?
    if let once, let use = try txn.subjectUse(scope: once.scope, key: once.key) {
      let availableAt = use.availableAt(onceFor: onceFor)
      guard let availableAt, now >= availableAt else {
        throw TrialError(.trialAlreadyUsed(use, availableAt: availableAt))
      }
      renewed = use
    }
    var id: TrialID?
    for _ in 0..<idAttempts {
      let candidate = ids.nextID()
      if try txn.trial(candidate) == nil {
        id = candidate
        break
      }
    }
    guard let id else { throw TrialError(.idSpaceExhausted(attempts: idAttempts)) }
    let trial = Trial(
      id: id, attributes: attributes, period: TrialPeriod(startDate: now, endDate: endDate),
      reminders: reminders, grace: .milliseconds(grace.roundedMilliseconds), followUps: followUps,
      milestones: milestones)
    try write(trial, was: nil, in: txn)
    if var renewed {
      renewed.lastStartedAt = now
      renewed.lastTrial = id
      try txn.putSubjectUse(renewed)
    } else if let once {
      try txn.putSubjectUse(
        SubjectUse(
          scope: once.scope, key: once.key, subject: subject, plan: attributes.plan ?? "",
          firstStartedAt: now,
          trial: id))
    }
    let skipped = skippedReminders(of: trial, now: now, reason: .alreadyDueAtStart)
    return (trial, skipped, try recordSkipped(skipped, of: trial, in: txn, now: now))
  }

  /// Moves an active trial's end, starting a new revision, and makes the label changes given
  /// (a nil value removes the label); reminders of the new revision already due are recorded
  /// as skipped (`logged`: as the event log holds them). A move later is an extension: it
  /// counts one (`Trial.extensions`), and one beyond `limits` (its plan's) is refused with
  /// nothing changed, its labels not applied either. A trial in grace is active again, to its
  /// new end (which, as always, must lie in the future).
  public static func extendTrial(
    in txn: any TrialWriteTransaction, _ id: TrialID, to endDate: Date, labels: [String: String?] = [:],
    now: Date, limits: ExtensionLimits = .none
  ) throws -> (trial: Trial, skipped: [DueEvent], logged: [LoggedEvent]) {
    guard var trial = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    guard trial.isRunning else { throw TrialError(.notActive(id, trial.state)) }
    guard endDate > now else { throw TrialError.invalid(.end, "the new end must lie in the future") }
    // Only a wall clock stepped back before the start lets a new end in the future lie before it.
    guard endDate > trial.period.startDate else {
      throw TrialError.invalid(
        .end, "the new end must lie after the trial's start (\(RFC3339.format(trial.period.startDate)))")
    }
    if let refusal = limits.refusal(of: trial, to: endDate, plan: trial.plan ?? "") {
      throw TrialError(.extensionRefused(refusal))
    }
    let before = trial
    trial.labels = try changedLabels(trial.labels, labels)
    if endDate > trial.period.endDate { trial.extensions += 1 }
    trial.reschedule(endDate: endDate)
    if trial.state == .grace {
      trial.state = .active
      try write(trial, was: before, in: txn)
    } else {
      try txn.putTrial(trial)
    }
    let skipped =
      skippedReminders(of: trial, now: now, reason: .alreadyDueAtExtension)
      + skippedMilestones(of: trial, now: now, reason: .alreadyDueAtExtension)
    return (trial, skipped, try recordSkipped(skipped, of: trial, in: txn, now: now))
  }

  /// Ends an open trial (active, paused or in grace) early, converted or cancelled, with the
  /// label changes given (a paused trial keeps its pause, which tells it ended paused; a mark to
  /// cancel it at its end is dropped: it ended before).
  public static func endTrial(
    in txn: any TrialWriteTransaction, _ id: TrialID, outcome: TrialOutcome, labels: [String: String?] = [:],
    now: Date
  ) throws -> Trial {
    try ending(in: txn, id, outcome: outcome, labels: labels, now: now).trial
  }

  /// The same, with the milestones it skipped as logged.
  static func ending(
    in txn: any TrialWriteTransaction, _ id: TrialID, outcome: TrialOutcome, labels: [String: String?],
    now: Date
  ) throws -> (trial: Trial, logged: [LoggedEvent]) {
    guard let before = try txn.trial(id) else { throw TrialError.notFound(id: id) }
    guard before.isOpen else { throw TrialError(.notActive(id, before.state)) }
    var trial = before
    trial.labels = try changedLabels(trial.labels, labels)
    trial.state = outcome.state
    trial.endedAt = now
    trial.cancelMark = nil
    // Its milestones that have not come are skipped: none fires after the end.
    let skipped = try pendingMilestones(of: before, in: txn, now: now, reason: .trialEnded)
    trial = trial.cutting(skipped)
    try write(trial, was: before, in: txn)
    return (trial, try recordSkipped(skipped, of: trial, in: txn, now: now))
  }

  /// Writes `trial` over `before` (nil: a new trial), with the change to its cohort's figures
  /// (`TrialStats`) and the transition noted in the transaction: every change of a trial's
  /// state goes through here.
  public static func write(_ trial: Trial, was before: Trial?, in txn: any TrialWriteTransaction) throws {
    try txn.putTrial(trial)
    if let (key, delta) = TrialStats.change(from: before, to: trial) { try txn.addToCohort(key, delta) }
    if before?.state != trial.state {
      txn.noteTransition(TrialTransition(plan: trial.plan, from: before?.state, to: trial.state))
    }
  }

  /// `labels` with `changes` made, or the refusal naming the label.
  static func changedLabels(_ labels: TrialLabels, _ changes: [String: String?]) throws -> TrialLabels {
    do {
      return try labels.applying(changes)
    } catch {
      throw TrialError.invalid(.labels, error.description)
    }
  }

  /// Records taken events exactly once: each goes into the ledger, the outbox and the event
  /// log; `grace-started` moves its trial to `grace` and a fired expiry moves it to `expired`
  /// (`Trial.taking(_:at:)`). Events already in the ledger, not
  /// of their trial's current active revision, or not admitted by the store (`admit`), are
  /// left out. A `resumed` event (a pause run out) resumes its paused trial
  /// (`TrialBook.resume`). Also records `now` as the last wall time seen. Returns the events
  /// recorded with their cursors, which follow the order returned: the events of resumes first
  /// (each resume, then the reminders it skipped), then the others in the order given.
  public static func commit(in txn: any TrialWriteTransaction, _ due: [DueEvent], now: Date) throws
    -> [LoggedEvent]
  {
    try take(in: txn, due, now: now).map(\.logged)
  }

  /// `commit`, returning with each event its trial as the transaction left it, so that the
  /// caller can deliver the events without reading the trials again.
  public static func take(in txn: any TrialWriteTransaction, _ due: [DueEvent], now: Date) throws
    -> [TakenEvent]
  {
    let due = try txn.admit(due)
    // Applied in event-id order, which keeps each trial's events in due order and lets a
    // file store visit its pages in key order; returned in the order given. The start of a
    // grace, whose order comes first, moves its trial to `grace` before that trial's reminders
    // taken in the same wake are recorded, as of a running trial all the same.
    // Follow-ups last: after the expiry of the same wake that ends their trial.
    let order = due.indices.sorted {
      let (lhs, rhs) = (due[$0].event, due[$1].event)
      let (lhsLater, rhsLater) = (lhs.kind.followUpSpan != nil, rhs.kind.followUpSpan != nil)
      if lhsLater != rhsLater { return rhsLater }
      return lhs.id != rhs.id ? lhs.id < rhs.id : $0 < $1
    }
    // What was recorded, in the order recorded, and where each event given went in it (-1:
    // left out). Arrays of plain values rather than one of optional tuples, which Swift copies
    // through the runtime's generic witnesses.
    var entries: [LedgerEntry] = []
    var trials: [Trial] = []
    entries.reserveCapacity(due.count)
    trials.reserveCapacity(due.count)
    var slots = [Int](repeating: -1, count: due.count)
    // The events of pauses run out, logged as they resumed: the resume, then what it skipped.
    var resumes: [TakenEvent] = []
    // Trials this wake brought to their end (grace or expiry) with milestones.
    var ended: [TrialID] = []
    for index in order {
      let item = due[index]
      // A pause is never due: it is recorded by the command that pauses.
      if case .paused = item.event.kind { continue }
      // The trial first: an event of another revision never needs its ledger entry read.
      guard let trial = try txn.trial(item.event.trialID), trial.revision == item.event.revision,
        item.event.kind.followUpSpan != nil
          ? trial.state.isEnded
          : item.event.kind.isPauseOrResume ? trial.state == .paused : trial.isRunning,
        try txn.ledgerEntry(item.event.id) == nil
      else { continue }
      if case .resumed = item.event.kind {
        // A pause ran out: the trial resumes, and the reminders it skips are recorded after it.
        let resumed = try resume(trial, item, in: txn, now: now)
        resumes.append(contentsOf: resumed.logged.map { TakenEvent(logged: $0, trial: resumed.trial) })
        continue
      }
      // A reminder of a trial cancelled at its end is skipped, as the trial is now.
      // A follow-up is called off by a conversion or a later trial of the subject.
      let entry = LedgerEntry(
        item.event.kind.followUpSpan == nil
          ? disposition(of: item, for: trial)
          : followUp(item, for: trial, latest: try txn.latestTrialID(subject: trial.subject)))
      try txn.putLedgerEntry(entry)
      let taken = trial.taking(item.event, at: item.takenAt)
      if taken.state != trial.state {
        try write(taken, was: trial, in: txn)
        if !taken.milestones.isEmpty, !taken.isActive { ended.append(taken.id) }
      }
      slots[index] = entries.count
      entries.append(entry)
      trials.append(taken)
    }
    try txn.setLastSeenWallTime(now)
    // Resumes were logged as they were applied: first, so that cursors follow the order returned.
    var result = resumes
    result.reserveCapacity(resumes.count + entries.count)
    for slot in slots where slot >= 0 {
      result.append(
        TakenEvent(
          logged: try txn.appendEvent(entries[slot], attributes: trials[slot].attributes), trial: trials[slot]
        ))
    }
    // Then the milestones the ends of this wake skipped, logged after.
    return result + (try cutMilestones(of: ended, in: txn, now: now))
  }

  /// At the end of `trials` (grace or expiry), skips their milestones that have not come (after
  /// the wake's own were taken: a milestone due before the end comes first), and cuts them off
  /// the trial, so that an extension in grace does not plan them again. Logged as delivered.
  static func cutMilestones(of trials: [TrialID], in txn: any TrialWriteTransaction, now: Date) throws
    -> [TakenEvent]
  {
    var taken: [TakenEvent] = []
    for id in trials {
      guard let trial = try txn.trial(id) else { continue }
      let skipped = try pendingMilestones(of: trial, in: txn, now: now, reason: .trialEnded)
      let cut = trial.cutting(skipped)
      if cut != trial { try txn.putTrial(cut) }
      taken += try recordSkipped(skipped, of: cut, in: txn, now: now).map {
        TakenEvent(logged: $0, trial: cut)
      }
    }
    return taken
  }

  /// Records deliveries: each entry still undelivered gets `deliveredAt`, which takes it out
  /// of the outbox. Ids not in the ledger, or already delivered, are passed over (the
  /// transaction's `markDelivered`).
  public static func markDelivered(
    in txn: any TrialWriteTransaction, _ deliveries: some Sequence<(id: EventID, at: Date)>
  ) throws {
    try txn.markDelivered(Array(deliveries))
  }

  /// Records reminders skipped as a trial starts or moves: in the ledger as delivered (the
  /// journal does not carry them) and in the event log. Returns them as logged.
  static func recordSkipped(
    _ skipped: [DueEvent], of trial: Trial, in txn: any TrialWriteTransaction, now: Date
  ) throws -> [LoggedEvent] {
    try skipped.map { event in
      let entry = LedgerEntry(event, deliveredAt: now)
      try txn.putLedgerEntry(entry)
      return try txn.appendEvent(entry, attributes: trial.attributes)
    }
  }

  /// `due`, a follow-up, as it is taken for its ended `trial`: `Trial.followUpDisposition`.
  public static func followUp(_ due: DueEvent, for trial: Trial, latest: TrialID?) -> DueEvent {
    guard due.fires else { return due }
    var taken = due
    taken.disposition = trial.followUpDisposition(latestTrial: latest)
    return taken
  }

  /// The milestones of the trial's current revision already due at `now`: as the reminders
  /// of a new revision, recorded as skipped, so that none fires twice (a milestone's due time
  /// does not move with the end).
  static func skippedMilestones(of trial: Trial, now: Date, reason: SkipReason) -> [DueEvent] {
    trial.milestoneEvents.filter { $0.due <= now }.map {
      DueEvent(event: $0, takenAt: now, disposition: .skip(reason), isLate: false)
    }
  }

  /// The milestones of the trial's current revision not in the ledger, skipped with `reason`:
  /// at a pause or an end, none that has not come fires after.
  static func pendingMilestones(
    of trial: Trial, in txn: any TrialWriteTransaction, now: Date, reason: SkipReason
  ) throws -> [DueEvent] {
    try trial.milestoneEvents.filter { try txn.ledgerEntry($0.id) == nil }.map {
      DueEvent(event: $0, takenAt: now, disposition: .skip(reason), isLate: false)
    }
  }

  static func skippedReminders(of trial: Trial, now: Date, reason: SkipReason) -> [DueEvent] {
    // The reminders come first among the events, in due order: those due by now lead.
    var skipped: [DueEvent] = []
    for index in trial.reminders.offsets.indices {
      let event = trial.event(at: index)
      guard event.due <= now else { break }
      skipped.append(DueEvent(event: event, takenAt: now, disposition: .skip(reason), isLate: false))
    }
    return skipped
  }
}
