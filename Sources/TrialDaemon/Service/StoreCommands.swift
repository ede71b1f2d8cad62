import FoundationEssentials
import TrialConfiguration
import TrialControl
import TrialCore
import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// `trialwatchd --backup`, `--restore`, `--verify-store` and `--import`: the store's
/// maintenance, each in a process of its own, beside a running daemon (backup, verify) or
/// instead of it (restore, import).
/// Reports go to standard output, errors to standard error; each returns the exit status.
public struct StoreCommands {
  /// Exit statuses besides 0 (done; for a verification: no problem).
  public enum ExitStatus {
    /// It could not be done: no store, no permission, the store in use, no space, an invalid
    /// configuration.
    public static let failure: Int32 = 1
    /// The store or the backup file is damaged, inconsistent, not a trialwatch store, or of a
    /// newer schema: verification found problems, or a restore refused the file; or an
    /// import's file is invalid or conflicts with the store.
    public static let problems: Int32 = 2
  }

  /// Where report lines and error lines go.
  public var output: (String) -> Void
  public var errors: (String) -> Void

  public init(
    output: @escaping (String) -> Void = { print($0) },
    errors: @escaping (String) -> Void = {
      writeAll(STDERR_FILENO, Array(("trialwatchd: " + $0 + "\n").utf8))
    }
  ) {
    self.output = output
    self.errors = errors
  }

  /// The status for an error: `problems` for a store or file that is not fit, else `failure`.
  static func status(for error: any Error) -> Int32 {
    guard let error = error as? StoreError else { return ExitStatus.failure }
    switch error.kind {
    case .damaged, .newerSchema, .corruptRecord, .inconsistent: return ExitStatus.problems
    default: return ExitStatus.failure
    }
  }

  /// Advice added to an error that permissions caused.
  private static func hint(_ error: any Error) -> String {
    guard (error as? StoreError)?.kind == .accessDenied else { return "" }
    return " (run it as root or as the store's user: sudo trialwatchd ...)"
  }

  // MARK: Backup

  /// Writes a consistent, compacted copy of the store in `directory` to `file`.
  public func backup(directory: String, to file: String) -> Int32 {
    Self.exitOnDamage(reading: directory)
    do {
      let reader = try LMDBStoreReader(directory: directory)
      defer { reader.close() }
      let report = try reader.backup(to: file)
      let statistics = report.statistics
      output(
        "backed up \(reader.dataFilePath) to \(file): \(Self.size(report.bytes)); "
          + Self.counts(statistics) + (report.lastSeen.map { "; last commit at \(RFC3339.format($0))" } ?? "")
      )
      return 0
    } catch {
      errors("cannot back up the store: \(error)\(Self.hint(error))")
      return Self.status(for: error)
    }
  }

  // MARK: Verify

  /// Checks the store in `directory`, or the backup (or store) at `path` when given. Prints
  /// each problem, then a summary line.
  public func verify(directory: String?, path: String? = nil) -> Int32 {
    let target = path ?? directory ?? "."
    Self.exitOnDamage(reading: target)
    let reader: LMDBStoreReader
    do {
      reader = try path.map { try LMDBStoreReader.open($0) } ?? LMDBStoreReader(directory: target)
    } catch {
      let status = Self.status(for: error)
      if status == ExitStatus.problems {
        output("problem: \(error)")
        output("\(target): not a store this version of trialwatch can check")
      } else {
        errors("cannot check \(target): \(error)\(Self.hint(error))")
      }
      return status
    }
    defer { reader.close() }
    do {
      let report = try reader.verify()
      for problem in report.problems { output("problem: \(problem)") }
      output(report.summary)
      return report.isClean ? 0 : ExitStatus.problems
    } catch {
      errors("cannot check \(target): \(error)")
      return Self.status(for: error)
    }
  }

  // MARK: Restore

  /// The line that tells a restore's or an import's new generation of the event log.
  static func describe(_ generation: LogGeneration) -> String {
    "the event log goes on in generation \(generation.number) after cursor "
      + "\(EventCursor(generation.began, generation: generation.number)): a cursor handed out before is "
      + "refused with CursorGeneration, which names where to resume"
  }

  /// Puts the backup `file` in place of the store in `directory`; `now` names the file the
  /// replaced store is kept as. `check` refuses a file unfit to be restored.
  public func restore(
    from file: String, into directory: String, now: Date,
    check: StoreRestore.Check = StoreCommands.checkIsolated
  ) -> Int32 {
    do {
      let report = try StoreRestore.restore(backup: file, into: directory, now: now, check: check)
      let statistics = report.statistics
      output(
        "restored \(file) into \(report.dataFile): " + Self.counts(statistics)
          + (report.lastSeen.map { "; last commit at \(RFC3339.format($0))" } ?? ""))
      if let aside = report.keptAside {
        output("the store it replaced is kept as \(aside)")
        if report.keptUses > 0 {
          output(
            "kept \(report.keptUses) record\(report.keptUses == 1 ? "" : "s") of subjects granted a trial once "
              + "that the store it replaced held and the backup did not (Once= in plan files)")
        }
      } else {
        output("there was no store to replace")
      }
      if let generation = report.generation { output(Self.describe(generation)) }
      if let user = report.ownerID, let group = report.groupID {
        output("the store file belongs to uid \(user), gid \(group) (the owner of \(directory)), mode 0600")
      }
      if report.createdDirectory {
        output(
          "created \(directory); under systemd, StateDirectory= gives it to the service's user at the next start"
        )
      }
      output(
        "at its next start trialwatchd "
          + (statistics.outboxEntries > 0
            ? "delivers the \(statistics.outboxEntries) undelivered events, then " : "")
          + "fires the events that fell due since the backup, late, under the catch-up policy ([CatchUp]); "
          + "events in the backup's ledger never fire again")
      return 0
    } catch {
      errors("cannot restore \(file): \(error)\(Self.hint(error))")
      return Self.status(for: error)
    }
  }

  // MARK: Import

  /// Writes the trials and ledger entries of `file`, an export (JSON Lines, as `trialwatchctl
  /// export` writes it), into the store `open` opens, through `TrialTransfer`: the whole file is
  /// checked first, then written in transactions of at most `TrialTransfer.batchSize` records.
  public func importTrials(from file: String, open: () throws -> OpenedStore) -> Int32 {
    let text: [UInt8]
    switch readFile(file) {
    case .success(let bytes): text = bytes
    case .failure(let error):
      errors("cannot import \(file): cannot read it: \(error)")
      return ExitStatus.failure
    }
    let records = { (each: (TrialTransfer.Line) throws -> Void) throws in
      var number = 0
      for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
        number += 1
        // A blank line (JSON's whitespace, or none) holds no record.
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
        do {
          try each(TrialTransfer.Line(number, try ExportRecord.read(line: line)))
        } catch let problem as WireProblem {
          throw TrialTransfer.Problem(line: number, problem.description)
        }
      }
    }
    do {
      try TrialTransfer.validate(records)
    } catch {
      errors("cannot import \(file): \(error)")
      return ExitStatus.problems
    }
    let store: OpenedStore
    do {
      store = try open()
    } catch {
      errors("cannot import \(file): cannot open the store: \(error)\(Self.hint(error))")
      return Self.status(for: error)
    }
    defer { store.services.close() }
    do {
      let summary = try TrialTransfer.run(records, into: store.repository)
      output(summary.description)
      if let generation = summary.generation { output(Self.describe(generation)) }
      output(
        "at its next start trialwatchd delivers the imported entries that were not yet delivered, with "
          + "their ids, and plans every event not in the ledger: each fires when due, late under the "
          + "catch-up policy ([CatchUp]) if already due; events in the ledger never fire again")
      return 0
    } catch let problem as TrialTransfer.Problem {
      errors("cannot import \(file): \(problem)")
      return ExitStatus.problems
    } catch {
      errors("cannot import \(file): \(error)\(Self.hint(error))")
      return Self.status(for: error)
    }
  }

  /// The check a restore runs on the copy it is about to install: first in a child process
  /// (this executable with `--verify-store FILE`), so that a damaged file that makes LMDB read
  /// outside it brings down only the child; then, unless the child found it clean, in this
  /// process, which the child has shown safe, for the precise error.
  public static func checkIsolated(_ file: String) throws {
    // Named trialwatchd, which the program is whatever name it was started by.
    let check = runChild("/proc/self/exe", arguments: ["trialwatchd", "--verify-store", file])
    guard case .success(let outcome) = check else {
      // No child to run the check in: only this process is left to read it.
      return try StoreRestore.verifyInProcess(file)
    }
    let text = String(decoding: outcome.standardError, as: UTF8.self)
    if case .signalled(let signal) = outcome.ending {
      throw StoreError(
        .damaged, path: file, problem: "the file is damaged: reading it crashed (signal \(signal))")
    }
    if let line = text.split(separator: "\n").first(where: { $0.contains(damageMarker) }) {
      throw StoreError(
        .damaged, path: file, problem: "the file is damaged: \(line.split(separator: ": ").last ?? "")")
    }
    guard outcome.ending != .exited(0) else { return }
    try StoreRestore.verifyInProcess(file)
    throw StoreError(.failure, path: file, problem: "checking it failed: \(text)")
  }

  static let damageMarker = "reading it crashed"

  /// From now on, a crash while reading a store file (LMDB following a damaged page outside
  /// the file: SIGBUS, or outside its mapping: SIGSEGV) ends the process with a message naming
  /// `path` and the `problems` status, instead of a crash report.
  static func exitOnDamage(reading path: String) {
    busMessage = Array("trialwatchd: \(path): the store is damaged: \(damageMarker) (SIGBUS)\n".utf8)
    segvMessage = Array("trialwatchd: \(path): the store is damaged: \(damageMarker) (SIGSEGV)\n".utf8)
    var action = sigaction()
    action.__sigaction_handler.sa_handler = exitAfterDamage
    sigemptyset(&action.sa_mask)
    sigaction(SIGBUS, &action, nil)
    sigaction(SIGSEGV, &action, nil)
  }

  // MARK: Words

  static func counts(_ statistics: StoreStatistics) -> String {
    "\(statistics.trials) trial\(statistics.trials == 1 ? "" : "s") (\(statistics.activeTrials) active), "
      + "\(statistics.ledgerEntries) ledger entr\(statistics.ledgerEntries == 1 ? "y" : "ies"), "
      + "\(statistics.outboxEntries) undelivered, \(statistics.loggedEvents) logged "
      + "event\(statistics.loggedEvents == 1 ? "" : "s"), \(statistics.consumers) "
      + "consumer\(statistics.consumers == 1 ? "" : "s")"
      + (statistics.schema < LMDBTrialRepository.schemaVersion
        ? " (store schema \(statistics.schema): trialwatchd upgrades it at its next start)" : "")
  }

  static func size(_ bytes: Int) -> String {
    bytes < 1_000_000
      ? "\(bytes) bytes" : "\(decimal(Double(bytes) / 1_000_000, digits: 1)) MB (\(bytes) bytes)"
  }
}

// What the signal handler writes; set before it is installed (nothing is allocated in it).
nonisolated(unsafe) private var busMessage: [UInt8] = []
nonisolated(unsafe) private var segvMessage: [UInt8] = []

private func exitAfterDamage(_ signal: Int32) {
  (signal == SIGBUS ? busMessage : segvMessage).withUnsafeBytes {
    _ = Glibc.write(2, $0.baseAddress, $0.count)
  }
  _exit(StoreCommands.ExitStatus.problems)
}
