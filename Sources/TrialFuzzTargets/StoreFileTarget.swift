import FoundationEssentials
import Glibc
import Logging
import TrialCore
import TrialDaemon
import TrialEngine
@_spi(StoreTesting) import TrialStore
import TrialStoreTesting
import TrialTesting

/// A small valid store (`StoreCorruption`'s fixture: five trials, their ledger, the outbox, the
/// event log and a consumer) whose records the input changes through LMDB's own API, then read
/// as `trialwatchd --verify-store` and the daemon's start read it. The input is a list of
/// operations, each a byte and its operands (`Operation`): put a record, delete one, overwrite,
/// cut or delete an existing one. What must hold:
///
/// - `--verify-store` ends with 0 (and lists no problem) or with 2 (and lists them), never
///   anything else;
/// - a store it finds clean opens, reads whole (every trial and its ledger, the outbox, the
///   event log, the consumers, the uses, the cohorts and the webhook endpoints' state and pending
///   events), and the engine starts on it and catches
///   up; once the engine has written, the store is still clean;
/// - otherwise, what fails fails with a `StoreError` of a documented kind (damaged, corrupt
///   record, newer schema, inconsistent) naming the store file.
///
/// Records are changed through LMDB, not as bytes of the file: LMDB does not check its pages
/// (a damaged page can make it read outside the file), and the restore's check already turns
/// such a crash into a "damaged" message in a child process (`StoreCommands.checkIsolated`),
/// at a few hundred runs a second. Through LMDB's API every input reaches trialwatch's own
/// decoding and verification, in this process.
enum StoreFileTarget {
  static let scratch = Scratch("store")
  static let databases = [
    "trials", "subjects", "ledger", "outbox", "meta", "events", "consumers", "uses", "cohorts", "main",
    "webhooks",
  ]
  /// The fixture as one compacted store file, made once.
  static let template: [UInt8] = makeTemplate()
  /// The engine's time: four days after the fixture's trials started, so that some of their
  /// events are due at its start.
  static let now = StoreCorruption.origin.addingTimeInterval(4 * 86_400)
  static let options = LMDBTrialRepository.Options(initialMapSize: 1 << 20, createIfMissing: false)
  static let documented: Set<StoreError.Kind> = [.damaged, .corruptRecord, .newerSchema, .inconsistent]

  static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
    let bytes = template
    scratch.clear()
    scratch.write("store/data.mdb", bytes)
    let directory = scratch.path + "/store"
    do {
      let repository = try LMDBTrialRepository(directory: directory, options: options)
      defer { repository.close() }
      try repository.withRawRecords { raw in
        var reader = Operation.Reader(input)
        while let operation = reader.next() { operation.apply(to: raw, databases: databases) }
      }
    } catch {
      throw FuzzFailure("the fixture store cannot be changed: \(error)")
    }
    let clean = try verify(directory)
    let started = try start(directory, clean: clean)
    if clean && started {
      try require(try verify(directory), "the store was clean, but not once the engine started on it")
    }
  }

  /// Runs `body` on the records of the fixture, unchanged (for the seeds).
  static func withFixture(_ body: (RawStoreRecords) -> Void) {
    scratch.clear()
    scratch.write("store/data.mdb", template)
    do {
      let repository = try LMDBTrialRepository(directory: scratch.path + "/store", options: options)
      defer { repository.close() }
      try repository.withRawRecords { body($0) }
    } catch {
      fatalError("the fixture store cannot be read: \(error)")
    }
  }

  /// `trialwatchd --verify-store DIRECTORY`; whether it found the store clean.
  static func verify(_ directory: String) throws(FuzzFailure) -> Bool {
    var lines: [String] = []
    var errors: [String] = []
    let status = withSignalsKept {
      StoreCommands(output: { lines.append($0) }, errors: { errors.append($0) }).verify(directory: directory)
    }
    let problems = lines.filter { $0.hasPrefix("problem: ") }
    switch status {
    case 0:
      try require(problems.isEmpty && errors.isEmpty, "--verify-store exits 0 but says \(lines + errors)")
      return true
    case StoreCommands.ExitStatus.problems:
      try require(!problems.isEmpty, "--verify-store exits 2 without naming a problem: \(lines + errors)")
      return false
    default:
      throw FuzzFailure("--verify-store exits \(status): \(lines + errors)")
    }
  }

  /// The daemon's start on the store: open it, start the engine (load, deliver, catch up), and
  /// read every record. Whether it all succeeded; a failure of a clean store fails the target.
  static func start(_ directory: String, clean: Bool) throws(FuzzFailure) -> Bool {
    do {
      let repository = try LMDBTrialRepository(directory: directory, options: options)
      defer { repository.close() }
      let quiet = Logger(label: "trialwatch.fuzz") { _ in SwiftLogNoOpLogHandler() }
      let engine = Engine(repository: repository, scheduler: TestScheduler(now: now), logger: quiet)
      _ = try engine.start()
      try readEverything(repository)
      return true
    } catch let error as StoreError {
      try require(!clean, "a store --verify-store finds clean fails: \(error)")
      try require(documented.contains(error.kind), "the store fails with a \(error.kind) error: \(error)")
      try require(
        error.path.hasPrefix(directory), "the store's error names \(error.path), not the store: \(error)")
      return false
    } catch {
      throw FuzzFailure("the store fails with \(type(of: error)), not a StoreError: \(error)")
    }
  }

  static func readEverything(_ repository: LMDBTrialRepository) throws {
    try repository.read { txn in
      try txn.scanTrials(after: nil) { trial in
        _ = try txn.ledgerEntries(trial: trial.id)
        _ = try txn.activeTrialID(subject: trial.subject)
        return true
      }
      try txn.scanOutbox { _ in true }
      _ = try txn.lastSeenWallTime()
      _ = try txn.eventLogBounds()
      try txn.scanEvents(after: .origin) { _ in true }
      try txn.scanConsumers { _ in true }
      try txn.scanSubjectUses(after: nil) { _ in true }
      _ = try txn.cohorts(from: .min, through: .max)
      try txn.scanWebhookEndpoints { state in
        _ = try txn.webhookEndpoint(named: state.name)
        try txn.scanWebhookEvents(endpoint: state.name, after: .origin) { _ in true }
        return true
      }
    }
    _ = try repository.activeTrialsByPlan()
    _ = try repository.statistics()
  }

  /// `StoreCommands.verify` catches the signals of a damaged page for the process; a fuzzer
  /// needs them: they are put back after.
  static func withSignalsKept<R>(_ body: () -> R) -> R {
    var bus = sigaction()
    var segv = sigaction()
    sigaction(SIGBUS, nil, &bus)
    sigaction(SIGSEGV, nil, &segv)
    defer {
      sigaction(SIGBUS, &bus, nil)
      sigaction(SIGSEGV, &segv, nil)
    }
    return body()
  }

  static func makeTemplate() -> [UInt8] {
    let directory = scratch.path + "/template"
    do {
      let repository = try LMDBTrialRepository(directory: directory)
      try StoreCorruption.makeFixture(repository)
      _ = try repository.backup(to: scratch.path + "/template.mdb")
      repository.close()
    } catch {
      fatalError("cannot make the store fuzz target's fixture: \(error)")
    }
    guard let bytes = FileManager.default.contents(atPath: scratch.path + "/template.mdb") else {
      fatalError("cannot read the store fuzz target's fixture")
    }
    return Array(bytes)
  }
}

/// One change of the fixture's records.
enum Operation {
  case put(database: Int, key: [UInt8], value: [UInt8])
  case delete(database: Int, key: [UInt8])
  /// The existing records are numbered in the store's order, modulo their count.
  case deleteExisting(database: Int, index: Int)
  case overwriteExisting(database: Int, index: Int, offset: Int, bytes: [UInt8])
  case cutExisting(database: Int, index: Int, length: Int)

  /// Reads operations from the input: a byte for the kind, a byte for the database, then the
  /// operands (lengths and indices a byte each, a value's length two). Stops at the end.
  struct Reader {
    let input: UnsafeRawBufferPointer
    var offset = 0

    init(_ input: UnsafeRawBufferPointer) { self.input = input }

    mutating func byte() -> Int? {
      guard offset < input.count else { return nil }
      defer { offset += 1 }
      return Int(input[offset])
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
      guard input.count - offset >= count else { return nil }
      defer { offset += count }
      return Array(input[offset..<offset + count])
    }

    mutating func next() -> Operation? {
      guard let kind = byte(), let database = byte() else { return nil }
      switch kind % 5 {
      case 0:
        guard let keyLength = byte(), let key = bytes(keyLength), let high = byte(), let low = byte(),
          let value = bytes(min(high << 8 | low, input.count - offset))
        else { return nil }
        return .put(database: database, key: key, value: value)
      case 1:
        guard let keyLength = byte(), let key = bytes(keyLength) else { return nil }
        return .delete(database: database, key: key)
      case 2:
        guard let index = byte() else { return nil }
        return .deleteExisting(database: database, index: index)
      case 3:
        guard let index = byte(), let at = byte(), let count = byte(), let replacement = bytes(count) else {
          return nil
        }
        return .overwriteExisting(database: database, index: index, offset: at, bytes: replacement)
      default:
        guard let index = byte(), let length = byte() else { return nil }
        return .cutExisting(database: database, index: index, length: length)
      }
    }
  }

  /// Carries the change out; a change LMDB refuses (an empty or long key, a database record of
  /// `main`) is skipped.
  func apply(to raw: RawStoreRecords, databases: [String]) {
    func name(_ database: Int) -> String { databases[database % databases.count] }
    func existing(_ database: Int, _ index: Int) -> [UInt8]? {
      guard let keys = try? raw.keys(name(database)), !keys.isEmpty else { return nil }
      return keys[index % keys.count]
    }
    switch self {
    case .put(let database, let key, let value):
      // A record of `main` named as one of the store's databases would be that database.
      if name(database) == "main" && databases.contains(String(decoding: key, as: UTF8.self)) { return }
      try? raw.put(name(database), key, value)
    case .delete(let database, let key):
      guard name(database) != "main" else { return }
      _ = try? raw.delete(name(database), key)
    case .deleteExisting(let database, let index):
      guard name(database) != "main", let key = existing(database, index) else { return }
      _ = try? raw.delete(name(database), key)
    case .overwriteExisting(let database, let index, let offset, let bytes):
      guard name(database) != "main", let key = existing(database, index),
        var value = (try? raw.get(name(database), key)) ?? nil
      else { return }
      let start = min(offset, value.count)
      let end = min(start + bytes.count, value.count)
      value.replaceSubrange(start..<end, with: bytes)
      try? raw.put(name(database), key, value)
    case .cutExisting(let database, let index, let length):
      guard name(database) != "main", let key = existing(database, index),
        let value = (try? raw.get(name(database), key)) ?? nil
      else { return }
      try? raw.put(name(database), key, Array(value.prefix(length)))
    }
  }
}
