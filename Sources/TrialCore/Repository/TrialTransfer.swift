import FoundationEssentials

/// Moving trials between stores: what `Export` reads out of one and `trialwatchd --import`
/// writes into another, over the transaction primitives only, so that one import serves every
/// store. The records come in file order: each trial, then its ledger entries (all revisions);
/// after the trials, the records of subjects granted a trial once (`SubjectUse`).
///
/// Times travel to the microsecond (`TransferTime`); an import compares at that precision.
///
/// An import runs in three passes over the same records, so that a bad file changes nothing:
/// `validate` reads each record against the ones before it (no store); `check` reads a batch
/// against the store; `apply` writes a batch in one write transaction, checking it again.
/// Rules: a trial already stored with the same content is skipped, one with other content is
/// an error; an active trial whose subject has another active trial is an error; a ledger
/// entry already stored is skipped. Entries are written as taken: a fired one keeps its event
/// from firing again, an undelivered one waits in the outbox and is delivered, with its id,
/// at the next start; events not in the ledger are planned and fire when due. A subject use
/// already recorded under its scope and key is kept as the store has it (the record is kept for
/// good: an import never replaces nor removes one).
public enum TrialTransfer {
  /// One record: a trial, one of its ledger entries, or a subject's use of a plan granted once.
  public enum Record: Hashable, Sendable {
    case trial(Trial)
    case entry(LedgerEntry)
    case use(SubjectUse)
  }

  /// A record with the line of the file it was read from.
  public struct Line: Hashable, Sendable {
    public var number: Int
    public var record: Record

    public init(_ number: Int, _ record: Record) {
      self.number = number
      self.record = record
    }
  }

  /// What is wrong, and on which line.
  public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var problem: String

    public init(line: Int, _ problem: String) {
      self.line = line
      self.problem = problem
    }

    public var description: String { "line \(line): \(problem)" }
  }

  /// What an import wrote, and what it found already stored.
  public struct Summary: Hashable, Sendable {
    public var trials = 0
    public var entries = 0
    public var uses = 0
    /// Trials, ledger entries and uses already stored (a use under its scope and key).
    public var skipped = 0
    /// The event log's new generation, when the import wrote anything (`LogGeneration`):
    /// cursors handed out by the source store, or by this one before, are told apart.
    public var generation: LogGeneration?

    public init(trials: Int = 0, entries: Int = 0, uses: Int = 0, skipped: Int = 0) {
      self.trials = trials
      self.entries = entries
      self.uses = uses
      self.skipped = skipped
    }

    public static func + (lhs: Summary, rhs: Summary) -> Summary {
      Summary(
        trials: lhs.trials + rhs.trials, entries: lhs.entries + rhs.entries, uses: lhs.uses + rhs.uses,
        skipped: lhs.skipped + rhs.skipped)
    }

    public var description: String {
      "imported \(trials) trial\(trials == 1 ? "" : "s") and \(entries) ledger entr\(entries == 1 ? "y" : "ies")"
        + (uses > 0 ? " and \(uses) record\(uses == 1 ? "" : "s") of subjects granted a trial once" : "")
        + ", skipped \(skipped) already present"
    }
  }

  /// The most records an import writes in one transaction.
  public static let batchSize = 2000

  /// The first pass: each record against those before it, over a whole file. Call `add` for
  /// every record in order, then `finish`.
  public struct Validator {
    private var ids: [TrialID: Int] = [:]
    private var activeSubjects: [String: (id: TrialID, line: Int)] = [:]
    /// The trial whose entries follow, with its line and its entries so far.
    private var current: (trial: Trial, line: Int, entries: [(line: Int, entry: LedgerEntry)])?
    /// The uses read, by scope and key, with their lines.
    private var uses: [SubjectUse.Position: Int] = [:]

    public init() {}

    public mutating func add(_ line: Line) throws(Problem) {
      switch line.record {
      case .trial(let trial):
        try finish()
        if let first = ids[trial.id] {
          throw Problem(line: line.number, "trial \(trial.id) appears again (first on line \(first))")
        }
        ids[trial.id] = line.number
        if trial.isOpen {
          if let other = activeSubjects[trial.subject] {
            throw Problem(
              line: line.number,
              "subject \"\(trial.subject)\" has two open (active or paused) trials: \(other.id) (line \(other.line)) and \(trial.id)"
            )
          }
          activeSubjects[trial.subject] = (trial.id, line.number)
        }
        current = (trial, line.number, [])
      case .entry(let entry):
        guard let trial = current?.trial, entry.event.trialID == trial.id else {
          throw Problem(
            line: line.number,
            "the ledger entry \(entry.id) does not follow its trial \(entry.event.trialID): "
              + "a trial's entries come right after it")
        }
        if let same = current?.entries.first(where: { $0.entry.id == entry.id }) {
          throw Problem(
            line: line.number, "the ledger entry \(entry.id) appears again (first on line \(same.line))")
        }
        current?.entries.append((line.number, TrialTransfer.aligned(entry, with: trial)))
      case .use(let use):
        try finish()
        if let first = uses[use.position] {
          throw Problem(
            line: line.number,
            "the use of \(use.scope) by key \"\(use.key)\" appears again (first on line \(first))")
        }
        uses[use.position] = line.number
      }
    }

    /// Ends the records of the last trial read: checks it with its entries.
    public mutating func finish() throws(Problem) {
      guard let (trial, line, entries) = current else { return }
      current = nil
      if let problem = TrialConsistency.problems(of: trial, ledger: entries.map(\.entry)).first {
        let at = problem.event.flatMap { id in entries.first { $0.entry.id == id }?.line } ?? line
        throw Problem(line: at, "trial \(trial.id): \(problem.message)")
      }
    }
  }

  /// Imports records into `repository`: `records` calls its argument with every record in
  /// file order, and is called once for each pass (reading the file again). Nothing is
  /// written unless every record passes `Validator` and `check`; then batches of at most
  /// `batchSize` records are written, each in one transaction.
  public static func run(
    _ records: (_ each: (Line) throws -> Void) throws -> Void, into repository: any TrialRepository
  ) throws -> Summary {
    try validate(records)
    try batches(records) { batch in try repository.read { try check(batch, in: $0) } }
    var summary = Summary()
    try batches(records) { batch in summary = summary + (try repository.write { try apply(batch, in: $0) }) }
    if summary.trials + summary.entries + summary.uses > 0 {
      summary.generation = try repository.write { txn in
        // The log is this store's, unchanged; a new generation tells cursors of the source's
        // log, which may have the same numbers, from its own.
        let log = try txn.eventLogBounds()
        let next = log.generation.successor(began: log.last.sequence, parent: nil)
        try txn.setLogGeneration(next)
        return next
      }
    }
    return summary
  }

  /// The first pass alone: every record against those before it, with no store.
  public static func validate(_ records: (_ each: (Line) throws -> Void) throws -> Void) throws {
    var validator = Validator()
    try records { try validator.add($0) }
    try validator.finish()
  }

  private static func batches(
    _ records: (_ each: (Line) throws -> Void) throws -> Void, _ body: ([Line]) throws -> Void
  ) throws {
    var batch: [Line] = []
    try withoutActuallyEscaping(body) { body in
      try records { line in
        batch.append(line)
        if batch.count == batchSize {
          try body(batch)
          batch.removeAll(keepingCapacity: true)
        }
      }
      if !batch.isEmpty { try body(batch) }
    }
  }

  /// The second pass: the records of a batch against the store, changing nothing.
  public static func check(_ batch: [Line], in transaction: any TrialReadTransaction) throws {
    for line in batch { _ = try decide(line, in: transaction) }
  }

  /// The third pass: writes a batch in one transaction, checking each record again (another
  /// writer may share the store).
  public static func apply(_ batch: [Line], in transaction: any TrialWriteTransaction) throws -> Summary {
    var summary = Summary()
    for line in batch {
      guard try decide(line, in: transaction) else {
        summary.skipped += 1
        continue
      }
      switch line.record {
      case .trial(let trial):
        try TrialBook.write(trial, was: nil, in: transaction)
        summary.trials += 1
      case .entry(let entry):
        let stored = try transaction.trial(entry.event.trialID).map { aligned(entry, with: $0) } ?? entry
        try transaction.putLedgerEntry(stored)
        summary.entries += 1
      case .use(let use):
        try transaction.putSubjectUse(use)
        summary.uses += 1
      }
    }
    return summary
  }

  /// Whether a record is to be written (false: already stored); throws if it conflicts.
  static func decide(_ line: Line, in transaction: any TrialReadTransaction) throws -> Bool {
    switch line.record {
    case .trial(let trial):
      if let stored = try transaction.trial(trial.id) {
        let differences = TransferTime.differences(stored, trial)
        guard differences.isEmpty else {
          throw Problem(
            line: line.number,
            "trial \(trial.id) is already stored with a different \(differences.joined(separator: ", "))")
        }
        return false
      }
      if trial.isOpen, let other = try transaction.activeTrialID(subject: trial.subject), other != trial.id {
        throw Problem(
          line: line.number,
          "subject \"\(trial.subject)\" already has the open trial \(other) in the store; "
            + "the trial \(trial.id) is \(trial.state.rawValue) too")
      }
      return true
    case .entry(let entry):
      return try transaction.ledgerEntry(entry.id) == nil
    case .use(let use):
      return try transaction.subjectUse(scope: use.scope, key: use.key) == nil
    }
  }

  /// An entry of its trial's current revision takes its due time from the trial, as the
  /// engine computes it, when the two agree to the microsecond: a restore and the store's
  /// verification compare them exactly.
  static func aligned(_ entry: LedgerEntry, with trial: Trial) -> LedgerEntry {
    guard entry.event.revision == trial.revision,
      let event = trial.events.first(where: { $0.id == entry.id }),
      TransferTime.microseconds(event.due) == TransferTime.microseconds(entry.event.due)
    else { return entry }
    var aligned = entry
    aligned.event = event
    return aligned
  }
}

/// Times and spans as a transfer carries them: whole microseconds.
public enum TransferTime {
  /// Microseconds since 2001-01-01T00:00:00Z (`Date`'s reference), rounded to the nearest.
  public static func microseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSinceReferenceDate * 1e6).rounded())
  }

  public static func date(microseconds: Int64) -> Date {
    Date(timeIntervalSinceReferenceDate: Double(microseconds) / 1e6)
  }

  /// The date rounded to the microsecond.
  public static func rounded(_ date: Date) -> Date { self.date(microseconds: microseconds(date)) }

  /// The span rounded to the microsecond; one beyond `Int64` microseconds (some 292,000 years)
  /// is held at that bound.
  public static func rounded(_ span: Duration) -> Duration {
    .microseconds(span.roundedMicroseconds)
  }

  /// What differs between two trials of the same id, to the microsecond: field names.
  static func differences(_ a: Trial, _ b: Trial) -> [String] {
    var names: [String] = []
    if a.subject != b.subject { names.append("subject") }
    if a.state != b.state { names.append("state") }
    if a.revision != b.revision { names.append("revision") }
    if rounded(a.period.startDate) != rounded(b.period.startDate) { names.append("startedAt") }
    if rounded(a.period.endDate) != rounded(b.period.endDate) { names.append("endsAt") }
    if a.endedAt.map(rounded) != b.endedAt.map(rounded) { names.append("endedAt") }
    if a.reminders != b.reminders { names.append("reminders") }
    if rounded(a.grace) != rounded(b.grace) { names.append("grace") }
    if a.pause.map({ rounded($0.since) }) != b.pause.map({ rounded($0.since) })
      || a.pause?.until.map(rounded) != b.pause?.until.map(rounded)
    {
      names.append("pause")
    }
    if a.cancelMark.map({ rounded($0.askedAt) }) != b.cancelMark.map({ rounded($0.askedAt) })
      || a.cancelMark?.remindAfterCancel != b.cancelMark?.remindAfterCancel
    {
      names.append("cancelMark")
    }
    if a.labels != b.labels { names.append("labels") }
    var others = (a.attributes, b.attributes)
    others.0.labels = .none
    others.1.labels = .none
    if others.0 != others.1 { names.append("attributes") }
    return names
  }
}
