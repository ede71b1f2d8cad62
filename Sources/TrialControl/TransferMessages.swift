import FoundationEssentials
import TrialCore

// Export's records: the one model of a transfer, shared by the daemon that answers Export,
// trialwatchctl export that writes them as JSON Lines, and trialwatchd --import that reads
// them back into a store. Each line of an export file is one `ExportRecord` as the wire
// carries it: {"trial":{...}} or {"event":{...}}.

public struct ExportParameters: PagedParameters, Hashable {
  public static let defaultLimit = 1000
  public static let maximumLimit = 10_000

  /// The cursor: the `next` of the previous page.
  public var after: TrialID?
  /// Trials per page (uses, with `uses`).
  public var limit: Int?
  /// True: a page of the records of subjects granted a trial once, after `afterUse`, instead
  /// of trials.
  public var uses: Bool?
  /// The cursor of uses: the `nextUse` of the previous page.
  public var afterUse: SubjectUse.Position?

  public init(
    after: TrialID? = nil, limit: Int? = nil, uses: Bool? = nil, afterUse: SubjectUse.Position? = nil
  ) {
    self.after = after
    self.limit = limit
    self.uses = uses
    self.afterUse = afterUse
  }

  private enum CodingKeys: String, CodingKey {
    case after, limit, uses, afterUse
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    after = try container.decodeIfPresent(TrialID.self, forKey: .after)
    limit = try container.decodeWholeNumber(forKey: .limit)
    uses = try container.decodeIfPresent(Bool.self, forKey: .uses)
    afterUse = try container.decodeIfPresent(SubjectUse.Position.self, forKey: .afterUse)
  }

}

public struct ExportReply: Codable, Hashable, Sendable {
  /// Each trial of the page, followed by its ledger entries; or the uses of a page of uses.
  public var records: [ExportRecord]
  /// The last trial of the page, when more may follow; nil on the last page.
  public var next: TrialID?
  /// Of a page of uses: the last one, when more may follow; nil on the last page.
  public var nextUse: SubjectUse.Position?

  public init(records: [ExportRecord], next: TrialID? = nil, nextUse: SubjectUse.Position? = nil) {
    self.records = records
    self.next = next
    self.nextUse = nextUse
  }
}

/// One line of an export (`io.trialwatch.Trials.ExportRecord`): a trial or a ledger entry.
public struct ExportRecord: Codable, Hashable, Sendable {
  public var trial: ExportTrial?
  public var event: ExportEvent?
  public var use: ExportUse?

  public init(_ trial: Trial) {
    self.trial = ExportTrial(trial)
  }

  public init(_ entry: LedgerEntry) {
    event = ExportEvent(entry)
  }

  public init(_ use: SubjectUse) {
    self.use = ExportUse(use)
  }

  /// A trial, then its ledger entries in id order.
  public static func records(of trial: Trial, ledger: [LedgerEntry]) -> [ExportRecord] {
    [ExportRecord(trial)] + ledger.sorted { $0.id < $1.id }.map(ExportRecord.init)
  }

  /// The record as one line of JSON, without its newline.
  public var jsonLine: String { WireCoding.text(self) }

  /// The record one line of JSON holds, checked; a line that is not JSON is refused naming the
  /// byte where it stops being JSON (bytes that are not UTF-8 included).
  public static func read(line: some Collection<UInt8>) throws(WireProblem) -> TrialTransfer.Record {
    try WireCoding.checkEncoding(line)
    let data = Data(line)
    let record: ExportRecord
    do {
      record = try WireCoding.makeDecoder().decode(ExportRecord.self, from: data)
    } catch let error as DecodingError {
      throw WireCoding.syntaxProblem(error, data: data) ?? WireProblem(error)
    } catch {
      throw WireProblem(path: [], problem: "not JSON: \(error)")
    }
    return try record.transferRecord()
  }

  /// What the record stands for.
  public func transferRecord() throws(WireProblem) -> TrialTransfer.Record {
    switch (trial, event, use) {
    case (let trial?, nil, nil): .trial(try trial.trial())
    case (nil, let event?, nil): .entry(try event.entry())
    case (nil, nil, let use?): .use(try use.use())
    default: throw WireProblem(path: [], problem: "a record holds one of trial, event and use")
    }
  }
}

/// A trial as Export carries it (`io.trialwatch.Trials.ExportTrial`).
public struct ExportTrial: Codable, Hashable, Sendable {
  public var id: TrialID
  public var subject: String
  /// The trial's labels; absent when it has none.
  public var labels: [String: String]?
  /// Its other attributes but the subject, by their stored names (`TrialAttributes.storedFields`);
  /// absent when it has none.
  public var attributes: [String: String]?
  public var state: TrialState
  public var revision: UInt32
  public var startedAt: PreciseTime
  public var endsAt: PreciseTime
  public var endedAt: PreciseTime?
  /// Spans before the end, whole milliseconds, in the order they fall due.
  public var reminders: [Span]
  /// Of a trial paused (or ended while paused): since when, and when its pause runs out.
  public var pausedAt: PreciseTime?
  public var resumesAt: PreciseTime?
  /// How many extensions moved its end later; absent when none (and in files from before the
  /// count, which import with 0).
  public var extensions: Int?
  /// Of a trial cancelled at its end (or so cancelled): when that was asked, and whether its
  /// reminders fire; absent otherwise (and in files from before cancels at the end).
  public var cancelAskedAt: PreciseTime?
  public var remindAfterCancel: Bool?
  /// Its grace, whole milliseconds; nil: none (an export from before grace has none).
  public var grace: Span?
  /// Its follow-ups' spans after its expiry, whole milliseconds, smallest first; nil: none (an
  /// export from before follow-ups has none).
  public var followUps: [Span]?
  /// Its milestones' spans after its start (those a pause or an end left), whole milliseconds,
  /// smallest first; nil: none.
  public var milestones: [Span]?

  public init(_ trial: Trial) {
    id = trial.id
    subject = trial.subject
    labels = trial.labels.isEmpty ? nil : trial.labels.dictionary
    let others = trial.attributes.storedFields.filter { TrialAttributes.labelKey(storedName: $0.name) == nil }
    attributes = others.isEmpty ? nil : Dictionary(uniqueKeysWithValues: others.map { ($0.name, $0.value) })
    state = trial.state
    revision = trial.revision
    startedAt = PreciseTime(trial.period.startDate)
    endsAt = PreciseTime(trial.period.endDate)
    endedAt = trial.endedAt.map(PreciseTime.init)
    reminders = trial.reminders.offsets.map(Span.init)
    pausedAt = trial.pause.map { PreciseTime($0.since) }
    resumesAt = trial.pause?.until.map(PreciseTime.init)
    extensions = trial.extensions == 0 ? nil : trial.extensions
    cancelAskedAt = trial.cancelMark.map { PreciseTime($0.askedAt) }
    remindAfterCancel = trial.cancelMark?.remindAfterCancel
    grace = trial.grace > .zero ? Span(trial.grace) : nil
    followUps = trial.followUps.isEmpty ? nil : trial.followUps.spans.map(Span.init)
    milestones = trial.milestones.isEmpty ? nil : trial.milestones.spans.map(Span.init)
  }

  private enum CodingKeys: String, CodingKey {
    case id, subject, labels, attributes, state, revision, startedAt, endsAt, endedAt, reminders, pausedAt
    case resumesAt, extensions, cancelAskedAt, remindAfterCancel, grace, followUps, milestones
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(TrialID.self, forKey: .id)
    subject = try container.decode(String.self, forKey: .subject)
    labels = try container.decodeObjectIfPresent(of: String.self, forKey: .labels)
    attributes = try container.decodeObjectIfPresent(of: String.self, forKey: .attributes)
    state = try container.decode(TrialState.self, forKey: .state)
    revision = try container.decode(UInt32.self, forKey: .revision)
    startedAt = try container.decode(PreciseTime.self, forKey: .startedAt)
    endsAt = try container.decode(PreciseTime.self, forKey: .endsAt)
    endedAt = try container.decodeIfPresent(PreciseTime.self, forKey: .endedAt)
    reminders = try container.decode([Span].self, forKey: .reminders)
    pausedAt = try container.decodeIfPresent(PreciseTime.self, forKey: .pausedAt)
    resumesAt = try container.decodeIfPresent(PreciseTime.self, forKey: .resumesAt)
    extensions = try container.decodeWholeNumber(forKey: .extensions)
    cancelAskedAt = try container.decodeIfPresent(PreciseTime.self, forKey: .cancelAskedAt)
    remindAfterCancel = try container.decodeIfPresent(Bool.self, forKey: .remindAfterCancel)
    grace = try container.decodeIfPresent(Span.self, forKey: .grace)
    followUps = try container.decodeIfPresent([Span].self, forKey: .followUps)
    milestones = try container.decodeIfPresent([Span].self, forKey: .milestones)
  }

  public func trial() throws(WireProblem) -> Trial {
    if let problem = Trial.validateSubject(subject) {
      throw WireProblem(path: ["trial", "subject"], problem: problem)
    }
    if revision == 0 { throw WireProblem(path: ["trial", "revision"], problem: "must be 1 or more") }
    let schedule: ReminderSchedule
    do {
      schedule = try ReminderSchedule(reminders.map(\.duration))
    } catch {
      throw WireProblem(path: ["trial", "reminders"], problem: error.description)
    }
    // In byte order of their names, so that of several bad ones the same is named every time.
    var fields = (attributes ?? [:]).map { (name: $0.key, value: $0.value) }
      .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    for (name, value) in fields {
      if let problem = Self.validateAttribute(name: name, value: value) {
        throw WireProblem(path: ["trial", "attributes", name], problem: problem)
      }
    }
    fields += (labels ?? [:]).map { (TrialAttributes.labelPrefix + $0.key, $0.value) }
    let attributes: TrialAttributes
    do {
      attributes = try TrialAttributes(subject: subject, storedFields: fields)
    } catch {
      throw WireProblem(path: ["trial", "labels"], problem: error.description)
    }
    if state == .paused, pausedAt == nil {
      throw WireProblem(path: ["trial", "pausedAt"], problem: "a paused trial needs the time it was paused")
    }
    if pausedAt == nil, resumesAt != nil {
      throw WireProblem(path: ["trial", "resumesAt"], problem: "only a paused trial resumes")
    }
    if let extensions, !(0...Int(UInt32.max)).contains(extensions) {
      throw WireProblem(path: ["trial", "extensions"], problem: "must be 0 to \(UInt32.max)")
    }
    if cancelAskedAt == nil, remindAfterCancel != nil {
      throw WireProblem(
        path: ["trial", "remindAfterCancel"],
        problem: "only a trial cancelled at its end has it (cancelAskedAt)")
    }
    let grace = grace?.duration ?? .zero
    if grace < .zero || grace > Trial.maximumGrace
      || grace.roundedMilliseconds * 1_000 != grace.roundedMicroseconds
    {
      throw WireProblem(
        path: ["trial", "grace"],
        problem: "must be whole milliseconds from 0 to \(TimeSpan.format(Trial.maximumGrace))")
    }
    if state == .grace, grace == .zero {
      throw WireProblem(path: ["trial", "grace"], problem: "a trial in grace needs its grace")
    }
    let followUps: FollowUpSchedule
    do {
      followUps = try FollowUpSchedule((self.followUps ?? []).map(\.duration))
    } catch {
      throw WireProblem(path: ["trial", "followUps"], problem: error.description)
    }
    let milestones: MilestoneSchedule
    do {
      milestones = try MilestoneSchedule((self.milestones ?? []).map(\.duration))
    } catch {
      throw WireProblem(path: ["trial", "milestones"], problem: error.description)
    }
    return Trial(
      id: id, attributes: attributes, period: TrialPeriod(startDate: startedAt.date, endDate: endsAt.date),
      state: state, reminders: schedule, revision: revision, endedAt: endedAt?.date,
      pause: pausedAt.map { TrialPause(since: $0.date, until: resumesAt?.date) }, extensions: extensions ?? 0,
      cancelMark: cancelAskedAt.map {
        TrialCancelMark(askedAt: $0.date, remindAfterCancel: remindAfterCancel ?? false)
      }, grace: grace, followUps: followUps, milestones: milestones)
  }

  /// Why an attribute of an export cannot be stored, or nil: a name of lower-case letters,
  /// digits, `_` and `.`, at most 64 bytes, neither the subject nor a label; a value of at
  /// most 4 KiB.
  static func validateAttribute(name: String, value: String) -> String? {
    if name == "subject" || TrialAttributes.labelKey(storedName: name) != nil {
      return "the subject and the labels have fields of their own"
    }
    let allowed = name.utf8.allSatisfy {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
    }
    guard !name.isEmpty, name.utf8.count <= 64, allowed else {
      return "an attribute name is 1 to 64 of a-z, 0-9, _ and ."
    }
    return value.utf8.count > 4096 ? "is longer than 4096 bytes" : nil
  }
}

/// A ledger entry as Export carries it (`io.trialwatch.Trials.ExportEvent`).
public struct ExportEvent: Codable, Hashable, Sendable {
  public enum Outcome: String, WireChoice {
    case fired
    case skipped
  }

  public var id: EventID
  public var due: PreciseTime
  public var outcome: Outcome
  /// For a skipped event: why, as a code (`already-due-at-start`).
  public var reason: String?
  /// The reason in words (not read back: the code and the fields below say it all).
  public var detail: String?
  /// For `superseded-by-reminder`: the reminder that fired in its place.
  public var supersededBy: EventID?
  /// For `beyond-grace`: how late it was, and the grace it was beyond.
  public var lateness: PreciseSpan?
  public var grace: PreciseSpan?
  public var takenAt: PreciseTime
  /// Taken later than the catch-up policy's threshold.
  public var late: Bool
  /// Nil while it waits to be delivered.
  public var deliveredAt: PreciseTime?

  public init(_ entry: LedgerEntry) {
    id = entry.id
    due = PreciseTime(entry.event.due)
    takenAt = PreciseTime(entry.takenAt)
    late = entry.isLate
    deliveredAt = entry.deliveredAt.map(PreciseTime.init)
    switch entry.outcome {
    case .fired: outcome = .fired
    case .skipped(let reason):
      outcome = .skipped
      self.reason = reason.code
      detail = reason.description
      switch reason {
      case .supersededByReminder(let by): supersededBy = by
      case .beyondGrace(let lateness, let grace):
        self.lateness = PreciseSpan(lateness)
        self.grace = PreciseSpan(grace)
      case .alreadyDueAtStart, .alreadyDueAtExtension, .alreadyDueAtResume, .supersededByExpiry, .cancelAtEnd,
        .calledOffByConversion, .calledOffByNewTrial, .trialEnded, .paused:
        break
      }
    }
  }

  public func entry() throws(WireProblem) -> LedgerEntry {
    let result: LedgerEntry.Outcome
    switch outcome {
    case .fired:
      if reason != nil {
        throw WireProblem(path: ["event", "reason"], problem: "a fired event has no reason")
      }
      result = .fired
    case .skipped: result = .skipped(try skipReason())
    }
    return LedgerEntry(
      event: TrialEvent(id: id, due: due.date), outcome: result, takenAt: takenAt.date, isLate: late,
      deliveredAt: deliveredAt?.date)
  }

  private func skipReason() throws(WireProblem) -> SkipReason {
    guard let reason else {
      throw WireProblem(path: ["event", "reason"], problem: "is required for a skipped event")
    }
    do {
      return try SkipReason(
        code: reason, supersededBy: supersededBy, lateness: lateness?.duration, grace: grace?.duration)
    } catch .missing(let name) {
      throw WireProblem(path: ["event", name], problem: "is required for \(reason)")
    } catch {
      throw WireProblem(
        path: ["event", "reason"],
        problem: "\"\(reason)\" is not one of: " + SkipReason.codes.joined(separator: ", "))
    }
  }
}
